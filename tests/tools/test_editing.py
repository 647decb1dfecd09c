"""apply_edits and set_cell_metadata through the real server: one revision or none."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ERROR_KEY, ok, refused, serve, text_of


def cells_on_disk(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


async def start(client, name: str, count: int) -> list[str]:
    await ok(client, "use_notebook", {"notebook_name": name, "mode": "create"})
    ids = []
    for index in range(count):
        placed = await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "code", "cell_source": f"x{index} = {index}\n"},
        )
        ids.append(placed["cell_id"])
    return ids


def twenty_operations(ids: list[str]) -> list[dict]:
    return [
        {
            "op": "insert",
            "index": 0,
            "cell_type": "markdown",
            "source": "# Title",
            "cell_id": "title",
        },
        {"op": "overwrite", "cell_id": ids[0], "source": "x0 = 'zero'\n"},
        {"op": "replace", "cell_id": ids[1], "old_string": "= 1", "new_string": "= 100"},
        {"op": "delete", "cell_id": ids[2]},
        {"op": "move", "cell_id": ids[3], "to_index": 1},
        {"op": "set_cell_metadata", "cell_id": ids[4], "tags": ["parameters"]},
        {"op": "set_notebook_metadata", "metadata": {"title": "Batch"}},
        {"op": "insert", "index": -1, "cell_type": "code", "source": "tail = 1", "cell_id": "tail"},
        {"op": "replace", "cell_id": "tail", "old_string": "1", "new_string": "2"},
        {"op": "set_cell_metadata", "cell_id": "tail", "metadata": {"collapsed": True}},
        {"op": "insert", "index": 2, "cell_type": "raw", "source": "raw"},
        {"op": "delete", "cell_index": 2},
        {"op": "overwrite", "cell_index": 0, "source": "# Better title"},
        {"op": "move", "cell_id": "title", "to_index": 0},
        {
            "op": "replace",
            "cell_id": ids[5],
            "old_string": "x5",
            "new_string": "y5",
            "replace_all": True,
        },
        {
            "op": "set_cell_metadata",
            "cell_id": ids[5],
            "metadata": {"jupyter": {"source_hidden": True}},
        },
        {"op": "set_cell_metadata", "cell_id": ids[5], "metadata": {"jupyter": None}},
        {"op": "delete", "cell_id": ids[6]},
        {"op": "insert", "index": 3, "cell_type": "code", "source": "mid = 3"},
        {"op": "set_notebook_metadata", "metadata": {"authors": [{"name": "Ada"}]}},
    ]


async def test_a_batch_of_twenty_is_one_revision_with_one_diff(workspace, history_toolset):
    path = workspace / "batch.ipynb"
    async with serve(workspace, *history_toolset) as client:
        ids = await start(client, "batch.ipynb", 8)
        before = (await ok(client, "get_notebook_revision"))["revision"]
        operations = twenty_operations(ids)
        assert len(operations) == 20

        dry = await ok(
            client,
            "apply_edits",
            {"operations": operations, "dry_run": True, "expected_revision": before},
        )
        assert dry["dry_run"] and dry["previous_revision"] == before
        assert (await ok(client, "get_notebook_revision"))["revision"] == before

        done = await ok(
            client, "apply_edits", {"operations": operations, "expected_revision": before}
        )
        assert done["previous_revision"] == before and not done["dry_run"]
        assert (
            done["revision"]
            == dry["revision"]
            == (await ok(client, "get_notebook_revision"))["revision"]
        )
        assert done["diff"] == dry["diff"] and len(done["operations"]) == 20

        cells = cells_on_disk(path)
        assert [c["id"] for c in cells][:2] == ["title", ids[3]] and cells[-1]["id"] == "tail"
        assert "".join(cells[0]["source"]) == "# Better title"
        assert "".join(cells[-1]["source"]) == "tail = 2" and cells[-1]["metadata"] == {
            "collapsed": True
        }
        by_id = {c["id"]: c for c in cells}
        assert ids[2] not in by_id and ids[6] not in by_id
        assert (
            by_id[ids[4]]["metadata"]["tags"] == ["parameters"] and by_id[ids[5]]["metadata"] == {}
        )
        assert "".join(by_id[ids[1]]["source"]) == "x1 = 100\n"
        notebook = json.loads(path.read_text())
        assert notebook["metadata"]["title"] == "Batch" and notebook["metadata"]["authors"] == [
            {"name": "Ada"}
        ]

        diff = done["diff"]
        assert {c["cell_id"] for c in diff["removed"]} == {ids[2], ids[6]}
        assert {"title", "tail"} <= {c["cell_id"] for c in diff["added"]}
        assert set(diff["metadata"]) == {"title", "authors"}
        changed = {c["cell_id"]: c for c in diff["changed"]}
        assert "-x1 = 1\n+x1 = 100\n" in changed[ids[1]]["source_diff"]
        assert changed[ids[4]]["metadata"] == ["tags"]

        # read_cell shows metadata; set_cell_metadata edits it on its own.
        read = await ok(client, "read_cell", {"cell_id": ids[4]})
        assert read["metadata"] == {"tags": ["parameters"]}
        tagged = await ok(
            client, "set_cell_metadata", {"cell_id": ids[0], "tags": ["setup", "slow"]}
        )
        assert tagged["previous_revision"] == done["revision"] and tagged["diff"]["changed"][0][
            "metadata"
        ] == ["tags"]
        assert (await ok(client, "read_cell", {"cell_id": ids[0]}))["metadata"]["tags"] == [
            "setup",
            "slow",
        ]


async def test_a_failing_fifteenth_operation_leaves_the_file_byte_identical(
    workspace, history_toolset
):
    path = workspace / "fail.ipynb"
    async with serve(workspace, *history_toolset) as client:
        ids = await start(client, "fail.ipynb", 8)
        before_bytes = path.read_bytes()
        operations = twenty_operations(ids)
        operations[14] = {
            "op": "replace",
            "cell_id": ids[5],
            "old_string": "not there",
            "new_string": "x",
        }
        result = await refused(client, "apply_edits", {"operations": operations}, "not_found")
        details = result.meta[ERROR_KEY]
        assert details["operation_index"] == 14 and details["operation"] == "replace"
        assert "Operation 14 (replace)" in text_of(result)
        assert path.read_bytes() == before_bytes

        # A cell an earlier operation deleted, duplicate ids, metadata the format forbids, a huge batch.
        cases = [
            (
                [
                    {"op": "delete", "cell_id": ids[0]},
                    {"op": "overwrite", "cell_id": ids[0], "source": ""},
                ],
                "not_found",
                "deleted by operation 0",
            ),
            (
                [{"op": "insert", "cell_id": ids[1], "source": ""}],
                "invalid_argument",
                "already used",
            ),
            (
                [
                    {"op": "insert", "cell_id": "a", "source": ""},
                    {"op": "insert", "cell_id": "a", "source": ""},
                ],
                "invalid_argument",
                "already used",
            ),
            (
                [{"op": "set_cell_metadata", "cell_id": ids[1], "tags": ["a,b"]}],
                "invalid_argument",
                "nbformat",
            ),
            (
                [{"op": "set_notebook_metadata", "metadata": {"kernelspec": {"name": "python3"}}}],
                "invalid_argument",
                "display_name",
            ),
            (
                [{"op": "move", "cell_id": ids[1], "to_index": 99}],
                "invalid_argument",
                "out of range",
            ),
            ([{"op": "delete", "cell_index": 0}] * 501, "invalid_argument", "at most 500"),
            ([], "invalid_argument", "empty"),
        ]
        for operations, code, said in cases:
            result = await refused(client, "apply_edits", {"operations": operations}, code)
            assert said in text_of(result), text_of(result)
            assert path.read_bytes() == before_bytes
        stale = await refused(
            client,
            "apply_edits",
            {"operations": [{"op": "delete", "cell_index": 0}], "expected_revision": "0" * 16},
            "revision_conflict",
        )
        assert stale.meta[ERROR_KEY]["current_revision"]
        assert path.read_bytes() == before_bytes


async def test_cells_named_by_id_are_found_where_earlier_operations_of_the_batch_put_them(
    workspace, history_toolset
):
    """Inserts, moves and deletes shift every later cell: each operation naming a cell by id
    must find it where the batch has put it so far (the planner keeps the ids' order beside
    the cells), as a plain list replaying the batch says, step by step and on disk."""
    import random

    path = workspace / "order.ipynb"
    async with serve(workspace, *history_toolset) as client:
        order = await start(client, "order.ipynb", 12)
        rng = random.Random(31)
        operations: list[dict] = []
        expected: list[int] = []
        for step in range(60):
            kind = ("insert", "move", "delete", "overwrite")[step % 4]
            if kind == "insert":
                index = rng.randint(0, len(order))
                operations.append(
                    {"op": "insert", "index": index, "source": f"n{step}", "cell_id": f"n{step}"}
                )
                order.insert(index, f"n{step}")
                expected.append(index)
            elif kind == "move":
                cell_id, target = rng.choice(order), rng.randrange(len(order))
                operations.append({"op": "move", "cell_id": cell_id, "to_index": target})
                order.insert(target, order.pop(order.index(cell_id)))
                expected.append(target)
            elif kind == "delete":
                cell_id = rng.choice(order)
                operations.append({"op": "delete", "cell_id": cell_id})
                expected.append(order.index(cell_id))
                order.remove(cell_id)
            else:
                cell_id = rng.choice(order)
                operations.append({"op": "overwrite", "cell_id": cell_id, "source": f"o{step}"})
                expected.append(order.index(cell_id))
        done = await ok(client, "apply_edits", {"operations": operations})
        assert [step["cell_index"] for step in done["operations"]] == expected
        assert [cell["id"] for cell in cells_on_disk(path)] == order
