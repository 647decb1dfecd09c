"""Whole-notebook runs through the real server: run all, restart and run all, ranges and ids,
stop on error, a kernel dying mid-way, clearing outputs, and stale cells.

Every test starts `jupyter-mcp-server` over stdio with the `runs` toolset and
talks to it with the official client, on real kernels.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
from conftest import error_code, ok, refused, serve, text_of

RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")


def write_notebook(path: Path, sources: list[str], markdown_at: tuple[int, ...] = ()) -> list[str]:
    """A notebook of these code cells (a markdown cell at each index of `markdown_at`); its cell ids."""
    notebook = nbformat.v4.new_notebook()
    cells = []
    for index, source in enumerate(sources):
        cell = (
            nbformat.v4.new_markdown_cell(source)
            if index in markdown_at
            else nbformat.v4.new_code_cell(source)
        )
        cell["id"] = f"cell-{index}"
        cells.append(cell)
    notebook.cells = cells
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, str(path))
    return [cell["id"] for cell in cells]


def stored(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def stream_text(cell: dict) -> str:
    return "".join(
        "".join(o.get("text", "")) for o in cell["outputs"] if o["output_type"] == "stream"
    )


TEN = [f"x{i} = {i}\nprint('cell {i}')" for i in range(10)]
TEN[6] = "print('cell 6')\n1 / 0"


async def test_run_all_stops_at_the_error_and_keeps_what_ran(workspace):
    path = workspace / "ten.ipynb"
    ids = write_notebook(path, TEN)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "ten.ipynb"})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert result.is_error and error_code(result) == "execution_error", text_of(result)
        run = result.structured_content
        assert run["status"] == "error"
        assert run["cells_selected"] == 10 and run["cells_run"] == 7
        assert [c["status"] for c in run["cells"]] == ["ok"] * 6 + ["error"]
        assert run["stopped_at"] == {"index": 6, "cell_id": ids[6]}
        assert "ZeroDivisionError" in run["stop_reason"]
        assert run["not_run"] == ids[7:]
        assert run["cells"][6]["error"].startswith("ZeroDivisionError")
        assert run["cells"][3]["output"] == "cell 3"
        text = text_of(result)
        assert "stopped at cell [6]" in text and "3 selected cell(s) did not run" in text
        # What ran is in the file: cells 0-5 with their outputs, 6 with its error, 7-9 untouched.
        cells = stored(path)
        for index in range(6):
            assert stream_text(cells[index]) == f"cell {index}\n"
            assert isinstance(cells[index]["execution_count"], int)
        assert [o["output_type"] for o in cells[6]["outputs"]] == ["stream", "error"]
        assert cells[6]["outputs"][1]["ename"] == "ZeroDivisionError"
        for index in range(7, 10):
            assert cells[index]["outputs"] == [] and cells[index]["execution_count"] is None
        assert run["revision"] == (await ok(client, "get_notebook_revision"))["revision"]
        assert run["read_revision"] != run["revision"]

        # stop_on_error off: the run goes on past the error.
        onward = await client.call_tool("run_cells", {"cells": "all", "stop_on_error": False})
        assert onward.is_error and error_code(onward) == "execution_error"
        assert (
            onward.structured_content["cells_run"] == 10
            and onward.structured_content["stopped_at"] is None
        )
        assert all(stream_text(cell) for cell in stored(path))


async def test_restart_and_run_all_counts_from_one(workspace):
    path = workspace / "counts.ipynb"
    sources = ["a = 1", "# Title", "b = a + 1", "", "print(a + b)", "c = b * 2\nc"]
    write_notebook(path, sources, markdown_at=(1,))
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "counts.ipynb"})
        await ok(client, "execute_code", {"code": "zz = 1\nzz"})
        before = (await ok(client, "list_kernels"))["kernels"][0]["kernel_id"]
        run = await ok(client, "run_cells", {"restart": True})
        assert run["status"] == "ok" and run["kernel_id"] != before
        # The markdown cell and the empty cell do not run: four code cells, counted 1..4.
        assert [c["execution_count"] for c in run["cells"]] == [1, 2, 3, 4]
        assert [c["index"] for c in run["cells"]] == [0, 2, 4, 5]
        cells = stored(path)
        assert [cells[i]["execution_count"] for i in (0, 2, 4, 5)] == [1, 2, 3, 4]
        assert "".join(cells[5]["outputs"][0]["data"]["text/plain"]) == "4"
        gone = await client.call_tool("execute_code", {"code": "zz"})
        assert "NameError" in text_of(gone)


async def test_ranges_ids_and_up_to(workspace):
    path = workspace / "sel.ipynb"
    ids = write_notebook(path, [f"print({i})" for i in range(6)], markdown_at=(2,))
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "sel.ipynb"})
        ranged = await ok(client, "run_cells", {"cells": "1-3"})
        assert [c["cell_id"] for c in ranged["cells"]] == [ids[1], ids[3]]
        chosen = await ok(client, "run_cells", {"cells": [ids[5], ids[0]]})
        assert [c["cell_id"] for c in chosen["cells"]] == [ids[0], ids[5]]
        upto = await ok(client, "run_cells", {"cells": "all", "up_to_cell": ids[3]})
        assert [c["index"] for c in upto["cells"]] == [0, 1, 3]
        by_index = await ok(client, "run_cells", {"cells": "4-", "up_to_cell": 4})
        assert [c["index"] for c in by_index["cells"]] == [4]
        await refused(client, "run_cells", {"cells": "9-12"}, "invalid_argument")
        await refused(client, "run_cells", {"cells": "sideways"}, "invalid_argument")
        await refused(client, "run_cells", {"cells": ["nope"]}, "not_found")
        await refused(client, "run_cells", {"cells": [ids[2]]}, "invalid_argument")


async def test_a_kernel_dying_mid_run_keeps_the_cells_that_ran(workspace):
    path = workspace / "dies.ipynb"
    sources = [
        "print('one')",
        "print('two')",
        "import os\nos.kill(os.getpid(), 9)",
        "print('never')",
    ]
    ids = write_notebook(path, sources)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "dies.ipynb"})
        result = await client.call_tool("run_cells", {})
        assert result.is_error and error_code(result) == "kernel_gone", text_of(result)
        run = result.structured_content
        assert run["status"] == "kernel_gone"
        assert [c["status"] for c in run["cells"]] == ["ok", "ok", "kernel_gone"]
        assert run["stopped_at"]["cell_id"] == ids[2] and run["not_run"] == [ids[3]]
        cells = stored(path)
        assert stream_text(cells[0]) == "one\n" and stream_text(cells[1]) == "two\n"
        assert cells[2]["outputs"] == [] and cells[3]["outputs"] == []
        again = await client.call_tool("run_cells", {})
        assert error_code(again) == "kernel_gone"
        fresh = await ok(client, "run_cells", {"restart": True, "up_to_cell": ids[1]})
        assert [c["execution_count"] for c in fresh["cells"]] == [1, 2]


async def test_edits_during_a_run_are_kept_and_said(workspace):
    path = workspace / "edited.ipynb"
    marker = workspace / "started"
    sources = [
        "print('a')",
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(1.5)\nprint('b')",
        "print('c')",
    ]
    ids = write_notebook(path, sources)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "edited.ipynb"})
        running = asyncio.ensure_future(client.call_tool("run_cells", {}))
        while not marker.exists():
            await asyncio.sleep(0.05)
        await ok(client, "overwrite_cell_source", {"cell_id": ids[1], "cell_source": "print('B')"})
        result = await running
        run = result.structured_content
        assert run["status"] == "ok" and [c["stored"] for c in run["cells"]] == [True, False, True]
        assert "were not stored" in text_of(result) and run["read_revision"] in text_of(result)
        cells = stored(path)
        assert "".join(cells[1]["source"]) == "print('B')" and cells[1]["outputs"] == []
        assert stream_text(cells[2]) == "c\n"


async def test_clear_outputs_in_one_revision(workspace):
    path = workspace / "clear.ipynb"
    ids = write_notebook(path, [f"print({i})" for i in range(5)], markdown_at=(1,))
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "clear.ipynb"})
        await ok(client, "run_cells", {})
        ranged = await ok(client, "clear_outputs", {"cells": "0-2"})
        assert ranged["cleared"] == [ids[0], ids[2]]
        cells = stored(path)
        assert cells[0]["outputs"] == [] and cells[0]["execution_count"] is None
        assert cells[3]["outputs"] and cells[4]["outputs"]
        before = ranged["revision"]
        everything = await ok(client, "clear_outputs", {"expected_revision": before})
        assert everything["cleared"] == [ids[3], ids[4]] and everything["revision"] != before
        assert all(not cell.get("outputs") for cell in stored(path))
        nothing = await ok(client, "clear_outputs", {})
        assert nothing["cleared"] == [] and nothing["revision"] == everything["revision"]
        await refused(client, "clear_outputs", {"expected_revision": before}, "revision_conflict")


async def test_progress_per_cell(workspace):
    path = workspace / "progress.ipynb"
    write_notebook(path, ["print('p0')", "print('p1')", "print('p2')"])
    heard: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message or "")

    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "progress.ipynb"})
        result = await client.call_tool("run_cells", {}, progress_callback=on_progress)
        assert not result.is_error
    said = "".join(heard)
    for index in range(3):
        assert f"cell {index + 1} of 3 ([{index}] cell-{index}): ok" in said, said


async def states(client, **arguments) -> list:
    read = await ok(client, "read_notebook", {"limit": 0, **arguments})
    return [cell["execution_state"] for cell in read["cells"]]


async def test_staleness_follows_edits_restarts_and_upstream_runs(workspace):
    path = workspace / "stale.ipynb"
    ids = write_notebook(
        path, ["a = 1", "# Notes", "b = a + 1", "c = b + 1", "d = c + 1", ""], markdown_at=(1,)
    )
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "stale.ipynb"})
        assert await states(client) == [
            "never_run",
            None,
            "never_run",
            "never_run",
            "never_run",
            None,
        ]
        await ok(client, "run_cells", {})
        assert await states(client) == ["fresh", None, "fresh", "fresh", "fresh", None]

        # An edit: that cell changed, every cell below it depends on a cell that changed.
        await ok(client, "overwrite_cell_source", {"cell_id": ids[2], "cell_source": "b = a + 10"})
        assert await states(client) == ["fresh", None, "changed", "upstream", "upstream", None]
        # Cell 0 run again: the cells below ran before it.
        await ok(client, "execute_cell", {"cell_id": ids[0]})
        assert await states(client) == ["fresh", None, "changed", "upstream", "upstream", None]

        # The stale cells up to cell 3: cell 0 is fresh and passed over; 2 and 3 run.
        run = await ok(client, "run_cells", {"cells": "stale", "up_to_cell": ids[3]})
        assert [c["cell_id"] for c in run["cells"]] == [ids[2], ids[3]] and run[
            "fresh_skipped"
        ] == 1
        assert await states(client) == ["fresh", None, "fresh", "fresh", "upstream", None]
        outline = await ok(client, "outline", {})
        assert [c["execution_state"] for c in outline["cells"]] == [
            "fresh",
            None,
            "fresh",
            "fresh",
            "upstream",
            None,
        ]
        listed = text_of(await client.call_tool("outline", {}))
        assert f"4 c {ids[4]} d = c + 1 [upstream]" in listed

        # A failing cell is stale as failed; a cell run alone below a fresh one stays fresh.
        await ok(
            client, "overwrite_cell_source", {"cell_id": ids[4], "cell_source": "d = c + undefined"}
        )
        await client.call_tool("execute_cell", {"cell_id": ids[4]})
        assert (await states(client))[4] == "failed"

        # A restart: every cell that ran, ran on an earlier kernel; a stale run runs them all.
        await ok(client, "restart_notebook", {})
        assert await states(client) == [
            "earlier_kernel",
            None,
            "earlier_kernel",
            "earlier_kernel",
            "earlier_kernel",
            None,
        ]
        await ok(client, "overwrite_cell_source", {"cell_id": ids[4], "cell_source": "d = c + 1"})
        again = await ok(client, "run_cells", {"cells": "stale"})
        assert [c["execution_count"] for c in again["cells"]] == [1, 2, 3, 4]
        assert await states(client) == ["fresh", None, "fresh", "fresh", "fresh", None]
        detailed = await ok(client, "read_notebook", {"response_format": "detailed", "limit": 0})
        assert detailed["cells"][2]["execution_state"] == "fresh"
        assert "earlier_kernel" not in text_of(await client.call_tool("read_notebook", {}))


async def test_a_run_is_one_entry_in_the_history_and_can_be_undone(workspace):
    path = workspace / "hist.ipynb"
    write_notebook(path, [f"print({i})" for i in range(6)])
    before = path.read_bytes()
    async with serve(
        workspace, "--toolsets", "runs,history", "--capability", "kernel.prestart=off"
    ) as client:
        opened = await ok(client, "get_notebook_revision", {"notebook_name": "hist.ipynb"})
        run = await ok(client, "run_cells", {"notebook_name": "hist.ipynb", "cells": "all"})
        assert run["cells_run"] == 6 and [stream_text(c) for c in stored(path)] == [
            f"{i}\n" for i in range(6)
        ]
        after = await ok(client, "get_notebook_revision", {"notebook_name": "hist.ipynb"})
        listed = await ok(client, "notebook_history", {"notebook_name": "hist.ipynb", "limit": 50})
        entries = listed["entries"]
        runs = [e for e in entries if e["tool"] == "run_cells"]
        assert len(runs) == 1, entries  # six cells written one by one, one change for the person
        assert (
            runs[0]["revision"] == after["revision"]
            and runs[0]["previous_revision"] == opened["revision"]
        )
        assert entries[0] is not None and entries[0]["revision"] == after["revision"]
        undone = await ok(
            client,
            "restore_notebook",
            {"notebook_name": "hist.ipynb", "revision": opened["revision"]},
        )
        assert undone["revision"] == opened["revision"] and path.read_bytes() == before
