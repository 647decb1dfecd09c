"""Every caller known, and agents that never step on each other (issue 28, items 3 and 4).

The real server, over stdio and streamable HTTP, with the official client:

- the audit log and each history entry name the caller (user, client, session), and an entry
  written before callers were named still reads;
- two agents of one person, with one token and the same client, over stateless HTTP
  (2026-07-28): each is told its own agent handle, each writes its own notebook 200 times at
  the same time as the other and never into the other's, and neither's use_notebook moves
  the other's current notebook; being one caller (one person, one client), either may follow
  a detached run or task of the other's whose id it holds (test_returning_callers.py has
  other people and other clients refused);
- two detached runs on two notebooks that share one kernel take turns on it.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import nbformat
from conftest import ok, serve, text_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Implementation,
)
from test_protocol import ANSWER, TASK_ENV, CreatedTask, Tasks, http_server, write_notebook

from jupyter_mcp_server._calls.callers import AGENT_META_KEY

TOKEN = "one-token-for-both-agents"
SAME_CLIENT = Implementation(name="claude-code", version="2.1")
RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")


async def test_the_audit_log_and_the_history_name_the_caller(workspace: Path, tmp_path: Path):
    audit = tmp_path / "audit.jsonl"
    history_dir = tmp_path / "history"
    user = getpass.getuser()
    async with serve(
        workspace,
        "--audit-log",
        str(audit),
        "--history-dir",
        str(history_dir),
        "--toolsets",
        "history",
        client_info=Implementation(name="agent-x", version="1"),
    ) as client:
        await ok(client, "use_notebook", {"notebook_name": "named.ipynb", "mode": "create"})
        await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "code", "cell_source": "1 + 1"},
        )
        await ok(client, "execute_code", {"code": "print('who ran me')"})
        history = await ok(client, "notebook_history", {"notebook_name": "named.ipynb"})
        newest = history["entries"][0]
        assert newest["tool"] == "insert_cell"
        assert (newest["user"], newest["client"], newest["connection"]) == (
            user,
            "agent-x",
            "stdio",
        )
        said = text_of(await client.call_tool("notebook_history", {}))
        assert f"insert_cell by agent-x for {user}" in said

        # An entry written before callers were named (no user) still reads.
        (entries,) = list(history_dir.rglob("entries.jsonl"))
        lines = entries.read_text().splitlines()
        old = json.loads(lines[0])
        del old["user"]
        entries.write_text("\n".join([json.dumps(old), *lines[1:]]) + "\n")
        again = await ok(client, "notebook_history", {"notebook_name": "named.ipynb"})
        assert again["entries"][-1]["user"] is None and again["entries"][0]["user"] == user

    records = [json.loads(line) for line in audit.read_text().splitlines()]
    calls = [r for r in records if r["event"] == "tool_call"]
    assert [r["tool"] for r in calls][:3] == ["use_notebook", "insert_cell", "execute_code"]
    expected = {"user": user, "client": "agent-x", "session": "stdio"}
    assert all(r["caller"] == expected for r in calls), calls
    (execution,) = [r for r in records if r["event"] == "execution"]
    assert execution["caller"] == expected and "who ran me" in execution["code"]


@asynccontextmanager
async def agent(
    url: str, *, token: str = TOKEN, client_info: Implementation = SAME_CLIENT
) -> AsyncIterator[Client]:
    """A 2026-07-28 client over stateless HTTP, with the shared token and the same client info."""
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
        ) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="auto",
            extensions=[Tasks()],
            client_info=client_info,
        ) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        yield client


async def call(client: Client, me: dict[str, str] | None, tool: str, arguments: dict) -> Any:
    return await client.call_tool(tool, arguments, meta=me)


async def ok_as(client: Client, me: dict[str, str] | None, tool: str, arguments: dict) -> dict:
    result = await call(client, me, tool, arguments)
    assert not result.is_error, f"{tool}: {text_of(result)}"
    if me is not None:  # the server says back the handle in force
        assert (result.meta or {}).get(AGENT_META_KEY) == me[AGENT_META_KEY]
    return result.structured_content


async def refused_as(
    client: Client, me: dict[str, str] | None, tool: str, arguments: dict, code: str
):
    result = await call(client, me, tool, arguments)
    assert (
        result.is_error and (result.meta or {}).get("io.jupyter-mcp/error", {}).get("code") == code
    ), text_of(result)
    return result


async def task_request(client: Client, me: dict[str, str] | None, request: Any) -> dict:
    return await client.session.send_request(request, ANSWER)


def get_task(task_id: str, me: dict[str, str] | None) -> GetTaskRequest:
    return GetTaskRequest(params=GetTaskRequestParams(task_id=task_id, _meta=me))


def cancel_task(task_id: str, me: dict[str, str] | None) -> CancelTaskRequest:
    return CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id, _meta=me))


async def handle_of(client: Client) -> dict[str, str]:
    """The agent handle the server gives a stateless caller that brought none."""
    result = await client.call_tool("list_notebooks", {})
    assert not result.is_error, text_of(result)
    handle = (result.meta or {}).get(AGENT_META_KEY)
    assert isinstance(handle, str) and len(handle) >= 16
    return {AGENT_META_KEY: handle}


async def test_two_agents_with_one_token_never_step_on_each_other(workspace: Path):
    write_notebook(workspace / "a.ipynb", [])
    write_notebook(workspace / "b.ipynb", [])
    audit = workspace.parent / "stateless-audit.jsonl"
    with http_server(
        workspace, "--mcp-token", TOKEN, "--audit-log", str(audit), *RUNS[2:], **TASK_ENV
    ) as base:
        url = base + "?runs"
        async with agent(url) as first, agent(url) as second:
            a, b = await handle_of(first), await handle_of(second)
            assert a != b

            # Each writes its own notebook 200 times, both at once.
            async def write(client: Client, me: dict[str, str], path: str, mark: str) -> None:
                for i in range(200):
                    await ok_as(
                        client,
                        me,
                        "insert_cell",
                        {
                            "cell_index": -1,
                            "cell_type": "markdown",
                            "cell_source": f"{mark} {i}",
                            "notebook_name": path,
                        },
                    )

            started = time.monotonic()
            await asyncio.gather(write(first, a, "a.ipynb", "A"), write(second, b, "b.ipynb", "B"))
            elapsed = time.monotonic() - started
            for path, mark in (("a.ipynb", "A"), ("b.ipynb", "B")):
                cells = nbformat.read(str(workspace / path), as_version=4).cells
                assert [c.source for c in cells] == [f"{mark} {i}" for i in range(200)], path
            print(f"400 stateless writes by two agents in {elapsed:.1f} s")
            # The audit log tells the two apart: the same person and client (the client info
            # each stateless request carries), two sessions, 200 writes each.
            writes = [
                json.loads(line)["caller"]
                for line in audit.read_text().splitlines()
                if json.loads(line).get("tool") == "insert_cell"
            ]
            assert {(w["user"], w["client"]) for w in writes} == {
                (getpass.getuser(), SAME_CLIENT.name)
            }
            sessions = [w["session"] for w in writes]
            assert len(set(sessions)) == 2 and sorted(sessions.count(x) for x in set(sessions)) == [
                200,
                200,
            ]

            # Nothing stateless is remembered: one agent's use_notebook redirects nobody's writes.
            await ok_as(first, a, "use_notebook", {"notebook_name": "b.ipynb"})
            await refused_as(
                second,
                b,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "x"},
                "no_notebook",
            )

            # A detached run of the first agent's. The second agent is the same person through
            # the same client, one caller by every identity the server has: holding the run's
            # id, it may follow it, with its handle or without one (as the first may from a
            # new connection, test_returning_callers.py); nobody else can.
            run = await ok_as(
                first,
                a,
                "execute_code",
                {
                    "code": "import time\ntime.sleep(3)\nprint('first agent')",
                    "notebook_name": "a.ipynb",
                    "detach": True,
                },
            )
            for me in (b, None):
                seen = await ok_as(second, me, "get_run", {"run_id": run["run_id"]})
                assert seen["run_id"] == run["run_id"]
            await ok_as(first, None, "get_run", {"run_id": run["run_id"]})

            # A task of the first agent's: the same.
            created = await first.session.call_tool(
                "execute_code",
                {
                    "code": "import time\ntime.sleep(2)\nprint('my task')",
                    "notebook_name": "a.ipynb",
                },
                meta=a,
                allow_claimed=True,
            )
            assert isinstance(created, CreatedTask)
            for me in (b, None):
                seen = await task_request(second, me, get_task(created.task_id, me))
                assert seen["taskId"] == created.task_id

            # Their owner follows both to the end.
            deadline = time.monotonic() + 60
            while (task := await task_request(first, a, get_task(created.task_id, a)))[
                "status"
            ] not in ("completed", "failed", "cancelled"):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)
            assert task["status"] == "completed"
            assert "my task" in text_of(CallToolResult.model_validate(task["result"]))
            final = await ok_as(first, a, "get_run", {"run_id": run["run_id"], "wait_seconds": 30})
            while final["status"] not in ("completed", "failed", "cancelled"):
                final = await ok_as(
                    first, a, "get_run", {"run_id": run["run_id"], "wait_seconds": 30}
                )
            assert final["status"] == "completed" and final["result"]["status"] == "ok"


async def test_detached_runs_on_two_notebooks_sharing_a_kernel_queue(workspace: Path):
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "one.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "shared = 1"})
        kernel_id = (await ok(client, "list_notebooks", {}))["notebooks"]
        kernel_id = next(n["kernel_id"] for n in kernel_id if n["notebook_path"] == "one.ipynb")
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "two.ipynb", "mode": "create", "kernel_id": kernel_id},
        )
        first = await ok(
            client,
            "execute_code",
            {
                "code": "import time\ntime.sleep(3)\nprint('one done', time.time())",
                "notebook_name": "one.ipynb",
                "detach": True,
            },
        )
        second = await ok(
            client,
            "execute_code",
            {
                "code": "import time\nprint('two starts', time.time())\nshared",
                "notebook_name": "two.ipynb",
                "detach": True,
            },
        )
        waiting = await ok(client, "get_run", {"run_id": second["run_id"]})
        assert waiting["status"] == "queued" and waiting["queue_position"] == 1, waiting
        states = {}
        for run in (first, second):
            state = await ok(client, "get_run", {"run_id": run["run_id"], "wait_seconds": 30})
            while state["status"] not in ("completed", "failed", "cancelled"):
                state = await ok(client, "get_run", {"run_id": run["run_id"], "wait_seconds": 30})
            assert state["status"] == "completed", state
            states[run["run_id"]] = text_of(
                await client.call_tool("get_run", {"run_id": run["run_id"]})
            )
        one_done = float(states[first["run_id"]].split("one done ")[1].split()[0])
        two_starts = float(states[second["run_id"]].split("two starts ")[1].split()[0])
        assert two_starts >= one_done, "the second run started before the first ended"


async def test_a_stateless_agents_handle_keeps_its_current_notebook_and_only_its_own(
    workspace: Path,
):
    """use_notebook on a stateless request is remembered for the agent handle it carries:
    each agent writes to its own current notebook without naming it, and a request with no
    handle, or another token presenting the same handle, has no current notebook."""
    write_notebook(workspace / "a.ipynb", [])
    write_notebook(workspace / "b.ipynb", [])
    with http_server(workspace, "--mcp-token", TOKEN, "--capability", "kernel.prestart=off") as url:
        async with agent(url) as first, agent(url) as second:
            a, b = await handle_of(first), await handle_of(second)
            await ok_as(first, a, "use_notebook", {"notebook_name": "a.ipynb", "mode": "connect"})
            await ok_as(second, b, "use_notebook", {"notebook_name": "b.ipynb", "mode": "connect"})
            for i in range(3):
                for client, me, mark in ((first, a, "A"), (second, b, "B")):
                    await ok_as(
                        client,
                        me,
                        "insert_cell",
                        {"cell_index": -1, "cell_type": "markdown", "cell_source": f"{mark}{i}"},
                    )
            for path, mark in (("a.ipynb", "A"), ("b.ipynb", "B")):
                cells = nbformat.read(str(workspace / path), as_version=4).cells
                assert [c.source for c in cells] == [f"{mark}{i}" for i in range(3)], path
            without = {"cell_index": -1, "cell_type": "markdown", "cell_source": "lost"}
            await refused_as(first, None, "insert_cell", without, "no_notebook")
    # The same handle from another client is another caller: nothing of the first's.
    with http_server(workspace, "--mcp-token", TOKEN, "--capability", "kernel.prestart=off") as url:
        async with agent(url) as first:
            mine = {AGENT_META_KEY: "agent-shared-handle-0123456789"}
            await ok_as(
                first, mine, "use_notebook", {"notebook_name": "a.ipynb", "mode": "connect"}
            )
            await ok_as(
                first,
                mine,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "1"},
            )
        other = Implementation(name="another-client", version="1")
        async with agent(url, client_info=other) as stranger:
            refused = await call(stranger, mine, "insert_cell", without)
            assert refused.is_error, text_of(refused)
    assert "lost" not in (workspace / "a.ipynb").read_text()


async def test_a_history_entry_names_an_http_session_by_a_hash_not_its_id(workspace: Path):
    """The history file is read by whoever can read the notebook's folder: it tells sessions
    apart without holding a session id, which would let a reader act as that session."""
    write_notebook(workspace / "h.ipynb", [])
    with http_server(workspace, "--mcp-token", TOKEN, "--capability", "kernel.prestart=off") as url:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
            Client(
                streamable_http_client(url + "?history", http_client=http), mode="legacy"
            ) as client,
        ):
            cell = {"notebook_name": "h.ipynb", "cell_index": -1, "cell_type": "code"}
            await ok(client, "insert_cell", {**cell, "cell_source": "1"})
            await ok(client, "insert_cell", {**cell, "cell_source": "2"})
            history = await ok(client, "notebook_history", {"notebook_name": "h.ipynb"})
    named = {e["connection"] for e in history["entries"] if e["tool"] == "insert_cell"}
    assert len(named) == 1, named  # one session, named the same way each time
    (label,) = named
    assert len(label) == 16 and all(c in "0123456789abcdef" for c in label), label
