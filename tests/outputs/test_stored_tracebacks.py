"""The file keeps the traceback the kernel sent; a model reads it folded.

A person who opens a notebook the server ran, in JupyterLab, sees the traceback any
Jupyter tool would have stored: nbclient, running the same cells on the same kernel, is
the reference. Every frame, IPython's row of dashes and the colours are in the file;
folding (library frames counted, the cell's own line kept) is what a model reads: the
result's text, its structured ``error``, ``read_cell``. Past ``--max-output-bytes`` the
stored traceback keeps its head and tail and says what was cut. A real kernel, the real
server over stdio, the official client.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ok, serve, text_of, write_notebook

from jupyter_mcp_server._kernels.outputs import strip_ansi

RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")
SNAPSHOT = "import copy, threading\n\ndef snapshot(value):\n    return copy.deepcopy(value)"
FAILING = "nested = {'a': {'b': {'c': [threading.Lock()]}}}\nresult = snapshot(nested)"
#: A chain of 150 distinct functions: a traceback of 150 frames IPython does not collapse.
CHAIN = (
    "source = '\\n'.join(f'def f{i}():\\n    return f{i + 1}()' for i in range(150))\n"
    "source += '\\ndef f150():\\n    raise ValueError(\"at the bottom\")'\n"
    "exec(compile(source, 'chain.py', 'exec'))\n"
    "f0()"
)
_COUNT = re.compile(r"In\[\d+\]")
FOLD_LINE = re.compile(r"\[… \d+ library frame\(s\) folded: copy\]")


def as_nbclient_stores_it(sources: list[str]) -> list[dict[str, Any]]:
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbclient.NotebookClient(notebook, kernel_name="python3", allow_errors=True).execute()
    return json.loads(json.dumps([cell.outputs for cell in notebook.cells]))


def errors_of(path: Path) -> list[dict[str, Any]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [
        output for cell in cells for output in cell["outputs"] if output["output_type"] == "error"
    ]


def counted(traceback: list[str], count: str) -> list[str]:
    """A traceback with its cells' execution counts as the server's run numbered them."""
    return [_COUNT.sub(count, line) for line in traceback]


async def test_the_file_keeps_the_kernels_traceback_and_a_model_reads_it_folded(
    workspace: Path,
) -> None:
    jupyter = as_nbclient_stores_it([SNAPSHOT, FAILING])[1][0]
    assert jupyter["traceback"][0].startswith("\x1b[") and "---" in jupyter["traceback"][0]
    path = workspace / "deep.ipynb"
    write_notebook(path, [SNAPSHOT, FAILING])
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "deep.ipynb"})
        run = await client.call_tool("run_cells", {})
        assert run.is_error and run.structured_content["cells_run"] == 2, text_of(run)

        # The file: what nbclient stores for the same cell, byte for byte but the count.
        (stored,) = errors_of(path)
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        count = f"In[{cells[1]['execution_count']}]"
        expected = {**jupyter, "traceback": counted(jupyter["traceback"], "In[2]")}
        assert {**stored, "traceback": counted(stored["traceback"], "In[2]")} == expected
        assert count == "In[2]"
        whole = "\n".join(strip_ansi(line) for line in stored["traceback"])
        assert "copy.py" in whole and not FOLD_LINE.search(whole)

        # A model reads it folded: run_cells' text, the cell read, a single execution's
        # text and structured error.
        assert FOLD_LINE.search(text_of(run)), text_of(run)
        read = text_of(await client.call_tool("read_cell", {"cell_id": "cell-1"}))
        assert FOLD_LINE.search(read) and "----> 2 result = snapshot(nested)" in read, read
        assert "\x1b" not in read and "-" * 20 not in read
        again = await client.call_tool("execute_cell", {"cell_id": "cell-1"})
        assert again.is_error
        assert FOLD_LINE.search(text_of(again)), text_of(again)
        structured = again.structured_content["error"]["traceback"]
        assert any(FOLD_LINE.fullmatch(entry) for entry in structured), structured
        # The structured outputs a model may read are folded too; the file is not.
        outputs = again.structured_content.get("outputs")
        if outputs:
            (shown,) = [output for output in outputs if output["output_type"] == "error"]
            assert FOLD_LINE.search("\n".join(shown["traceback"]))
        (stored,) = errors_of(path)
        assert counted(stored["traceback"], "In[2]") == expected["traceback"]


async def test_a_stored_traceback_past_the_byte_limit_keeps_head_and_tail(
    workspace: Path,
) -> None:
    jupyter = as_nbclient_stores_it([CHAIN])[0][-1]
    frames = [line for line in jupyter["traceback"] if "chain.py" in strip_ansi(line)]
    assert len(frames) >= 150
    limit = 8192
    whole = len(json.dumps([strip_ansi(line) for line in jupyter["traceback"]]))
    assert whole > 2 * limit
    async with serve(workspace, *RUNS, "--max-output-bytes", str(limit)) as client:
        await ok(client, "use_notebook", {"notebook_name": "chain.ipynb", "mode": "create"})
        failed = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": CHAIN}
        )
        assert failed.is_error and failed.structured_content["truncation"]["truncated"]
        (stored,) = errors_of(workspace / "chain.ipynb")
        traceback = stored["traceback"]
        plain = [strip_ansi(line) for line in traceback]
        # Measured as the limits measure (compact JSON, colour codes not counted).
        compact = json.dumps(
            {**stored, "traceback": plain}, ensure_ascii=False, separators=(",", ":")
        )
        assert len(compact.encode()) <= limit
        # The head and the tail as the kernel sent them (the count aside), the cut said.
        expected = counted(jupyter["traceback"], "In[1]")
        assert counted(traceback[:2], "In[1]") == expected[:2]
        assert counted(traceback[-3:], "In[1]") == expected[-3:]
        (marker,) = [line for line in traceback if line.startswith("[jupyter-mcp-server: ")]
        left = int(re.search(r"(\d+) traceback entries", marker).group(1))
        assert left == len(expected) - (len(traceback) - 1)
        assert "left out here by --max-output-bytes" in marker
        assert traceback[-1] == jupyter["traceback"][-1]
        # What a model reads says where it was raised.
        assert "ValueError: at the bottom" in text_of(failed)
