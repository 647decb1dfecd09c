"""What ``tools/list`` says of each tool's arguments: only what a caller needs.

Every tool's input schema is read by the model in every conversation, so its
bytes are paid again and again. The SDK derives it from the handler's
signature, and pydantic adds what says nothing a name does not: a title per
argument and per schema, and for an optional argument ``anyOf: [{type: X},
{type: null}]`` with ``default: null``. Listed here, an argument a caller
may leave out is simply not required, with its one type; the arguments are
still checked by the same pydantic model, which also takes an explicit
``null`` from a client that sends one.
"""

from __future__ import annotations

from typing import Any

from .handlers import Handler, wrap

_NULL = {"type": "null"}


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` without titles, and with optional nullable arguments as their one type."""
    schema.pop("title", None)
    for definition in (schema.get("$defs") or {}).values():
        if isinstance(definition, dict):
            compact(definition)
    for argument in (schema.get("properties") or {}).values():
        if not isinstance(argument, dict):
            continue
        argument.pop("title", None)
        alternatives = argument.get("anyOf")
        if (
            isinstance(alternatives, list)
            and len(alternatives) == 2
            and _NULL in alternatives
            and "default" in argument
            and argument["default"] is None
        ):
            (kept,) = [alternative for alternative in alternatives if alternative != _NULL]
            del argument["anyOf"], argument["default"]
            for key, value in kept.items():
                argument.setdefault(key, value)
    return schema


def attach_compact_listing(server: Any) -> None:
    """List every tool of `server` with compact input schemas."""

    def compacted(original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            for tool in getattr(result, "tools", []):
                compact(tool.input_schema)
            return result

        return listed

    wrap(server, "tools/list", compacted)
