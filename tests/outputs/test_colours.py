"""Colours as Jupyter stores them, text as a model reads it: a real kernel, the real server.

ipykernel sends coloured tracebacks and passes a program's own SGR codes through its
streams; Jupyter stores them as they came and JupyterLab colours them. The server stores
them too, and strips them where it makes text for a model: the execution result (its text
and structured content), read_cell, read_notebook, outline, read_output, the
``notebook:``, ``notebook-cell:`` and ``notebook-output:`` resources, search_notebooks and
verify_notebook. The reference for
"as Jupyter stores them" is nbclient running the same code on the same kernel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ok, serve, text_of

from jupyter_mcp_server._kernels.outputs import strip_ansi

#: Words a colour change splits ("bl" bold blue, "ue" blue): search must still find "blue".
PRINT = "print('\\x1b[31mred\\x1b[0m and \\x1b[1;34mbl\\x1b[0m\\x1b[34mue\\x1b[0m words')"
SOURCE = f"{PRINT}\ndef f():\n    return 1 / 0\nf()"
COLOURED = "\x1b[31mred\x1b[0m and \x1b[1;34mbl\x1b[0m\x1b[34mue\x1b[0m words\n"
_COUNT = re.compile(r"In\[\d+\]")


def as_jupyter_stores_it(source: str) -> list[dict[str, Any]]:
    """The outputs nbclient stores for `source` as a notebook's first cell."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(source))
    nbclient.NotebookClient(notebook, kernel_name="python3", allow_errors=True).execute()
    return json.loads(json.dumps(notebook.cells[0].outputs))


def wire(result: Any) -> str:
    return result.model_dump_json(by_alias=True, exclude_none=True)


async def test_the_notebook_keeps_the_kernels_colours_and_a_model_reads_none(
    workspace: Path,
) -> None:
    jupyter = as_jupyter_stores_it(SOURCE)
    async with serve(workspace, "--toolsets", "runs") as client:
        await ok(client, "use_notebook", {"notebook_name": "colours.ipynb", "mode": "create"})
        ran = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": SOURCE}
        )
        assert ran.is_error
        said = wire(ran)
        assert "\\u001b" not in said and "\x1b" not in said, said
        assert "red and blue words" in text_of(ran)
        assert ran.structured_content["error"]["traceback"][-1] == (
            "ZeroDivisionError: division by zero"
        )
        cell_id = ran.structured_content["cell_id"]

        # On disk: as Jupyter stores them, colours, IPython's row of dashes and all.
        on_disk = json.loads((workspace / "colours.ipynb").read_text())["cells"][0]
        stream, error = on_disk["outputs"]
        assert "".join(stream["text"]) == COLOURED == "".join(jupyter[0]["text"])
        assert error["ename"] == jupyter[1]["ename"] == "ZeroDivisionError"
        count = f"In[{on_disk['execution_count']}]"
        assert error["traceback"] == [_COUNT.sub(count, line) for line in jupyter[1]["traceback"]]
        assert "\x1b[31mZeroDivisionError\x1b[39m" in error["traceback"][-1]
        # IPython's header is stored aligned for a terminal; a model reads it without the
        # run of spaces, in the text and the structured error alike.
        assert re.search(r"ZeroDivisionError\S* {2,}Traceback", error["traceback"][1])
        assert "ZeroDivisionError Traceback (most recent call last)" in text_of(ran)
        assert ran.structured_content["error"]["traceback"][0] == (
            "ZeroDivisionError Traceback (most recent call last)"
        )

        # Every reader gives the model plain text.
        reads = {
            "read_cell": await client.call_tool("read_cell", {"cell_id": cell_id}),
            "read_notebook": await client.call_tool("read_notebook", {}),
            "outline": await client.call_tool("outline", {}),
            "read_output": await client.call_tool(
                "read_output", {"uri": f"notebook-output:///colours.ipynb?cell={cell_id}&output=1"}
            ),
        }
        for name, read in reads.items():
            assert not read.is_error, (name, text_of(read))
            assert "\\u001b" not in wire(read), (name, wire(read))
        assert "red and blue words" in text_of(reads["read_cell"])
        assert "ZeroDivisionError: division by zero" in text_of(reads["read_output"])
        for name in ("read_cell", "read_output"):
            assert "ZeroDivisionError Traceback (most recent" in text_of(reads[name]), name
        resource = await client.read_resource(
            f"notebook-output:///colours.ipynb?cell={cell_id}&output=0"
        )
        assert resource.contents[0].text == strip_ansi(COLOURED)
        for uri in ("notebook:///colours.ipynb", f"notebook-cell:///colours.ipynb?cell={cell_id}"):
            read = (await client.read_resource(uri)).contents[0].text
            assert "\x1b" not in read and "\\u001b" not in read, (uri, read)
            assert "red and blue words" in read, (uri, read)

        # Search finds the words a colour change split.
        found = await ok(client, "search_notebooks", {"query": "blue words"})
        assert [(m["cell_id"], m["text"]) for m in found["matches"]][:1] == [
            (cell_id, "red and blue words")
        ], found

        # verify_notebook compares what a model reads: the coloured print agrees with a
        # fresh run's, and the error reads plain.
        verified = await client.call_tool("verify_notebook", {})
        assert "\\u001b" not in wire(verified), wire(verified)
        assert "ZeroDivisionError: division by zero" in text_of(verified)
