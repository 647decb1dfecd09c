"""Progress for long calls: outputs as they arrive, and a heartbeat.

When a ``tools/call`` carries a progress token, the server sends
``notifications/progress`` for it while the call runs:

- each output a running execution produces, as a short message
  (``[stdout] …``, ``[image/png]``, ``[error] NameError: …``), coalesced so at
  most one notification leaves every ``MIN_GAP`` seconds and each carries at
  most ``MAX_MESSAGE_CHARS`` characters (what did not fit is counted, not
  sent: the result has the outputs);
- a heartbeat (``running for 30 s``) whenever nothing was sent for
  the configured heartbeat (``JUPYTER_MCP_HEARTBEAT_SECONDS``, default 10), so that clients which give
  up on a silent call keep waiting.

``progress`` counts the notifications sent, so it only grows; there is no
``total``. Without a progress token nothing is sent. The kernel layer hears
about outputs through :mod:`jupyter_mcp_server._tool_calls.listening`, a context
variable the execution tools pass to ``run_code`` as its ``on_output``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.server.extension import Extension

from jupyter_mcp_server._kernels.outputs import describe
from jupyter_mcp_server._tool_calls.listening import listening

DEFAULT_HEARTBEAT_SECONDS = 10.0
#: At most one notification per this many seconds (outputs are coalesced).
MIN_GAP = 0.25
#: The most output text one notification carries.
MAX_MESSAGE_CHARS = 2000


class Reporter:
    """Sends one call's progress: coalesced outputs and heartbeats."""

    def __init__(self, send: Callable[[float, str], Awaitable[None]], interval: float) -> None:
        self._send = send
        self._interval = interval
        self._pending: list[str] = []
        self._pending_chars = 0
        self._dropped_chars = 0
        self._wake = asyncio.Event()
        self._count = 0
        self._started = time.monotonic()
        self._last_sent = self._started

    def on_output(self, output: dict[str, Any]) -> None:
        text = describe(output)
        room = MAX_MESSAGE_CHARS - self._pending_chars
        if room <= 0:
            self._dropped_chars += len(text)
        else:
            kept = text[:room]
            self._pending.append(kept)
            self._pending_chars += len(kept)
            self._dropped_chars += len(text) - len(kept)
        self._wake.set()

    async def run(self) -> None:
        while True:
            wait = self._last_sent + self._interval - time.monotonic()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(wait, 0.0))
            self._wake.clear()
            if self._pending:
                await self.flush()
                await asyncio.sleep(MIN_GAP)
            elif time.monotonic() - self._last_sent >= self._interval:
                await self._notify(f"running for {time.monotonic() - self._started:.0f} s")

    async def flush(self) -> None:
        if not self._pending:
            return
        message = "".join(self._pending)
        if self._dropped_chars:
            message += f"\n[{self._dropped_chars} more characters of output; the result has them]"
        self._pending, self._pending_chars, self._dropped_chars = [], 0, 0
        await self._notify(message)

    async def _notify(self, message: str) -> None:
        self._count += 1
        self._last_sent = time.monotonic()
        with contextlib.suppress(Exception):  # progress is advisory; the call goes on
            await self._send(float(self._count), message)


@contextlib.asynccontextmanager
async def reporting(
    send: Callable[[float, str], Awaitable[None]],
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS,
) -> AsyncIterator[Reporter]:
    """A running reporter for the duration of the block; what is pending is sent at the end."""
    reporter = Reporter(send, heartbeat_seconds)
    task = asyncio.ensure_future(reporter.run())
    try:
        with listening(reporter.on_output):
            yield reporter
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        with contextlib.suppress(Exception):
            await reporter.flush()


def progress_token(ctx: Any) -> Any:
    meta = getattr(ctx, "meta", None) or {}
    token = meta.get("progress_token", meta.get("progressToken")) if hasattr(meta, "get") else None
    return token


class ProgressReporting(Extension):
    """Every ``tools/call`` with a progress token gets heartbeats, and outputs while code runs."""

    identifier = "io.jupyter-mcp/progress"

    def __init__(
        self,
        heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS,
        mask: Callable[[str], str] | None = None,
    ) -> None:
        self.heartbeat_seconds = heartbeat_seconds
        #: What a message goes through before it is sent (the server's redaction).
        self.mask = mask or (lambda text: text)

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if progress_token(ctx) is None:
            return await call_next(ctx)

        async def send(progress: float, message: str) -> None:
            await ctx.session.report_progress(progress, None, self.mask(message))

        async with reporting(send, self.heartbeat_seconds):
            return await call_next(ctx)
