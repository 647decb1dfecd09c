"""Input schemas an extension writes by hand: listed as written, enforced on every call.

The SDK derives a tool's input schema from its handler's signature, through
pydantic, and the compact listing then trims it. That cannot say what JSON
Schema 2020-12 can: ``$defs`` with ``$anchor``, ``allOf``/``anyOf``,
``if``/``then``/``else``, ``additionalProperties: false``, or the
``x-mcp-header`` annotations that mirror an argument into an HTTP header.
A tool whose spec's ``meta`` carries :func:`input_schema` is listed with that
schema byte for byte, and every call's arguments, as the client sent them,
are checked against it before the tool (or the SDK's own checks) sees them.
A call that fails is ``invalid_argument`` naming each field. References are
resolved within the schema only: a ``$ref`` to a network URI is never
fetched.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from mcp.server.extension import Extension
from mcp.types import CallToolResult, TextContent

from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler
from jupyter_mcp_server._schemas.declared_inputs import (
    INPUT_SCHEMA_META,
    validator_class,
)

if TYPE_CHECKING:
    from jupyter_mcp_server._state import ServerState


class DeclaredSchemas:
    """Which tools declare their input schema, as their specs say (read again when a
    name is new: an extension that woke up since)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._declared: dict[str, dict[str, Any] | None] = {}
        self._validators: dict[str, Any] = {}

    def of(self, tool: str) -> dict[str, Any] | None:
        if tool not in self._declared:
            self._declared = {
                spec.name: declared
                if isinstance(declared := spec.meta.get(INPUT_SCHEMA_META), dict)
                else None
                for spec in self.state.extensions.tools()
            }
            self._validators.clear()
            self._declared.setdefault(tool, None)
        return self._declared[tool]

    def problems(self, tool: str, arguments: dict[str, Any]) -> list[tuple[str, str]] | None:
        """(field, problem) for each way `arguments` break `tool`'s declared schema, or
        None when the tool declares none."""
        schema = self.of(tool)
        if schema is None:
            return None
        validator = self._validators.get(tool)
        if validator is None:
            validator = self._validators[tool] = validator_class(schema)(schema)
        found = []
        for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
            field = ".".join(str(part) for part in error.absolute_path) or "(arguments)"
            found.append((field, error.message))
        return found


class DeclaredSchemaChecks(Extension):
    """Arguments checked against a declared schema before anything else reads them."""

    identifier = "io.jupyter-mcp/declared-input-schemas"

    def __init__(self, declared: DeclaredSchemas) -> None:
        self.declared = declared

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        arguments = getattr(params, "arguments", None) or {}
        problems = self.declared.problems(getattr(params, "name", ""), arguments)
        if not problems:
            return await call_next(ctx)
        failure = ToolFailure(
            INVALID_ARGUMENT,
            f"Invalid arguments for {params.name}: "
            + "; ".join(f"{field}: {problem}" for field, problem in problems)
            + ". Fix them and call again; the tool's input schema says what each accepts.",
            fields=sorted({field for field, _ in problems}),
        )
        return CallToolResult(
            content=[TextContent(type="text", text=failure.message)],
            is_error=True,
            _meta=failure.as_meta(),
        )


def feature(declared: DeclaredSchemas) -> Feature:
    """Each tool that declares its input schema checked against it on every call
    (:class:`DeclaredSchemaChecks`), listed with that schema, as written, and the same schema
    given to the SDK's HTTP transport, which checks a call's ``Mcp-Param-*`` headers against
    the tool's schema before the call is dispatched."""

    def as_declared(server: Any, original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            for tool in getattr(result, "tools", []):
                schema = declared.of(tool.name)
                if schema is not None:
                    tool.input_schema = copy.deepcopy(schema)
            return result

        return listed

    return Feature(
        "declared input schemas",
        extension=DeclaredSchemaChecks(declared),
        wraps=(Wrapped("tools/list", as_declared),),
        input_schema=declared.of,
    )
