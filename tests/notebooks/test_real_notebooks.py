"""Notebooks nobody here wrote, through the real server, beside what Jupyter's own tools do.

The corpus is vendored under tests/fixtures with its licences: nbclient's
test notebooks (the cell tags it honours; nbformat 4.0 files without cell
ids), jupytext's percent scripts (a person's header) and nbformat's 4.0 and
4.99 notebooks. Where Jupyter has a runner, nbclient runs the same notebook
in this process and the two must agree: which cells ran, what they stored,
and the folder the kernel ran in.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import error_code, ok, serve, text_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NBCLIENT = FIXTURES / "nbclient"
JUPYTEXT = FIXTURES / "jupytext"
NBFORMAT = FIXTURES / "nbformat"
RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")


def copied(source: Path, folder: Path, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (name or source.name)
    shutil.copyfile(source, target)
    return target


def outputs_of(notebook: nbformat.NotebookNode) -> list[list[tuple[str, str]]]:
    """Each cell's outputs as both sides store them: streams by text, errors by name and value.
    Consecutive texts of one stream are one, as a notebook shows them: how many messages a print
    arrives in (``ok`` then a line break, or both at once) depends on when the kernel flushed."""
    cells = []
    for cell in notebook.cells:
        kept: list[tuple[str, str]] = []
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                text = "".join(output["text"])
                if kept and kept[-1][0] == output["name"]:
                    kept[-1] = (output["name"], kept[-1][1] + text)
                else:
                    kept.append((output["name"], text))
            elif output["output_type"] == "error":
                kept.append(("error", f"{output['ename']}: {output['evalue']}"))
            else:
                kept.append((output["output_type"], json.dumps(output.get("data"), sort_keys=True)))
        cells.append(kept)
    return cells


async def run_by_nbclient(path: Path) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    notebook = nbformat.read(str(path), as_version=4)
    client = NotebookClient(
        notebook,
        timeout=60,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    await client.async_execute()
    return notebook


# --- The tags nbclient honours ------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["Skip Execution with Cell Tag.ipynb", "Skip Exceptions with Cell Tags.ipynb"]
)
async def test_run_cells_honours_the_tags_nbclient_honours(workspace, tmp_path, name):
    pytest.importorskip("nbclient")
    theirs = await run_by_nbclient(copied(NBCLIENT / name, tmp_path / "theirs"))
    ours = copied(NBCLIENT / name, workspace)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": ours.name})
        result = await client.call_tool("run_cells", {})
        assert not result.is_error, text_of(result)
        run = result.structured_content
        verified = await ok(client, "verify_notebook", {})
    assert run["status"] == "ok"
    stored = nbformat.read(str(ours), as_version=4)
    assert outputs_of(stored) == outputs_of(theirs)
    tagged = [cell for cell in stored.cells if "skip-execution" in cell.metadata.get("tags", [])]
    assert [cell.id for cell in tagged] == run["tag_skipped"]
    assert all(cell.execution_count is None and not cell.outputs for cell in tagged), (
        "a skipped cell is left as it was"
    )
    expected = [cell["cell_id"] for cell in run["cells"] if cell["expected_error"]]
    raising = [
        cell.id for cell in stored.cells if "raises-exception" in cell.metadata.get("tags", [])
    ]
    assert expected == raising
    if raising:
        assert "raised, as its raises-exception tag says it should" in text_of(result)
    # verify_notebook runs from the top as nbclient does: nothing fails, nothing differs.
    assert verified["status"] == "ok", verified
    assert verified["tag_skipped"] == run["tag_skipped"] and verified["expected_errors"] == raising
    assert verified["failures"] == []


async def test_an_untagged_error_still_stops_the_run_as_it_stops_nbclient(workspace, tmp_path):
    """The contrast: "Skip Exceptions.ipynb" raises in a cell without the tag."""
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError):
        await run_by_nbclient(copied(NBCLIENT / "Skip Exceptions.ipynb", tmp_path / "theirs"))
    copied(NBCLIENT / "Skip Exceptions.ipynb", workspace, "skip.ipynb")
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "skip.ipynb"})
        result = await client.call_tool("run_cells", {})
    assert result.is_error and error_code(result) == "execution_error"
    assert result.structured_content["stopped_at"]["index"] == 0
    assert result.structured_content["cells"][0]["expected_error"] is False


# --- A percent script's header ------------------------------------------------------


@pytest.mark.parametrize("name", ["cat_variable.py", "jupyter.py"])
async def test_an_edit_and_its_undo_leave_a_percent_script_byte_for_byte(workspace, name):
    script = copied(JUPYTEXT / name, workspace)
    before = script.read_bytes()
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        await ok(client, "use_notebook", {"notebook_name": name})
        inserted = await ok(
            client, "insert_cell", {"cell_index": 0, "cell_type": "code", "cell_source": "z = 3"}
        )
        assert b"z = 3" in script.read_bytes()
        assert script.read_text().startswith(before.decode().split("# ---\n\n", 1)[0]), (
            "the header is as it was"
        )
        await ok(client, "delete_cell", {"cell_ids_to_delete": [inserted["cell_id"]]})
    assert script.read_bytes() == before


# --- nbformat 4.99 -------------------------------------------------------------------


async def test_a_newer_nbformat_gets_the_notice_an_older_one_gets(workspace):
    newer = copied(NBFORMAT / "test4plus.ipynb", workspace)
    copied(NBFORMAT / "test4.ipynb", workspace)
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        older = await ok(client, "read_notebook", {"notebook_name": "test4.ipynb", "limit": 0})
        assert older["format_upgraded"] == {"from": "4.0", "to": "4.5"}

        read = await client.call_tool(
            "read_notebook", {"notebook_name": "test4plus.ipynb", "limit": 0}
        )
        assert read.structured_content["format_upgraded"] == {"from": "4.99", "to": "4.99"}
        assert "nbformat 4.99, newer than the 4.5" in text_of(read)
        await ok(client, "use_notebook", {"notebook_name": "test4plus.ipynb"})
        edit = await client.call_tool(
            "insert_cell", {"cell_index": 0, "cell_type": "markdown", "cell_source": "new"}
        )
        assert not edit.is_error, text_of(edit)
        assert edit.structured_content["format_upgraded"] == {"from": "4.99", "to": "4.99"}
        assert "newer than the 4.5" in text_of(edit)
    on_disk = nbformat.reads(newer.read_text(), as_version=nbformat.NO_CONVERT)
    assert (on_disk["nbformat"], on_disk["nbformat_minor"]) == (4, 99)
    original = nbformat.reads(
        (NBFORMAT / "test4plus.ipynb").read_text(), as_version=nbformat.NO_CONVERT
    )
    assert on_disk.cells[1:] == original.cells, "every cell, the future one too, kept as it was"
    assert "future cell" in [cell.cell_type for cell in on_disk.cells]


# --- What a result says --------------------------------------------------------------


async def test_a_run_of_a_percent_script_says_it_stores_no_outputs(workspace):
    script = copied(JUPYTEXT / "jupyter.py", workspace)
    before = script.read_bytes()
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "jupyter.py"})
        result = await client.call_tool("run_cells", {})
        assert not result.is_error, text_of(result)
        said = text_of(result)
        assert "stored in the notebook" not in said
        assert "stores no outputs" in said
        # ... which are in memory all the same, as the result says.
        cell_id = result.structured_content["cells"][0]["cell_id"]
        shown = await client.call_tool("read_cell", {"cell_id": cell_id})
        assert "3" in text_of(shown)
    assert script.read_bytes() == before


def dying(workspace: Path, name: str, at: int) -> Path:
    """nbclient's HelloWorld with a cell that kills its kernel at `at`."""
    path = copied(NBCLIENT / "HelloWorld.ipynb", workspace, name)
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells.insert(at, nbformat.v4.new_code_cell("import os; os._exit(1)"))
    nbformat.write(notebook, str(path))
    return path


async def test_a_run_whose_kernel_died_says_what_was_stored_and_nothing_else(workspace):
    dying(workspace, "first.ipynb", 0)
    dying(workspace, "last.ipynb", 1)
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "first.ipynb"})
        first = await client.call_tool("run_cells", {})
        await ok(client, "use_notebook", {"notebook_name": "last.ipynb"})
        last = await client.call_tool("run_cells", {})
    said = text_of(first)
    assert error_code(first) == "kernel_gone", said
    assert "are stored" not in said, said
    assert "no outputs were stored" in said
    # A cell finished before the death: the result says its outputs are stored, and no more.
    said = text_of(last)
    assert error_code(last) == "kernel_gone", said
    assert "The outputs of the 1 cell(s) that finished are stored in the notebook" in said
    assert "Outputs are stored in the notebook" not in said


# --- The folder a kernel runs in -----------------------------------------------------

#: A cell a notebook of someone's might end with: files beside the notebook, opened by name.
BESIDE = "import os, helpers\nprint(open('input.csv').read().strip(), helpers.VALUE, os.getcwd())"


def notebook_in_a_folder(root: Path, folder: str) -> Path:
    """nbclient's Factorials, in `folder` with an input file and a module beside it, and a last
    cell that opens them by their bare names."""
    path = copied(NBCLIENT / "Factorials.ipynb", root / folder, "analysis.ipynb")
    (path.parent / "input.csv").write_text("a,b\n")
    (path.parent / "helpers.py").write_text("VALUE = 42\n")
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(BESIDE))
    nbformat.write(notebook, str(path))
    return path


@pytest.mark.parametrize("prestart", ["on", "off"])
async def test_a_notebooks_kernel_runs_in_its_folder_as_nbclient_runs_it(
    workspace, tmp_path, prestart
):
    """With the prestarted kernel (started in the workspace root, then moved) and without it."""
    pytest.importorskip("nbclient")
    theirs = await run_by_nbclient(notebook_in_a_folder(tmp_path / "theirs", "data/analysis"))
    path = notebook_in_a_folder(workspace, "data/analysis")
    folder = str(path.parent.resolve())
    async with serve(
        workspace, "--toolsets", "runs", "--capability", f"kernel.prestart={prestart}"
    ) as client:
        await ok(client, "use_notebook", {"notebook_name": "data/analysis/analysis.ipynb"})
        run = await client.call_tool("run_cells", {})
        assert not run.is_error, text_of(run)
        here = await client.call_tool("execute_code", {"code": "import os; print(os.getcwd())"})
        verified = await ok(client, "verify_notebook", {})
    assert text_of(here).strip() == folder
    ours = nbformat.read(str(path), as_version=4)
    assert outputs_of(ours)[:-1] == outputs_of(theirs)[:-1]
    assert outputs_of(ours)[-1] == [("stdout", f"a,b 42 {folder}\n")]
    assert outputs_of(theirs)[-1] == [
        ("stdout", f"a,b 42 {(tmp_path / 'theirs/data/analysis').resolve()}\n")
    ]
    # verify_notebook's throwaway kernel runs there too: the last cell finds its files, and prints the same.
    assert verified["status"] == "ok", verified


async def test_a_kernel_follows_its_notebook_into_another_folder_and_a_shared_one_says_where_it_is(
    workspace,
):
    notebook_in_a_folder(workspace, "data/analysis")
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        first = await ok(client, "use_notebook", {"notebook_name": "data/analysis/analysis.ipynb"})
        await ok(client, "execute_code", {"code": "x = 1"})
        # Renamed by the person, into another folder: the notebook's kernel runs there now.
        (workspace / "data" / "moved").mkdir()
        (workspace / "data/analysis/analysis.ipynb").rename(workspace / "data/moved/analysis.ipynb")
        await ok(client, "use_notebook", {"notebook_name": "data/moved/analysis.ipynb"})
        here = await client.call_tool("execute_code", {"code": "import os; print(os.getcwd())"})
        assert text_of(here).strip() == str((workspace / "data/moved").resolve())
        # A notebook elsewhere sharing the first kernel shares its folder, as in Jupyter, and is told so.
        await ok(client, "use_notebook", {"notebook_name": "top.ipynb", "mode": "create"})
        shared = await client.call_tool(
            "use_notebook", {"notebook_name": "top.ipynb", "kernel_id": first["kernel_id"]}
        )
        assert not shared.is_error, text_of(shared)
        assert "runs in the folder 'data/analysis'" in text_of(shared)
        there = await client.call_tool("execute_code", {"code": "import os; print(os.getcwd())"})
        assert text_of(there).strip() == str((workspace / "data/analysis").resolve())


# --- Cell ids of files that store none ---------------------------------------------


async def ids_of(client, name: str) -> list[str]:
    read = await ok(client, "read_notebook", {"notebook_name": name, "limit": 0})
    return [cell["cell_id"] for cell in read["cells"]]


async def test_cell_ids_of_files_that_store_none_survive_a_restart(workspace, tmp_path):
    """nbclient's nbformat 4.0 notebooks and jupytext's percent scripts: read, restart, read again;
    then an edit by the server (the script's cells still store no id), restart, read again."""
    names = ["HelloWorld.ipynb", "Factorials.ipynb"]
    for name in names:
        copied(NBCLIENT / name, workspace)
    scripts = ["jupyter.py", "cat_variable.py"]
    for name in scripts:
        copied(JUPYTEXT / name, workspace)
    args = ("--capability", "kernel.prestart=off", "--history-dir", str(tmp_path / "history"))
    async with serve(workspace, *args) as client:
        first = {name: await ids_of(client, name) for name in names + scripts}
    async with serve(workspace, *args) as client:
        assert {name: await ids_of(client, name) for name in names + scripts} == first
        # The server edits a script: the edited cell keeps its id, though the file cannot hold it.
        edited = first["jupyter.py"][1]
        await ok(client, "use_notebook", {"notebook_name": "jupyter.py"})
        await ok(
            client,
            "overwrite_cell_source",
            {"cell_id": edited, "cell_source": "a = 10\nb = 20\na + b"},
        )
        inserted = (
            await ok(
                client,
                "insert_cell",
                {"cell_index": 0, "cell_type": "code", "cell_source": "import math"},
            )
        )["cell_id"]
    async with serve(workspace, *args) as client:
        assert await ids_of(client, "jupyter.py") == [inserted, *first["jupyter.py"]]
        assert await ids_of(client, "cat_variable.py") == first["cat_variable.py"]
    # Without a history the ids are derived from the cells (type, source): the same at every start.
    off = ("--capability", "kernel.prestart=off", "--history-dir", "off")
    async with serve(workspace, *off) as client:
        derived = await ids_of(client, "cat_variable.py")
    async with serve(workspace, *off) as client:
        assert await ids_of(client, "cat_variable.py") == derived == first["cat_variable.py"]
