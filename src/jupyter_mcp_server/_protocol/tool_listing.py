"""What ``tools/list`` says of each tool's arguments: only what a caller needs.

Every tool's input schema is read by the model in every conversation, so its
bytes are paid again and again. The SDK derives it from the handler's
signature, and pydantic adds what says nothing a name does not: a title per
argument and per schema, and for an optional argument ``anyOf: [{type: X},
{type: null}]`` with ``default: null``. Listed here, an argument a caller
may leave out is simply not required, with its one type; the arguments are
still checked by the same pydantic model, which also takes an explicit
``null`` from a client that sends one.

An output schema tells a client what ``structuredContent`` will hold, and a
client validates results against it; what it means is in the description
and the docs. Listed, it keeps the result's own fields with their types,
enumerations and which are required, and drops the rest: descriptions,
titles and defaults (an output has none), and the shapes of nested
objects (``$defs``: an error's fields, a file entry's;
``additionalProperties``), which become ``object``. A nullable field
stays ``anyOf`` a type or null: a list of types is legal JSON Schema but
not portable (dialects with one ``type``, such as Gemini's, reject it).
What the listing keeps validates every result; it is half the bytes.
"""

from __future__ import annotations

from typing import Any

from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler

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


_PROSE = ("description", "title", "default")
#: Result fields set so rarely that listing them on every tool costs more than it tells:
#: ``format_upgraded`` (a file saved in an older nbformat, said in the result's text too;
#: docs/protocol.md) was 600 bytes of every listing. Results still carry them, and an output
#: schema that does not list a field allows it.
_UNLISTED = frozenset({"format_upgraded"})


def compact_output(schema: Any) -> Any:
    """An output schema as it validates, without prose (see the module's docstring)."""
    if isinstance(schema, list):
        return [compact_output(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return {"type": "object"}
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$defs":
            continue
        if key in _PROSE and not isinstance(value, dict):
            continue
        if key == "additionalProperties":  # what a nested object's values are: its shape
            continue
        if key == "properties" and isinstance(value, dict):
            required = set(schema.get("required") or ())
            kept[key] = {
                name: compact_output(sub)
                for name, sub in value.items()
                if name not in _UNLISTED or name in required
            }
        else:
            kept[key] = compact_output(value)
    return kept


def feature() -> Feature:
    """Every tool listed with compact input and output schemas."""

    def compacted(server: Any, original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            for tool in getattr(result, "tools", []):
                compact(tool.input_schema)
                if tool.output_schema is not None:
                    tool.output_schema = compact_output(tool.output_schema)
            return result

        return listed

    return Feature("compact listing", wraps=(Wrapped("tools/list", compacted),))
