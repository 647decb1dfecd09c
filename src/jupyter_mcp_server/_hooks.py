"""Observers around every tool call and every kernel execution.

Hooks observe; they never change a call. An extension registers them in
``on_start`` (logging, metrics, an audit trail), and one that raises is
logged and skipped, so a broken observer never breaks the call it watches.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import ERROR_META_KEY, INPUT_REQUIRED_OUTCOME, InputRequired
from ._text.timestamps import iso_utc

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """A tool call about to run."""

    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolCallEnded:
    """A tool call that ran: how long, and how it ended (``ok`` or an error code)."""

    tool: str
    arguments: dict[str, Any]
    duration: float
    outcome: str


@dataclass(frozen=True)
class Execution:
    """Code about to run on a kernel."""

    code: str
    kernel_id: str
    notebook: str | None


@dataclass(frozen=True)
class ExecutionEnded:
    """Code that ran on a kernel, and its status."""

    code: str
    kernel_id: str
    notebook: str | None
    status: str
    duration: float


@dataclass
class Hooks:
    """The observers registered in this process."""

    before_tool: list[Callable[[ToolCall], None]] = field(default_factory=list)
    after_tool: list[Callable[[ToolCallEnded], None]] = field(default_factory=list)
    before_execution: list[Callable[[Execution], None]] = field(default_factory=list)
    after_execution: list[Callable[[ExecutionEnded], None]] = field(default_factory=list)

    def fire(self, observers: list[Callable[[Any], None]], event: Any) -> None:
        for observer in list(observers):
            try:
                observer(event)
            except Exception:
                logger.exception(
                    "Hook %r failed on %s; the call goes on", observer, type(event).__name__
                )


def observed(tool: str, handler: Callable[..., Any], hooks: Hooks) -> Callable[..., Any]:
    """`handler` with the tool-call hook pair fired around every call.

    The notebooks tools fire it themselves; an extension's tools are given it
    by the host, so an observer (the audit log) sees every call whoever
    offered the tool. The signature is the handler's, sync or async as it was.
    """
    if getattr(handler, "__observed__", False):
        return handler

    def before(kwargs: dict[str, Any]) -> tuple[dict[str, Any], float]:
        arguments = redacted({k: v for k, v in kwargs.items() if k != "ctx"})
        hooks.fire(hooks.before_tool, ToolCall(tool=tool, arguments=arguments))
        return arguments, time.monotonic()

    def after(arguments: dict[str, Any], started: float, outcome: str) -> None:
        hooks.fire(
            hooks.after_tool,
            ToolCallEnded(
                tool=tool, arguments=arguments, duration=time.monotonic() - started, outcome=outcome
            ),
        )

    if _is_async(handler):

        @functools.wraps(handler)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            arguments, started = before(kwargs)
            outcome = "error"
            try:
                result = await handler(*args, **kwargs)
                outcome = _outcome(result)
                return result
            except InputRequired:
                outcome = INPUT_REQUIRED_OUTCOME
                raise
            finally:
                after(arguments, started, outcome)

        run: Callable[..., Any] = run_async
    else:

        @functools.wraps(handler)
        def run_sync(*args: Any, **kwargs: Any) -> Any:
            arguments, started = before(kwargs)
            outcome = "error"
            try:
                result = handler(*args, **kwargs)
                outcome = _outcome(result)
                return result
            finally:
                after(arguments, started, outcome)

        run = run_sync
    run.__observed__ = True  # type: ignore[attr-defined]
    return run


def _is_async(handler: Any) -> bool:
    """An async function, or an object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(handler):
        return True
    return not inspect.isroutine(handler) and inspect.iscoroutinefunction(handler.__call__)


def _outcome(result: Any) -> str:
    """``ok``, or the error code a failed result carries (``error`` without one)."""
    if not getattr(result, "is_error", False):
        return "ok"
    meta = getattr(result, "meta", None) or {}
    return str((meta.get(ERROR_META_KEY) or {}).get("code", "error"))


class AuditLog:
    """The shipped hook: one JSON line per tool call and execution, appended to a file.

    `mask` (the server's redaction) is applied to every record before it is written; `caller`
    says whose call or execution it is (its ``caller``: user, client, session)."""

    def __init__(
        self,
        path: Path,
        mask: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        caller: Callable[[], dict[str, Any] | None] | None = None,
    ) -> None:
        self.path = path
        self.mask = mask
        #: Who the call or execution being recorded is for (``_calls/callers.py``), if known.
        self.caller = caller
        self._lock = threading.Lock()

    def install(self, hooks: Hooks) -> None:
        hooks.after_tool.append(self.tool_call)
        hooks.after_execution.append(self.execution)

    def _write(self, record: dict[str, Any]) -> None:
        record = {"time": iso_utc(time.time()), **record}
        who = self.caller() if self.caller is not None else None
        if who is not None:
            record["caller"] = who
        if self.mask is not None:
            record = self.mask(record)
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self._lock, self.path.open("a", encoding="utf-8") as stream:
            stream.write(line + "\n")

    def tool_call(self, event: ToolCallEnded) -> None:
        self._write(
            {
                "event": "tool_call",
                "tool": event.tool,
                "arguments": _redacted(event.arguments),
                "duration_ms": round(event.duration * 1000, 3),
                "outcome": event.outcome,
            }
        )

    def execution(self, event: ExecutionEnded) -> None:
        self._write(
            {
                "event": "execution",
                "kernel_id": event.kernel_id,
                "notebook": event.notebook,
                "code": event.code,
                "status": event.status,
                "duration_ms": round(event.duration * 1000, 3),
            }
        )


def redacted(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as observers see them: a secret (any ``*token*``) never reaches one."""
    return {k: ("***" if "token" in k.lower() else v) for k, v in arguments.items()}


_redacted = redacted
