"""Widgets as Jupyter keeps them: a real kernel with ipywidgets, the real server over stdio.

What code prints inside ``with out:`` (an ipywidgets ``Output``) or under ``@out.capture()``
goes into that widget, as JupyterLab, Voilà, VS Code and nbclient route it, not into the
cell. The kernel's widget state is saved in the notebook's metadata as nbclient saves it
(``application/vnd.jupyter.widget-state+json``), so the notebook shows its widgets when
reopened in JupyterLab; a model reading the cell is told what the widget holds. Each case
is checked against nbclient run on the same cells.

The cells follow the ``Output`` widget's documented uses (ipywidgets' ``Output
Widget.ipynb``): a loop printing ten lines into a displayed ``Output``, a function
decorated with ``capture`` that prints and raises, ``clear_output``, and outputs appended
from the kernel (``append_stdout``).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ok, serve, text_of, write_notebook

pytest.importorskip("ipywidgets")

RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

IMPORT = "import ipywidgets as widgets"
SHOW = "out = widgets.Output(layout={'border': '1px solid black'})\ndisplay(out)"
LOOP = "with out:\n    for i in range(10):\n        print(i, 'printed into the widget')"
AFTER = "print('printed into the cell')"
#: What the kernel's own Output widget lists once the cell that filled it has ended.
KERNEL_SIDE = "print(len(out.outputs), out.outputs[0]['text'].count('printed into the widget'))"
CAPTURE = (
    "@out.capture()\n"
    "def captured():\n"
    "    print('captured by the decorator')\n"
    "    raise Exception('raised under capture')\n"
    "\n"
    "captured()\n"
    "print('the cell went on')"
)
APPENDED = "logs = widgets.Output()\nlogs.append_stdout('appended from the kernel\\n')\nlogs"


IPYWIDGETS = Path(__file__).parents[1] / "fixtures" / "ipywidgets"
#: nbclient's wait for a cell's reply sometimes blocks where widgets are made
#: (jupyter/nbclient#312) until its timeout, then goes on with the same outputs.
NBCLIENT_TIMEOUT = 10


def ipywidgets_notebook(name: str, cells: int | None = None) -> nbformat.NotebookNode:
    """One of ipywidgets' documentation notebooks (its first `cells`), without JupyterLite's
    ``%pip install`` line, which would install into this test's environment."""
    notebook = nbformat.read(str(IPYWIDGETS / f"{name}.ipynb"), as_version=4)
    notebook.cells = [
        cell for cell in notebook.cells[:cells] if not cell.source.startswith("# Imports for")
    ]
    return notebook


def as_nbclient_runs_it(sources: list[str]) -> nbformat.NotebookNode:
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbclient.NotebookClient(notebook, kernel_name="python3", timeout=NBCLIENT_TIMEOUT).execute()
    return notebook


def cell_outputs(cell: Any) -> list[dict[str, Any]]:
    """A cell's outputs without the model ids that differ from one run to the next."""
    outputs = []
    for output in cell["outputs"]:
        output = json.loads(json.dumps(output))
        view = (output.get("data") or {}).get("application/vnd.jupyter.widget-view+json")
        if view:
            view["model_id"] = "<model>"
        output.get("data", {}).pop("text/plain", None)
        outputs.append(output)
    return outputs


def output_widgets(notebook: Any) -> list[list[dict[str, Any]]]:
    """The outputs each saved Output widget holds, in the order the widgets were made."""
    saved = notebook["metadata"]["widgets"][WIDGET_STATE]
    assert saved["version_major"] == 2 and saved["version_minor"] == 0
    held = []
    for model in saved["state"].values():
        assert set(model) >= {"model_name", "model_module", "model_module_version", "state"}
        if model["model_name"] == "OutputModel":
            held.append(json.loads(json.dumps(model["state"]["outputs"])))
    return held


def streams(outputs: list[dict[str, Any]]) -> str:
    return "".join(output["text"] for output in outputs if output["output_type"] == "stream")


async def run_all(workspace: Path, name: str, sources: list[str]) -> Any:
    write_notebook(workspace / name, sources)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": name})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert not result.is_error, text_of(result)
        run = result.structured_content or {}
        assert [cell["status"] for cell in run["cells"]] == ["ok"] * len(sources)
    # As JupyterLab reads the file (a text stored as a list of lines is one text).
    return nbformat.read(str(workspace / name), as_version=4)


async def test_what_with_out_prints_goes_into_the_widget_as_nbclient_stores_it(
    workspace: Path,
) -> None:
    sources = [IMPORT, SHOW, LOOP, AFTER, KERNEL_SIDE]
    stored = await run_all(workspace, "output.ipynb", sources)
    jupyter = as_nbclient_runs_it(sources)
    # The kernel was told what its widget holds, as nbclient tells it.
    assert stored.cells[4].outputs[0]["text"] == "1 10\n" == jupyter.cells[4].outputs[0]["text"]
    # The loop's ten prints are in the widget, not in the cell; the next cell's print is its own.
    assert stored["cells"][2]["outputs"] == [] == jupyter.cells[2].outputs
    assert [cell_outputs(cell) for cell in stored["cells"]] == [
        cell_outputs(cell) for cell in jupyter.cells
    ]
    held = output_widgets(stored)
    assert held == output_widgets(jupyter)
    assert streams(held[0]).count("printed into the widget") == 10
    assert held[0] == [
        {
            "output_type": "stream",
            "name": "stdout",
            "text": "".join(f"{i} printed into the widget\n" for i in range(10)),
        }
    ]
    # Reopened, the file is a valid notebook holding the widgets (as JupyterLab reads it).
    reopened = nbformat.read(str(workspace / "output.ipynb"), as_version=4)
    nbformat.validate(reopened)
    assert reopened.metadata.widgets[WIDGET_STATE]["state"]


def without_run_details(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outputs without what differs from one kernel to the next: widget ids, the kernel's
    temporary file names in tracebacks, object addresses."""
    text = json.dumps(outputs)
    text = re.sub(r'"model_id": "[0-9a-f]+"', '"model_id": "<model>"', text)
    text = re.sub(r"ipykernel_\d+/\d+\.py", "<cell>", text)
    text = re.sub(r"0x[0-9a-f]+", "0x<address>", text)
    return list(json.loads(text))


async def test_ipywidgets_output_widget_notebook_stores_as_nbclient_stores_it(
    workspace: Path,
) -> None:
    """ipywidgets' own ``Output Widget.ipynb``, as far as its capture example: what ``with
    out:`` prints, the video and the slider displayed into it, the appended outputs, and the
    decorated function's print and error all go into the widgets, as nbclient stores them."""
    notebook = ipywidgets_notebook("Output Widget", cells=18)
    theirs = copy.deepcopy(notebook)
    pytest.importorskip("nbclient").NotebookClient(
        theirs, kernel_name="python3", timeout=NBCLIENT_TIMEOUT
    ).execute()
    nbformat.write(notebook, str(workspace / "Output Widget.ipynb"))
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "Output Widget.ipynb"})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert not result.is_error, text_of(result)
        run = result.structured_content or {}
        assert run["status"] == "ok" and run["not_run"] == [], run
        assert [cell["status"] for cell in run["cells"]] == ["ok"] * 8
    stored = nbformat.read(str(workspace / "Output Widget.ipynb"), as_version=4)
    nbformat.validate(stored)
    code = [index for index, cell in enumerate(stored.cells) if cell.cell_type == "code"]
    for index in code:
        assert cell_outputs(stored.cells[index]) == cell_outputs(theirs.cells[index]), index
    loop = next(index for index in code if "Hello world!" in stored.cells[index].source)
    assert stored.cells[loop].outputs == []  # the ten prints went into the widget
    held = [without_run_details(outputs) for outputs in output_widgets(stored)]
    assert sorted(held, key=json.dumps) == sorted(
        (without_run_details(outputs) for outputs in output_widgets(theirs)), key=json.dumps
    )
    first = next(outputs for outputs in held if "Hello world!" in streams(outputs))
    assert first[0]["text"] == "".join(f"{i} Hello world!\n" for i in range(10))
    assert [output["output_type"] for output in first] == ["stream", "display_data", "display_data"]
    captured = next(
        outputs for outputs in held if any(o["output_type"] == "error" for o in outputs)
    )
    assert streams(captured) == "This goes into the output widget\n"
    assert captured[-1]["evalue"] == "As does this"


async def test_capture_takes_the_function_s_prints_and_error_as_nbclient_stores_them(
    workspace: Path,
) -> None:
    sources = [IMPORT, SHOW, CAPTURE, APPENDED]
    stored = await run_all(workspace, "capture.ipynb", sources)
    jupyter = as_nbclient_runs_it(sources)
    # The cell keeps only what it printed itself after the call.
    assert cell_outputs(stored["cells"][2]) == [
        {"output_type": "stream", "name": "stdout", "text": "the cell went on\n"}
    ]
    assert [cell_outputs(cell) for cell in stored["cells"]] == [
        cell_outputs(cell) for cell in jupyter.cells
    ]
    # The file keeps models by id (sorted): the one the decorator filled holds an error.
    held = sorted(output_widgets(stored), key=len, reverse=True)
    theirs = sorted(output_widgets(jupyter), key=len, reverse=True)
    assert [[output["output_type"] for output in outputs] for outputs in held] == [
        ["stream", "error"],
        ["stream"],
    ]
    assert [[output["output_type"] for output in outputs] for outputs in theirs] == [
        ["stream", "error"],
        ["stream"],
    ]
    assert streams(held[0]) == streams(theirs[0]) == "captured by the decorator\n"
    assert held[0][1]["evalue"] == theirs[0][1]["evalue"] == "raised under capture"
    assert streams(held[1]) == "appended from the kernel\n"
    nbformat.validate(nbformat.read(str(workspace / "capture.ipynb"), as_version=4))


async def test_a_model_reading_the_cell_is_told_what_the_widget_holds(workspace: Path) -> None:
    write_notebook(workspace / "read.ipynb", [IMPORT, SHOW, LOOP])
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "read.ipynb"})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert not result.is_error, text_of(result)
        # The execution whose prints the widget took says so, and what the widget holds.
        result = await client.call_tool("execute_cell", {"cell_id": "cell-2"})
        assert not result.is_error, text_of(result)
        text = text_of(result)
        assert "went into an Output widget, not into the cell" in text
        # Run twice, the widget holds both runs' prints (one stream), as in JupyterLab.
        assert text.count("9 printed into the widget") == 2
        assert "holds 1 output(s)" in text
        # The cell showing the widget reads as what the widget holds.
        result = await client.call_tool("read_cell", {"cell_id": "cell-1"})
        assert not result.is_error, text_of(result)
        text = text_of(result)
        assert "Output widget" in text
        assert "9 printed into the widget" in text
        # So does every other way a model reads or finds it: a detailed read, the output
        # itself, a search.
        read = await client.call_tool("read_notebook", {"response_format": "detailed"})
        assert not read.is_error and "9 printed into the widget" in text_of(read)
        uri = "notebook-output:///read.ipynb?cell=cell-1&output=0"
        page = await client.call_tool("read_output", {"uri": uri})
        assert not page.is_error and "9 printed into the widget" in text_of(page)
        found = await ok(client, "search_notebooks", {"query": "9 printed into the widget"})
        # Once a run: the widget holds both runs' prints.
        assert [(match["cell_id"], match["where"]) for match in found["matches"]] == [
            ("cell-1", "output 0")
        ] * 2, found


BINARY = (
    "import ipywidgets as widgets\n"
    "picture = widgets.Image(value=bytes(range(256)), format='png')\n"
    "picture"
)


async def test_binary_buffers_are_saved_base64_as_nbclient_saves_them(workspace: Path) -> None:
    stored = await run_all(workspace, "binary.ipynb", [BINARY])
    jupyter = as_nbclient_runs_it([BINARY])

    def images(notebook: Any) -> list[dict[str, Any]]:
        saved = notebook["metadata"]["widgets"][WIDGET_STATE]["state"]
        return [model for model in saved.values() if model["model_name"] == "ImageModel"]

    ours, theirs = images(stored), images(jupyter)
    assert len(ours) == len(theirs) == 1
    assert ours[0]["buffers"] == theirs[0]["buffers"]
    assert base64.b64decode(ours[0]["buffers"][0]["data"]) == bytes(range(256))
    assert ours[0]["buffers"][0]["path"] == ["value"]
    nbformat.validate(nbformat.read(str(workspace / "binary.ipynb"), as_version=4))


INTERACT = (
    "from ipywidgets import interact\n\ndef f(x):\n    print('x is', x)\n\ninteract(f, x=10);"
)


async def test_interact_prints_into_its_own_output_and_reads_through_its_box(
    workspace: Path,
) -> None:
    write_notebook(workspace / "interact.ipynb", [INTERACT])
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "interact.ipynb"})
        result = await client.call_tool("run_cells", {"cells": "all"})
        assert not result.is_error, text_of(result)
        # The run's own result reads the widget as it left it.
        assert "x is 10" in text_of(result)
        result = await client.call_tool("read_cell", {"cell_id": "cell-0"})
        assert not result.is_error, text_of(result)
        # The box interact shows holds the slider and an Output: read through to what it holds.
        assert "x is 10" in text_of(result)
    stored = nbformat.read(str(workspace / "interact.ipynb"), as_version=4)
    jupyter = as_nbclient_runs_it([INTERACT])
    assert cell_outputs(stored.cells[0]) == cell_outputs(jupyter.cells[0])
    assert [streams(outputs) for outputs in output_widgets(stored)] == ["x is 10\n"]
    assert output_widgets(stored) == output_widgets(jupyter)
