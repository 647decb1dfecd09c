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
#: nbclient's wait for a cell's reply sometimes blocks where widgets are made
#: (jupyter/nbclient#312) until its timeout, then goes on with the same outputs.
NBCLIENT_TIMEOUT = 10
INSPECTOR = Path(__file__).parents[1] / "fixtures" / "ipywidgets" / "Variable Inspector.ipynb"


def as_nbclient_runs_it(sources: list[str]) -> list[list[str]]:
    """The output types nbclient stores for each cell, run with its defaults (it stops at
    the first cell it calls failed)."""
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbclient.NotebookClient(notebook, kernel_name="python3", timeout=NBCLIENT_TIMEOUT).execute()
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
        # IPython's "Error in callback" line prints an object's address without "0x", and
        # a traceback names the kernel's own folder: neither is a difference.
        assert verified["differences"] == [] and verified["status"] == "ok", verified

        # A cell that shows a handled error and then raises still fails, with the raised error.
        raised = await client.call_tool(
            "execute_code", {"code": HANDLED + "\nraise KeyError('really')"}
        )
        assert raised.is_error and raised.structured_content["status"] == "error"
        assert raised.structured_content["error"]["ename"] == "KeyError"
        assert WENT_ON not in text_of(raised).lower()


async def test_ipywidgets_variable_inspector_runs_to_its_end_as_nbclient_runs_it(
    workspace: Path,
) -> None:
    """ipywidgets' ``Variable Inspector.ipynb``: its inspector's ``post_run_cell`` callback
    fails in every cell after the one that makes it, each cell's reply saying ``ok``. nbclient
    runs every cell; so does ``run_cells`` (it stopped at the inspector, 6 cells not run)."""
    pytest.importorskip("ipywidgets")
    notebook = nbformat.read(str(INSPECTOR), as_version=4)
    # JupyterLite's install line would install into this test's environment.
    notebook.cells = [cell for cell in notebook.cells if "%pip install" not in cell.source]
    nbformat.write(notebook, str(workspace / "Variable Inspector.ipynb"))
    theirs = as_nbclient_runs_it(
        [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    )
    assert sum(1 for outputs in theirs if "error" in outputs) == 6
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "Variable Inspector.ipynb"})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert not result.is_error, text_of(result)
        run = result.structured_content
        assert run["status"] == "ok" and run["stopped_at"] is None and run["not_run"] == []
        # Every code cell with code in it ran, each ok, the callback's errors kept as outputs.
        assert [cell["status"] for cell in run["cells"]] == ["ok"] * 9
        assert sum(WENT_ON in cell["output"] for cell in run["cells"]) == 6
        assert "stopped at" not in text_of(result)
    code = [
        cell
        for cell in stored(workspace / "Variable Inspector.ipynb")
        if cell["cell_type"] == "code"
    ]
    assert [kinds(cell) for cell in code] == theirs
    assert all(isinstance(cell["execution_count"], int) for cell in code if cell["source"])
