"""Output schemas made plain (no titles) accept and refuse exactly what the models do."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from jsonschema.validators import validator_for
from pydantic import Field, ValidationError

from jupyter_mcp_server._schemas.models import ExecutionResult, Result


class Sample(Result):
    count: int | None
    words: list[str] | None = None
    mapping: dict[str, Any] | None = None
    choice: Literal["a", "b"] | None = None
    fixed: Literal["1.0"] = "1.0"
    described: str | None = Field(default=None, description="Kept.")
    nested: ExecutionResult | None = None


INSTANCES = [
    {"count": 1},
    {"count": None},
    {"count": "1"},
    {"count": 1.5},
    {"count": True},
    {"count": 1, "words": ["x"]},
    {"count": 1, "words": None},
    {"count": 1, "words": [1]},
    {"count": 1, "words": "x"},
    {"count": 1, "mapping": {"k": [1]}},
    {"count": 1, "mapping": None},
    {"count": 1, "mapping": []},
    {"count": 1, "choice": "a"},
    {"count": 1, "choice": None},
    {"count": 1, "choice": "c"},
    {"count": 1, "fixed": "2.0"},
    {"count": 1, "described": None},
    {"count": 1, "described": 3},
    {"count": 1, "nested": None},
    {"count": 1, "nested": {"status": "ok"}},
]


def strictly_valid(instance: dict[str, Any]) -> bool:
    try:
        Sample.model_validate(instance, strict=True)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("instance", INSTANCES, ids=lambda i: repr(i)[:60])
def test_the_plain_schema_agrees_with_the_model(instance: dict[str, Any]) -> None:
    schema = Sample.model_json_schema()
    validator = validator_for(schema)
    validator.check_schema(schema)
    assert validator(schema).is_valid(instance) == strictly_valid(instance)


def test_the_plain_schema_has_no_titles_and_a_single_type_everywhere() -> None:
    schema = Sample.model_json_schema()
    assert "title" not in schema and all(
        "title" not in field for field in schema["properties"].values()
    )
    assert schema["properties"]["count"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert schema["properties"]["described"]["description"] == "Kept."
    assert '"type": [' not in json.dumps(schema), "type arrays do not map onto single-type dialects"
