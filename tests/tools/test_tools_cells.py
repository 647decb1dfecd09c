"""Every cell tool through the real server: what it does, the ids it keeps, and
that every refused call says why and leaves the file byte for byte as it was.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nbformat
from conftest import ERROR_KEY, error_code, ok, refused, serve, text_of


def cells_on_disk(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def ids_on_disk(path: Path) -> list[str]:
    return [cell["id"] for cell in cells_on_disk(path)]


def sources_on_disk(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in cells_on_disk(path)]


async def refused_unchanged(client, path: Path, tool: str, arguments: dict, code: str):
    """A call refused with `code` that leaves the file byte-identical."""
    before = path.read_bytes()
    result = await refused(client, tool, arguments, code)
    assert path.read_bytes() == before, f"{tool}({arguments}) was refused but changed the file"
    return result


async def rejected_unchanged(client, path: Path, tool: str, arguments: dict):
    """A call whose arguments break the tool's input schema: an error that says which."""
    before = path.read_bytes()
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) succeeded"
    assert text_of(result).strip()
    assert path.read_bytes() == before, f"{tool}({arguments}) was refused but changed the file"
    return result


async def test_insert_edit_read_clear(workspace):
    path = workspace / "cells.ipynb"
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "cells.ipynb", "mode": "create"})

        # insert_cell: at the end, at the front, in the middle; every type.
        code = await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "code", "cell_source": "a = 1\nprint(a)"},
        )
        assert code["cell_index"] == 0
        raw = await ok(
            client, "insert_cell", {"cell_index": -1, "cell_type": "raw", "cell_source": "raw text"}
        )
        assert raw["cell_index"] == 1
        markdown = await ok(
            client,
            "insert_cell",
            {"cell_index": 0, "cell_type": "markdown", "cell_source": "# Title"},
        )
        assert markdown["cell_index"] == 0
        middle = await ok(
            client,
            "insert_cell",
            {"cell_index": 2, "cell_type": "code", "cell_source": "d = 4\nd += 1\nd += 1"},
        )
        assert middle["cell_index"] == 2
        at_end = await ok(
            client, "insert_cell", {"cell_index": 4, "cell_type": "code", "cell_source": ""}
        )
        assert at_end["cell_index"] == 4
        ids = [
            markdown["cell_id"],
            code["cell_id"],
            middle["cell_id"],
            raw["cell_id"],
            at_end["cell_id"],
        ]
        assert ids_on_disk(path) == ids and len(set(ids)) == 5
        assert [c["cell_type"] for c in cells_on_disk(path)] == [
            "markdown",
            "code",
            "code",
            "raw",
            "code",
        ]
        assert sources_on_disk(path)[:2] == ["# Title", "a = 1\nprint(a)"]
        assert at_end["revision"] == (await ok(client, "get_notebook_revision"))["revision"]

        # Bad insertions.
        for index in (6, -2):
            result = await refused_unchanged(
                client,
                path,
                "insert_cell",
                {"cell_index": index, "cell_type": "code", "cell_source": "x"},
                "invalid_argument",
            )
            assert "out of range" in text_of(result)
        await rejected_unchanged(
            client, path, "insert_cell", {"cell_index": 0, "cell_type": "sql", "cell_source": "x"}
        )
        await rejected_unchanged(
            client,
            path,
            "insert_cell",
            {"cell_index": "first", "cell_type": "code", "cell_source": "x"},
        )
        await rejected_unchanged(
            client, path, "insert_cell", {"cell_type": "code", "cell_source": "x"}
        )

        # Execution keeps ids; overwrite keeps outputs; the diff says what changed.
        ran = await ok(client, "execute_cell", {"cell_id": code["cell_id"]})
        assert ran["cell_id"] == code["cell_id"] and ids_on_disk(path) == ids
        rewritten = await ok(
            client, "overwrite_cell_source", {"cell_index": 1, "cell_source": "a = 10\nprint(a)"}
        )
        assert rewritten["cell_id"] == code["cell_id"]
        assert "-a = 1\n" in rewritten["diff"] and "+a = 10\n" in rewritten["diff"]
        assert " print(a)" in rewritten["diff"]
        cell = cells_on_disk(path)[1]
        assert "".join(cell["source"]) == "a = 10\nprint(a)"
        assert (
            "".join(cell["outputs"][0]["text"]) == "1\n"
            and cell["execution_count"] == ran["execution_count"]
        )
        assert ids_on_disk(path) == ids

        # The same source again changes nothing at all, not even the revision.
        before = path.read_bytes()
        same = await ok(
            client,
            "overwrite_cell_source",
            {"cell_id": code["cell_id"], "cell_source": "a = 10\nprint(a)"},
        )
        assert same["diff"] == "" and same["revision"] == rewritten["revision"]
        assert path.read_bytes() == before

        # edit_cell_source: exact, unique, or replace_all.
        edited = await ok(
            client,
            "edit_cell_source",
            {"cell_id": middle["cell_id"], "old_string": "d = 4", "new_string": "d = 40"},
        )
        assert edited["cell_id"] == middle["cell_id"]
        assert "-d = 4\n" in edited["diff"] and "+d = 40\n" in edited["diff"]
        assert sources_on_disk(path)[2] == "d = 40\nd += 1\nd += 1"
        twice = await refused_unchanged(
            client,
            path,
            "edit_cell_source",
            {"cell_index": 2, "old_string": "d += 1", "new_string": "d += 2"},
            "invalid_argument",
        )
        assert twice.meta[ERROR_KEY]["occurrences"] == 2 and "replace_all" in text_of(twice)
        every = await ok(
            client,
            "edit_cell_source",
            {"cell_index": 2, "old_string": "d += 1", "new_string": "d -= 1", "replace_all": True},
        )
        assert every["diff"].count("+d -= 1") == 2
        # The source has no final newline, before or after: its last lines do not run
        # together, and no marker says what did not change.
        assert "-d += 1\n+d -= 1\n+d -= 1\n" in every["diff"]
        assert "No newline" not in every["diff"]
        assert sources_on_disk(path)[2] == "d = 40\nd -= 1\nd -= 1"
        await refused_unchanged(
            client,
            path,
            "edit_cell_source",
            {"cell_index": 2, "old_string": "absent", "new_string": "x"},
            "not_found",
        )
        await refused_unchanged(
            client,
            path,
            "edit_cell_source",
            {"cell_index": 2, "old_string": "", "new_string": "x"},
            "invalid_argument",
        )
        # Markdown cells are edited the same way.
        await ok(
            client,
            "edit_cell_source",
            {"cell_index": 0, "old_string": "Title", "new_string": "Heading"},
        )
        assert sources_on_disk(path)[0] == "# Heading"

        # Naming a cell: exactly one of cell_index or cell_id, and it must exist.
        for tool, extra in (
            ("overwrite_cell_source", {"cell_source": "zzz"}),
            ("edit_cell_source", {"old_string": "a", "new_string": "b"}),
            ("clear_cell_output", {}),
            ("read_cell", {}),
        ):
            await refused_unchanged(
                client,
                path,
                tool,
                {**extra, "cell_index": 1, "cell_id": code["cell_id"]},
                "invalid_argument",
            )
            await refused_unchanged(client, path, tool, extra, "invalid_argument")
            missing = await refused_unchanged(
                client, path, tool, {**extra, "cell_id": "nope"}, "not_found"
            )
            assert "read_notebook" in text_of(missing)
            for index in (5, -1):
                out = await refused_unchanged(
                    client, path, tool, {**extra, "cell_index": index}, "invalid_argument"
                )
                assert out.meta[ERROR_KEY]["cell_count"] == 5
            await refused_unchanged(
                client,
                path,
                tool,
                {**extra, "cell_index": 0, "notebook_name": "../x.ipynb"},
                "invalid_path",
            )
            await refused_unchanged(
                client,
                path,
                tool,
                {**extra, "cell_index": 0, "notebook_name": "gone.ipynb"},
                "not_found",
            )
        assert not (workspace / "gone.ipynb").exists()

        # read_cell: everything about one cell; outputs only on request and only for code.
        read = await ok(client, "read_cell", {"cell_id": code["cell_id"]})
        assert (
            read["cell_index"] == 1
            and read["cell_type"] == "code"
            and read["source"] == "a = 10\nprint(a)"
        )
        assert read["execution_count"] == ran["execution_count"]
        assert read["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
        assert read["revision"] == (await ok(client, "get_notebook_revision"))["revision"]
        bare = await ok(client, "read_cell", {"cell_index": 1, "include_outputs": False})
        assert bare["outputs"] is None and bare["cell_id"] == code["cell_id"]
        text_cell = await ok(client, "read_cell", {"cell_index": 3})
        assert (
            text_cell["cell_type"] == "raw"
            and text_cell["outputs"] is None
            and text_cell["source"] == "raw text"
        )

        # clear_cell_output: code cells only.
        cleared = await ok(client, "clear_cell_output", {"cell_id": code["cell_id"]})
        assert cleared["cell_id"] == code["cell_id"]
        cell = cells_on_disk(path)[1]
        assert cell["outputs"] == [] and cell["execution_count"] is None
        assert "".join(cell["source"]) == "a = 10\nprint(a)"
        result = await refused_unchanged(
            client, path, "clear_cell_output", {"cell_index": 0}, "invalid_argument"
        )
        assert "markdown" in text_of(result)
        assert ids_on_disk(path) == ids


async def test_move_and_delete(workspace):
    path = workspace / "move.ipynb"
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "move.ipynb", "mode": "create"})
        ids = []
        for number in range(5):
            placed = await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": str(number)},
            )
            ids.append(placed["cell_id"])

        # target_index is the index the moved cell has afterwards, whichever way it moves.
        moved = await ok(client, "move_cell", {"source_index": 0, "target_index": 2})
        assert moved["cell_id"] == ids[0] and moved["cell_index"] == 2
        assert sources_on_disk(path) == ["1", "2", "0", "3", "4"]
        moved = await ok(client, "move_cell", {"source_index": 4, "target_index": 0})
        assert moved["cell_id"] == ids[4] and moved["cell_index"] == 0
        assert sources_on_disk(path) == ["4", "1", "2", "0", "3"]
        moved = await ok(client, "move_cell", {"source_cell_id": ids[2], "target_index": 4})
        assert moved["cell_index"] == 4 and sources_on_disk(path) == ["4", "1", "0", "3", "2"]
        # target_cell_id: the moved cell takes the position that cell has now.
        moved = await ok(client, "move_cell", {"source_cell_id": ids[1], "target_cell_id": ids[3]})
        assert moved["cell_id"] == ids[1] and moved["cell_index"] == 3
        assert sources_on_disk(path) == ["4", "0", "3", "1", "2"]
        moved = await ok(client, "move_cell", {"source_index": 4, "target_cell_id": ids[4]})
        assert moved["cell_index"] == 0 and sources_on_disk(path) == ["2", "4", "0", "3", "1"]
        # Ids travel with their cells.
        by_source = {"".join(c["source"]): c["id"] for c in cells_on_disk(path)}
        assert by_source == {str(n): ids[n] for n in range(5)}

        # A move onto itself changes nothing.
        before = path.read_bytes()
        revision = (await ok(client, "get_notebook_revision"))["revision"]
        still = await ok(client, "move_cell", {"source_index": 2, "target_index": 2})
        assert still["cell_index"] == 2 and still["revision"] == revision
        assert path.read_bytes() == before

        for arguments, code in (
            ({"source_index": 0, "target_index": 5}, "invalid_argument"),
            ({"source_index": 0, "target_index": -1}, "invalid_argument"),
            ({"source_index": 5, "target_index": 0}, "invalid_argument"),
            ({"source_index": 0, "source_cell_id": ids[0], "target_index": 1}, "invalid_argument"),
            ({"target_index": 1}, "invalid_argument"),
            ({"source_index": 0}, "invalid_argument"),
            ({"source_index": 0, "target_index": 1, "target_cell_id": ids[1]}, "invalid_argument"),
            ({"source_cell_id": "nope", "target_index": 1}, "not_found"),
            ({"source_index": 1, "target_cell_id": "nope"}, "not_found"),
        ):
            await refused_unchanged(client, path, "move_cell", arguments, code)

        # delete_cell by indices: all at once, each named as it was before the deletion.
        order = ids_on_disk(path)
        deleted = await ok(client, "delete_cell", {"cell_indices": [3, 0]})
        assert deleted["deleted"] == [
            {"cell_id": order[3], "source": "3"},
            {"cell_id": order[0], "source": "2"},
        ]
        assert ids_on_disk(path) == [order[1], order[2], order[4]]
        assert deleted["revision"] == (await ok(client, "get_notebook_revision"))["revision"]

        for arguments, code in (
            ({"cell_indices": [0, 0]}, "invalid_argument"),
            ({"cell_indices": [0, 3]}, "invalid_argument"),
            ({"cell_indices": []}, "invalid_argument"),
            ({}, "invalid_argument"),
            ({"cell_indices": [0], "cell_ids_to_delete": [order[1]]}, "invalid_argument"),
            ({"cell_ids_to_delete": [order[1], "nope"]}, "not_found"),
            ({"cell_ids_to_delete": [order[1], order[1]]}, "invalid_argument"),
        ):
            await refused_unchanged(client, path, "delete_cell", arguments, code)
        await rejected_unchanged(client, path, "delete_cell", {"cell_indices": "0"})

        deleted = await ok(
            client, "delete_cell", {"cell_ids_to_delete": [order[4]], "include_source": False}
        )
        assert deleted["deleted"] == [{"cell_id": order[4], "source": None}]
        assert ids_on_disk(path) == [order[1], order[2]]

        # Edits sent at once are applied one by one; none is lost.
        placed = await asyncio.gather(
            *(
                client.call_tool(
                    "insert_cell",
                    {"cell_index": -1, "cell_type": "code", "cell_source": f"n = {n}"},
                )
                for n in range(8)
            )
        )
        assert all(not result.is_error for result in placed)
        new_ids = {result.structured_content["cell_id"] for result in placed}
        assert len(new_ids) == 8 and set(ids_on_disk(path)) == {order[1], order[2], *new_ids}
        assert sorted(sources_on_disk(path)[2:]) == [f"n = {n}" for n in range(8)]
        assert sorted(result.structured_content["cell_index"] for result in placed) == list(
            range(2, 10)
        )


async def test_expected_revision_and_outside_edits(workspace):
    path = workspace / "rev.ipynb"
    async with serve(workspace) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "rev.ipynb", "mode": "create"})
        first = await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "x = 1",
                "expected_revision": used["revision"],
            },
        )
        second = await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "markdown",
                "cell_source": "text",
                "expected_revision": first["revision"],
            },
        )
        current = second["revision"]
        stale = first["revision"]
        for tool, arguments in (
            ("insert_cell", {"cell_index": 0, "cell_type": "code", "cell_source": "y"}),
            ("overwrite_cell_source", {"cell_index": 0, "cell_source": "y"}),
            ("edit_cell_source", {"cell_index": 0, "old_string": "x", "new_string": "y"}),
            ("move_cell", {"source_index": 0, "target_index": 1}),
            ("delete_cell", {"cell_indices": [0]}),
            ("clear_cell_output", {"cell_index": 0}),
            ("execute_cell", {"cell_index": 0}),
            ("insert_execute_code_cell", {"cell_index": -1, "cell_source": "1"}),
        ):
            conflict = await refused_unchanged(
                client, path, tool, {**arguments, "expected_revision": stale}, "revision_conflict"
            )
            assert conflict.meta[ERROR_KEY]["current_revision"] == current, tool
            assert current in text_of(conflict)

        # With the current revision the same edit goes through.
        moved = await ok(
            client,
            "move_cell",
            {"source_index": 0, "target_index": 1, "expected_revision": current},
        )
        assert moved["revision"] != current

        # Someone else saves the file: the revision follows the bytes, ids are kept,
        # and an edit based on what the server had before is a conflict.
        notebook = nbformat.read(path, as_version=4)
        notebook.cells.append(nbformat.v4.new_code_cell("added outside"))
        nbformat.write(notebook, path)
        outside = (await ok(client, "get_notebook_revision"))["revision"]
        assert outside != moved["revision"]
        read = await ok(client, "read_notebook")
        assert [cell["cell_id"] for cell in read["cells"][:2]] == [
            second["cell_id"],
            first["cell_id"],
        ]
        assert read["cells"][2]["source"] == "added outside"
        conflict = await refused_unchanged(
            client,
            path,
            "overwrite_cell_source",
            {"cell_index": 0, "cell_source": "z", "expected_revision": moved["revision"]},
            "revision_conflict",
        )
        assert conflict.meta[ERROR_KEY]["current_revision"] == outside
        edited = await ok(
            client, "overwrite_cell_source", {"cell_index": 1, "cell_source": "x = 2"}
        )
        assert sources_on_disk(path) == ["text", "x = 2", "added outside"]
        assert edited["cell_id"] == first["cell_id"]

        # Editing a notebook by path, without making it current.
        (workspace / "other.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
        other = await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "o",
                "notebook_name": "other.ipynb",
            },
        )
        assert ids_on_disk(workspace / "other.ipynb") == [other["cell_id"]]
        assert ids_on_disk(path) == [
            second["cell_id"],
            first["cell_id"],
            read["cells"][2]["cell_id"],
        ]

        # A broken file is refused by every tool and never touched.
        broken = workspace / "broken.ipynb"
        broken.write_text('{"cells": [')
        for tool, arguments in (
            ("read_notebook", {}),
            ("insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "x"}),
            ("get_notebook_revision", {}),
        ):
            result = await refused_unchanged(
                client,
                broken,
                tool,
                {**arguments, "notebook_name": "broken.ipynb"},
                "invalid_argument",
            )
            assert "not a valid notebook" in text_of(result)
        await refused_unchanged(
            client, broken, "use_notebook", {"notebook_name": "broken.ipynb"}, "invalid_argument"
        )


async def test_schema_violations_carry_the_invalid_argument_code(workspace):
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        for tool, arguments in (
            ("insert_cell", {"cell_index": 0, "cell_type": "sql", "cell_source": "x"}),
            ("use_notebook", {"notebook_name": "s.ipynb", "mode": "open"}),
            ("list_files", {"max_depth": 7}),
        ):
            result = await client.call_tool(tool, arguments)
            assert result.is_error
            assert error_code(result) == "invalid_argument", f"{tool}: {text_of(result)}"
