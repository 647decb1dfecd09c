"""The notebook store: revisions, outside edits, upgrades, scripts and the cost of a mutation."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat import v3, v4

from jupyter_mcp_server._errors import (
    ALREADY_EXISTS,
    INVALID_ARGUMENT,
    INVALID_PATH,
    NOT_FOUND,
    REVISION_CONFLICT,
    ToolFailure,
)
from jupyter_mcp_server._store import NotebookStore, formats, new_cell, revision_of
from jupyter_mcp_server._workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "root"
    directory.mkdir()
    return directory


@pytest.fixture
def store(root: Path) -> NotebookStore:
    return NotebookStore(Workspace(root))


def notebook_with(*sources: str, **fields: Any) -> nbformat.NotebookNode:
    notebook = v4.new_notebook(**fields)
    notebook.cells = [v4.new_code_cell(source) for source in sources]
    return notebook


def save(path: Path, notebook: nbformat.NotebookNode) -> bytes:
    """Write the way Jupyter does, as an outside program would."""
    data = (nbformat.writes(notebook) + "\n").encode()
    path.write_bytes(data)
    return data


def append(source: str):
    def change(notebook: nbformat.NotebookNode) -> str:
        cell = new_cell("code", source)
        notebook.cells.append(cell)
        return cell.id

    return change


def set_source(index: int, source: str):
    def change(notebook: nbformat.NotebookNode) -> None:
        notebook.cells[index].source = source

    return change


async def refused(code: str, awaitable) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        await awaitable
    assert caught.value.code == code, caught.value.message
    return caught.value


# Creating


async def test_a_created_notebook_is_valid_4_5_written_as_nbformat_writes_it(
    store: NotebookStore, root: Path
) -> None:
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    view = await store.create("new.ipynb", kernelspec=kernelspec)
    data = (root / "new.ipynb").read_bytes()
    on_disk = nbformat.reads(data.decode(), as_version=nbformat.NO_CONVERT)
    nbformat.validate(on_disk)
    assert (on_disk.nbformat, on_disk.nbformat_minor) == (4, 5)
    assert on_disk.metadata.kernelspec == kernelspec
    assert data == (nbformat.writes(on_disk) + "\n").encode()
    assert view.revision == hashlib.sha256(data).hexdigest()[:16]
    assert (view.path, view.format, view.notebook.cells) == ("new.ipynb", "ipynb", [])


async def test_creating_over_an_existing_file_is_refused_and_leaves_it(
    store: NotebookStore, root: Path
) -> None:
    data = save(root / "there.ipynb", notebook_with("1"))
    failure = await refused(ALREADY_EXISTS, store.create("there.ipynb"))
    assert "connect" in failure.message
    assert (root / "there.ipynb").read_bytes() == data


async def test_a_missing_notebook_says_how_to_create_it(store: NotebookStore) -> None:
    failure = await refused(NOT_FOUND, store.read("nowhere.ipynb"))
    assert 'mode="create"' in failure.message
    await refused(NOT_FOUND, store.mutate("nowhere.ipynb", append("x")))


@pytest.mark.parametrize("name", ["notes.txt", "data.json", "script.R", "noextension"])
async def test_only_ipynb_and_py_are_notebooks(store: NotebookStore, root: Path, name: str) -> None:
    (root / name).write_text("{}")
    failure = await refused(INVALID_PATH, store.read(name))
    assert ".ipynb" in failure.message and ".py" in failure.message


async def test_one_file_is_one_document_whatever_its_spelling(
    store: NotebookStore, root: Path
) -> None:
    save(root / "a.ipynb", notebook_with("1"))
    first = await store.read("a.ipynb")
    second = await store.read("./a.ipynb")
    assert second.path == "a.ipynb" and second.notebook is first.notebook


def test_new_cells_carry_ids_and_unknown_types_are_refused() -> None:
    cells = [new_cell(kind, "x") for kind in ("code", "markdown", "raw")]
    assert [cell.cell_type for cell in cells] == ["code", "markdown", "raw"]
    assert len({cell.id for cell in cells}) == 3
    with pytest.raises(ToolFailure) as caught:
        new_cell("heading", "x")
    assert caught.value.code == INVALID_ARGUMENT


# Revisions


async def test_revisions_change_exactly_when_the_bytes_do(store: NotebookStore, root: Path) -> None:
    path = root / "r.ipynb"
    data = save(path, notebook_with("1", "2"))
    revision = await store.revision("r.ipynb")
    assert revision == revision_of(data)
    assert await store.revision("r.ipynb") == revision

    before = path.stat().st_mtime_ns
    _, view = await store.mutate("r.ipynb", lambda notebook: None)
    assert view.revision == revision
    assert path.stat().st_mtime_ns == before, "a change that changes nothing is not written"

    os.utime(path, ns=(before + 5_000_000_000, before + 5_000_000_000))
    assert await store.revision("r.ipynb") == revision, "touching a file is not a change"

    _, view = await store.mutate("r.ipynb", set_source(0, "10"))
    assert view.revision != revision
    assert view.revision == revision_of(path.read_bytes())
    assert await store.revision("r.ipynb") == view.revision


async def test_a_stale_expected_revision_is_a_conflict_naming_the_current_one(
    store: NotebookStore, root: Path
) -> None:
    path = root / "c.ipynb"
    save(path, notebook_with("1"))
    old = await store.revision("c.ipynb")
    _, view = await store.mutate("c.ipynb", set_source(0, "2"), expected_revision=old)
    data = path.read_bytes()

    failure = await refused(
        REVISION_CONFLICT, store.mutate("c.ipynb", set_source(0, "3"), expected_revision=old)
    )
    assert failure.details["current_revision"] == view.revision
    assert view.revision in failure.message and "expected_revision" in failure.message
    assert path.read_bytes() == data
    assert (await store.read("c.ipynb")).notebook.cells[0].source == "2"


# Outside edits


async def test_an_outside_edit_is_seen_by_the_next_read(store: NotebookStore, root: Path) -> None:
    path = root / "o.ipynb"
    save(path, notebook_with("1"))
    await store.read("o.ipynb")
    save(path, notebook_with("from JupyterLab", "another"))
    view = await store.read("o.ipynb")
    assert [cell.source for cell in view.notebook.cells] == ["from JupyterLab", "another"]


async def test_a_mutation_after_an_outside_edit_builds_on_the_new_content(
    store: NotebookStore, root: Path
) -> None:
    path = root / "o.ipynb"
    save(path, notebook_with("mine"))
    await store.mutate("o.ipynb", append("agent 1"))
    outside = nbformat.reads(path.read_text(), as_version=4)
    outside.cells.append(v4.new_markdown_cell("written in an editor"))
    save(path, outside)
    await store.mutate("o.ipynb", append("agent 2"))
    on_disk = nbformat.reads(path.read_text(), as_version=4)
    assert [cell.source for cell in on_disk.cells] == [
        "mine",
        "agent 1",
        "written in an editor",
        "agent 2",
    ]


def edit_unseen_by_status(path: Path, old: bytes, new: bytes) -> None:
    """Edit the file in place so that only its bytes tell: same size, same inode, same mtime."""
    status = path.stat()
    path.write_bytes(path.read_bytes().replace(old, new))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert path.stat().st_ino == status.st_ino


async def test_an_in_place_edit_in_the_same_clock_tick_is_still_noticed(
    store: NotebookStore, root: Path
) -> None:
    path = root / "tick.ipynb"
    save(path, notebook_with("aaaa"))
    await store.read("tick.ipynb")
    edit_unseen_by_status(path, b"aaaa", b"bbbb")
    view = await store.read("tick.ipynb")
    assert view.notebook.cells[0].source == "bbbb"


async def test_an_in_place_edit_in_the_same_clock_tick_during_a_change_is_not_overwritten(
    store: NotebookStore, root: Path
) -> None:
    # The write's last check, under the directory lock, reads the bytes of a file written
    # within its racy window: an edit that kept the size, the inode and the mtime is seen,
    # and the change is applied again on top of it.
    path = root / "tick.ipynb"
    save(path, notebook_with("aaaa"))
    await store.read("tick.ipynb")
    seen = []

    def change(notebook: nbformat.NotebookNode) -> None:
        seen.append(notebook.cells[0].source)
        if len(seen) == 1:
            edit_unseen_by_status(path, b"aaaa", b"bbbb")
        notebook.cells.append(new_cell("code", "agent"))

    await store.mutate("tick.ipynb", change)
    assert seen == ["aaaa", "bbbb"]
    on_disk = nbformat.reads(path.read_text(), as_version=4)
    assert [cell.source for cell in on_disk.cells] == ["bbbb", "agent"]


async def test_a_write_racing_the_change_is_not_overwritten(
    store: NotebookStore, root: Path
) -> None:
    path = root / "race.ipynb"
    save(path, notebook_with("1"))
    calls = []

    def change_while_someone_saves(notebook: nbformat.NotebookNode) -> None:
        calls.append(len(notebook.cells))
        if len(calls) == 1:
            save(path, notebook_with("1", "saved meanwhile"))
        notebook.cells.append(new_cell("code", "agent"))

    await store.mutate("race.ipynb", change_while_someone_saves)
    assert calls == [1, 2], "the change is applied again on top of what was saved"
    on_disk = nbformat.reads(path.read_text(), as_version=4)
    assert [cell.source for cell in on_disk.cells] == ["1", "saved meanwhile", "agent"]


async def test_a_write_racing_a_change_with_expected_revision_is_a_conflict(
    store: NotebookStore, root: Path
) -> None:
    path = root / "race.ipynb"
    save(path, notebook_with("1"))
    revision = await store.revision("race.ipynb")

    def change_while_someone_saves(notebook: nbformat.NotebookNode) -> None:
        save(path, notebook_with("theirs"))
        notebook.cells[0].source = "ours"

    failure = await refused(
        REVISION_CONFLICT,
        store.mutate("race.ipynb", change_while_someone_saves, expected_revision=revision),
    )
    theirs = path.read_bytes()
    assert failure.details["current_revision"] == revision_of(theirs)
    assert (await store.read("race.ipynb")).notebook.cells[0].source == "theirs"


async def test_a_file_that_keeps_changing_is_a_conflict_not_a_loop(
    store: NotebookStore, root: Path
) -> None:
    path = root / "busy.ipynb"
    save(path, notebook_with("0"))
    saves = []

    def change_while_someone_keeps_saving(notebook: nbformat.NotebookNode) -> None:
        saves.append(save(path, notebook_with(str(len(saves) + 1))))
        notebook.cells[0].source = "ours"

    # Bounded by time, not by a count of attempts: an editor that takes no
    # lock and saves between every read and write wins until the deadline.
    store.write_deadline = 0.5
    started = time.monotonic()
    failure = await refused(
        REVISION_CONFLICT, store.mutate("busy.ipynb", change_while_someone_keeps_saving)
    )
    assert 0.5 <= time.monotonic() - started < 3
    assert len(saves) > 2
    assert "kept changing" in failure.message and "0.5 s" in failure.message
    assert failure.details["current_revision"] == revision_of(saves[-1])
    assert path.read_bytes() == saves[-1]


async def test_a_change_that_fails_half_way_leaves_nothing_behind(
    store: NotebookStore, root: Path
) -> None:
    path = root / "f.ipynb"
    data = save(path, notebook_with("1"))

    def broken(notebook: nbformat.NotebookNode) -> None:
        notebook.cells[0].source = "half done"
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        await store.mutate("f.ipynb", broken)
    assert path.read_bytes() == data
    assert (await store.read("f.ipynb")).notebook.cells[0].source == "1"
    await store.mutate("f.ipynb", append("2"))
    on_disk = nbformat.reads(path.read_text(), as_version=4)
    assert [cell.source for cell in on_disk.cells] == ["1", "2"]


async def test_concurrent_mutations_all_land(store: NotebookStore, root: Path) -> None:
    save(root / "many.ipynb", notebook_with())
    await asyncio.gather(*(store.mutate("many.ipynb", append(str(i))) for i in range(20)))
    on_disk = nbformat.reads((root / "many.ipynb").read_text(), as_version=4)
    assert sorted(cell.source for cell in on_disk.cells) == sorted(str(i) for i in range(20))


async def test_writes_leave_no_temporary_files(store: NotebookStore, root: Path) -> None:
    await store.create("sub/t.ipynb")
    for i in range(5):
        await store.mutate("sub/t.ipynb", append(str(i)))
    assert sorted(os.listdir(root / "sub")) == ["t.ipynb"]


# Invalid files


def _valid_text() -> str:
    return nbformat.writes(notebook_with("1", "2")) + "\n"


def _with_cells(*cells: dict[str, Any]) -> str:
    notebook = json.loads(_valid_text())
    notebook["cells"] = list(cells)
    return json.dumps(notebook)


def _code(cell_id: str, source: str = "x") -> dict[str, Any]:
    cell = dict(v4.new_code_cell(source))
    cell["id"] = cell_id
    return cell


INVALID = {
    "not JSON": "this is not { json",
    "truncated": _valid_text()[: len(_valid_text()) // 2],
    "not an object": "[1, 2, 3]",
    "missing source": _with_cells({"cell_type": "markdown", "metadata": {}, "id": "a"}),
    "duplicate ids": _with_cells(_code("same"), _code("same", "y")),
    "invalid id": _with_cells(_code("$not allowed")),
    "unknown version": json.dumps({"nbformat": 9, "nbformat_minor": 0, "cells": []}),
}


@pytest.mark.parametrize("text", INVALID.values(), ids=INVALID.keys())
async def test_an_invalid_notebook_is_refused_and_left_untouched(
    store: NotebookStore, root: Path, text: str
) -> None:
    path = root / "bad.ipynb"
    path.write_text(text)
    data = path.read_bytes()
    failure = await refused(INVALID_ARGUMENT, store.read("bad.ipynb"))
    assert "bad.ipynb" in failure.message and "untouched" in failure.message
    await refused(INVALID_ARGUMENT, store.mutate("bad.ipynb", append("x")))
    assert path.read_bytes() == data
    assert os.listdir(root) == ["bad.ipynb"]


async def test_duplicate_ids_are_named(store: NotebookStore, root: Path) -> None:
    (root / "dup.ipynb").write_text(INVALID["duplicate ids"])
    failure = await refused(INVALID_ARGUMENT, store.read("dup.ipynb"))
    assert "'same'" in failure.message


async def test_a_fixed_file_reads_again(store: NotebookStore, root: Path) -> None:
    path = root / "fix.ipynb"
    path.write_text("{")
    await refused(INVALID_ARGUMENT, store.read("fix.ipynb"))
    save(path, notebook_with("fixed"))
    assert (await store.read("fix.ipynb")).notebook.cells[0].source == "fixed"


# Older versions and missing ids


def _v4_0_text(*sources: str) -> str:
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 0,
        "metadata": {"custom": {"kept": True}},
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": source.splitlines(True),
            }
            for source in sources
        ],
    }
    return json.dumps(notebook, indent=1)


async def test_v4_0_is_upgraded_in_memory_and_on_the_first_write_only(
    store: NotebookStore, root: Path
) -> None:
    path = root / "old.ipynb"
    path.write_text(_v4_0_text("a = 1\nb = 2\n", "print(a)"))
    data = path.read_bytes()
    view = await store.read("old.ipynb")
    ids = [cell.id for cell in view.notebook.cells]
    assert view.notebook.nbformat_minor == 5 and all(ids)
    assert view.notebook.cells[0].source == "a = 1\nb = 2\n"
    assert view.revision == revision_of(data)
    assert view.older_format == "4.0" and view.upgraded_from is None
    assert [cell.id for cell in (await store.read("old.ipynb")).notebook.cells] == ids
    assert path.read_bytes() == data, "reading never writes"

    _, written = await store.mutate("old.ipynb", lambda notebook: None)
    assert written.upgraded_from == "4.0" and written.older_format is None
    assert (await store.read("old.ipynb")).older_format is None
    on_disk = nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT)
    nbformat.validate(on_disk)
    assert on_disk.nbformat_minor == 5
    assert [cell.id for cell in on_disk.cells] == ids
    assert on_disk.metadata == {"custom": {"kept": True}}


async def test_v3_is_upgraded_in_memory_and_on_the_first_write_only(
    store: NotebookStore, root: Path
) -> None:
    path = root / "v3.ipynb"
    cells = [v3.new_heading_cell("Title"), v3.new_code_cell(input="1 + 1")]
    path.write_text(v3.writes_json(v3.new_notebook(worksheets=[v3.new_worksheet(cells=cells)])))
    data = path.read_bytes()
    view = await store.read("v3.ipynb")
    assert (view.notebook.nbformat, view.notebook.nbformat_minor) == (4, 5)
    assert [cell.source for cell in view.notebook.cells] == ["# Title", "1 + 1"]
    assert view.older_format == "3.0"
    assert path.read_bytes() == data

    _, written = await store.mutate("v3.ipynb", append("2 + 2"))
    assert written.upgraded_from == "3.0"
    _, again = await store.mutate("v3.ipynb", append("3 + 3"))
    assert again.upgraded_from is None, "said once, by the write that upgraded"
    on_disk = nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT)
    nbformat.validate(on_disk)
    assert (on_disk.nbformat, on_disk.nbformat_minor) == (4, 5)
    assert [cell.id for cell in on_disk.cells][:2] == [cell.id for cell in view.notebook.cells][:2]


async def test_ids_missing_on_disk_stay_stable_across_outside_edits(
    store: NotebookStore, root: Path
) -> None:
    path = root / "noids.ipynb"
    path.write_text(_v4_0_text("one", "two", "three"))
    ids = [cell.id for cell in (await store.read("noids.ipynb")).notebook.cells]
    path.write_text(_v4_0_text("zero", "one", "two changed", "three"))
    cells = (await store.read("noids.ipynb")).notebook.cells
    assert [cells[1].id, cells[3].id] == [ids[0], ids[2]]
    assert len({cell.id for cell in cells}) == 4
    assert cells[2].id not in ids


# Jupytext percent scripts


async def test_a_percent_script_reads_writes_and_keeps_its_ids(
    store: NotebookStore, root: Path
) -> None:
    spec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    await store.create("s.py", kernelspec=spec)
    await store.mutate("s.py", append("x = 1"))

    def add_markdown_and_output(notebook: nbformat.NotebookNode) -> None:
        notebook.cells.append(new_cell("markdown", "# Notes"))
        notebook.cells.append(new_cell("code", "print(x)"))
        notebook.cells[-1].outputs = [v4.new_output("stream", name="stdout", text="1\n")]

    _, view = await store.mutate("s.py", add_markdown_and_output)
    text = (root / "s.py").read_text()
    assert text.count("# %%") == 3 and "# %% [markdown]" in text
    assert "stdout" not in text and "1\n" not in text.split("print(x)")[1]
    assert view.format == "py:percent"
    ids = [cell.id for cell in view.notebook.cells]

    reread = await store.read("s.py")
    assert [cell.id for cell in reread.notebook.cells] == ids
    assert reread.notebook.cells[2].outputs[0].text == "1\n", "outputs live in memory"

    # An editor changes one cell: the others keep their ids, and their outputs.
    (root / "s.py").write_text(text.replace("x = 1", "x = 2"))
    cells = (await store.read("s.py")).notebook.cells
    assert [cell.source for cell in cells] == ["x = 2", "# Notes", "print(x)"]
    assert cells[0].id != ids[0] and [cells[1].id, cells[2].id] == ids[1:]
    assert cells[2].outputs[0].text == "1\n"


async def test_a_percent_script_written_elsewhere_reads_as_jupytext_reads_it(
    store: NotebookStore, root: Path
) -> None:
    import jupytext

    text = "# %% [markdown]\n# Hello\n\n# %%\na = 1\n\n# %%\nprint(a)\n"
    (root / "plain.py").write_text(text)
    view = await store.read("plain.py")
    expected = jupytext.reads(text, fmt="py:percent")
    assert [(c.cell_type, c.source) for c in view.notebook.cells] == [
        (c.cell_type, c.source) for c in expected.cells
    ]
    assert len({cell.id for cell in view.notebook.cells}) == 3


# Cost


async def test_fifty_mutations_of_a_2000_cell_notebook_parse_nothing(
    store: NotebookStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = notebook_with(*(f"value_{i} = {i}\nprint(value_{i})" for i in range(2000)))
    for i, cell in enumerate(notebook.cells):
        cell.outputs = [v4.new_output("stream", name="stdout", text=f"{i}\n")]
    path = root / "big.ipynb"
    save(path, notebook)
    await store.read("big.ipynb")

    parses = []
    parse = formats.parse_notebook

    def counted(*args: Any, **kwargs: Any) -> nbformat.NotebookNode:
        parses.append(args)
        return parse(*args, **kwargs)

    monkeypatch.setattr(formats, "parse_notebook", counted)
    revision = None
    for i in range(50):
        _, view = await store.mutate("big.ipynb", set_source(i, f"edited {i}"), revision)
        revision = view.revision
        await store.read("big.ipynb")
    assert parses == []
    on_disk = nbformat.reads(path.read_text(), as_version=4)
    assert on_disk.cells[49].source == "edited 49" and on_disk.cells[50].outputs

    save(path, on_disk)
    await store.read("big.ipynb")
    assert len(parses) == 1, "an outside edit costs exactly one parse"


def as_nbformat_writes_it(data: bytes) -> bytes:
    return (nbformat.writes(nbformat.reads(data.decode(), as_version=4)) + "\n").encode()


async def test_a_big_notebook_edit_encodes_only_the_changed_cell(
    store: NotebookStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_mcp_server._store import layout

    save(root / "big.ipynb", notebook_with(*(f"x = {i}" for i in range(500))))
    await store.mutate("big.ipynb", set_source(0, "first write encodes every cell"))
    encoded: list[Any] = []
    encode = layout.indented_json

    def counted(value: Any, level: int = 0) -> str:
        if level == layout.CELL_LEVEL:
            encoded.append(value)
        return encode(value, level)

    monkeypatch.setattr(layout, "indented_json", counted)
    await store.mutate("big.ipynb", set_source(250, "changed"))
    assert [cell["source"] for cell in encoded] == [["changed"]]
    data = (root / "big.ipynb").read_bytes()
    assert data == as_nbformat_writes_it(data)
    assert nbformat.reads(data.decode(), as_version=4).cells[250].source == "changed"


async def test_a_big_cell_is_encoded_again_rather_than_kept(
    store: NotebookStore, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Images and long outputs are not held twice more in memory; small cells still are."""
    from jupyter_mcp_server._store import layout

    notebook = notebook_with("small = 1", "big = 2")
    notebook.cells[1].outputs = [
        v4.new_output("stream", name="stdout", text="x" * (layout.KEPT_TEXT_LIMIT + 1))
    ]
    save(root / "b.ipynb", notebook)
    await store.mutate("b.ipynb", append("third = 3"))
    encoded: list[Any] = []
    encode = layout.indented_json

    def counted(value: Any, level: int = 0) -> str:
        if level == layout.CELL_LEVEL:
            encoded.append(value["source"])
        return encode(value, level)

    monkeypatch.setattr(layout, "indented_json", counted)
    await store.mutate("b.ipynb", set_source(2, "third = 4"))
    assert encoded == [["big = 2"], ["third = 4"]]
    data = (root / "b.ipynb").read_bytes()
    assert data == as_nbformat_writes_it(data)


async def test_reused_cell_texts_never_hide_a_change(store: NotebookStore, root: Path) -> None:
    """1, 1.0 and True compare equal in Python but are different JSON: each must reach the file."""
    save(root / "t.ipynb", notebook_with("same", "same", "other"))

    def set_metadata(index: int, value: Any):
        def change(notebook: nbformat.NotebookNode) -> None:
            notebook.cells[index].metadata["flag"] = value

        return change

    for value in (1, 1.0, True, 1, "1", [1], {"v": 1.0}, None):
        await store.mutate("t.ipynb", set_metadata(1, value))
        data = (root / "t.ipynb").read_bytes()
        assert data == as_nbformat_writes_it(data)
        stored = json.loads(data)["cells"][1]["metadata"]["flag"]
        assert stored == value and type(stored) is type(value), (value, stored)
        assert "flag" not in json.loads(data)["cells"][0]["metadata"]

    def swap_and_grow(notebook: nbformat.NotebookNode) -> None:
        notebook.cells.reverse()
        notebook.cells[0].outputs.append(v4.new_output("stream", name="stdout", text="é\n✓"))
        del notebook.cells[1]

    await store.mutate("t.ipynb", swap_and_grow)
    data = (root / "t.ipynb").read_bytes()
    assert data == as_nbformat_writes_it(data)
    cells = nbformat.reads(data.decode(), as_version=4).cells
    assert [c.source for c in cells] == ["other", "same"]
    assert cells[0].outputs[0].text == "é\n✓"

    def empty(notebook: nbformat.NotebookNode) -> None:
        notebook.cells.clear()

    await store.mutate("t.ipynb", empty)
    data = (root / "t.ipynb").read_bytes()
    assert data == as_nbformat_writes_it(data) and json.loads(data)["cells"] == []


async def test_forget_drops_the_document(store: NotebookStore, root: Path) -> None:
    save(root / "g.ipynb", notebook_with("1"))
    first = await store.read("g.ipynb")
    store.forget("g.ipynb")
    assert (await store.read("g.ipynb")).notebook is not first.notebook


async def test_a_read_in_the_middle_of_an_in_place_save_reads_the_whole_file(
    store: NotebookStore, root: Path
) -> None:
    """Jupyter Server saves in place (truncate, then write): a read that lands between the two
    sees an empty or half file. It is read again once the write is done, not refused."""
    path = root / "saving.ipynb"
    whole = save(path, notebook_with("1", "2"))
    for cut in (b"", whole[: len(whole) // 2]):
        # As jupyter_server's atomic_writing: a copy aside, then the file rewritten in place.
        (root / ".~saving.ipynb").write_bytes(whole)
        path.write_bytes(cut)

        async def finish_the_write() -> None:
            await asyncio.sleep(0.05)
            path.write_bytes(whole)
            (root / ".~saving.ipynb").unlink()

        writer = asyncio.create_task(finish_the_write())
        view = await store.read("saving.ipynb")
        await writer
        assert [cell.source for cell in view.notebook.cells] == ["1", "2"]


async def test_a_file_cut_short_that_nobody_is_saving_is_refused_at_once(
    store: NotebookStore, root: Path
) -> None:
    whole = save(root / "cut.ipynb", notebook_with("1"))
    (root / "cut.ipynb").write_bytes(whole[:-3])
    started = time.monotonic()
    await refused(INVALID_ARGUMENT, store.read("cut.ipynb"))
    assert time.monotonic() - started < 0.1
    # A save that never ends is waited for a while, not for ever.
    (root / ".~cut.ipynb").write_bytes(whole)
    started = time.monotonic()
    await refused(INVALID_ARGUMENT, store.read("cut.ipynb"))
    assert 0.5 < time.monotonic() - started < 3
