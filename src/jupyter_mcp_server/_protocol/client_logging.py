"""The server's Python logging, delivered to the clients that asked for it.

Records of the ``jupyter_mcp_server`` loggers become ``notifications/message``
at or above the level a client chose, in both protocol generations:

- 2025-11-25: ``logging/setLevel`` sets the level for that connection (each
  HTTP session, or the one stdio peer, has its own). Until a connection sets
  one it receives nothing. Records are sent on the connection's standalone
  channel, from wherever they were logged.
- 2026-07-28: a request opts in with ``_meta["io.modelcontextprotocol/logLevel"]``
  and hears the records logged *while it runs*, at or above that level, on
  its own response stream (the spec allows no other channel). A request
  that does not opt in hears nothing.

Each is sent as the plain ``notifications/message`` the generation defines,
not through the SDK's ``send_log_message``: that method warns (``MCPDeprecationWarning``,
SEP-2577) at every use, and its warning reached the server's stderr at every call.

Nothing is ever written to stdout: in stdio mode stdout is the protocol, and
the stderr handler keeps the level the operator chose
(``JUPYTER_MCP_LOG_LEVEL``) however low a client sets its own.

The server logs each tool call (``debug`` before it runs, ``info`` when it
ended, with its outcome and duration) so a client has something to watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server._calls.connections import connection_key
from jupyter_mcp_server._hooks import Hooks
from jupyter_mcp_server._protocol.features import Feature, Served
from jupyter_mcp_server._protocol.handlers import when_connection_closes

#: The loggers whose records reach clients.
ROOT_LOGGER = "jupyter_mcp_server"
tool_logger = logging.getLogger("jupyter_mcp_server.tools.calls")

#: Python levels as MCP levels (RFC 5424 names).
MCP_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "critical",
}
#: MCP levels as the lowest Python level they admit.
PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}


def mcp_level(levelno: int) -> str:
    for threshold in (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO):
        if levelno >= threshold:
            return MCP_LEVELS[threshold]
    return "debug"


@dataclass
class _Listener:
    """A 2025-11-25 connection that set a level, and how to reach it."""

    session: Any
    level: int
    loop: asyncio.AbstractEventLoop


@dataclass
class _RequestLog:
    """A 2026-07-28 request that opted in: its session and what it sent so far."""

    session: Any
    level: int
    request_id: Any
    pending: list[asyncio.Future[Any]] = field(default_factory=list)


_current_request: contextvars.ContextVar[_RequestLog | None] = contextvars.ContextVar(
    "jupyter_mcp_request_log", default=None
)
#: Set while a record is being delivered, so delivering never logs itself.
_delivering: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jupyter_mcp_delivering", default=False
)


class ClientLogHandler(logging.Handler):
    """Forwards records to the connections and requests that asked for them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(message)s"))
        self.listeners: dict[str, _Listener] = {}
        #: Whether any 2026-07-28 request has asked for records while it runs.
        self.requests_opted_in = False

    def wanted_level(self) -> int:
        """The lowest level anyone currently wants (what the loggers must let through)."""
        levels = [listener.level for listener in self.listeners.values()]
        return min([*levels, logging.DEBUG if self.requests_opted_in else logging.WARNING])

    def emit(self, record: logging.LogRecord) -> None:
        if _delivering.get():
            return
        try:
            data = self.format(record)
        except Exception:
            return
        level = mcp_level(record.levelno)
        request = _current_request.get()
        if request is not None and record.levelno >= request.level:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
                request.pending.append(
                    loop.create_task(
                        _send(request.session, level, data, record.name, request.request_id)
                    )
                )
        for key, listener in list(self.listeners.items()):
            if record.levelno < listener.level:
                continue
            if listener.loop.is_closed():
                self.listeners.pop(key, None)
                continue
            listener.loop.call_soon_threadsafe(
                self._schedule, key, listener, level, data, record.name
            )

    def _schedule(self, key: str, listener: _Listener, level: str, data: str, name: str) -> None:
        async def deliver() -> None:
            delivered = await _send(listener.session, level, data, name)
            if not delivered and self.listeners.get(key) is listener:
                self.listeners.pop(key, None)  # the connection is gone: stop sending to it

        listener.loop.create_task(deliver())

    # -- on the package's logger, for as long as the server runs ----------------

    def install(self, hooks: Hooks) -> None:
        """Attach to the package's logger, keeping stderr at the operator's level, and log
        each tool call through the hooks."""
        root = logging.getLogger()
        operator_level = root.level
        for existing in root.handlers:
            if existing.level == logging.NOTSET:
                existing.setLevel(operator_level)
        logging.getLogger(ROOT_LOGGER).addHandler(self)
        self.refresh_level()
        hooks.before_tool.append(lambda call: tool_logger.debug("Calling tool %s", call.tool))
        hooks.after_tool.append(
            lambda ended: tool_logger.info(
                "Tool %s ended: %s in %.3f s", ended.tool, ended.outcome, ended.duration
            )
        )

    def uninstall(self) -> None:
        logging.getLogger(ROOT_LOGGER).removeHandler(self)

    def refresh_level(self) -> None:
        """Let the package's records through down to the lowest level a client asked for."""
        package = logging.getLogger(ROOT_LOGGER)
        root_level = logging.getLogger().level or logging.WARNING
        package.setLevel(min(self.wanted_level(), root_level))

    # -- the protocol ----------------------------------------------------------

    async def set_level(self, ctx: Any, params: Any) -> Any:
        """``logging/setLevel`` (2025-11-25): this connection's level from now on."""
        from mcp.types import EmptyResult

        key = connection_key(ctx)
        self.listeners[key] = _Listener(
            session=ctx.session, level=PYTHON_LEVELS[params.level], loop=asyncio.get_running_loop()
        )
        # A session that ends (DELETE, expiry) takes its listener with it, and the session object
        # the listener holds, rather than leaving it until a record fails to reach it.
        when_connection_closes(
            ctx, "jupyter_mcp_server._protocol.client_logging", lambda: self.forget(key)
        )
        self.refresh_level()
        return EmptyResult()

    def forget(self, key: str) -> None:
        """The connection `key` is gone: nothing is sent to it any more."""
        if self.listeners.pop(key, None) is not None:
            self.refresh_level()


async def _send(session: Any, level: str, data: str, name: str, request_id: Any = None) -> bool:
    """``notifications/message`` on the connection's channel, or (with `request_id`, the
    2026-07-28 way) on that request's own stream; False when it could not be sent."""
    from mcp.types import LoggingMessageNotification, LoggingMessageNotificationParams

    token = _delivering.set(True)
    try:
        message = LoggingMessageNotification(
            params=LoggingMessageNotificationParams(level=level, data=data, logger=name)  # type: ignore[arg-type]
        )
        await session.send_notification(message, related_request_id=request_id)
        return True
    except Exception:
        return False
    finally:
        _delivering.reset(token)


def stop_hearing_this_request() -> None:
    """Records logged from here on in this context reach no request (its response was sent)."""
    _current_request.set(None)


class RequestLogLevel:
    """Middleware: a 2026-07-28 request with a log level hears what is logged while it runs."""

    def __init__(self, handler: ClientLogHandler) -> None:
        self.handler = handler

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        from mcp.types import LOG_LEVEL_META_KEY
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        requested = (ctx.meta or {}).get(LOG_LEVEL_META_KEY) if ctx.request_id is not None else None
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS or requested not in PYTHON_LEVELS:
            return await call_next(ctx)
        if not self.handler.requests_opted_in:
            self.handler.requests_opted_in = True
            self.handler.refresh_level()
        state = _RequestLog(
            session=ctx.session, level=PYTHON_LEVELS[requested], request_id=ctx.request_id
        )
        token = _current_request.set(state)
        try:
            return await call_next(ctx)
        finally:
            _current_request.reset(token)
            # Delivered before the response, so they ride its stream in order.
            if state.pending:
                await asyncio.gather(*state.pending, return_exceptions=True)


def feature(handler: ClientLogHandler) -> Feature:
    """``logging/setLevel`` served, and each request's own level (middleware)."""
    from mcp.types import SetLevelRequestParams

    return Feature(
        "client logging",
        middleware=(RequestLogLevel(handler),),
        serves=(Served("logging/setLevel", SetLevelRequestParams, handler.set_level),),
    )
