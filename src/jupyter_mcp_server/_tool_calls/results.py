"""How a tool answers: structured results, failures with codes, and the hook pair.

Every tool returns an MCP ``CallToolResult``: ``structuredContent`` matching
the tool's output schema and the text a model reads in ``content`` (which
:mod:`jupyter_mcp_server._protocol.result_parts` copies into the structured
part as ``rendered``, for clients that hand their model only that part). A failure is ``isError: true`` with a message that says what to
do next and ``_meta["io.jupyter-mcp/error"]`` carrying the stable code.
:func:`tool_handler` is the one place that turns a raised
:class:`~jupyter_mcp_server._errors.ToolFailure` into that shape and fires
the hooks, so no tool can forget either.
"""

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp.types import CallToolResult, TextContent

from jupyter_mcp_server._calls.callers import caller_of, recorded_session, serving_caller
from jupyter_mcp_server._calls.connections import session_of
from jupyter_mcp_server._errors import (
    ERROR_META_KEY,
    INPUT_REQUIRED_OUTCOME,
    INVALID_ARGUMENT,
    InputRequired,
    ToolFailure,
)
from jupyter_mcp_server._hooks import ToolCall, ToolCallEnded, redacted
from jupyter_mcp_server._schemas.answers import answer as answer
from jupyter_mcp_server._schemas.answers import failure as failure
from jupyter_mcp_server._state import serving_connection, state_of
from jupyter_mcp_server._store.change_origins import EDIT_ORIGIN, Origin
from jupyter_mcp_server._store.store import HISTORY_OFF_NOTES

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Awaitable[CallToolResult]])


def history_off_said(result: CallToolResult, notes: list[str]) -> CallToolResult:
    """`result` saying that its changes are not in their notebooks' history (`notes`: why):
    ``history_off`` in its structured content, and a sentence a model reads."""
    said = " ".join(notes)
    if isinstance(result.structured_content, dict):
        result.structured_content = {**result.structured_content, "history_off": said}
    sentence = f"History is off: {said} restore_notebook cannot undo this change."
    text = next((block for block in result.content if isinstance(block, TextContent)), None)
    if text is None:
        result.content = [TextContent(type="text", text=sentence), *result.content]
    elif said not in text.text:
        text.text = f"{text.text}\n{sentence}"
    return result


def outcome_of(result: CallToolResult) -> str:
    """``ok``, or the error code a result carries."""
    if not result.is_error:
        return "ok"
    meta = result.meta or {}
    return str((meta.get(ERROR_META_KEY) or {}).get("code", "error"))


def tool_handler(name: str) -> Callable[[F], F]:
    """Run a tool: failures become coded results, and the hook pair fires around it."""

    def decorate(handler: F) -> F:
        @functools.wraps(handler)
        async def run(*args: Any, **kwargs: Any) -> CallToolResult:
            ctx = kwargs.get("ctx")
            hooks = state_of(ctx).hooks
            arguments = redacted({k: v for k, v in kwargs.items() if k != "ctx"})
            # What this call changes is this tool's, this caller's, in the notebooks' histories.
            caller = caller_of(ctx) if ctx is not None else serving_caller()
            origin = EDIT_ORIGIN.set(
                Origin(
                    tool=name,
                    client=caller.client if caller is not None else None,
                    # Named as the audit log names it: a hash, never the session id itself.
                    connection=recorded_session(
                        session_of(ctx) if ctx is not None else serving_connection()
                    ),
                    user=caller.user if caller is not None else None,
                )
            )
            # What its writes could not keep in the histories, for its result to say.
            unkept: list[str] = []
            heard = HISTORY_OFF_NOTES.set(unkept)
            hooks.fire(hooks.before_tool, ToolCall(tool=name, arguments=arguments))
            started = time.monotonic()
            outcome = "crashed"
            try:
                try:
                    result = await handler(*args, **kwargs)
                except ToolFailure as error:
                    result = failure(error)
                except (ValueError, TypeError) as error:
                    logger.info("Tool %s refused its arguments: %s", name, error)
                    result = failure(ToolFailure(INVALID_ARGUMENT, f"{name}: {error}"))
                except InputRequired:
                    # Asked the person (2026-07-28): the call ends with a question, not a result.
                    outcome = INPUT_REQUIRED_OUTCOME
                    raise
                outcome = outcome_of(result)
                return history_off_said(result, unkept) if unkept else result
            finally:
                HISTORY_OFF_NOTES.reset(heard)
                EDIT_ORIGIN.reset(origin)
                # Also when the call crashed or was cancelled: an audit trail
                # with holes is worse than none.
                hooks.fire(
                    hooks.after_tool,
                    ToolCallEnded(
                        tool=name,
                        arguments=arguments,
                        duration=time.monotonic() - started,
                        outcome=outcome,
                    ),
                )

        return run  # type: ignore[return-value]

    return decorate
