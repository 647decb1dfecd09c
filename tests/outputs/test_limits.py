"""The server-wide limits, end to end: output truncation with exact figures,
timeouts, the kernel limit, idle reaping, and the command line refusing bad
values before anything serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from pathlib import Path

from conftest import (
    ERROR_KEY,
    error_code,
    ok,
    refused,
    serve,
    text_of,
)
from mcp.types import TextContent
from servers import our_stdio_server_async


def payload_size(output: dict) -> int:
    """An omitted payload counts its compact UTF-8 JSON size."""
    return len(json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def display_payload(text: str) -> dict:
    return {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}


def displays(texts: list[str]) -> str:
    """Code that shows each text as its own display_data message."""
    return f"from IPython.display import display\nfor text in {texts!r}:\n    display({{'text/plain': text}}, raw=True)"


def cells_on_disk(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


async def test_output_truncation_figures_are_exact(workspace):
    async with serve(workspace, "--max-output-blocks", "3", "--max-output-bytes", "400") as client:
        described = json.loads(
            (await client.read_resource("jupymcp://capabilities")).contents[0].text
        )
        assert described["limits"]["max_output_blocks"] == 3
        assert described["limits"]["max_output_bytes"] == 400
        await ok(client, "use_notebook", {"notebook_name": "out.ipynb", "mode": "create"})

        # The block limit: three payloads kept, seven omitted, their bytes summed exactly.
        texts = [f"item {i} é" for i in range(10)]
        result = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": displays(texts)}
        )
        assert not result.is_error, text_of(result)
        truncation = result.structured_content["truncation"]
        assert truncation == {
            "truncated": True,
            "omitted_blocks": 7,
            "omitted_bytes": sum(payload_size(display_payload(t)) for t in texts[3:]),
        }
        shown = [block.text for block in result.content if isinstance(block, TextContent)]
        # Every block but the last ends in a line break (clients may join them with nothing between).
        assert [text.rstrip("\n") for text in shown[:3]] == texts[:3]
        assert f"7 output block(s), {truncation['omitted_bytes']} bytes" in shown[3]
        stored = cells_on_disk(workspace / "out.ipynb")[0]["outputs"]
        assert ["".join(o["data"]["text/plain"]) for o in stored] == texts[:3]
        assert all(o["output_type"] == "display_data" for o in stored), "no synthetic stderr stream"

        # Streams: each flushed print is one payload, even though they merge into one output.
        lines = [f"line {i}\n" for i in range(6)]
        code = "import sys, time\nfor i in range(6):\n    print(f'line {i}', flush=True)\n    time.sleep(0.02)"
        result = await client.call_tool("execute_code", {"code": code})
        assert result.structured_content["truncation"] == {
            "truncated": True,
            "omitted_blocks": 3,
            "omitted_bytes": sum(
                payload_size({"output_type": "stream", "name": "stdout", "text": line})
                for line in lines[3:]
            ),
        }
        assert result.content[0].text == "".join(lines[:3])

        # The byte limit: payloads are kept while they fit in 400 bytes; after
        # the first that does not, every later one is omitted, even small ones.
        big = ["x" * 80, "y" * 100, "z" * 200, "s"]
        sizes = [payload_size(display_payload(t)) for t in big]
        assert sizes[0] + sizes[1] <= 400 < sizes[0] + sizes[1] + sizes[2]
        assert sizes[0] + sizes[1] + sizes[3] <= 400
        result = await client.call_tool("execute_code", {"code": displays(big)})
        assert result.structured_content["truncation"] == {
            "truncated": True,
            "omitted_blocks": 2,
            "omitted_bytes": sizes[2] + sizes[3],
        }
        assert [block.text.rstrip("\n") for block in result.content[:2]] == big[:2]

        # The error is kept even after a gap, bounded by the byte limit.
        code = displays(["a" * 300, "b" * 300]) + "\nraise ValueError('v' * 500)"
        result = await client.call_tool("execute_code", {"code": code})
        assert error_code(result) == "execution_error"
        structured = result.structured_content
        assert structured["error"]["ename"] == "ValueError"
        assert len(structured["error"]["evalue"]) == 32  # max(400 // 16, 32) characters
        assert structured["truncation"]["omitted_blocks"] == 1
        assert structured["truncation"]["truncated"] is True
        assert (
            structured["truncation"]["omitted_bytes"]
            > payload_size(display_payload("b" * 300)) + 400
        )
        assert "ValueError" in text_of(result)

        # Within the limits nothing is truncated.
        result = await ok(client, "execute_code", {"code": displays(["one", "two"])})
        assert result["truncation"] == {"truncated": False, "omitted_blocks": 0, "omitted_bytes": 0}


async def test_timeouts_default_and_maximum(workspace):
    async with serve(workspace, "--max-timeout", "5", "--default-timeout", "2") as client:
        limits = json.loads(
            (await client.read_resource("jupymcp://capabilities")).contents[0].text
        )["limits"]
        assert limits["default_timeout_seconds"] == 2 and limits["max_timeout_seconds"] == 5
        await ok(client, "use_notebook", {"notebook_name": "t.ipynb", "mode": "create"})
        too_long = await refused(
            client, "execute_code", {"code": "1", "timeout": 10}, "invalid_argument"
        )
        assert "--max-timeout" in text_of(too_long) and "5" in text_of(too_long)
        assert too_long.meta[ERROR_KEY]["max_timeout"] == 5
        await refused(
            client,
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "1", "timeout": 5.5},
            "invalid_argument",
        )
        assert cells_on_disk(workspace / "t.ipynb") == []
        assert (await ok(client, "execute_code", {"code": "print(1)", "timeout": 5}))[
            "status"
        ] == "ok"

        started = time.monotonic()
        timed = await client.call_tool("execute_code", {"code": "import time\ntime.sleep(10)"})
        elapsed = time.monotonic() - started
        assert error_code(timed) == "timeout", text_of(timed)
        assert timed.structured_content["status"] == "timeout"
        assert 2 <= elapsed < 8, elapsed
        started = time.monotonic()
        assert (await ok(client, "execute_code", {"code": "print('next')"}))["status"] == "ok"
        assert time.monotonic() - started < 5


async def test_kernel_limit_and_idle_reaping(workspace):
    async with serve(workspace, "--max-kernels", "1", "--idle-timeout", "2") as client:
        # A kernel started ahead of need does not count as idle before it is used.
        await asyncio.sleep(2.5)
        used = await ok(client, "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"})
        await asyncio.sleep(1)
        # Running longer than --idle-timeout is not idling.
        running = await ok(client, "execute_code", {"code": "import time\ntime.sleep(2.5)\nx = 1"})
        assert running["status"] == "ok"
        last_use = time.monotonic()

        # The second notebook would need a second kernel: refused, naming the limit,
        # and nothing is created for it.
        limited = await refused(
            client, "use_notebook", {"notebook_name": "b.ipynb", "mode": "create"}, "kernel_limit"
        )
        assert "--max-kernels" in text_of(limited) and "1" in text_of(limited)
        assert limited.meta[ERROR_KEY]["max_kernels"] == 1
        assert not (workspace / "b.ipynb").exists()
        (workspace / "c.ipynb").write_bytes((workspace / "a.ipynb").read_bytes())
        await refused(client, "use_notebook", {"notebook_name": "c.ipynb"}, "kernel_limit")
        await refused(
            client, "execute_code", {"code": "1", "notebook_name": "c.ipynb"}, "kernel_limit"
        )
        # Sharing the running kernel needs no new one.
        shared = await ok(
            client, "use_notebook", {"notebook_name": "c.ipynb", "kernel_id": used["kernel_id"]}
        )
        assert shared["kernel_id"] == used["kernel_id"]

        # Idle past --idle-timeout: the session is reaped, and the next call says so.
        deadline = time.monotonic() + 15
        while (await ok(client, "list_kernels"))["kernels"]:
            assert time.monotonic() < deadline, "the idle kernel was never reaped"
            await asyncio.sleep(0.25)
        assert time.monotonic() - last_use >= 1.5, "reaped before --idle-timeout"
        gone = await refused(
            client, "execute_code", {"code": "print(x)", "notebook_name": "a.ipynb"}, "kernel_gone"
        )
        assert "'a.ipynb'" in text_of(gone) and "restart_notebook" in text_of(gone)
        assert "kernel.auto-restart" in text_of(gone)
        await refused(
            client, "execute_code", {"code": "1", "notebook_name": "c.ipynb"}, "kernel_gone"
        )

        # The reaped kernel freed its slot.
        b = await ok(client, "use_notebook", {"notebook_name": "b.ipynb", "mode": "create"})
        assert [k["kernel_id"] for k in (await ok(client, "list_kernels"))["kernels"]] == [
            b["kernel_id"]
        ]
        assert (await ok(client, "execute_code", {"code": "print('b')"}))["status"] == "ok"


async def cli_outcomes(workspace: Path, cases: list[tuple[tuple[str, ...], dict[str, str] | None]]):
    """Each command line's (exit status, stdout, stderr), all started at once."""
    async with contextlib.AsyncExitStack() as stack:
        processes = []
        for args, env in cases:
            server = await stack.enter_async_context(
                our_stdio_server_async(
                    workspace,
                    *args,
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
            )
            processes.append(server.process)
        outcomes = []
        for process in processes:
            stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
            outcomes.append((process.returncode, stdout.decode(), stderr.decode()))
        return outcomes


async def test_bad_command_lines_stop_before_serving(workspace, tmp_path):
    missing = tmp_path / "does-not-exist"
    cases: list[tuple[tuple[str, ...], dict[str, str] | None, list[str]]] = [
        (("--max-kernels", "0"), None, ["--max-kernels", "'0'"]),
        (("--max-output-bytes", "abc"), None, ["--max-output-bytes", "'abc'"]),
        (("--max-output-blocks", "-3"), None, ["--max-output-blocks", "'-3'"]),
        (("--inline-budget-chars", "100"), None, ["--inline-budget-chars", "1024-262144"]),
        (
            (),
            {"JUPYTER_MCP_INLINE_BUDGET_CHARS": "999999"},
            ["--inline-budget-chars", "1024-262144"],
        ),
        (("--idle-timeout", "soon"), None, ["--idle-timeout", "'soon'"]),
        (
            ("--default-timeout", "10", "--max-timeout", "5"),
            None,
            ["--default-timeout", "--max-timeout"],
        ),
        (("--workspace-root", str(missing)), None, ["--workspace-root", str(missing)]),
        (("--workspace-root",), None, ["--workspace-root", "expected one argument"]),
        (
            ("--capability", "kernel.autorestart"),
            None,
            ["kernel.autorestart", "kernel.auto-restart"],
        ),
        (
            (),
            {"JUPYTER_MCP_CAPABILITIES": "kernel.prestart,kernel.autorestart=off"},
            ["kernel.autorestart", "JUPYTER_MCP_CAPABILITIES"],
        ),
        (("--transport", "carrier-pigeon"), None, ["--transport", "carrier-pigeon"]),
    ]
    outcomes = await cli_outcomes(workspace, [(args, env) for args, env, _ in cases])
    for (args, env, needles), (code, stdout, stderr) in zip(cases, outcomes, strict=True):
        assert code == 2, f"{args} {env}: exit status {code}, stderr {stderr!r}"
        assert stdout == "", f"{args}: nothing may go to stdout"
        for needle in needles:
            assert needle in stderr, f"{args} {env}: {needle!r} not in {stderr!r}"
    assert not missing.exists()
    assert os.listdir(workspace) == []


async def test_nan_timeout_is_refused(workspace):
    ((code, _, stderr),) = await cli_outcomes(workspace, [(("--default-timeout", "nan"), None)])
    assert code == 2 and "--default-timeout" in stderr
