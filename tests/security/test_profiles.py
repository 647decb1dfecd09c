"""Profiles: read-only and edit over stdio and HTTP, with the official client.

A tool outside the profile is not listed, and calling it anyway is refused
with ``not_permitted`` naming the profile; an extension's tool is judged by
its annotations like the server's own (my-extension's ``my_tool`` says
nothing, so it counts as one that reaches out). Over HTTP the URL narrows a
connection's profile and never widens it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from conftest import ERROR_KEY, error_code, ok, serve, server_command, server_environment, text_of
from fixtures import FIXTURES, extensions_site, pip_install, python_path
from test_http import INITIALIZE, MCP_HEADERS, connect, http_server

__all__ = ["extensions_site"]

READING = {
    "list_files",
    "read_notebook",
    "outline",
    "search_notebooks",
    "read_cell",
    "get_notebook_revision",
}
EDITING = {"insert_cell", "delete_cell", "edit_cell_source", "use_notebook", "restart_notebook"}
RUNNING = {"execute_cell", "execute_code", "insert_execute_code_cell", "connect_to_jupyter"}


def notebook(workspace: Path) -> None:
    cells = [
        {
            "cell_type": "code",
            "id": "c1",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": "1 + 1",
        }
    ]
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (workspace / "a.ipynb").write_text(json.dumps(document))


async def check_profile(client, profile: str, audit: Path | None = None) -> None:
    listed = {tool.name for tool in (await client.list_tools()).tools}
    assert listed >= READING
    assert not (RUNNING & listed), RUNNING & listed
    if profile == "read-only":
        assert not (EDITING & listed), EDITING & listed
    else:
        assert listed >= EDITING
    await ok(client, "read_notebook", {"notebook_name": "a.ipynb"})
    refused_tools = ["execute_code", *(["insert_cell"] if profile == "read-only" else [])]
    for tool in refused_tools:
        result = await client.call_tool(
            tool,
            {"code": "open('x', 'w')"}
            if tool == "execute_code"
            else {
                "notebook_name": "a.ipynb",
                "cell_index": 0,
                "cell_type": "code",
                "cell_source": "x",
            },
        )
        assert result.is_error and error_code(result) == "not_permitted", text_of(result)
        assert result.meta[ERROR_KEY]["profile"] == profile
        assert profile in text_of(result)


async def test_read_only_and_edit_over_stdio(workspace: Path) -> None:
    notebook(workspace)
    audit = workspace.parent / "audit.jsonl"
    async with serve(
        workspace, "--capability", "profile=read-only", "--audit-log", str(audit)
    ) as client:
        await check_profile(client, "read-only")
        described = json.loads((await client.read_resource("capabilities://")).contents[0].text)
        entry = {e["name"]: e for e in described["declared"]}["profile"]
        assert (entry["value"], entry["source"], entry["values"]) == (
            "read-only",
            "cli",
            ["read-only", "edit", "full"],
        )
    assert not (workspace / "x").exists()
    refusals = [
        json.loads(line) for line in audit.read_text().splitlines() if '"not_permitted"' in line
    ]
    assert {r["tool"] for r in refusals} == {"execute_code", "insert_cell"}
    async with serve(workspace, env={"JUPYTER_MCP_CAPABILITIES": "profile=edit"}) as client:
        await check_profile(client, "edit")
        inserted = await ok(
            client,
            "insert_cell",
            {"notebook_name": "a.ipynb", "cell_index": 1, "cell_type": "code", "cell_source": "2"},
        )
        assert inserted


async def test_a_registry_that_knows_nothing_fails_closed(workspace: Path, tmp_path: Path) -> None:
    """The check reads each tool's annotations from the SDK; when the SDK's registry can name
    no tool (the shape of a release that moves it), ``read-only`` refuses every tool that is
    not a read instead of letting it through, and each refusal is audited."""
    notebook(workspace)
    site = tmp_path / "site"
    pip_install(site, FIXTURES / "forgetful-registry")
    audit = tmp_path / "audit.jsonl"
    env = {"PYTHONPATH": python_path(site), "JUPYTER_MCP_EXTENSIONS": "forgetful-registry"}
    arguments = {
        "execute_code": {"notebook_name": "a.ipynb", "code": "open('x', 'w').close()"},
        "insert_execute_code_cell": {
            "notebook_name": "a.ipynb",
            "cell_index": 1,
            "cell_source": "open('x', 'w').close()",
        },
        "execute_cell": {"notebook_name": "a.ipynb", "cell_index": 0},
        "insert_cell": {
            "notebook_name": "a.ipynb",
            "cell_index": 0,
            "cell_type": "code",
            "cell_source": "x",
        },
        "delete_cell": {"notebook_name": "a.ipynb", "cell_index": 0},
        "edit_cell_source": {"notebook_name": "a.ipynb", "cell_index": 0, "new_source": "x"},
        "use_notebook": {"notebook_name": "b.ipynb", "mode": "create"},
        "restart_notebook": {"notebook_name": "a.ipynb"},
        "connect_to_jupyter": {"jupyter_url": "http://127.0.0.1:9", "jupyter_token": "t"},
    }
    assert set(arguments) == RUNNING | EDITING
    before = (workspace / "a.ipynb").read_bytes()
    async with serve(
        workspace, "--capability", "profile=read-only", "--audit-log", str(audit), env=env
    ) as client:
        for tool, given in arguments.items():
            result = await client.call_tool(tool, given)
            assert result.is_error and error_code(result) == "not_permitted", (
                tool,
                text_of(result),
            )
            assert result.meta[ERROR_KEY]["profile"] == "read-only"
    assert not (workspace / "x").exists() and not (workspace / "b.ipynb").exists()
    assert (workspace / "a.ipynb").read_bytes() == before
    refusals = [json.loads(line) for line in audit.read_text().splitlines()]
    assert {r["tool"] for r in refusals if r.get("outcome") == "not_permitted"} == set(arguments)
    # The same registry still runs calls: under ``full`` nothing is checked, and code runs.
    async with serve(workspace, env=env) as client:
        await ok(
            client, "execute_code", {"notebook_name": "a.ipynb", "code": "open('x', 'w').close()"}
        )
    assert (workspace / "x").exists()


async def test_modern_protocol_over_stdio(workspace: Path) -> None:
    notebook(workspace)
    async with serve(workspace, "--capability", "profile=edit", mode="2026-07-28") as client:
        await check_profile(client, "edit")


def test_an_unknown_profile_stops_the_server(workspace: Path) -> None:
    for args, env in (
        (["--capability", "profile=readonly"], {}),
        ([], {"JUPYTER_MCP_CAPABILITIES": "profile"}),
    ):
        started = subprocess.run(
            server_command(workspace, *args),
            env=server_environment(**env),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert started.returncode == 2, started.stderr
        assert "read-only, edit, full" in started.stderr


@pytest.fixture(scope="module")
def edit_server(extensions_site, tmp_path_factory):
    root = tmp_path_factory.mktemp("profiles")
    with http_server(
        root, extensions_site, "--capability", "kernel.prestart=off", "--capability", "profile=edit"
    ) as server:
        notebook(server.workspace)
        yield server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_profiles_over_http(edit_server, mode: str) -> None:
    async with connect(edit_server.url(), mode=mode) as client:
        await check_profile(client, "edit")
        # An extension tool without annotations counts as one that reaches out.
        assert "my_tool" not in {tool.name for tool in (await client.list_tools()).tools}
    async with connect(edit_server.url("profile=read-only"), mode=mode) as client:
        await check_profile(client, "read-only")
    async with connect(edit_server.url("only=notebooks&profile=edit"), mode=mode) as client:
        await check_profile(client, "edit")


def test_a_wider_profile_in_the_url_is_forbidden(edit_server) -> None:
    for query, status in (
        ("profile=full", 403),
        ("profile=everything", 400),
        ("profile=edit", 200),
    ):
        response = httpx.post(
            edit_server.url(query), json=INITIALIZE, headers=MCP_HEADERS, timeout=30
        )
        assert response.status_code == status, (query, response.text)
        if status != 200:
            assert "profile" in response.json()["error"]


async def test_a_session_keeps_the_profile_it_connected_with(edit_server) -> None:
    """Later requests of a session are held to its profile, whatever their URL says."""
    with httpx.Client(timeout=30) as http:
        started = http.post(
            edit_server.url("profile=read-only"), json=INITIALIZE, headers=MCP_HEADERS
        )
        session = started.headers["mcp-session-id"]
        headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        http.post(
            edit_server.url(),
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
        )
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "insert_cell",
                "arguments": {
                    "notebook_name": "a.ipynb",
                    "cell_index": 0,
                    "cell_type": "code",
                    "cell_source": "x",
                },
            },
        }
        answered = http.post(edit_server.url(), json=call, headers=headers)
        body = answered.text
        payload = json.loads(body[body.index("{") : body.rindex("}") + 1])
        assert payload["result"]["isError"] is True
        assert payload["result"]["_meta"][ERROR_KEY] == {
            "code": "not_permitted",
            "profile": "read-only",
            "tool": "insert_cell",
        }


async def test_json_lines_keeps_the_profile(workspace: Path) -> None:
    from test_jsonlines import json_lines_server

    notebook(workspace)
    async with json_lines_server(workspace, "--capability", "profile=read-only") as lines:
        opened = await lines.call("open", path="a.ipynb")
        refused = await lines.refused("execute", "not_permitted", path="a.ipynb", cell_id="c1")
        assert refused["profile"] == "read-only"
        await lines.refused("save", "not_permitted", path="a.ipynb", revision=opened["revision"])
        await lines.call("shutdown")
