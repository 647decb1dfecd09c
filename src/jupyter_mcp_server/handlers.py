"""Serving protocol methods on a built server through the low-level request handlers.

`MCPServer` registers its handlers on the low-level `Server` it wraps, whose
public API adds, replaces and looks up a handler by method. What the
furnishings add that `MCPServer` has no decorator for (``resources/subscribe``,
``logging/setLevel``, the task methods, a wrapper around ``tools/call``) goes
through here, so the one reach into the wrapped server is in one place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
