"""Asking the client in the middle of a call, the same way on both protocol generations.

A tool (the server's, or an extension's through ``jupyter_mcp_server.api``)
calls :func:`ask` with named questions: an :class:`Elicitation` (ask the
person through a form), a :class:`Sampling` (ask the client's model) or a
:class:`RootsRequest` (the client's roots). What happens depends on the
protocol the call came on:

- **2025-11-25**: each question is sent as a request to the client while the
  call waits (``elicitation/create``, ``sampling/createMessage``,
  ``roots/list``), within `timeout` seconds;
- **2026-07-28**: the call ends with an ``input_required`` result carrying
  every unanswered question and a ``requestState``; the client answers and
  calls again, the tool runs again from the start, and this time :func:`ask`
  finds the answers and returns them. The SDK's boundary seals the state
  (AES-GCM, bound to the tool, its arguments and an expiry), so a tampered
  state is refused before any tool runs; here a state is also refused when
  it is replayed (each round's is good once), an answer counts only for the
  very question it was asked (a digest of its rendering), and one that comes
  back after `timeout` seconds is a :class:`TimeoutError`.

A question the client has not declared the capability for raises
:class:`MissingClientCapability` (JSON-RPC ``-32021``, naming the
capability), before anything is asked: a caller that can do without checks
:func:`client_can` first. An elicitation answer whose content does not match
the requested schema counts as ``decline``.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    INVALID_PARAMS,
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    FormElicitationCapability,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    RootsCapability,
    SamplingCapability,
    SamplingMessage,
)
from mcp_types.version import is_version_at_least

from jupyter_mcp_server._calls.detached import current_run
from jupyter_mcp_server._calls.serving import served
from jupyter_mcp_server._errors import InputRequired

#: The first generation that asks through input_required results.
INPUT_REQUIRED_VERSION = "2026-07-28"
#: JSON-RPC: the client did not declare a capability the request needs.
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
_STATE_VERSION = 1
#: How long a round's state is remembered as used (the SDK's seal expires sooner).
_USED_FOR_SECONDS = 3600.0


@dataclass(frozen=True)
class Elicitation:
    """Ask the person to fill a form: `schema` is a flat JSON Schema object of primitives."""

    message: str
    schema: Mapping[str, Any]
    kind: str = field(default="elicitation", init=False)

    def request(self) -> ElicitRequest:
        return ElicitRequest(
            params=ElicitRequestFormParams(message=self.message, requested_schema=dict(self.schema))
        )


@dataclass(frozen=True)
class Sampling:
    """Ask the client's model: `messages` are ``SamplingMessage``\\ s or their dict form."""

    messages: tuple[Any, ...]
    max_tokens: int
    system_prompt: str | None = None
    kind: str = field(default="sampling", init=False)

    def request(self) -> CreateMessageRequest:
        messages = [
            m if isinstance(m, SamplingMessage) else SamplingMessage.model_validate(m)
            for m in self.messages
        ]
        params = CreateMessageRequestParams(
            messages=messages, max_tokens=self.max_tokens, system_prompt=self.system_prompt
        )
        return CreateMessageRequest(params=params)


@dataclass(frozen=True)
class RootsRequest:
    """Ask for the client's roots (``roots/list``)."""

    kind: str = field(default="roots", init=False)

    def request(self) -> ListRootsRequest:
        return ListRootsRequest()


Question = Elicitation | Sampling | RootsRequest
Answer = ElicitResult | CreateMessageResult | ListRootsResult

_ANSWER_TYPES: dict[str, type[Any]] = {
    "elicitation": ElicitResult,
    "sampling": CreateMessageResult,
    "roots": ListRootsResult,
}


class MissingClientCapability(MCPError):
    """The client did not declare what a question needs (``-32021``)."""

    def __init__(self, kind: str) -> None:
        required = {
            "elicitation": ClientCapabilities(
                elicitation=ElicitationCapability(form=FormElicitationCapability())
            ),
            "sampling": ClientCapabilities(sampling=SamplingCapability()),
            "roots": ClientCapabilities(roots=RootsCapability()),
        }[kind]
        super().__init__(
            code=MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"The client did not declare the {kind} capability this call needs.",
            data={
                "requiredCapabilities": required.model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )
            },
        )
        self.kind = kind


def _request_context(ctx: Any) -> Any:
    return getattr(ctx, "request_context", ctx)


def protocol_of(ctx: Any) -> str | None:
    version = getattr(ctx, "protocol_version", None)
    if version is None:
        version = getattr(_request_context(ctx), "protocol_version", None)
    return version


def asks_by_input_required(ctx: Any) -> bool:
    """Whether this request asks through input_required results (2026-07-28 and later)."""
    version = protocol_of(ctx)
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def client_can(ctx: Any, kind: str) -> bool:
    """Whether the client of this request can be asked a question of this kind (``elicitation``,
    ``sampling``, ``roots``): it declared the capability and, before 2026-07-28, the connection
    can carry a request to it."""
    session = getattr(_request_context(ctx), "session", None)
    capabilities: ClientCapabilities | None = getattr(session, "client_capabilities", None)
    if capabilities is None:
        return False
    if kind == "elicitation":
        elicitation = capabilities.elicitation
        declared = elicitation is not None and (
            elicitation.form is not None or elicitation.url is None
        )
    elif kind == "sampling":
        declared = capabilities.sampling is not None
    else:
        declared = capabilities.roots is not None
    if not declared:
        return False
    return asks_by_input_required(ctx) or bool(getattr(session, "can_send_request", True))


class UsedStates:
    """The rounds whose state has been answered, so none is answered twice (one per server)."""

    def __init__(self) -> None:
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()

    def spend(self, nonce: str) -> bool:
        """Mark a round's state used; False when it already was (a replay)."""
        now = time.monotonic()
        with self._lock:
            if len(self._used) > 4096:
                self._used = {n: t for n, t in self._used.items() if t > now}
            if nonce in self._used:
                return False
            self._used[nonce] = now + _USED_FOR_SECONDS
            return True


@dataclass
class _Round:
    """What one request knows of its earlier rounds: answers recorded, questions asked."""

    answers: dict[str, dict[str, Any]]
    asked: dict[str, str]
    issued: float | None


_rounds: contextvars.ContextVar[tuple[Any, _Round] | None] = contextvars.ContextVar(
    "jupyter_mcp_rounds", default=None
)


def _digest(request: Any) -> str:
    rendered = json.dumps(
        request.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True
    )
    return (
        base64.urlsafe_b64encode(hashlib.sha256(rendered.encode()).digest()[:16])
        .decode()
        .rstrip("=")
    )


def _round_of(ctx: Any, used: UsedStates) -> _Round:
    """This request's view of its earlier rounds, decoded (and its state spent) once per request."""
    request_context = _request_context(ctx)
    held = _rounds.get()
    if held is not None and held[0] is request_context:
        return held[1]
    raw = getattr(ctx, "request_state", None)
    round_ = _Round(answers={}, asked={}, issued=None)
    if raw:
        try:
            state = json.loads(raw)
            valid = state.get("v") == _STATE_VERSION and isinstance(state.get("n"), str)
        except (ValueError, AttributeError):
            valid = False
        if not valid or not used.spend(state["n"]):
            raise MCPError(
                code=INVALID_PARAMS,
                message="Invalid or expired requestState: it was altered or has already been answered.",
                data={"reason": "invalid_request_state"},
            )
        round_ = _Round(
            answers=dict(state.get("answers") or {}),
            asked=dict(state.get("asked") or {}),
            issued=state.get("t"),
        )
    _rounds.set((request_context, round_))
    return round_


def _checked_answer(question: Question, answer: Any) -> Answer | None:
    """The answer as its type (an off-schema elicitation as a decline); None when it is not
    an answer to this kind of question."""
    wanted = _ANSWER_TYPES[question.kind]
    try:
        if not isinstance(answer, wanted):
            wire = (
                answer.model_dump(mode="json", by_alias=True, exclude_none=True)
                if hasattr(answer, "model_dump")
                else answer
            )
            answer = wanted.model_validate(wire)
    except Exception:
        return None
    if (
        isinstance(question, Elicitation)
        and answer.action == "accept"
        and not _fits(question.schema, answer.content)
    ):
        return ElicitResult(action="decline")
    return answer  # type: ignore[no-any-return]


def _fits(schema: Mapping[str, Any], content: Any) -> bool:
    if not isinstance(content, dict):
        return False
    import jsonschema  # lazy: only an accepted elicitation needs it

    try:
        jsonschema.validate(content, dict(schema))
    except jsonschema.ValidationError:
        return False
    except jsonschema.SchemaError:
        return True
    return True


async def ask(
    ctx: Any, questions: Mapping[str, Question], *, used: UsedStates, timeout: float | None = None
) -> dict[str, Answer]:
    """Every question answered, by key; see the module's docstring for how on each generation.

    Raises :class:`MissingClientCapability` before asking anything the client cannot answer,
    :class:`InputRequired` (2026-07-28) while some are unanswered, :class:`TimeoutError` when
    an answer took longer than `timeout` seconds."""
    for question in questions.values():
        if not client_can(ctx, question.kind):
            raise MissingClientCapability(question.kind)
    if asks_by_input_required(ctx):
        run = current_run()
        if run is not None and run.answerable and not run.gathering:
            # The call is a task already: what is still unanswered is asked through it.
            return await _answered_through_task(ctx, run, questions, used, timeout)
        gathered = _answered_by_input_required(ctx, questions, used, timeout)
        if run is not None and run.gathering and questions:
            # Every answer gathered: a task-supporting call may become a task now (tasks.py).
            run.gathered.set()
        return gathered
    answers: dict[str, Answer] = {}
    session = _request_context(ctx).session
    request_id = getattr(_request_context(ctx), "request_id", None)
    for key, question in questions.items():
        wanted = _ANSWER_TYPES[question.kind]
        metadata = ServerMessageMetadata(related_request_id=request_id)
        try:
            with anyio.fail_after(timeout):
                answer = await session.send_request(question.request(), wanted, metadata=metadata)
        except TimeoutError:
            raise TimeoutError(f"The client did not answer {key!r} within {timeout:g} s.") from None
        checked = _checked_answer(question, answer)
        answers[key] = checked if checked is not None else ElicitResult(action="decline")
    return answers


async def ask_the_client(
    ctx: Any, questions: Mapping[str, Question], *, timeout: float | None = None
) -> dict[str, Answer]:
    """Ask the client of this request (elicitation, sampling, roots) in the middle of a tool
    call, the same way on both protocol generations (``docs/approvals.md``): every question
    answered by key. On 2026-07-28 a round still waiting for answers raises
    :class:`InputRequired`, which the server answers for you; let it pass."""
    used: UsedStates = getattr(served(ctx), "used_states")  # noqa: B009 (a Served names no attributes)
    return await ask(ctx, questions, used=used, timeout=timeout)


async def _answered_through_task(
    ctx: Any, run: Any, questions: Mapping[str, Question], used: UsedStates, timeout: float | None
) -> dict[str, Answer]:
    """In a task: the answers its gathering rounds brought, and the rest asked through the
    task (``input_required`` until ``tasks/update`` answers them)."""
    try:
        return _answered_by_input_required(ctx, questions, used, timeout)
    except InputRequired as needed:
        pending = needed.result.input_requests or {}
        gathered = dict(needed.answered)
    requests = {
        key: request.model_dump(by_alias=True, mode="json", exclude_none=True)
        for key, request in pending.items()
    }
    try:
        with anyio.fail_after(timeout):
            responses = await run.ask(requests)
    except TimeoutError:
        raise TimeoutError(
            f"The client did not answer {', '.join(map(repr, requests))} within {timeout:g} s."
        ) from None
    for key in requests:
        checked = _checked_answer(questions[key], responses.get(key))
        gathered[key] = checked if checked is not None else ElicitResult(action="decline")
    return gathered


def _answered_by_input_required(
    ctx: Any, questions: Mapping[str, Question], used: UsedStates, timeout: float | None
) -> dict[str, Answer]:
    round_ = _round_of(ctx, used)
    responses: Mapping[str, Any] = getattr(ctx, "input_responses", None) or {}
    answers: dict[str, Answer] = {}
    pending: dict[str, tuple[Any, str]] = {}
    for key, question in questions.items():
        request = question.request()
        digest = _digest(request)
        recorded = round_.answers.get(key)
        if recorded is not None and recorded.get("q") == digest:
            checked = _checked_answer(question, recorded.get("a"))
            if checked is not None:
                answers[key] = checked
                continue
        response = responses.get(key)
        if response is not None and round_.asked.get(key) == digest:
            if (
                timeout is not None
                and round_.issued is not None
                and time.time() - round_.issued > timeout
            ):
                raise TimeoutError(f"The answer to {key!r} came after {timeout:g} s.")
            checked = _checked_answer(question, response)
            if checked is not None:
                answers[key] = checked
                # Kept for the rounds still to come, so it is not asked again.
                round_.answers[key] = {
                    "q": digest,
                    "a": checked.model_dump(mode="json", by_alias=True, exclude_none=True),
                }
                continue
        pending[key] = (request, digest)
    if pending:
        state = {
            "v": _STATE_VERSION,
            "n": base64.urlsafe_b64encode(os.urandom(12)).decode(),
            "t": time.time(),
            "asked": {key: digest for key, (_, digest) in pending.items()},
            "answers": round_.answers,
        }
        raise InputRequired(
            InputRequiredResult(
                input_requests={key: request for key, (request, _) in pending.items()},
                request_state=json.dumps(state, separators=(",", ":")),
            ),
            answered=answers,
        )
    return answers


class AnswersInputRequired:
    """Middleware: a request whose handler raised :class:`InputRequired` is answered with its
    ``input_required`` result (the SDK's boundary, outside it, seals the state)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except InputRequired as needed:
            return needed.result
