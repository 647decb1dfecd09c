"""Detached runs: `detach=true` answers at once, `get_run` follows the run from any connection of
the same agent (its agent handle in `_meta`), `cancel_run` interrupts it, runs on one kernel
queue in order, and the queue is bounded.

The long run is real: a 20-second cell printing every second, started over HTTP by a client
that then disconnects; a second connection of the same agent polls it to the end, and every
output is in the notebook.
"""

from __future__ import annotations

import asyncio
import json
import time

import nbformat
from conftest import error_code, ok, refused, serve, text_of
from mcp import Client
from mcp.types import Implementation
from test_protocol import http_server

from jupyter_mcp_server._calls.callers import AGENT_META_KEY

RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")
AGENT = Implementation(name="agent", version="1")
OTHER = Implementation(name="someone-else", version="1")

TWENTY_SECONDS = "import time\nfor i in range(20):\n    print('tick', i, flush=True)\n    time.sleep(1)\nprint('done')"


async def ok_as(client: Client, meta: dict | None, tool: str, arguments: dict) -> dict:
    """`ok`, the call carrying `meta` (an agent handle)."""
    if meta is None:
        return await ok(client, tool, arguments)
    result = await client.call_tool(tool, arguments, meta=meta)
    assert not result.is_error, text_of(result)
    return result.structured_content


async def poll(client: Client, run_id: str, seconds: float = 90, meta: dict | None = None) -> dict:
    """get_run until the run ends, checking that since_output only ever brings what is new."""
    deadline = time.monotonic() + seconds
    since = 0
    seen: list[str] = []
    while True:
        state = await ok_as(
            client, meta, "get_run", {"run_id": run_id, "since_output": since, "wait_seconds": 5}
        )
        assert state["next_output"] >= since
        seen.extend(json.dumps(output) for output in state["outputs"])
        since = state["next_output"]
        if state["status"] in ("completed", "failed", "cancelled"):
            state["seen"] = seen
            return state
        assert time.monotonic() < deadline, state


async def test_a_detached_run_outlives_its_connection(workspace):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("x = 41"),
        nbformat.v4.new_code_cell(TWENTY_SECONDS),
        nbformat.v4.new_code_cell("x + 1"),
    ]
    nbformat.write(notebook, str(workspace / "long.ipynb"))
    with http_server(workspace, "--capability", "kernel.prestart=off") as base:
        url = base + "?runs"
        # The agent names itself (its handle), so its next connection is the same agent.
        me = {AGENT_META_KEY: "agent-test-handle-0123456789"}
        async with Client(url, mode="legacy", client_info=AGENT) as first:
            await ok(first, "use_notebook", {"notebook_name": "long.ipynb"})
            started = time.monotonic()
            answer = await first.call_tool("run_cells", {"detach": True}, meta=me)
            assert time.monotonic() - started < 10, "detach must answer at once"
            assert not answer.is_error, text_of(answer)
            run = answer.structured_content
            assert run["status"] == "running" and run["cells_selected"] == 3 and run["cells"] == []
            run_id = run["run_id"]
            assert "get_run" in text_of(answer)
            # Running: the first outputs arrive, then the client goes away.
            while True:
                state = await ok_as(first, me, "get_run", {"run_id": run_id, "wait_seconds": 5})
                if state["status"] == "working" and state["next_output"] > 0:
                    break
        # Another client is told the run does not exist; so is the same client without the
        # handle (another session of it: another agent, perhaps).
        async with Client(url, mode="legacy", client_info=OTHER) as other:
            await refused(other, "get_run", {"run_id": run_id}, "not_found")
            await refused(other, "cancel_run", {"run_id": run_id}, "not_found")
        async with Client(url, mode="legacy", client_info=AGENT) as stranger:
            await refused(stranger, "get_run", {"run_id": run_id}, "not_found")
            await refused(stranger, "cancel_run", {"run_id": run_id}, "not_found")
        # The same agent, on a new connection, follows it to the end.
        async with Client(url, mode="legacy", client_info=AGENT) as second:
            final = await poll(second, run_id, meta=me)
            assert final["status"] == "completed" and final["result_is_error"] is False
            result = final["result"]
            assert result["status"] == "ok" and result["cells_run"] == 3
            assert [c["execution_count"] for c in result["cells"]] == [1, 2, 3]
            assert result["cells"][2]["output"] == "42"
            again = await ok_as(second, me, "get_run", {"run_id": run_id, "since_output": 0})
            assert again["status"] == "completed" and again["queue_position"] is None
        stored = nbformat.read(str(workspace / "long.ipynb"), as_version=4).cells
        printed = "".join(output.get("text", "") for output in stored[1].outputs)
        assert printed == "".join(f"tick {i}\n" for i in range(20)) + "done\n"
        assert stored[2].outputs[0]["data"]["text/plain"] == "42"


async def test_cancel_queue_and_limits(workspace):
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "q.ipynb", "mode": "create"})
        # A detached cell: its answer has the execution shape, status running.
        long = await ok(
            client,
            "insert_execute_code_cell",
            {
                "cell_index": -1,
                "cell_source": "import time\nprint('go', flush=True)\ntime.sleep(60)",
                "detach": True,
            },
        )
        assert long["status"] == "running" and long["cell_id"] and long["execution_count"] is None
        queued = await ok(client, "execute_code", {"code": "print('second')", "detach": True})
        behind = await ok(client, "get_run", {"run_id": queued["run_id"]})
        assert behind["status"] == "queued" and behind["queue_position"] == 1
        while "go" not in json.dumps(
            (await ok(client, "get_run", {"run_id": long["run_id"], "wait_seconds": 5}))["outputs"]
        ):
            pass
        # Cancelled: the kernel is interrupted, the cell keeps what it printed, the queue moves on.
        started = time.monotonic()
        cancelled = await ok(client, "cancel_run", {"run_id": long["run_id"]})
        assert cancelled["status"] == "cancelled" and time.monotonic() - started < 10
        assert cancelled["result"]["status"] == "interrupted"
        after = await poll(client, queued["run_id"])
        assert after["status"] == "completed" and after["result"]["status"] == "ok"
        # Once ended, get_run answers the tool's own result: its outputs are in the content.
        assert "second" in text_of(await client.call_tool("get_run", {"run_id": queued["run_id"]}))
        cell = await ok(client, "read_cell", {"cell_id": long["cell_id"]})
        assert "go" in json.dumps(cell["outputs"])
        assert (await ok(client, "cancel_run", {"run_id": long["run_id"]}))["status"] == "cancelled"
        await refused(client, "get_run", {"run_id": "no-such-run"}, "not_found")

        # A queue holds 16 runs; the 17th is refused with the limit named.
        runs = [
            (
                await ok(
                    client, "execute_code", {"code": "import time\ntime.sleep(30)", "detach": True}
                )
            )["run_id"]
            for _ in range(16)
        ]
        full = await client.call_tool("execute_code", {"code": "1", "detach": True})
        assert error_code(full) == "busy" and "16" in text_of(full)
        for run_id in reversed(runs):
            await ok(client, "cancel_run", {"run_id": run_id})
        settled = await ok(client, "execute_code", {"code": "print('free')"})
        assert settled["status"] == "ok"


async def test_a_bad_detached_call_is_refused_at_once(workspace):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Title")]
    nbformat.write(notebook, str(workspace / "bad.ipynb"))
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "bad.ipynb"})
        await refused(client, "run_cells", {"cells": "5-9", "detach": True}, "invalid_argument")
        await refused(client, "execute_cell", {"cell_index": 0, "detach": True}, "invalid_argument")
        await refused(
            client, "execute_code", {"code": "1", "timeout": -1, "detach": True}, "invalid_argument"
        )
        await asyncio.sleep(0)


async def test_finished_runs_expire(workspace):
    env = {"JUPYTER_MCP_TASK_TTL_SECONDS": "1"}
    async with serve(workspace, *RUNS, env=env) as client:
        await ok(client, "use_notebook", {"notebook_name": "e.ipynb", "mode": "create"})
        run = await ok(client, "execute_code", {"code": "print('kept a while')", "detach": True})
        done = await poll(client, run["run_id"])
        assert done["status"] == "completed" and done["outputs"] == []
        assert "kept a while" in text_of(
            await client.call_tool("get_run", {"run_id": run["run_id"]})
        )
        await asyncio.sleep(1.5)
        gone = await refused(client, "get_run", {"run_id": run["run_id"]}, "not_found")
        assert "1 s" in text_of(gone)


async def test_run_cells_as_a_task(workspace):
    """On 2026-07-28 the same runs are tasks: run_cells declares task support, and its task
    says the last cell that ended while it runs."""
    from test_protocol import TASK_ENV, CreatedTask, Tasks, get_task, until_done

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("print('first')"),
        nbformat.v4.new_code_cell("import time\ntime.sleep(3)\nprint('second')"),
    ]
    nbformat.write(notebook, str(workspace / "task.ipynb"))
    async with serve(workspace, *RUNS, mode="auto", env=TASK_ENV, extensions=[Tasks()]) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert (tools["run_cells"].meta or {}).get("io.modelcontextprotocol/tasks") == {
            "taskSupport": "optional"
        }
        assert "io.modelcontextprotocol/tasks" not in (tools["get_run"].meta or {})
        await ok(client, "use_notebook", {"notebook_name": "task.ipynb"})
        created = await client.session.call_tool("run_cells", {}, allow_claimed=True)
        assert isinstance(created, CreatedTask)
        deadline = time.monotonic() + 30
        while "cell 1 of 2" not in (task := await get_task(client, created.task_id)).get(
            "statusMessage", ""
        ):
            assert task["status"] == "working" and time.monotonic() < deadline, task
            await asyncio.sleep(0.2)
        done = await until_done(client, created.task_id)
        assert done["status"] == "completed"
        result = done["result"]["structuredContent"]
        assert result["status"] == "ok" and [c["output"] for c in result["cells"]] == [
            "first",
            "second",
        ]
