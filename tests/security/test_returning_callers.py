"""Agents that come back: a stateless agent keeps its notebook, a reconnected client its runs.

Claude Code and GitHub Copilot CLI speak 2026-07-28 over streamable HTTP without a session,
and pass nothing back between calls (no agent handle). The real server, over streamable
HTTP, the official `mcp` client, real kernels:

- an identified caller (the ``--mcp-token`` holder; a token the OpenID provider signed) keeps
  the notebook it chose with ``use_notebook`` on its next stateless calls, on any connection,
  and only it: another client of the same person, another person, an agent handle, a session
  each have their own;
- an anonymous stateless caller (a loopback server without a token) is told that nothing is
  remembered and to name the notebook on every call, and two of them never share one;
- a client that reconnects (a new HTTP session, or stateless) follows, reads and cancels its
  own detached runs and tasks by their id; another person, another client of the same person,
  and an anonymous caller are told they do not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import nbformat
import pytest
from conftest import error_code, text_of
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Implementation,
)
from test_authorization import AUDIENCE, mint, provider
from test_http import MCP_HEADERS, HttpServer
from test_http import http_server as site_server
from test_protocol import ANSWER, TASK_ENV, CreatedTask, Tasks, http_server, write_notebook

from jupyter_mcp_server._calls.callers import AGENT_META_KEY

__all__ = ["provider"]  # the module fixture, used by name

TOKEN = "the-one-mcp-token"
CLAUDE = Implementation(name="claude-code", version="2.1")
COPILOT = Implementation(name="copilot-cli", version="1.0")
NO_PRESTART = ("--capability", "kernel.prestart=off")
#: What the server used to promise a stateless caller, and then forgot.
FALSE_PROMISE = "this connection's current notebook"
A_CELL = {"cell_index": -1, "cell_type": "code", "cell_source": "1"}
SLOW = "import time\nfor i in range(8):\n    print('tick', i, flush=True)\n    time.sleep(0.5)"


@contextlib.asynccontextmanager
async def stateless(
    url: str, *, token: str | None = None, client_info: Implementation = CLAUDE
) -> AsyncIterator[Client]:
    """A 2026-07-28 client over stateless HTTP on a connection of its own, passing nothing
    back between calls (as Claude Code and Copilot CLI do)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="auto",
            extensions=[Tasks()],
            client_info=client_info,
        ) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        yield client


@contextlib.asynccontextmanager
async def session(
    url: str, *, token: str | None = None, client_info: Implementation = CLAUDE
) -> AsyncIterator[Client]:
    """A 2025-11-25 client: an HTTP session of its own, which ends when it leaves."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        Client(
            streamable_http_client(url, http_client=http), mode="legacy", client_info=client_info
        ) as client,
    ):
        yield client


async def ok(client: Client, tool: str, arguments: dict[str, Any], meta: Any = None) -> Any:
    result = await client.call_tool(tool, arguments, meta=meta)
    assert not result.is_error, f"{tool}: {text_of(result)}"
    return result


async def refused(client: Client, tool: str, arguments: dict[str, Any], code: str) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and error_code(result) == code, f"{tool}: {text_of(result)}"
    return text_of(result)


def sources(path: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(str(path), as_version=4).cells]


async def follow(client: Client, run_id: str, seconds: float = 60) -> dict[str, Any]:
    """get_run until the run ends."""
    deadline = time.monotonic() + seconds
    while True:
        state = (
            await ok(client, "get_run", {"run_id": run_id, "wait_seconds": 5})
        ).structured_content
        if state["status"] in ("completed", "failed", "cancelled"):
            return state
        assert time.monotonic() < deadline, state


def get_task(task_id: str) -> GetTaskRequest:
    return GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))


def cancel_task(task_id: str) -> CancelTaskRequest:
    return CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))


async def task_hidden(client: Client, task_id: str) -> None:
    """The task is unknown to this caller: tasks/get and tasks/cancel answer -32602."""
    for request in (get_task(task_id), cancel_task(task_id)):
        with pytest.raises(MCPError) as hidden:
            await client.session.send_request(request, ANSWER)
        assert hidden.value.error.code == -32602, hidden.value


async def task_done(client: Client, task_id: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        task = await client.session.send_request(get_task(task_id), ANSWER)
        if task["status"] in ("completed", "failed", "cancelled"):
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.2)


# --- Problem 1: the current notebook of a stateless agent ------------------------------------


async def test_a_stateless_agent_keeps_its_notebook_by_its_token_and_client(workspace: Path):
    write_notebook(workspace / "a.ipynb", [])
    write_notebook(workspace / "b.ipynb", [])
    with http_server(workspace, "--mcp-token", TOKEN, *NO_PRESTART) as url:
        async with stateless(url, token=TOKEN) as claude:
            used = await ok(claude, "use_notebook", {"notebook_name": "a.ipynb"})
            said = text_of(used)
            assert FALSE_PROMISE not in said and "current notebook of claude-code" in said, said
            await ok(
                claude, "insert_execute_code_cell", {"cell_index": -1, "cell_source": "x = 20"}
            )
            ran = await ok(claude, "execute_code", {"code": "x + 22"})
            assert "42" in text_of(ran)
        # The same client on a new connection (the agent restarted, its HTTP client too).
        async with stateless(url, token=TOKEN) as claude_again:
            await ok(claude_again, "insert_cell", {**A_CELL, "cell_source": "again"})
            listed = (await ok(claude_again, "list_notebooks", {})).structured_content
            assert [n["notebook_path"] for n in listed["notebooks"] if n["current"]] == ["a.ipynb"]

        # Another client of the same person, with the same token: a current notebook of its own.
        async with stateless(url, token=TOKEN, client_info=COPILOT) as copilot:
            said = await refused(copilot, "insert_cell", A_CELL, "no_notebook")
            assert "use_notebook" in said
            await ok(copilot, "use_notebook", {"notebook_name": "b.ipynb"})
            await ok(copilot, "insert_cell", {**A_CELL, "cell_source": "copilot"})
        # An agent that passes an agent handle back is that agent, apart from the client's own.
        handled = {AGENT_META_KEY: "agent-returning-callers-0123456789"}
        async with stateless(url, token=TOKEN) as claude_with_handle:
            result = await claude_with_handle.call_tool("insert_cell", A_CELL, meta=handled)
            assert error_code(result) == "no_notebook", text_of(result)
        # A 2025-11-25 session is its own connection, as it always was.
        async with session(url, token=TOKEN) as legacy:
            await refused(legacy, "insert_cell", A_CELL, "no_notebook")
        # Copilot's choice moved nothing of Claude Code's.
        async with stateless(url, token=TOKEN) as claude_last:
            await ok(claude_last, "insert_cell", {**A_CELL, "cell_source": "last"})
    assert sources(workspace / "a.ipynb") == ["x = 20", "again", "last"]
    assert sources(workspace / "b.ipynb") == ["copilot"]


async def test_an_anonymous_stateless_agent_is_told_to_name_its_notebook(workspace: Path):
    """A loopback server without a token is open to every process of the machine, each naming
    itself as it likes: nothing tells one anonymous client from another, so nothing is
    remembered for a stateless one, and the result says so rather than promising it."""
    write_notebook(workspace / "a.ipynb", [])
    with http_server(workspace, *NO_PRESTART) as base:
        url = base + "?runs"
        async with stateless(url) as first, stateless(url) as second:
            said = text_of(await ok(first, "use_notebook", {"notebook_name": "a.ipynb"}))
            assert FALSE_PROMISE not in said, said
            assert "remembers no notebook" in said and "notebook_name='a.ipynb'" in said, said
            for client in (first, second):
                told = await refused(client, "insert_cell", A_CELL, "no_notebook")
                assert "Pass notebook_name" in told and "Call use_notebook first" not in told
            await ok(first, "insert_cell", {**A_CELL, "notebook_name": "a.ipynb"})
            # A detached run of an anonymous agent's session is its session's: another
            # session, even one naming the same client, is told it does not exist.
            async with session(url) as started:
                run = (
                    await ok(
                        started,
                        "execute_code",
                        {"code": "print('anonymous')", "notebook_name": "a.ipynb", "detach": True},
                    )
                ).structured_content
                assert (await follow(started, run["run_id"]))["status"] == "completed"
            async with session(url) as stranger:
                await refused(stranger, "get_run", {"run_id": run["run_id"]}, "not_found")
            await refused(first, "get_run", {"run_id": run["run_id"]}, "not_found")
    assert sources(workspace / "a.ipynb") == ["1"]


# --- Problem 2: runs and tasks followed from a new connection --------------------------------


async def test_a_client_that_reconnects_follows_and_cancels_its_own_runs(workspace: Path):
    write_notebook(workspace / "r.ipynb", [])
    with http_server(workspace, "--mcp-token", TOKEN, *NO_PRESTART, **TASK_ENV) as base:
        url = base + "?runs"
        async with session(url, token=TOKEN) as first:
            long = (
                await ok(
                    first,
                    "execute_code",
                    {
                        "code": "import time\nprint('started', flush=True)\ntime.sleep(60)",
                        "notebook_name": "r.ipynb",
                        "detach": True,
                    },
                )
            ).structured_content
            short = (
                await ok(
                    first,
                    "execute_code",
                    {"code": SLOW, "notebook_name": "r.ipynb", "detach": True},
                )
            ).structured_content
            while "started" not in json.dumps(
                (
                    await ok(first, "get_run", {"run_id": long["run_id"], "wait_seconds": 5})
                ).structured_content["outputs"]
            ):
                pass
        # The session is gone. Another client of the same person, holding the ids: nothing.
        async with session(url, token=TOKEN, client_info=COPILOT) as copilot:
            for run in (long, short):
                for tool in ("get_run", "cancel_run"):
                    await refused(copilot, tool, {"run_id": run["run_id"]}, "not_found")
        async with stateless(url, token=TOKEN, client_info=COPILOT) as copilot:
            await refused(copilot, "cancel_run", {"run_id": long["run_id"]}, "not_found")
        # The client itself, on a new session: it reads the run and cancels it.
        async with session(url, token=TOKEN) as second:
            working = (
                await ok(second, "get_run", {"run_id": long["run_id"], "since_output": 0})
            ).structured_content
            assert working["status"] == "working" and "started" in json.dumps(working["outputs"])
            cancelled = (
                await ok(second, "cancel_run", {"run_id": long["run_id"]})
            ).structured_content
            assert cancelled["status"] == "cancelled", cancelled
        # And statelessly, on yet another connection: the queued run, to its end.
        async with stateless(url, token=TOKEN) as third:
            final = await follow(third, short["run_id"])
            assert final["status"] == "completed" and final["result"]["status"] == "ok"
            assert "tick 7" in text_of(
                await third.call_tool("get_run", {"run_id": short["run_id"]})
            )

            # A task, the same way: started statelessly, followed from another connection.
            created = await third.session.call_tool(
                "execute_code", {"code": SLOW, "notebook_name": "r.ipynb"}, allow_claimed=True
            )
            assert isinstance(created, CreatedTask)
        async with stateless(url, token=TOKEN, client_info=COPILOT) as copilot:
            await task_hidden(copilot, created.task_id)
        async with stateless(url, token=TOKEN) as fourth:
            task = await task_done(fourth, created.task_id)
            assert task["status"] == "completed", task
            assert "tick 7" in text_of(CallToolResult.model_validate(task["result"]))
        # Nobody without the token reaches the server at all.
        anonymous = httpx.post(
            base,
            headers=MCP_HEADERS,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}},
        )
        assert anonymous.status_code == 401


# --- Signed in with an OpenID provider: other people, other clients --------------------------


@pytest.fixture(scope="module")
def signed_in_server(provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("returning-callers")
    with site_server(
        root,
        None,  # type: ignore[arg-type] - no extension site: the core tools alone
        *NO_PRESTART,
        "--auth-issuer",
        provider.issuer,
        JUPYTER_MCP_EXTENSIONS="",
        **TASK_ENV,
    ) as running:
        yield running


def signed(provider: Any, server: HttpServer, user: str, client: str) -> str:
    """A token the provider's key signed, for `user` through `client`."""
    AUDIENCE[:] = [server.url()]
    return mint(provider, sub=user, client_id=client, aud=server.url())


async def test_signed_in_callers_keep_their_own_notebook_and_runs(signed_in_server, provider):
    server = signed_in_server
    write_notebook(server.workspace / "dana.ipynb", [])
    write_notebook(server.workspace / "erin.ipynb", [])
    url = server.url("runs")
    dana = signed(provider, server, "dana", "bot-a")
    dana_elsewhere = signed(provider, server, "dana", "bot-b")
    erin = signed(provider, server, "erin", "bot-a")

    # Each person's current notebook, kept across connections; the client info a client
    # declares about itself changes nothing (the token names the client).
    async with stateless(url, token=dana, client_info=COPILOT) as first:
        await ok(first, "use_notebook", {"notebook_name": "dana.ipynb"})
    async with stateless(url, token=dana) as again:
        await ok(again, "insert_cell", {**A_CELL, "cell_source": "dana's"})
    for token in (erin, dana_elsewhere):
        async with stateless(url, token=token) as other:
            await refused(other, "insert_cell", A_CELL, "no_notebook")
    async with stateless(url, token=erin) as erins:
        await ok(erins, "use_notebook", {"notebook_name": "erin.ipynb"})
        await ok(erins, "insert_cell", {**A_CELL, "cell_source": "erin's"})
    assert sources(server.workspace / "dana.ipynb") == ["dana's"]
    assert sources(server.workspace / "erin.ipynb") == ["erin's"]

    # Dana's run, started in a session that then ends.
    async with session(url, token=dana) as started:
        run = (
            await ok(
                started,
                "execute_code",
                {"code": SLOW, "notebook_name": "dana.ipynb", "detach": True},
            )
        ).structured_content
    async with stateless(url, token=dana) as tasked:
        created = await tasked.session.call_tool(
            "execute_code", {"code": SLOW, "notebook_name": "dana.ipynb"}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask)
    # Another person through the same client, and Dana through another client: unknown.
    for token in (erin, dana_elsewhere):
        async with session(url, token=token) as other:
            for tool in ("get_run", "cancel_run"):
                await refused(other, tool, {"run_id": run["run_id"]}, "not_found")
        async with stateless(url, token=token) as other:
            await refused(other, "cancel_run", {"run_id": run["run_id"]}, "not_found")
            await task_hidden(other, created.task_id)
    # Nobody signed out reaches it.
    anonymous = httpx.post(
        url,
        headers=MCP_HEADERS,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_run", "arguments": {"run_id": run["run_id"]}},
        },
    )
    assert anonymous.status_code == 401
    # Dana, from new connections, follows both to their end.
    async with session(url, token=dana) as back:
        final = await follow(back, run["run_id"])
        assert final["status"] == "completed" and final["result"]["status"] == "ok", final
    async with stateless(url, token=dana) as back:
        task = await task_done(back, created.task_id)
        assert task["status"] == "completed", task
        assert "tick 7" in text_of(CallToolResult.model_validate(task["result"]))
