"""A tool's input schema written by hand: declared in its ``meta``, checked when declared.

:func:`input_schema` is what an extension writes (through :mod:`jupyter_mcp_server.api`);
it needs nothing of the server, so declaring one imports none of it. The protocol feature
that lists and enforces the declared schemas is :mod:`jupyter_mcp_server._protocol.declared_schemas`.
"""

from __future__ import annotations

import copy
from typing import Any

#: Where a tool spec's ``meta`` keeps the schema it declares.
INPUT_SCHEMA_META = "io.jupyter-mcp/input-schema"
#: The dialect of a schema that names none.
DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def validator_class(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    return validator_for(schema, default=Draft202012Validator)


def input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``meta`` declaring its input schema by hand (``@tool(meta=input_schema({...}))``;
    combine with another with ``{**task_support(), **input_schema(...)}``). The schema must be
    an object schema that its own dialect accepts; a bad one is refused here, when the
    extension is imported, not at a caller's first call."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError('an input schema is a JSON Schema object with "type": "object"')
    from jsonschema.exceptions import SchemaError

    try:
        validator_class(schema).check_schema(schema)
    except SchemaError as error:
        raise ValueError(f"the input schema is not valid JSON Schema: {error.message}") from None
    return {INPUT_SCHEMA_META: copy.deepcopy(schema)}
