"""Running code through the real server: result shapes, errors, images, timeouts,
interrupts, a dying kernel, and edits made while a cell runs.

Every test starts `jupyter-mcp-server` over stdio with `serve` and talks to it
with the official client; nothing is mocked. Cells that must be caught while
they run first create a marker file in the workspace (the kernel's working
directory), so a test waits for the code to be really running instead of
sleeping a guessed amount.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import struct
import time
import zlib
from pathlib import Path

import nbformat
from conftest import ERROR_KEY, error_code, ok, refused, serve, text_of, without_rendered
from mcp.types import ImageContent, TextContent

#: Output schema 1.0 plus status, cell_id and revision.
RESULT_KEYS = {
    "schema_version",
    "execution_count",
    "truncation",
    "error",
    "user_expressions",
    "status",
    "cell_id",
    "revision",
}

#: The text when a notebook's kernel is gone, for 'notebook.ipynb'.
GONE_TEXT = (
    "The kernel of 'notebook.ipynb' is gone, and its session — every variable, "
    "import and definition — went with it. Call restart_notebook to start a fresh "
    "one, or enable the 'kernel.auto-restart' capability to have replacements "
    "started automatically."
)


def tiny_png() -> bytes:
    """A valid 1x1 red PNG, built by hand (matplotlib may not be installed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def squash(text: str) -> str:
    return " ".join(text.split())


def meta_of(result) -> dict:
    return (result.meta or {}).get(ERROR_KEY) or {}


def cells_on_disk(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def joined(value) -> str:
    return "".join(value) if isinstance(value, list) else value


async def wait_for_file(path: Path, seconds: float = 30.0) -> None:
    """Until `path` exists: the running cell has reached the point that creates it."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared: the cell did not start"
        await asyncio.sleep(0.05)


async def kill_kernel(pid: int) -> None:
    """SIGKILL a kernel process, and wait until it is really gone: a zombie whose
    threads have all exited, which is when its parent can see that it died."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            threads = len(os.listdir(f"/proc/{pid}/task"))
        except (FileNotFoundError, ProcessLookupError):  # reaped while being looked at
            return
        if state in ("Z", "X") and threads <= 1:
            return
        assert time.monotonic() < deadline, f"kernel {pid} survived SIGKILL"
        await asyncio.sleep(0.02)


def assert_result_shape(structured: dict, status: str) -> None:
    # Schema 1.0 exactly, and ``rendered``, what its content says (docs/protocol.md), which
    # conftest's ok() checks and takes off.
    assert set(structured) - {"rendered"} == RESULT_KEYS, sorted(structured)
    assert structured["schema_version"] == "1.0"
    assert structured["status"] == status
    assert set(structured["truncation"]) == {"truncated", "omitted_blocks", "omitted_bytes"}


async def test_ok_and_error_results_images_and_what_is_stored(workspace):
    notebook = workspace / "run.ipynb"
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "run.ipynb", "mode": "create"})

        # ok: output schema 1.0 exactly, plus status, cell_id and revision.
        ran = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": "print('hi')\n6 * 7"}
        )
        assert not ran.is_error, text_of(ran)
        result = ran.structured_content
        assert_result_shape(result, "ok")
        assert result["error"] is None and result["user_expressions"] is None
        assert result["truncation"] == {"truncated": False, "omitted_blocks": 0, "omitted_bytes": 0}
        assert isinstance(result["execution_count"], int) and result["execution_count"] >= 1
        texts = [block.text for block in ran.content if isinstance(block, TextContent)]
        assert texts == ["hi\n", "42"], texts
        assert result["rendered"] == "hi\n42"
        first_id = result["cell_id"]
        assert result["revision"] == (await ok(client, "get_notebook_revision"))["revision"]
        stored = cells_on_disk(notebook)[0]
        assert stored["id"] == first_id
        assert stored["execution_count"] == result["execution_count"]
        assert [o["output_type"] for o in stored["outputs"]] == ["stream", "execute_result"]

        # Running it again by id: the same cell, a later execution count, a new revision.
        again = await ok(client, "execute_cell", {"cell_id": first_id})
        assert again["cell_id"] == first_id
        assert again["execution_count"] > result["execution_count"]
        assert again["revision"] != result["revision"]

        # error: isError, code execution_error, the error normalised, and the
        # failed cell's outputs still stored.
        failed = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "print('before the error')\n1 / 0"},
        )
        assert failed.is_error and error_code(failed) == "execution_error", text_of(failed)
        assert_result_shape(failed.structured_content, "error")
        error = failed.structured_content["error"]
        assert error["ename"] == "ZeroDivisionError"
        assert error["evalue"] == "division by zero"
        assert 1 <= len(error["traceback"]) <= 4
        assert not any("\x1b" in line for line in error["traceback"]), "ANSI codes must be stripped"
        assert error["traceback"][-1].strip() == "ZeroDivisionError: division by zero"
        assert "before the error" in text_of(failed) and "ZeroDivisionError" in text_of(failed)
        failed_cell = cells_on_disk(notebook)[1]
        assert failed_cell["id"] == failed.structured_content["cell_id"]
        assert joined(failed_cell["outputs"][0]["text"]) == "before the error\n"
        assert failed_cell["outputs"][-1]["output_type"] == "error"
        assert failed_cell["outputs"][-1]["ename"] == "ZeroDivisionError"
        assert failed_cell["execution_count"] == failed.structured_content["execution_count"]

        # A long name, a huge value and a deep traceback are bounded.
        deep = (
            "E = type('E' * 200, (Exception,), {})\n"
            "def f(n):\n"
            "    if n == 0:\n"
            "        raise E('v' * 5000)\n"
            "    f(n - 1)\n"
            "f(12)"
        )
        bounded = await client.call_tool("execute_code", {"code": deep})
        assert error_code(bounded) == "execution_error"
        structured = bounded.structured_content
        assert_result_shape(structured, "error")
        assert structured["cell_id"] is None and structured["revision"] is None
        error = structured["error"]
        assert len(error["ename"]) <= 128 and error["ename"].startswith("EEEE")
        assert 32 <= len(error["evalue"]) <= 1024 and error["evalue"].startswith("vvvv")
        # Thirteen frames of recursion fold into the cell's line, one frame of f, a line
        # counting the repeats, and the frame that raised.
        assert len(error["traceback"]) <= 8, error["traceback"]
        assert (
            error["traceback"][1].startswith("Cell In[")
            and "----> 6 f(12)" in error["traceback"][1]
        )
        assert "[… the frame above repeated 11 more time(s)]" in error["traceback"]
        assert all(len(line) <= 1024 for line in error["traceback"])
        assert structured["truncation"]["truncated"] is True
        assert structured["truncation"]["omitted_blocks"] == 0
        assert structured["truncation"]["omitted_bytes"] > 5000 - 1024

        # Images arrive as image content, not as text; the PNG is stored in the file.
        png = tiny_png()
        shown = await client.call_tool(
            "insert_execute_code_cell",
            {
                "cell_index": -1,
                "cell_source": f"from IPython.display import Image, display\ndisplay(Image(data={png!r}))",
            },
        )
        assert not shown.is_error, text_of(shown)
        images = [block for block in shown.content if isinstance(block, ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data) == png
        assert "IPython.core.display.Image object" not in text_of(shown)
        image_cell = cells_on_disk(notebook)[2]
        assert base64.b64decode(joined(image_cell["outputs"][0]["data"]["image/png"])) == png
        # Read back later, the stored image is image content again.
        read = await client.call_tool("read_cell", {"cell_id": image_cell["id"]})
        images = [block for block in read.content if isinstance(block, ImageContent)]
        assert len(images) == 1 and base64.b64decode(images[0].data) == png

        # clear_output replaces what was shown; input() cannot hang a call.
        cleared = await ok(
            client,
            "execute_code",
            {
                "code": "from IPython.display import clear_output\nprint('old')\nclear_output()\nprint('new')"
            },
        )
        assert cleared["status"] == "ok"
        assert text_of(await client.call_tool("execute_code", {"code": "print('x')"})) == "x\n"
        asked = await client.call_tool("execute_code", {"code": "input('name? ')", "timeout": 30})
        assert error_code(asked) == "execution_error", text_of(asked)
        assert asked.structured_content["error"]["ename"] == "StdinNotImplementedError"

        # execute_code stores nothing.
        before = notebook.read_bytes()
        scratch = await ok(client, "execute_code", {"code": "print('scratch')"})
        assert_result_shape(scratch, "ok")
        assert scratch["cell_id"] is None and scratch["revision"] is None
        assert notebook.read_bytes() == before

        # Bad execution arguments are refused and store nothing.
        for arguments in (
            {"cell_index": 0, "timeout": 0},
            {"cell_index": 0, "timeout": -1},
            {"cell_index": 0, "timeout": 3601},
            {"cell_index": 0, "cell_id": first_id},
            {},
            {"cell_index": 17},
        ):
            await refused(client, "execute_cell", arguments, "invalid_argument")
        await refused(client, "execute_cell", {"cell_id": "no-such-cell"}, "not_found")
        await ok(
            client, "insert_cell", {"cell_index": -1, "cell_type": "markdown", "cell_source": "# t"}
        )
        after_insert = notebook.read_bytes()
        await refused(client, "execute_cell", {"cell_index": 3}, "invalid_argument")
        stale = await refused(
            client,
            "execute_cell",
            {"cell_index": 0, "expected_revision": "0" * 16},
            "revision_conflict",
        )
        assert (
            meta_of(stale)["current_revision"]
            == (await ok(client, "get_notebook_revision"))["revision"]
        )
        await refused(client, "execute_code", {"code": "1", "timeout": 0}, "invalid_argument")
        await refused(client, "execute_code", {"code": "1", "kernel_id": "nope"}, "not_found")
        assert notebook.read_bytes() == after_insert


async def test_timeout_and_interrupts(workspace):
    async with serve(workspace) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "slow.ipynb", "mode": "create"})
        kernel_id = used["kernel_id"]
        await ok(client, "execute_code", {"code": "kept = 'still here'"})

        # Timeout: status timeout, code timeout, the partial output, and stored outputs.
        started = time.monotonic()
        timed = await client.call_tool(
            "insert_execute_code_cell",
            {
                "cell_index": -1,
                "cell_source": "import time\nprint('before', flush=True)\ntime.sleep(30)",
                "timeout": 2,
            },
        )
        elapsed = time.monotonic() - started
        assert timed.is_error and error_code(timed) == "timeout", text_of(timed)
        assert 2 <= elapsed < 10, elapsed
        assert_result_shape(timed.structured_content, "timeout")
        assert "before" in text_of(timed)
        stored = cells_on_disk(workspace / "slow.ipynb")[0]
        assert joined(stored["outputs"][0]["text"]) == "before\n"

        # The next call runs promptly on the same, still living session.
        started = time.monotonic()
        after = await client.call_tool("execute_code", {"code": "print(kept)"})
        assert not after.is_error and text_of(after) == "still here\n", text_of(after)
        assert time.monotonic() - started < 5

        # interrupt_kernel while a cell runs: the running call ends as interrupted.
        running = asyncio.create_task(
            client.call_tool(
                "insert_execute_code_cell",
                {
                    "cell_index": -1,
                    "cell_source": "import time\nprint('sleeping', flush=True)\n"
                    "open('go-1', 'w').close()\ntime.sleep(30)",
                },
            )
        )
        await wait_for_file(workspace / "go-1")
        started = time.monotonic()
        interrupted = await client.call_tool("interrupt_kernel", {"kernel_id": kernel_id})
        assert not interrupted.is_error and without_rendered(interrupted) == {
            "kernel_id": kernel_id
        }
        assert "idle" not in text_of(interrupted) and "Interrupted" in text_of(interrupted)
        result = await asyncio.wait_for(running, 15)
        assert time.monotonic() - started < 10
        assert result.is_error and error_code(result) == "interrupted", text_of(result)
        assert_result_shape(result.structured_content, "interrupted")
        assert "sleeping" in text_of(result)

        # interrupt_notebook_session does the same for scratch code; variables survive.
        running = asyncio.create_task(
            client.call_tool(
                "execute_code",
                {"code": "import time\nopen('go-2', 'w').close()\ntime.sleep(30)", "timeout": 60},
            )
        )
        await wait_for_file(workspace / "go-2")
        session = await ok(client, "interrupt_notebook_session", {"notebook_name": "slow.ipynb"})
        assert session == {"kernel_id": kernel_id}
        result = await asyncio.wait_for(running, 15)
        assert error_code(result) == "interrupted", text_of(result)
        assert result.structured_content["status"] == "interrupted"
        survived = await ok(client, "execute_code", {"code": "print(kept)"})
        assert survived["status"] == "ok"

        # Interrupting an idle kernel says so, and breaks nothing.
        idle = await client.call_tool("interrupt_kernel", {"kernel_id": kernel_id})
        assert not idle.is_error
        assert "idle" in text_of(idle) and not text_of(idle).startswith("Interrupted")
        idle = await client.call_tool("interrupt_notebook_session", {"notebook_name": "slow.ipynb"})
        assert not idle.is_error and "idle" in text_of(idle), text_of(idle)
        calm = await client.call_tool(
            "execute_code", {"code": "import time; time.sleep(0.5); print(kept)"}
        )
        assert not calm.is_error and text_of(calm) == "still here\n", text_of(calm)

        # Two calls on one notebook run one after the other, never interleaved.
        timed_code = (
            "import time\nstart = time.monotonic()\ntime.sleep(0.6)\nprint(start, time.monotonic())"
        )
        both = await asyncio.gather(
            client.call_tool("execute_code", {"code": timed_code}),
            client.call_tool("execute_code", {"code": timed_code}),
        )
        spans = sorted(tuple(map(float, text_of(result).split())) for result in both)
        assert all(not result.is_error for result in both)
        assert spans[0][1] <= spans[1][0], f"executions overlapped: {spans}"

        # Restarting while a cell runs: the running call ends at once, and the
        # notebook goes on with the fresh kernel, not with a report of a loss.
        running = asyncio.create_task(
            client.call_tool(
                "execute_code",
                {"code": "import time\nopen('go-3', 'w').close()\ntime.sleep(30)", "timeout": 60},
            )
        )
        await wait_for_file(workspace / "go-3")
        started = time.monotonic()
        restarted = await ok(client, "restart_notebook")
        result = await asyncio.wait_for(running, 15)
        assert time.monotonic() - started < 10
        assert result.is_error and error_code(result) == "interrupted", text_of(result)
        assert "restart" in text_of(result) and result.structured_content["status"] == "interrupted"
        fresh = await client.call_tool("execute_code", {"code": "print('fresh')"})
        assert not fresh.is_error and text_of(fresh) == "fresh\n", text_of(fresh)
        assert [k["kernel_id"] for k in (await ok(client, "list_kernels"))["kernels"]] == [
            restarted["kernel_id"]
        ]

        await refused(client, "interrupt_kernel", {"kernel_id": "no-such-kernel"}, "not_found")
        await ok(client, "use_notebook", {"notebook_name": "bare.ipynb", "mode": "create"})
        await ok(client, "unuse_notebook", {"notebook_name": "bare.ipynb"})
        await refused(
            client, "interrupt_notebook_session", {"notebook_name": "bare.ipynb"}, "not_found"
        )


def seeds_gone_text(shared: Path) -> str | None:
    seed = shared / "seeds" / "003_92e427c9e4d6bc29.txt"
    if not seed.is_file():
        return None
    text = seed.read_text(encoding="utf-8")
    found = re.search(r"naming both ways forward:\s*(.*?automatically\.)", text, re.DOTALL)
    return squash(found.group(1)) if found else None


async def test_dying_kernel_is_reported_and_restart_gives_a_fresh_session(workspace, shared):
    assert seeds_gone_text(shared) in (None, squash(GONE_TEXT))
    notebook = workspace / "notebook.ipynb"
    async with serve(workspace) as client:
        used = await ok(
            client, "use_notebook", {"notebook_name": "notebook.ipynb", "mode": "create"}
        )
        await ok(client, "insert_execute_code_cell", {"cell_index": -1, "cell_source": "x = 1"})

        started = time.monotonic()
        died = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "import os\nos._exit(1)", "timeout": 60},
        )
        assert time.monotonic() - started < 10, "a death must be noticed long before the timeout"
        assert died.is_error and error_code(died) == "kernel_gone", text_of(died)
        assert squash(text_of(died)) == squash(GONE_TEXT)
        # The cell that killed the kernel is in the file.
        assert [c["source"] for c in cells_on_disk(notebook)] == [
            ["x = 1"],
            ["import os\n", "os._exit(1)"],
        ]

        listed = await ok(client, "list_kernels")
        assert used["kernel_id"] not in [k["kernel_id"] for k in listed["kernels"]]

        # Still gone on the next calls: nothing is silently replaced.
        again = await refused(client, "execute_code", {"code": "print(x)"}, "kernel_gone")
        assert squash(text_of(again)) == squash(GONE_TEXT)
        await refused(client, "execute_cell", {"cell_index": 0}, "kernel_gone")
        await refused(
            client,
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "1"},
            "kernel_gone",
        )
        await refused(
            client, "interrupt_notebook_session", {"notebook_name": "notebook.ipynb"}, "kernel_gone"
        )
        # Reading and editing do not need the kernel.
        await ok(client, "read_notebook")

        restarted = await ok(client, "restart_notebook")
        assert restarted["kernel_id"] != used["kernel_id"]
        assert restarted["revision"] == (await ok(client, "get_notebook_revision"))["revision"]
        fresh = await client.call_tool("execute_code", {"code": "print(x)"})
        assert (
            error_code(fresh) == "execution_error"
            and fresh.structured_content["error"]["ename"] == "NameError"
        )
        ran = await ok(client, "execute_cell", {"cell_index": 0})
        assert ran["status"] == "ok"
        assert text_of(await client.call_tool("execute_code", {"code": "print(x)"})) == "1\n"

        # A kernel killed from outside between two calls (an OOM killer, say).
        pid = int(
            text_of(
                await client.call_tool("execute_code", {"code": "import os\nprint(os.getpid())"})
            )
        )
        await kill_kernel(pid)
        killed = await refused(client, "execute_code", {"code": "print(x)"}, "kernel_gone")
        assert squash(text_of(killed)) == squash(GONE_TEXT)
        await refused(client, "execute_cell", {"cell_index": 0}, "kernel_gone")
        restarted = await ok(client, "restart_notebook")
        assert (await ok(client, "execute_cell", {"cell_index": 0}))["status"] == "ok"

        # A kernel given by id that died is reported too.
        killed = await client.call_tool(
            "execute_code",
            {"code": "import os\nos._exit(3)", "kernel_id": restarted["kernel_id"], "timeout": 60},
        )
        assert error_code(killed) == "kernel_gone", text_of(killed)
        assert "restart_notebook" in text_of(killed)
        await refused(client, "execute_code", {"code": "1"}, "kernel_gone")


async def test_auto_restart_replaces_a_dead_kernel_and_says_so(workspace):
    async with serve(workspace, "--capability", "kernel.auto-restart") as client:
        described = json.loads((await client.read_resource("capabilities://")).contents[0].text)
        assert "kernel.auto-restart" in described["capabilities"]
        used = await ok(
            client, "use_notebook", {"notebook_name": "notebook.ipynb", "mode": "create"}
        )
        await ok(client, "execute_code", {"code": "x = 1"})
        died = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "import os\nos._exit(1)", "timeout": 60},
        )
        assert error_code(died) == "kernel_gone", text_of(died)

        # The next call proceeds on a replacement and says the session was replaced.
        ran = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": "print('fresh')"}
        )
        assert not ran.is_error, text_of(ran)
        assert ran.structured_content["status"] == "ok"
        note = ran.content[0].text
        assert "kernel.auto-restart" in note and "replacement" in note, note
        assert text_of(ran).endswith("fresh\n")
        listed = await ok(client, "list_kernels")
        kernels = [k for k in listed["kernels"] if "notebook.ipynb" in k["notebooks"]]
        assert len(kernels) == 1 and kernels[0]["kernel_id"] != used["kernel_id"]

        # The replacement has none of the old variables, and the note is said once.
        missing = await client.call_tool("execute_code", {"code": "x"})
        assert error_code(missing) == "execution_error"
        assert missing.structured_content["error"]["ename"] == "NameError"
        assert "replacement" not in text_of(missing)

        # A kernel killed from outside between calls is replaced the same way.
        pid = int(
            text_of(
                await client.call_tool("execute_code", {"code": "import os\nprint(os.getpid())"})
            )
        )
        await kill_kernel(pid)
        replaced = await client.call_tool("execute_code", {"code": "print('replaced')"})
        assert not replaced.is_error, text_of(replaced)
        assert "replacement" in replaced.content[0].text and text_of(replaced).endswith(
            "replaced\n"
        )

        # A death under execute_code is followed by a replaced session as well.
        await client.call_tool("execute_code", {"code": "import os\nos._exit(1)", "timeout": 60})
        scratch = await client.call_tool("execute_code", {"code": "print('again')"})
        assert not scratch.is_error, text_of(scratch)
        assert "replacement" in scratch.content[0].text and text_of(scratch).endswith("again\n")


async def test_edits_during_a_long_execution(workspace):
    notebook = workspace / "long.ipynb"
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "long.ipynb", "mode": "create"})
        first = await ok(
            client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "a = 1"}
        )
        slow_source = "import time\nopen('go-edit', 'w').close()\ntime.sleep(3)\nprint('slept')"
        slow = await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "code", "cell_source": slow_source},
        )

        # An unrelated edit through the same connection while the cell runs: it is
        # answered at once, and the outputs are still stored in the moved cell.
        running = asyncio.create_task(
            client.call_tool("execute_cell", {"cell_id": slow["cell_id"]})
        )
        await wait_for_file(workspace / "go-edit")
        inserted = await ok(
            client,
            "insert_cell",
            {"cell_index": 0, "cell_type": "markdown", "cell_source": "# Title"},
        )
        await ok(
            client, "overwrite_cell_source", {"cell_id": first["cell_id"], "cell_source": "a = 2"}
        )
        # Someone else saves the file meanwhile, too.
        outside = nbformat.read(notebook, as_version=4)
        outside.cells.append(nbformat.v4.new_markdown_cell("saved elsewhere"))
        nbformat.write(outside, notebook)
        assert not running.done(), "the edits must be answered while the cell still runs"
        result = await running
        assert not result.is_error, text_of(result)
        assert result.structured_content["cell_id"] == slow["cell_id"]
        assert (
            result.structured_content["revision"]
            == (await ok(client, "get_notebook_revision"))["revision"]
        )
        cells = cells_on_disk(notebook)
        assert [c["id"] for c in cells[:3]] == [
            inserted["cell_id"],
            first["cell_id"],
            slow["cell_id"],
        ]
        assert [joined(c["source"]) for c in cells[3:]] == ["saved elsewhere"]
        assert joined(cells[1]["source"]) == "a = 2"
        assert joined(cells[2]["outputs"][0]["text"]) == "slept\n"
        assert cells[2]["execution_count"] == result.structured_content["execution_count"]

        # Changing the running cell's own source is a conflict: its outputs are
        # returned but not stored with code that did not produce them.
        await ok(client, "clear_cell_output", {"cell_id": slow["cell_id"]})
        (workspace / "go-edit").unlink()
        running = asyncio.create_task(
            client.call_tool("execute_cell", {"cell_id": slow["cell_id"]})
        )
        await wait_for_file(workspace / "go-edit")
        await ok(
            client,
            "edit_cell_source",
            {
                "cell_id": slow["cell_id"],
                "old_string": "print('slept')",
                "new_string": "print('changed')",
            },
        )
        result = await running
        assert result.is_error and error_code(result) == "revision_conflict", text_of(result)
        assert (
            meta_of(result)["current_revision"]
            == (await ok(client, "get_notebook_revision"))["revision"]
        )
        assert "slept" in text_of(result)
        assert result.structured_content["status"] == "ok"
        cell = cells_on_disk(notebook)[2]
        assert joined(cell["source"]).endswith("print('changed')")
        assert cell["outputs"] == [] and cell["execution_count"] is None

        # Deleting the running cell: the outputs are returned, nothing is stored.
        (workspace / "go-edit").unlink()
        running = asyncio.create_task(
            client.call_tool("execute_cell", {"cell_id": slow["cell_id"]})
        )
        await wait_for_file(workspace / "go-edit")
        await ok(client, "delete_cell", {"cell_ids_to_delete": [slow["cell_id"]]})
        before = notebook.read_bytes()
        result = await running
        assert result.is_error and error_code(result) == "not_found", text_of(result)
        assert "changed" in text_of(result)
        assert notebook.read_bytes() == before


async def test_scratch_code_needs_the_kernel_not_the_file(workspace):
    """execute_code reads the notebook only to start its kernel: a missing one is not_found, no kernel
    started; a notebook whose kernel runs keeps its session even when its file goes away."""
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        missing = await refused(
            client, "execute_code", {"code": "1", "notebook_name": "ghost.ipynb"}, "not_found"
        )
        assert "use_notebook" in text_of(missing)
        assert (await ok(client, "list_kernels"))["kernels"] == []

        await ok(client, "use_notebook", {"notebook_name": "gone.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "kept = 41"})
        (workspace / "gone.ipynb").unlink()
        result = await client.call_tool("execute_code", {"code": "kept + 1"})
        assert not result.is_error and "42" in text_of(result)
        await refused(client, "read_notebook", {}, "not_found")


#: Ignores the interrupt, says so with a file, sleeps `{seconds}`, then leaves a file saying it ended.
IGNORES_SIGINT = (
    "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('ignoring', flush=True)\n"
    "open('stuck', 'w').close()\ntime.sleep({seconds})\nopen('ended', 'w').close()"
)


async def test_a_kernel_still_running_after_its_interrupt_is_reported_at_once(workspace):
    """The call after a timeout whose interrupt was ignored used to wait its own
    timeout behind the stuck cell and say "make the cell faster", though its
    code never ran (and then ran unseen once the kernel was free)."""
    async with serve(workspace) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "stuck.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "kept = 'still here'"})
        timed = await client.call_tool(
            "execute_code", {"code": IGNORES_SIGINT.format(seconds=8), "timeout": 1}
        )
        assert error_code(timed) == "timeout" and timed.structured_content["status"] == "timeout", (
            text_of(timed)
        )
        assert "ignoring" in text_of(timed)

        # Every call on the stuck kernel: refused within a second, saying why and what to do.
        for tool, arguments in (
            ("execute_code", {"code": "open('ran', 'w').close()", "timeout": 30}),
            (
                "insert_execute_code_cell",
                {"cell_index": -1, "cell_source": "open('ran', 'w').close()"},
            ),
        ):
            started = time.monotonic()
            refused_call = await client.call_tool(tool, arguments)
            assert time.monotonic() - started < 1.0, (
                f"{tool} took {time.monotonic() - started:.1f} s"
            )
            assert refused_call.is_error and error_code(refused_call) == "kernel_unresponsive", (
                text_of(refused_call)
            )
            assert meta_of(refused_call)["kernel_state"] == "busy_after_interrupt"
            assert meta_of(refused_call)["kernel_id"] == used["kernel_id"]
            message = text_of(refused_call)
            assert message.startswith("Nothing ran") and "restart_notebook" in message, message
            assert (
                "kernel.restart-unresponsive" in message and "make the cell faster" not in message
            )
        listed = await ok(client, "list_kernels")
        assert [k["state"] for k in listed["kernels"]] == ["busy"], listed
        # The timed-out call itself said that the kernel went on running its code.
        assert meta_of(timed)["kernel_state"] == "busy_after_interrupt"
        assert "still running" in text_of(timed) and "restart_notebook" in text_of(timed)

        # Once the stuck cell ends, calls work again on the same session; the refused code never ran.
        await wait_for_file(workspace / "ended")
        after = await client.call_tool("execute_code", {"code": "print(kept)"})
        assert not after.is_error and text_of(after) == "still here\n", text_of(after)
        assert not (workspace / "ran").exists(), "a refused call's code ran after all"
        assert [k["state"] for k in (await ok(client, "list_kernels"))["kernels"]] == ["idle"]


async def test_restart_unresponsive_restarts_a_kernel_stuck_after_its_interrupt(workspace):
    async with serve(
        workspace, "--capability", "kernel.restart-unresponsive", "--unresponsive-grace", "2"
    ) as client:
        described = json.loads((await client.read_resource("capabilities://")).contents[0].text)
        assert "kernel.restart-unresponsive" in described["capabilities"]
        used = await ok(client, "use_notebook", {"notebook_name": "stuck.ipynb", "mode": "create"})
        pid = int(
            text_of(
                await client.call_tool(
                    "execute_code", {"code": "import os\nkept = 1\nprint(os.getpid())"}
                )
            )
        )
        timed = await client.call_tool(
            "execute_code", {"code": IGNORES_SIGINT.format(seconds=600), "timeout": 1}
        )
        assert (
            error_code(timed) == "timeout"
            and meta_of(timed)["kernel_state"] == "busy_after_interrupt"
        )

        # The next call waits out the grace period, restarts the kernel, runs, and says so.
        started = time.monotonic()
        ran = await client.call_tool("execute_code", {"code": "print('fresh')"})
        assert time.monotonic() - started < 15
        assert not ran.is_error, text_of(ran)
        note = ran.content[0].text
        assert (
            "kernel.restart-unresponsive" in note and "restarted" in note and "fresh kernel" in note
        ), note
        assert text_of(ran).endswith("fresh\n")
        kernels = (await ok(client, "list_kernels"))["kernels"]
        assert (
            len(kernels) == 1
            and kernels[0]["kernel_id"] != used["kernel_id"]
            and kernels[0]["state"] == "idle"
        )
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            await asyncio.sleep(0.05)
        assert not Path(f"/proc/{pid}").exists(), "the stuck kernel outlived its restart"

        # The call after works normally, on the fresh session, without a note.
        after = await client.call_tool("execute_code", {"code": "print('kept' in globals())"})
        assert not after.is_error and text_of(after) == "False\n", text_of(after)
