"""Each notebook's history: kept by the store, read back byte for byte, through the real server.

The store-level tests drive :class:`NotebookStore` with a recorder directly
(hundreds of revisions in a second); the others go through the server: the
history survives a restart and records an outside edit, restore writes old
content as a new revision, checkpoints, bounds, a history directory that
cannot be written, renames and deletions outside the server, and two clients
editing with batches.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import subprocess
import sys
import zlib
from pathlib import Path

import nbformat
import pytest
from conftest import ERROR_KEY, REPO, ok, refused, serve, text_of

from jupyter_mcp_server._store import NotebookStore, new_cell, revision_of
from jupyter_mcp_server._store.change_origins import Origin
from jupyter_mcp_server._store.formats import IPYNB, serialize_notebook
from jupyter_mcp_server._store.histories import Histories
from jupyter_mcp_server._store.history import Limits
from jupyter_mcp_server._store.recording import Recorder, diff_revisions, notebook_at
from jupyter_mcp_server._workspace import Workspace


def cells_json(data: bytes) -> list[dict]:
    return json.loads(data)["cells"]


def history_dir(tmp_path: Path) -> dict[str, str]:
    return {"JUPYTER_MCP_HISTORY_DIR": str(tmp_path / "state" / "history")}


async def random_edits(
    store: NotebookStore, path: str, count: int, rng: random.Random, on_disk: Path
) -> dict[str, bytes]:
    """`count` random edits; each revision's file bytes."""
    seen = {}
    for step in range(count):

        def change(notebook, step=step):
            cells = notebook.cells
            kind = (
                rng.choice(
                    ["insert", "insert", "overwrite", "delete", "move", "metadata", "outputs"]
                )
                if cells
                else "insert"
            )
            if kind == "insert":
                cells.insert(
                    rng.randint(0, len(cells)),
                    new_cell(
                        rng.choice(["code", "markdown"]), f"step {step}\n" * rng.randint(1, 4)
                    ),
                )
            elif kind == "overwrite":
                rng.choice(cells)["source"] = f"rewritten {step}"
            elif kind == "delete":
                cells.pop(rng.randrange(len(cells)))
            elif kind == "move":
                cells.insert(rng.randint(0, len(cells) - 1), cells.pop(rng.randrange(len(cells))))
            elif kind == "metadata":
                notebook.metadata["step"] = step
                rng.choice(cells).metadata["tags"] = [f"t{step}"]
            else:
                code = [c for c in cells if c.cell_type == "code"]
                if code:
                    code[0]["outputs"] = [
                        {"output_type": "stream", "name": "stdout", "text": f"out {step}\n"}
                    ]
                    code[0]["execution_count"] = step

        _, view = await store.mutate(path, change)
        assert view.history_off is None
        seen[view.revision] = on_disk.read_bytes()
    return seen


async def test_restoring_any_revision_gives_byte_identical_cells(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    histories = Histories(tmp_path / "history")
    store = NotebookStore(Workspace(root), recorder=Recorder(histories, "test"))
    created = await store.create("n.ipynb")
    seen = {created.revision: (root / "n.ipynb").read_bytes()}
    seen.update(await random_edits(store, "n.ipynb", 120, random.Random(7), root / "n.ipynb"))
    history = store.recorder.history("n.ipynb")
    entries = history.entries()
    assert [e["revision"] for e in entries][-1] == (await store.read("n.ipynb")).revision
    assert {e["revision"] for e in entries} == set(seen)
    for revision, data in seen.items():
        restored = notebook_at(history, revision)
        # The cells and metadata, byte for byte, and so the whole file.
        assert serialize_notebook(restored, IPYNB) == data
        assert revision_of(serialize_notebook(restored, IPYNB)) == revision
    # Cells are stored once however many revisions hold them.
    stored = sum(
        len(json.loads(zlib.decompress(p.read_bytes())))
        for p in (history.directory / "packs").iterdir()
    )
    cells_held = sum(len(cells_json(data)) for data in seen.values())
    assert 0 < stored < cells_held / 4
    # A diff across many revisions reads only the cells that differ.
    first, last = entries[0]["revision"], entries[-1]["revision"]
    diff = diff_revisions(history, first, last)
    assert len(diff["added"]) == len(cells_json(seen[last])) and not diff["removed"]


async def test_the_history_is_bounded_dropping_the_oldest_and_saying_so(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    histories = Histories(
        tmp_path / "history", Limits(max_entries=10, max_bytes=10**9, young_seconds=0)
    )
    store = NotebookStore(Workspace(root), recorder=Recorder(histories, "test"))
    await store.create("n.ipynb")
    seen = await random_edits(store, "n.ipynb", 40, random.Random(3), root / "n.ipynb")
    history = store.recorder.history("n.ipynb")
    entries = history.entries()
    assert len(entries) <= 10 and history.index()["dropped"] >= 20
    kept = {e["revision"] for e in entries}
    assert {p.name for p in (history.directory / "revisions").iterdir()} == kept
    gone = next(r for r in seen if r not in kept)
    with pytest.raises(Exception) as refused_:
        notebook_at(history, gone)
    assert (
        refused_.value.code == "not_found"
        and refused_.value.details["oldest_kept"] == entries[0]["revision"]
    )
    # By bytes, too: the oldest go until the rest fits.
    small = Histories(
        tmp_path / "small", Limits(max_entries=1000, max_bytes=15_000, young_seconds=0)
    )
    store = NotebookStore(Workspace(root), recorder=Recorder(small, "test"))
    await random_edits(store, "n.ipynb", 60, random.Random(4), root / "n.ipynb")
    history = store.recorder.history("n.ipynb")
    assert history.size() <= 15_000 and history.index()["dropped"] > 0


async def test_a_history_directory_that_cannot_be_written_never_fails_an_edit(
    tmp_path, workspace, history_toolset
):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {"JUPYTER_MCP_HISTORY_DIR": str(blocker / "history")}
    async with serve(workspace, *history_toolset, env=env) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        done = await ok(
            client, "apply_edits", {"operations": [{"op": "insert", "source": "x = 1"}]}
        )
        assert done["history"] and "could not be written" in done["history"]
        assert (
            "".join(json.loads((workspace / "n.ipynb").read_text())["cells"][0]["source"])
            == "x = 1"
        )
        result = await refused(client, "notebook_history", {}, "unsupported")
        assert "history-dir" in text_of(result)
    async with serve(workspace, *history_toolset, env={"JUPYTER_MCP_HISTORY_DIR": "off"}) as client:
        done = await ok(
            client,
            "apply_edits",
            {"notebook_name": "n.ipynb", "operations": [{"op": "insert", "source": "y"}]},
        )
        assert "off" in done["history"]


def test_a_history_directory_inside_the_workspace_stops_the_server(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter_mcp_server",
            "start",
            "--workspace-root",
            str(tmp_path),
            "--history-dir",
            str(tmp_path / ".history"),
        ],
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "inside the workspace" in done.stderr


async def test_history_survives_a_restart_records_outside_edits_and_restores(
    tmp_path, workspace, history_toolset
):
    env = history_dir(tmp_path)
    path = workspace / "h.ipynb"
    async with serve(workspace, *history_toolset, env=env) as client:
        await ok(client, "use_notebook", {"notebook_name": "h.ipynb", "mode": "create"})
        first = await ok(
            client,
            "apply_edits",
            {
                "operations": [
                    {"op": "insert", "source": "a = 1", "cell_id": "a"},
                    {
                        "op": "insert",
                        "cell_type": "markdown",
                        "source": "# Notes",
                        "cell_id": "notes",
                    },
                ]
            },
        )
        marked = await ok(client, "checkpoint", {"name": "two cells"})
        assert marked["revision"] == first["revision"]
        second = await ok(
            client,
            "apply_edits",
            {
                "operations": [
                    {"op": "replace", "cell_id": "a", "old_string": "1", "new_string": "2"}
                ]
            },
        )
    # A person edits the file while no server runs.
    notebook = json.loads(path.read_text())
    notebook["cells"].append(
        {"id": "person", "cell_type": "markdown", "metadata": {}, "source": ["by hand"]}
    )
    path.write_text(json.dumps(notebook, indent=1))
    outside_revision = revision_of(path.read_bytes())

    async with serve(workspace, *history_toolset, env=env) as client:
        listed = await ok(client, "notebook_history", {"notebook_name": "h.ipynb"})
        entries = listed["entries"]
        assert listed["revision"] == outside_revision
        assert [e["revision"] for e in entries[:3]] == [
            outside_revision,
            second["revision"],
            first["revision"],
        ]
        assert entries[0]["tool"] is None and entries[0]["previous_revision"] == second["revision"]
        assert (
            entries[1]["tool"] == "apply_edits"
            and entries[1]["client"]
            and entries[1]["connection"] == "stdio"
        )
        assert entries[2]["checkpoints"] == ["two cells"] and listed["checkpoints"] == {
            "two cells": first["revision"]
        }
        assert entries[-1]["tool"] == "use_notebook" and entries[-1]["previous_revision"] is None

        diffed = await ok(
            client, "diff_notebook", {"notebook_name": "h.ipynb", "from_revision": "two cells"}
        )
        assert diffed["to_revision"] == outside_revision
        assert [c["cell_id"] for c in diffed["diff"]["added"]] == ["person"]
        assert "-a = 1" in diffed["diff"]["changed"][0]["source_diff"]

        restored = await ok(
            client,
            "restore_notebook",
            {
                "notebook_name": "h.ipynb",
                "revision": "two cells",
                "expected_revision": outside_revision,
            },
        )
        assert restored["restored_revision"] == first["revision"]
        # The same content, so the same bytes and the same revision, written as a new entry.
        assert (
            restored["revision"] == first["revision"]
            and revision_of(path.read_bytes()) == first["revision"]
        )
        assert [c["cell_id"] for c in restored["diff"]["removed"]] == ["person"]
        # An undo can be undone.
        again = await ok(
            client, "restore_notebook", {"notebook_name": "h.ipynb", "revision": outside_revision}
        )
        # Written in nbformat's layout, not the person's: the same cells, in other bytes.
        assert (
            again["restored_revision"] == outside_revision
            and cells_json(path.read_bytes()) == notebook["cells"]
        )
        listed = await ok(client, "notebook_history", {"notebook_name": "h.ipynb"})
        assert listed["entries"][0]["revision"] == again["revision"]
        assert [(e["tool"], e["restored_from"]) for e in listed["entries"][:2]] == [
            ("restore_notebook", outside_revision),
            ("restore_notebook", first["revision"]),
        ]

        # Bad input.
        missing = await refused(
            client,
            "restore_notebook",
            {"notebook_name": "h.ipynb", "revision": "0123456789abcdef"},
            "not_found",
        )
        assert missing.meta[ERROR_KEY]["oldest_kept"] and "oldest kept" in text_of(missing)
        await refused(
            client,
            "restore_notebook",
            {"notebook_name": "h.ipynb", "revision": "no such checkpoint"},
            "not_found",
        )
        await refused(
            client,
            "restore_notebook",
            {
                "notebook_name": "h.ipynb",
                "revision": first["revision"],
                "expected_revision": "0" * 16,
            },
            "revision_conflict",
        )
        await refused(
            client, "checkpoint", {"notebook_name": "h.ipynb", "name": "a/b"}, "invalid_argument"
        )


async def test_deleted_and_renamed_outside_the_server(tmp_path, workspace, history_toolset):
    env = history_dir(tmp_path)
    async with serve(workspace, *history_toolset, env=env) as client:
        await ok(client, "use_notebook", {"notebook_name": "old.ipynb", "mode": "create"})
        done = await ok(
            client,
            "apply_edits",
            {"operations": [{"op": "insert", "source": "kept = True", "cell_id": "k"}]},
        )
        (workspace / "old.ipynb").rename(workspace / "new.ipynb")
        # The renamed notebook's first edit here finds the history it left behind.
        await ok(
            client,
            "apply_edits",
            {"notebook_name": "new.ipynb", "operations": [{"op": "insert", "source": "more"}]},
        )
        listed = await ok(client, "notebook_history", {"notebook_name": "new.ipynb"})
        assert done["revision"] in [e["revision"] for e in listed["entries"]]
        assert listed["entries"][-1]["tool"] == "use_notebook"

        # Deleted: its history stays, and restore brings it back.
        (workspace / "new.ipynb").unlink()
        gone = await ok(client, "notebook_history", {"notebook_name": "new.ipynb"})
        assert gone["revision"] is None and done["revision"] in [
            e["revision"] for e in gone["entries"]
        ]
        back = await ok(
            client, "restore_notebook", {"notebook_name": "new.ipynb", "revision": done["revision"]}
        )
        assert (
            back["revision"]
            == done["revision"]
            == revision_of((workspace / "new.ipynb").read_bytes())
        )


async def test_two_clients_editing_with_batches_lose_nothing(tmp_path, workspace, history_toolset):
    env = history_dir(tmp_path)
    path = workspace / "two.ipynb"
    async with serve(workspace, *history_toolset, env=env) as first:
        await ok(first, "use_notebook", {"notebook_name": "two.ipynb", "mode": "create"})
        async with serve(workspace, *history_toolset, env=env) as second:

            async def batches(client, name: str) -> list[str]:
                revisions = []
                for round_ in range(8):
                    operations = [
                        {"op": "insert", "source": f"{name} {round_} {i}"} for i in range(3)
                    ]
                    done = await ok(
                        client,
                        "apply_edits",
                        {"notebook_name": "two.ipynb", "operations": operations},
                    )
                    revisions.append(done["revision"])
                return revisions

            mine, theirs = await asyncio.gather(batches(first, "first"), batches(second, "second"))
            sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
            assert sorted(sources) == sorted(
                f"{n} {r} {i}" for n in ("first", "second") for r in range(8) for i in range(3)
            )
            # Each batch's three cells landed together, in order.
            for name in ("first", "second"):
                for round_ in range(8):
                    at = sources.index(f"{name} {round_} 0")
                    assert sources[at : at + 3] == [f"{name} {round_} {i}" for i in range(3)]
            listed = await ok(
                second, "notebook_history", {"notebook_name": "two.ipynb", "limit": 100}
            )
            recorded = [e["revision"] for e in listed["entries"]]
            assert set(mine) | set(theirs) <= set(recorded)
            # Nothing recorded twice, and no change invented: each entry follows the one
            # before it (a revision read just before the other server wrote is not recorded
            # after that write, as if the file had gone back to it).
            assert len(recorded) == len(set(recorded)), json.dumps(listed["entries"], indent=0)
            oldest_first = listed["entries"][::-1]
            for before, after in itertools.pairwise(oldest_first):
                assert after["previous_revision"] == before["revision"], json.dumps(oldest_first)
            assert {e["tool"] for e in listed["entries"]} <= {"apply_edits", "use_notebook", None}


async def test_restoring_and_deleting_in_a_batch_ask_the_person_first(
    tmp_path, workspace, history_toolset
):
    from test_approvals import ASKING, Person

    env = {**history_dir(tmp_path), **ASKING}
    path = workspace / "asked.ipynb"
    person = Person()
    async with serve(workspace, *history_toolset, env=env, elicitation_callback=person) as client:
        await ok(client, "use_notebook", {"notebook_name": "asked.ipynb", "mode": "create"})
        first = await ok(
            client,
            "apply_edits",
            {"operations": [{"op": "insert", "source": "keep = 1", "cell_id": "k"}]},
        )
        assert person.asked == []  # nothing deleted: nothing asked
        await ok(
            client,
            "apply_edits",
            {"operations": [{"op": "delete", "cell_id": "k"}, {"op": "insert", "source": "new"}]},
        )
        assert "Delete 1 cell(s)" in person.asked[-1] and "k ('keep = 1')" in person.asked[-1]
        await ok(client, "restore_notebook", {"revision": first["revision"]})
        assert f"Restore 'asked.ipynb' to revision {first['revision']}" in person.asked[-1]
        assert "1 cell(s) come back, 1 go" in person.asked[-1]
        assert revision_of(path.read_bytes()) == first["revision"]
    declining = Person("decline")
    before = path.read_bytes()
    async with serve(
        workspace, *history_toolset, env=env, elicitation_callback=declining
    ) as client:
        result = await client.call_tool(
            "apply_edits",
            {"notebook_name": "asked.ipynb", "operations": [{"op": "delete", "cell_id": "k"}]},
        )
        assert result.is_error and result.meta[ERROR_KEY]["code"] == "declined"
        listed = await ok(client, "notebook_history", {"notebook_name": "asked.ipynb"})
        result = await client.call_tool(
            "restore_notebook",
            {"notebook_name": "asked.ipynb", "revision": listed["entries"][1]["revision"]},
        )
        assert result.is_error and result.meta[ERROR_KEY]["code"] == "declined"
    assert path.read_bytes() == before


def test_entries_kept_after_an_append_match_the_file_when_two_processes_append(tmp_path):
    # Two server processes' views of one notebook's history: each keeps what it appended,
    # and each sees the other's entries at its next look.
    one = Histories(tmp_path / "history").of("ns", "n.ipynb")
    two = Histories(tmp_path / "history").of("ns", "n.ipynb")
    assert one is not None and two is not None
    for i in range(6):
        writer = one if i % 2 == 0 else two
        writer.append(f"r{i}", f"r{i - 1}" if i else None, Origin(tool=f"tool{i}"))
        one_view, two_view = (
            [e["revision"] for e in one.entries()],
            [e["revision"] for e in two.entries()],
        )
        assert one_view == two_view == [f"r{k}" for k in range(i + 1)]
    parsed = [
        json.loads(line) for line in (one.directory / "entries.jsonl").read_bytes().splitlines()
    ]
    assert one.entries() == parsed and two.entries() == parsed


def newest_is(listed: dict, path: Path) -> dict:
    """The newest entry, checked to be the file on disk (and the revision the answer names)."""
    on_disk = revision_of(path.read_bytes())
    assert listed["revision"] == on_disk
    assert listed["entries"][0]["revision"] == on_disk, (
        f"the newest entry is not the file ({on_disk}): {listed['entries'][:3]}"
    )
    return listed["entries"][0]


async def test_restores_of_five_edits_in_random_order_are_each_recorded_as_the_file(
    tmp_path, workspace, history_toolset
):
    env = history_dir(tmp_path)
    path = workspace / "five.ipynb"
    async with serve(workspace, *history_toolset, env=env) as client:
        await ok(client, "use_notebook", {"notebook_name": "five.ipynb", "mode": "create"})
        for i in range(4):
            await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": f"x{i} = {i}"},
            )
        revisions = [revision_of(path.read_bytes())]
        # Five edits: an insert, a find-and-replace, a batch that moves a cell and tags another,
        # a deletion, an overwrite.
        await ok(
            client,
            "insert_cell",
            {"cell_index": 1, "cell_type": "markdown", "cell_source": "# Notes"},
        )
        revisions.append(revision_of(path.read_bytes()))
        await ok(
            client,
            "edit_cell_source",
            {"cell_index": 0, "old_string": "x0", "new_string": "renamed"},
        )
        revisions.append(revision_of(path.read_bytes()))
        ids = [cell["id"] for cell in cells_json(path.read_bytes())]
        batch = await ok(
            client,
            "apply_edits",
            {
                "operations": [
                    {"op": "move", "cell_id": ids[0], "to_index": 3},
                    {"op": "set_cell_metadata", "cell_id": ids[2], "tags": ["keep"]},
                ]
            },
        )
        revisions.append(batch["revision"])
        await ok(client, "delete_cell", {"cell_indices": [2]})
        revisions.append(revision_of(path.read_bytes()))
        await ok(
            client, "overwrite_cell_source", {"cell_index": 0, "cell_source": "rewritten = True"}
        )
        revisions.append(revision_of(path.read_bytes()))
        assert len(set(revisions)) == 6
        total = (await ok(client, "notebook_history", {"limit": 100}))["total"]

        rng = random.Random(30)
        orders = [
            rng.sample(revisions[:-1], 5) for _ in range(3)
        ]  # each earlier revision, three times over
        for wanted in [revision for order in orders for revision in order]:
            before = revision_of(path.read_bytes())
            restored = await ok(client, "restore_notebook", {"revision": wanted})
            assert restored["revision"] == revision_of(path.read_bytes()) == wanted  # byte for byte
            listed = await ok(client, "notebook_history", {"limit": 100})
            newest = newest_is(listed, path)
            assert (newest["tool"], newest["restored_from"], newest["previous_revision"]) == (
                "restore_notebook",
                wanted,
                before,
            )
            total += 1
            assert listed["total"] == total  # one entry per restore, none skipped
    # After the last restore, and after a restart, the file's revision is the newest entry.
    async with serve(workspace, *history_toolset, env=env) as client:
        newest_is(await ok(client, "notebook_history", {"notebook_name": "five.ipynb"}), path)


async def test_an_undo_then_a_redo_leaves_the_history_at_the_file(
    tmp_path, workspace, history_toolset
):
    env = history_dir(tmp_path)
    path = workspace / "redo.ipynb"
    async with serve(workspace, *history_toolset, env=env) as client:
        await ok(client, "use_notebook", {"notebook_name": "redo.ipynb", "mode": "create"})
        first = await ok(
            client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "a = 1"}
        )
        second = await ok(
            client, "overwrite_cell_source", {"cell_index": 0, "cell_source": "a = 2"}
        )
        for _ in range(2):  # back and forward, twice: the same two revisions each time
            await ok(client, "restore_notebook", {"revision": first["revision"]})
            newest = newest_is(await ok(client, "notebook_history", {}), path)
            assert (
                newest["restored_from"] == first["revision"]
                and newest["previous_revision"] == second["revision"]
            )
            redone = await ok(client, "restore_notebook", {"revision": second["revision"]})
            assert (
                redone["revision"]
                == second["revision"]
                == (await ok(client, "get_notebook_revision", {}))["revision"]
            )
            newest = newest_is(await ok(client, "notebook_history", {}), path)
            assert (
                newest["restored_from"] == second["revision"]
                and newest["previous_revision"] == first["revision"]
            )
        # The same edit made again after an undo is recorded again, too.
        await ok(client, "restore_notebook", {"revision": first["revision"]})
        await ok(client, "overwrite_cell_source", {"cell_index": 0, "cell_source": "a = 2"})
        newest = newest_is(await ok(client, "notebook_history", {}), path)
        assert (
            newest["tool"] == "overwrite_cell_source" and newest["revision"] == second["revision"]
        )


def test_two_processes_record_one_change_once_and_a_repeated_change_each_time(tmp_path):
    # Two server processes' views of one notebook's history. The writer says its write is
    # coming; the other reads the file before the writer's entry and records the change
    # from the note; the writer's entry is then not added again.
    from jupyter_mcp_server._store.history import Content

    def content(revision: str) -> Content:
        return Content(
            header={"nbformat": 4, "nbformat_minor": 5, "metadata": {}},
            ids=[revision],
            digests=["0" * 24],
            texts=["{}"],
        )

    writer = Histories(tmp_path / "history").of("ns", "n.ipynb")
    reader = Histories(tmp_path / "history").of("ns", "n.ipynb")
    assert writer is not None and reader is not None
    writer.store("a", content("a"))
    writer.append("a", None, None)
    sequence = ["b", "a", "b", "a"]  # an edit, an undo, a redo, an undo
    previous = "a"
    for step, revision in enumerate(sequence):
        writer.store(revision, content(revision))
        write = writer.intend(revision, previous, Origin(tool=f"tool{step}"))
        if step % 2 == 0:  # the other process reads the file first
            reader.reconcile(revision, lambda r=revision: content(r))
        writer.append(revision, previous, Origin(tool=f"tool{step}"), write)
        previous = revision
    entries = writer.entries()
    assert [(e["revision"], e["tool"]) for e in entries] == [("a", None)] + [
        (r, f"tool{i}") for i, r in enumerate(sequence)
    ]
    assert reader.entries() == entries
    assert writer.pending() is None  # each note went with its entry
    # An outside change: recorded as nobody's; the file as it is, the newest entry.
    reader.reconcile("c", lambda: content("c"))
    assert writer.entries()[-1]["revision"] == "c" and writer.entries()[-1]["tool"] is None
    # The other process recorded a write, then a change after it, before the writer's entry:
    # the entry is not added after them (the history would end at a revision the file left).
    write = writer.intend("d", "c", Origin(tool="late"))
    reader.reconcile("d", lambda: content("d"))
    reader.reconcile("e", lambda: content("e"))
    writer.append("d", "c", Origin(tool="late"), write)
    assert [(e["revision"], e["tool"]) for e in writer.entries()[-3:]] == [
        ("c", None),
        ("d", "late"),
        ("e", None),
    ]


def test_a_notebook_said_missing_is_not_once_a_change_of_it_is_recorded(tmp_path):
    # Each process of the server checks the index only when it changed since it last found
    # it settled: a note that the notebook is missing, by this process or another, is seen.
    one = Histories(tmp_path / "history").of("ns", "n.ipynb")
    two = Histories(tmp_path / "history").of("ns", "n.ipynb")
    assert one is not None and two is not None
    one.append("r0", None, None)
    one.append("r1", "r0", None)
    for marker, writer, revision in ((two, one, "r2"), (one, one, "r3"), (one, two, "r4")):
        marker.mark_missing()
        assert one.index()["missing"] is True
        writer.append(revision, None, None)
        assert "missing" not in one.index() and one.index()["path"] == "n.ipynb"


async def test_a_bounded_history_keeps_every_kept_revision_whole_as_old_ones_come_back(tmp_path):
    # A tight bound collects at almost every write, and revisions collected earlier come
    # back (an undo, a restore) and are kept again, their texts perhaps in other packs:
    # what a collection keeps is read from each kept revision (once per file it sees),
    # and every kept entry must read back byte for byte, whatever was collected.
    root = tmp_path / "ws"
    root.mkdir()
    limits = Limits(max_entries=6, max_bytes=10**9, young_seconds=0)
    store = NotebookStore(
        Workspace(root), recorder=Recorder(Histories(tmp_path / "h", limits), "t")
    )
    await store.create("n.ipynb")
    on_disk = root / "n.ipynb"
    rng = random.Random(11)
    seen = {revision_of(on_disk.read_bytes()): on_disk.read_bytes()}
    for step in range(150):
        if len(seen) > 3 and rng.random() < 0.4:
            back = nbformat.reads(rng.choice(list(seen.values())), as_version=4)

            def change(notebook, back=back):
                notebook["cells"] = back["cells"]
                notebook["metadata"] = back["metadata"]

            await store.mutate("n.ipynb", change)
        else:
            seen.update(await random_edits(store, "n.ipynb", 1, rng, on_disk))
        seen[revision_of(on_disk.read_bytes())] = on_disk.read_bytes()
        history = store.recorder.history("n.ipynb")
        assert history is not None
        for entry in history.entries():
            restored = notebook_at(history, entry["revision"])
            assert serialize_notebook(restored, IPYNB) == seen[entry["revision"]], step
    assert history.index()["collected"] > 40
