"""Approvals with the official client's elicitation callback, on both protocol generations.

Deleting cells, restarting or releasing a kernel and code that runs shell
commands ask the person first: an elicitation while the call waits on
2025-11-25, an ``input_required`` round on 2026-07-28 (the client's driver
answers it through the same callback). Accept proceeds; decline, cancel,
``approve: false``, an answer outside the schema and no answer in time are
``declined`` with the notebook untouched; a client without elicitation gets
``approval_required`` under ``approvals=ask`` (under the default, ``ask-or-allow``, proceeds).
"""

from __future__ import annotations

import asyncio
import getpass
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ERROR_KEY, error_code, ok, serve, text_of
from fixtures import extensions_site
from mcp.types import ElicitResult, Implementation, InputRequiredResult

from jupyter_mcp_server._calls.approvals import DEFAULT_ACTIONS

__all__ = ["extensions_site"]

MODES = ["legacy", "2026-07-28"]
ARGS = ("--capability", "kernel.prestart=off")
#: The harness asks about nothing (tests/rpc.py); these tests ask about the defaults.
ASKING = {"JUPYTER_MCP_APPROVE": ",".join(DEFAULT_ACTIONS)}


def notebook(workspace: Path) -> Path:
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": f"x{i} = {i}",
        }
        for i in range(3)
    ]
    path = workspace / "a.ipynb"
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return path


class Person:
    """An elicitation callback answering as told, remembering what it was asked."""

    def __init__(self, action: str = "accept", content: Any = None, delay: float = 0.0) -> None:
        self.action, self.content, self.delay = (
            action,
            content if content is not None else {"approve": True},
            delay,
        )
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        assert params.requested_schema["required"] == ["approve"]
        if self.delay:
            await asyncio.sleep(self.delay)
        return ElicitResult(
            action=self.action, content=self.content if self.action == "accept" else None
        )


DELETE = {"notebook_name": "a.ipynb", "cell_ids_to_delete": ["c1"]}


def cell_ids(path: Path) -> list[str]:
    return [cell["id"] for cell in json.loads(path.read_text())["cells"]]


@pytest.mark.parametrize("mode", MODES)
async def test_accept_proceeds_and_names_what_happens(workspace: Path, mode: str) -> None:
    path = notebook(workspace)
    person = Person()
    client_name = "approving-agent"
    async with serve(
        workspace,
        *ARGS,
        mode=mode,
        env=ASKING,
        elicitation_callback=person,
        client_info=Implementation(name=client_name, version="1"),
    ) as client:
        await ok(client, "delete_cell", DELETE)
        assert cell_ids(path) == ["c0", "c2"]
        assert len(person.asked) == 1 and "c1" in person.asked[0] and "'x1 = 1'" in person.asked[0]
        # The person is told who asks: the client, and whom it acts for.
        assert f"Asked by {client_name} ({getpass.getuser()})." in person.asked[0], person.asked
        # Code without shell commands asks nothing; code with them names the lines.
        await ok(client, "execute_code", {"code": "1 + 1", "notebook_name": "a.ipynb"})
        assert len(person.asked) == 1
        result = await client.call_tool(
            "execute_code", {"code": "!echo hello-from-shell", "notebook_name": "a.ipynb"}
        )
        assert not result.is_error and "hello-from-shell" in text_of(result), text_of(result)
        assert "`!echo hello-from-shell`" in person.asked[-1]
        await ok(client, "restart_notebook", {"notebook_name": "a.ipynb"})
        assert "Restart the kernel of 'a.ipynb'" in person.asked[-1]
        await ok(client, "unuse_notebook", {"notebook_name": "a.ipynb"})
        assert "Release 'a.ipynb'" in person.asked[-1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "person",
    [
        Person("decline"),
        Person("cancel"),
        Person("accept", {"approve": False}),
        Person("accept", {"approve": "yes"}),
    ],
    ids=["decline", "cancel", "approve-false", "off-schema"],
)
async def test_anything_but_approval_is_declined(
    workspace: Path, mode: str, person: Person
) -> None:
    path = notebook(workspace)
    before = path.read_bytes()
    async with serve(
        workspace, *ARGS, mode=mode, env=ASKING, elicitation_callback=person
    ) as client:
        result = await client.call_tool("delete_cell", DELETE)
        assert error_code(result) == "declined", text_of(result)
        assert result.meta[ERROR_KEY]["action"] == "cells.delete"
        assert "nothing was done" in text_of(result)
        result = await client.call_tool(
            "insert_execute_code_cell",
            {"notebook_name": "a.ipynb", "cell_index": -1, "cell_source": "%pip list"},
        )
        assert error_code(result) == "declined", text_of(result)
    assert path.read_bytes() == before


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_cannot_be_asked(workspace: Path, mode: str) -> None:
    path = notebook(workspace)
    before = path.read_bytes()
    async with serve(
        workspace, *ARGS, "--capability", "approvals=ask", mode=mode, env=ASKING
    ) as client:
        result = await client.call_tool("delete_cell", DELETE)
        assert error_code(result) == "approval_required", text_of(result)
        assert "approvals=ask-or-allow" in text_of(result)
    assert path.read_bytes() == before
    # The default policy: a client that cannot be asked keeps working as it did.
    async with serve(workspace, *ARGS, mode=mode, env=ASKING) as client:
        await ok(client, "delete_cell", DELETE)
    assert cell_ids(path) == ["c0", "c2"]
    async with serve(
        workspace, *ARGS, "--capability", "approvals=off", mode=mode, env=ASKING
    ) as client:
        await ok(client, "delete_cell", {"notebook_name": "a.ipynb", "cell_indices": [0]})
    assert cell_ids(path) == ["c2"]


async def test_the_configured_actions_and_an_unanswered_question(workspace: Path) -> None:
    path = notebook(workspace)
    async with serve(workspace, *ARGS, env={"JUPYTER_MCP_APPROVE": "kernel.restart"}) as client:
        await ok(client, "delete_cell", DELETE)  # not in the list: not asked, no callback needed
    slow = Person(delay=3)
    async with serve(
        workspace,
        *ARGS,
        env={**ASKING, "JUPYTER_MCP_APPROVAL_TIMEOUT": "1"},
        elicitation_callback=slow,
    ) as client:
        result = await client.call_tool(
            "delete_cell", {"notebook_name": "a.ipynb", "cell_ids_to_delete": ["c0"]}
        )
        assert error_code(result) == "declined" and "within 1 s" in text_of(result), text_of(result)
    assert cell_ids(path) == ["c0", "c2"]


async def test_a_stateless_round_is_answered_once(workspace: Path) -> None:
    """2026-07-28 by hand: the state of an answered round cannot be replayed, nor tampered with."""
    path = notebook(workspace)
    audit = workspace.parent / "audit.jsonl"
    async with serve(
        workspace,
        *ARGS,
        "--audit-log",
        str(audit),
        mode="2026-07-28",
        env=ASKING,
        elicitation_callback=Person(),
    ) as client:
        first = await client.session.call_tool("delete_cell", DELETE, allow_input_required=True)
        assert isinstance(first, InputRequiredResult)
        ((key, request),) = first.input_requests.items()
        assert request.method == "elicitation/create" and "c1" in request.params.message
        accept = {key: ElicitResult(action="accept", content={"approve": True})}
        with pytest.raises(Exception, match="requestState"):
            await client.session.call_tool(
                "delete_cell",
                DELETE,
                input_responses=accept,
                request_state=first.request_state + "x",
                allow_input_required=True,
            )
        done = await client.session.call_tool(
            "delete_cell",
            DELETE,
            input_responses=accept,
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert not done.is_error, text_of(done)
        assert cell_ids(path) == ["c0", "c2"]
        shell = {"code": "!echo once", "notebook_name": "a.ipynb"}
        asked = await client.session.call_tool("execute_code", shell, allow_input_required=True)
        ((key, _),) = asked.input_requests.items()
        accept = {key: ElicitResult(action="accept", content={"approve": True})}
        ran = await client.session.call_tool(
            "execute_code",
            shell,
            input_responses=accept,
            request_state=asked.request_state,
            allow_input_required=True,
        )
        assert "once" in text_of(ran)
        with pytest.raises(Exception, match="requestState"):
            await client.session.call_tool(
                "execute_code",
                shell,
                input_responses=accept,
                request_state=asked.request_state,
                allow_input_required=True,
            )
        # An answer to a question that was never asked is not an approval: it is asked.
        again = await client.session.call_tool(
            "delete_cell",
            {"notebook_name": "a.ipynb", "cell_ids_to_delete": ["c0"]},
            input_responses=accept,
            allow_input_required=True,
        )
        assert isinstance(again, InputRequiredResult)
    assert cell_ids(path) == ["c0", "c2"]
    outcomes = [
        json.loads(line)["outcome"]
        for line in audit.read_text().splitlines()
        if '"delete_cell"' in line
    ]
    assert outcomes[0] == "input_required" and "ok" in outcomes


@pytest.mark.parametrize("mode", MODES)
async def test_approvals_over_http(extensions_site, tmp_path: Path, mode: str) -> None:
    """Over streamable HTTP: a session's elicitation on 2025-11-25, stateless rounds on 2026-07-28."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from test_http import http_server

    with http_server(
        tmp_path, extensions_site, "--capability", "kernel.prestart=off", **ASKING
    ) as server:
        path = notebook(server.workspace)
        for person, expected in ((Person("decline"), "declined"), (Person(), None)):
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
                Client(
                    streamable_http_client(server.url(), http_client=http),
                    mode=mode,
                    elicitation_callback=person,
                ) as client,
            ):
                result = await client.call_tool("delete_cell", DELETE)
                assert error_code(result) == expected, text_of(result)
                assert "c1" in person.asked[0]
        assert cell_ids(path) == ["c0", "c2"]


async def test_json_lines_cannot_ask(workspace: Path) -> None:
    """A JSON-lines client can never be asked: the policy decides, and secrets are masked there too."""
    from test_jsonlines import json_lines_server

    notebook(workspace)
    planted = "sk-proj-" + "J7" * 20
    async with json_lines_server(
        workspace,
        "--capability",
        "kernel.prestart=off",
        "--capability",
        "approvals=ask",
        env={**ASKING, "OPENAI_API_KEY": planted},
    ) as lines:
        await lines.call("open", path="a.ipynb")
        refused = await lines.refused(
            "execute", "approval_required", path="a.ipynb", code="!echo hi"
        )
        assert refused["action"] == "code.shell" and "!echo hi" in refused["message"]
        ran = await lines.call(
            "execute", path="a.ipynb", code="import os; print(os.environ['OPENAI_API_KEY'])"
        )
        assert planted not in json.dumps(ran) and "[redacted: OPENAI_API_KEY]" in json.dumps(ran)
        assert not any(planted in line.decode() for line in lines.lines)
        await lines.refused("restart", "approval_required", path="a.ipynb")
        await lines.call("shutdown")
