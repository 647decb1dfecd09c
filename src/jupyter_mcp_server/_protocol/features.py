"""A protocol feature as one object: what it contributes, handed to the server as it is made.

Each feature of a built server is a :class:`Feature` that declares what it
adds, of four kinds, and nothing else touches the server:

- an SDK :class:`~mcp.server.extension.Extension` (``server/discover``
  settings, methods, a ``tools/call`` interceptor);
- middleware around every request (the SDK's ``middleware=``);
- low-level methods it serves or wraps, where the SDK has no public seam
  (:mod:`.handlers` says which, and why);
- what it registers through ``MCPServer``'s own decorators (resources,
  prompts, completion), and the input schemas it declares.

:class:`FeaturedServer` takes the features in one ordered sequence, outermost
first, and applies each kind in that order within its own layer: middleware
outside the low-level wraps, the wraps outside the extensions' interceptors,
those outside the tool. The composition root (``_app.Application.new_server``)
lists them once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.extension import Extension

from jupyter_mcp_server._extensions import ReplacingServer
from jupyter_mcp_server._protocol.handlers import Handler, declare_input_schemas, serve, wrap

#: ``(server, handler) -> handler``: a wrapper around a low-level method's handler, given the
#: server it is on (a permission check reads the server's own tools).
Wrapper = Callable[[Any, Handler], Handler]


@dataclass(frozen=True)
class Served:
    """A low-level method a feature serves, replacing any handler it had."""

    method: str
    params_type: type
    handler: Handler


@dataclass(frozen=True)
class Wrapped:
    """A low-level method's handler a feature wraps."""

    method: str
    wrapper: Wrapper


@dataclass(frozen=True)
class Feature:
    """One protocol feature: everything it contributes to a server, declared."""

    name: str
    extension: Extension | None = None
    #: An extension that needs the server it is on (called as the server is made, before it
    #: serves; see ``docs/architecture.md``, "Reaching into other packages").
    extension_on: Callable[[Any], Extension] | None = None
    middleware: tuple[Any, ...] = ()
    serves: tuple[Served, ...] = ()
    #: Outermost first, like the features themselves.
    wraps: tuple[Wrapped, ...] = ()
    #: Registers through the server's public decorators (``resource``, ``prompt``, ``completion``).
    registers: Callable[[Any], None] | None = None
    #: The input schema a tool is listed and checked with, None for the SDK's own.
    input_schema: Callable[[str], Mapping[str, Any] | None] | None = None


class FeaturedServer(ReplacingServer):
    """An MCP server made with its features, in the order given (outermost first)."""

    def __init__(self, *, features: Sequence[Feature], **kwargs: Any) -> None:
        extensions: list[Extension] = []
        for feature in features:
            if feature.extension is not None:
                extensions.append(feature.extension)
            if feature.extension_on is not None:
                extensions.append(feature.extension_on(self))
        super().__init__(
            extensions=extensions,
            middleware=[middleware for feature in features for middleware in feature.middleware],
            **kwargs,
        )
        for feature in features:
            if feature.registers is not None:
                feature.registers(self)
            for served in feature.serves:
                serve(self, served.method, served.params_type, served.handler)
        # The innermost wrap goes on first, so the first listed ends outermost.
        for feature in reversed(features):
            for wrapped in reversed(feature.wraps):
                wrap(self, wrapped.method, _on(self, wrapped.wrapper))
        declare_input_schemas(
            self, [feature.input_schema for feature in features if feature.input_schema]
        )


def _on(server: Any, wrapper: Wrapper) -> Callable[[Handler], Handler]:
    return lambda handler: wrapper(server, handler)
