"""A cell fails when its kernel says so, as nbclient reads it: a real kernel, the real server.

Code that catches an exception and shows it (``get_ipython().showtraceback()``), or an
IPython event callback that fails, puts an error output in the cell while the kernel's
``execute_reply`` says ``ok``. nbclient runs on past such a cell; so do ``run_cells``,
``verify_notebook`` and staleness. The error output stays in the file and in what a model
reads, with a note that the cell went on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ok, serve, text_of, write_notebook

RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")
HANDLED = (
    'try:\n    1/0\nexcept ZeroDivisionError:\n    get_ipython().showtraceback()\nprint("handled")'
)
SECOND = 'print("second")'
#: A post_run_cell callback that fails: IPython shows its traceback, the cell's reply is ok.
CALLBACK = (
    "def bad_callback(result):\n    raise ValueError('callback failed')\n"
    "get_ipython().events.register('post_run_cell', bad_callback)\nprint('registered')"
)
UNREGISTER = "get_ipython().events.unregister('post_run_cell', bad_callback)\nprint('third')"
WENT_ON = "the cell went on after showing this error"


def as_nbclient_runs_it(sources: list[str]) -> list[list[str]]:
    """The output types nbclient stores for each cell, run with its defaults (it stops at
    the first cell it calls failed)."""
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbclient.NotebookClient(notebook, kernel_name="python3").execute()
    return [[output["output_type"] for output in cell.outputs] for cell in notebook.cells]


def stored(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def kinds(cell: dict[str, Any]) -> list[str]:
    return [output["output_type"] for output in cell["outputs"]]


async def test_a_handled_error_does_not_stop_a_run_as_nbclient_does_not(workspace: Path) -> None:
    sources = [HANDLED, SECOND, CALLBACK, UNREGISTER]
    jupyter = as_nbclient_runs_it(sources)
    assert jupyter == [["error", "stream"], ["stream"], ["stream", "error"], ["stream"]]
    path = workspace / "handled.ipynb"
    ids = write_notebook(path, sources)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "handled.ipynb"})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert not result.is_error, text_of(result)
        run = result.structured_content
        assert run["status"] == "ok" and run["stopped_at"] is None and run["not_run"] == []
        assert [cell["status"] for cell in run["cells"]] == ["ok"] * 4
        assert [cell["error"] for cell in run["cells"]] == [None] * 4
        # The error stays an output, and a model reading it is told the cell went on.
        assert "ZeroDivisionError" in run["cells"][0]["output"]
        assert WENT_ON in run["cells"][0]["output"] and "handled" in run["cells"][0]["output"]
        assert "ValueError: callback failed" in run["cells"][2]["output"]
        assert WENT_ON in run["cells"][2]["output"]
        assert WENT_ON not in run["cells"][1]["output"]
        text = text_of(result)
        assert "second" in text and "third" in text and "stopped at" not in text
        # The file holds what nbclient stores: every cell ran, the error outputs kept.
        cells = stored(path)
        assert [kinds(cell) for cell in cells] == jupyter
        assert all(isinstance(cell["execution_count"], int) for cell in cells)

        # Staleness: the cells that showed an error are fresh, not failed.
        outline = await ok(client, "outline", {})
        assert [cell["execution_state"] for cell in outline["cells"]] == ["fresh"] * 4

        # One cell alone: ok, no `error`, the error output in the text with the note.
        single = await client.call_tool("execute_cell", {"cell_id": ids[0]})
        assert not single.is_error, text_of(single)
        assert single.structured_content["status"] == "ok"
        assert single.structured_content["error"] is None
        said = text_of(single)
        assert "ZeroDivisionError" in said and "handled" in said
        assert "The cell went on after showing an error (ZeroDivisionError)" in said

        # verify_notebook runs it in a new kernel: no failure, nothing differs.
        verified = await ok(client, "verify_notebook", {})
        assert verified["failures"] == [] and verified["cells_run"] == 4
        # IPython's "Error in callback" line prints an object's address without "0x", which
        # verify_notebook does not take for an address: only that cell may differ.
        assert {difference["index"] for difference in verified["differences"]} <= {2}
        assert verified["status"] in ("ok", "differs")

        # A cell that shows a handled error and then raises still fails, with the raised error.
        raised = await client.call_tool(
            "execute_code", {"code": HANDLED + "\nraise KeyError('really')"}
        )
        assert raised.is_error and raised.structured_content["status"] == "error"
        assert raised.structured_content["error"]["ename"] == "KeyError"
        assert WENT_ON not in text_of(raised).lower()
