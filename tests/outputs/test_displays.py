"""Display updates across cells: what we store is what nbclient stores.

nbclient's own test notebooks "Clear Output" and "update-display-id"
(tests/fixtures/nbclient) are run twice, each on a fresh kernel: through the
real server's `run_cells(restart=true)`, and through nbclient in this
process. The stored outputs must be the same, cell by cell: a
`display(..., display_id=...)` updated by a later cell (or by a new display
with the same id) shows its last state wherever it is, and a cleared output
is updated no more. `execute_cell` carries updates into earlier cells too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import ok, serve

FILES = Path(__file__).resolve().parents[1] / "fixtures" / "nbclient"
RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")


def comparable(output: dict) -> dict:
    """An output as both sides store it: no transient ids, no timings; an error by name and value
    (our tracebacks are folded, docs/protocol.md)."""
    kind = output["output_type"]
    if kind == "error":
        return {"output_type": kind, "ename": output["ename"], "evalue": output["evalue"]}
    kept = {key: value for key, value in output.items() if key not in ("transient",)}
    if "text" in kept and isinstance(kept["text"], list):
        kept["text"] = "".join(kept["text"])
    if "data" in kept:
        kept["data"] = {
            mime: "".join(v) if isinstance(v, list) else v for mime, v in kept["data"].items()
        }
    return json.loads(json.dumps(kept))


async def nbclient_outputs(path: Path) -> list[list[dict]]:
    from nbclient import NotebookClient

    notebook = nbformat.read(str(path), as_version=4)
    client = NotebookClient(
        notebook,
        timeout=60,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    await client.async_execute()
    return [[comparable(o) for o in cell.get("outputs", [])] for cell in notebook.cells]


@pytest.mark.parametrize("name", ["Clear Output.ipynb", "update-display-id.ipynb"])
async def test_stored_outputs_match_nbclient(workspace, tmp_path, name):
    pytest.importorskip("nbclient")
    ours = workspace / "nb.ipynb"
    shutil.copy(FILES / name, ours)
    theirs = tmp_path / "theirs.ipynb"
    shutil.copy(FILES / name, theirs)
    expected = await nbclient_outputs(theirs)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "nb.ipynb"})
        # A fresh kernel, as nbclient's (the server's first: no restart, one kernel launch fewer).
        run = await ok(client, "run_cells", {})
        assert run["status"] == "ok"
    stored = nbformat.read(str(ours), as_version=4)
    got = [[comparable(o) for o in cell.get("outputs", [])] for cell in stored.cells]
    for index, (mine, nbclients) in enumerate(zip(got, expected, strict=True)):
        assert mine == nbclients, f"{name}, cell {index}: {mine} != {nbclients}"


async def test_execute_cell_updates_an_earlier_cell(workspace):
    path = workspace / "bar.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("h = display('0%', display_id=True)"),
        nbformat.v4.new_code_cell("h.update('50%')"),
        nbformat.v4.new_code_cell("h.update('100%')\nprint('done')"),
    ]
    nbformat.write(notebook, str(path))
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "bar.ipynb"})
        for index in range(3):
            await ok(client, "execute_cell", {"cell_index": index})
        cells = nbformat.read(str(path), as_version=4).cells
        assert cells[0].outputs[0]["data"]["text/plain"] == "'100%'"
        assert cells[1].outputs == [] and cells[2].outputs[0]["text"] == "done\n"
        # Cleared, the earlier output is updated no more.
        await ok(client, "clear_cell_output", {"cell_index": 0})
        await ok(client, "execute_cell", {"cell_index": 1})
        assert nbformat.read(str(path), as_version=4).cells[0].outputs == []
