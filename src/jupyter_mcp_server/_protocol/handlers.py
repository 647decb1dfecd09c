"""The one reach into the SDK's low-level server, and why it is needed.

`MCPServer` registers its handlers on the low-level `Server` it wraps, whose
public API adds, replaces and looks up a handler by method; `MCPServer`
itself offers no way to reach it. The SDK's own seams cover the rest
(`Extension.intercept_tool_call` for progress, tasks and argument errors,
`Extension.methods` for the task methods, `MCPServer.middleware`), but not:

- spec methods `MCPServer` has no decorator for, which an SDK `Extension`
  may not bind: ``logging/setLevel`` (which the 2025-11-25 generation still
  needs), ``resources/subscribe`` and ``resources/unsubscribe``,
  ``subscriptions/listen``;
- wrapping a spec method's answer: the task support declared on
  ``tools/list``, every representation of an output on ``resources/read``,
  ``prompts/get`` errors as invalid params;
- the input schemas a tool's ``Mcp-Param-*`` headers are checked against, when an
  extension writes a tool's schema by hand (:func:`declare_input_schemas`);
- running the low-level server on streams of our own (the stdio transport);
- the connection a request came on, for its ``exit_stack`` (cleanup when the
  connection closes: an HTTP session deleted or expired, stdio's end), which
  the request context reaches only through its session.

All of that goes through here, so when the SDK grows a seam, this is the one
file to change.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

Handler = Callable[[Any, Any], Awaitable[Any]]


def lowlevel(server: Any) -> Any:
    """The low-level `mcp.server.lowlevel.Server` an `MCPServer` serves through."""
    return getattr(server, "_lowlevel_server", server)


def serve(server: Any, method: str, params_type: type, handler: Handler) -> None:
    """Serve `method` with `handler(ctx, params)`, replacing any handler it had."""
    lowlevel(server).add_request_handler(method, params_type, handler)


def wrap(server: Any, method: str, wrapper: Callable[[Handler], Handler]) -> None:
    """Put `wrapper` around the handler `method` has; nothing when it has none."""
    entry = lowlevel(server).get_request_handler(method)
    if entry is not None:
        lowlevel(server).add_request_handler(method, entry.params_type, wrapper(entry.handler))


def declare_input_schemas(
    server: Any, lookups: list[Callable[[str], Mapping[str, Any] | None]]
) -> None:
    """Give the SDK's HTTP transport, which checks a call's ``Mcp-Param-*`` headers against the
    tool's input schema before the call is dispatched, the first schema a lookup declares, or
    the SDK's own. `MCPServer` takes no such lookup: it passes its own to the low-level server."""
    if not lookups:
        return
    low = lowlevel(server)
    derived = low.get_tool_input_schema

    def schema_of(name: str) -> Any:
        for lookup in lookups:
            schema = lookup(name)
            if schema is not None:
                return schema
        return derived(name) if derived is not None else None

    low.get_tool_input_schema = schema_of


def when_connection_closes(ctx: Any, name: str, callback: Callable[[], Any]) -> bool:
    """Call `callback` once when the connection `ctx` came on closes; False if it cannot be known.

    Registered at most once per `name` and connection, however many requests ask.
    """
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    exit_stack = getattr(connection, "exit_stack", None)
    state = getattr(connection, "state", None)
    if exit_stack is None or not isinstance(state, dict):
        return False
    if not state.get(name):
        state[name] = True
        exit_stack.callback(callback)
    return True


class ConnectionEnds:
    """Middleware: `ended(session_id)` is called once when an HTTP session's connection closes,
    however it ends (a DELETE, its idle expiry, a crash, the server stopping).

    Registered from the session's first request (``initialize``, which has no session
    header yet: the connection knows its id), so a client that initializes and goes away
    is heard of too.
    """

    def __init__(self, ended: Callable[[str], Any]) -> None:
        self.ended = ended

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        session_id = getattr(connection, "session_id", None)
        if isinstance(session_id, str) and session_id:
            when_connection_closes(
                ctx, "jupyter_mcp_server.connection_ends", lambda: self.ended(session_id)
            )
        return await call_next(ctx)


async def tool_annotations(server: Any, name: str) -> tuple[bool, Any]:
    """(whether `server` serves a tool `name`, its annotations), read through the SDK's public
    ``list_tools()``. A permission check that gets ``(False, None)`` cannot tell what the tool
    is, and refuses it: a registry the SDK moved or renamed must close the door, not open it."""
    for tool in await server.list_tools():
        if tool.name == name:
            return True, tool.annotations
    return False, None
