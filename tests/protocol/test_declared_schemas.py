"""An extension's tool may declare its input schema by hand (``api.input_schema``).

The conformance fixture extension declares two: a JSON Schema 2020-12 schema
(``$defs`` with ``$anchor``, ``allOf``/``anyOf``, ``if``/``then``/``else``,
``additionalProperties: false``) and one with ``x-mcp-header`` arguments. Here
the official client, over stdio on both generations, reads each back as
written and has every call checked against it; the conformance suite (in
test_conformance.py) checks the same over HTTP, with the headers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, error_code, serve, text_of
from fixtures import pip_install, python_path

from jupyter_mcp_server.api import input_schema

EXTENSION = REPO / "tests" / "fixtures" / "conformance-extension"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("schemas-site")
    pip_install(target, EXTENSION)
    return target


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_declared_schema_is_listed_as_written_and_enforced(
    workspace: Path, site: Path, mode: str
) -> None:
    import sys

    sys.path.insert(0, str(site))
    try:
        from conformance_fixtures import CONTACT
    finally:
        sys.path.remove(str(site))
    env = {"PYTHONPATH": python_path(site), "JUPYTER_MCP_EXTENSIONS": "fx-conformance"}
    async with serve(
        workspace, "--capability", "kernel.prestart=off", mode=mode, env=env
    ) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["json_schema_2020_12_tool"].input_schema == CONTACT
        regional = listed["test_regional_query"].input_schema["properties"]
        assert regional["region"]["x-mcp-header"] == "Region"
        # Tools that declare nothing keep the schema their signature gives.
        assert "$schema" not in listed["test_simple_text"].input_schema

        ok = await client.call_tool(
            "json_schema_2020_12_tool", {"name": "Ada", "contactMethod": "phone", "phone": "1"}
        )
        assert not ok.is_error and text_of(ok) == "contact Ada: 1"
        for arguments, field in [
            ({"name": "Ada", "contactMethod": "phone", "email": "a@b.c"}, "(arguments)"),
            ({"name": "Ada", "email": "a@b.c", "nickname": "A"}, "(arguments)"),
            ({"name": "Ada", "email": "a@b.c", "address": {"city": 7}}, "address.city"),
            ({"name": "Ada", "contactMethod": "fax", "email": "a@b.c"}, "contactMethod"),
        ]:
            refused = await client.call_tool("json_schema_2020_12_tool", arguments)
            assert refused.is_error and error_code(refused) == "invalid_argument", arguments
            assert field in text_of(refused) and "call again" in text_of(refused), text_of(refused)
        missing = await client.call_tool("test_regional_query", {"query": "q"})
        assert error_code(missing) == "invalid_argument" and "'region'" in text_of(missing)


def test_a_schema_that_is_not_one_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="type"):
        input_schema({"type": "string"})
    with pytest.raises(ValueError, match="not valid JSON Schema"):
        input_schema({"type": "object", "properties": {"a": {"type": "nonsense"}}})
    declared = {"type": "object", "properties": {"a": {"type": "string"}}}
    meta = input_schema(declared)
    declared["properties"]["a"]["type"] = "integer"
    assert next(iter(meta.values()))["properties"]["a"]["type"] == "string"
