"""A `.py` Jupytext percent script as a notebook, end to end: created, edited
and run through the real server; outputs are returned but never written into
the script, which stays a valid percent script with stable cell ids.
"""

from __future__ import annotations

import jupytext
from conftest import ok, serve, text_of


def script_cells(text: str) -> list[tuple[str, str]]:
    notebook = jupytext.reads(text, fmt="py:percent")
    return [(cell.cell_type, cell.source) for cell in notebook.cells]


async def cell_ids(client, notebook: str | None = None) -> list[str]:
    arguments = {"limit": 0} if notebook is None else {"limit": 0, "notebook_name": notebook}
    return [cell["cell_id"] for cell in (await ok(client, "read_notebook", arguments))["cells"]]


async def test_percent_script_notebook(workspace):
    script = workspace / "analysis.py"
    async with serve(workspace) as client:
        created = await ok(
            client, "use_notebook", {"notebook_name": "analysis.py", "mode": "create"}
        )
        assert created["notebook_path"] == "analysis.py" and created["cell_count"] == 0
        assert script_cells(script.read_text()) == []

        title = await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "markdown", "cell_source": "# Title"},
        )
        compute = await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "x = 21\nprint('RESULT', x * 2)",
            },
        )
        later = await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "code", "cell_source": "y = x + 1"},
        )
        text = script.read_text()
        assert "# %% [markdown]\n# # Title\n" in text
        assert "# %%\nx = 21\nprint('RESULT', x * 2)\n" in text
        assert script_cells(text) == [
            ("markdown", "# Title"),
            ("code", "x = 21\nprint('RESULT', x * 2)"),
            ("code", "y = x + 1"),
        ]
        ids = [title["cell_id"], compute["cell_id"], later["cell_id"]]
        assert await cell_ids(client) == ids
        assert await cell_ids(client) == ids

        # Running a cell returns its outputs; the script is not changed by them.
        before = script.read_bytes()
        revision = (await ok(client, "get_notebook_revision"))["revision"]
        ran = await client.call_tool("execute_cell", {"cell_id": compute["cell_id"]})
        assert not ran.is_error, text_of(ran)
        assert ran.structured_content["status"] == "ok" and text_of(ran) == "RESULT 42\n"
        assert ran.structured_content["cell_id"] == compute["cell_id"]
        assert ran.structured_content["revision"] == revision
        assert script.read_bytes() == before
        assert await cell_ids(client) == ids

        # The kernel keeps its state between cells, like any notebook's.
        assert (await ok(client, "execute_cell", {"cell_index": 2}))["status"] == "ok"
        assert text_of(await client.call_tool("execute_code", {"code": "print(y)"})) == "22\n"

        # insert_execute_code_cell stores the code, not what it printed.
        inserted = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": 1, "cell_source": "print('OUT' + 'PUT')"}
        )
        assert not inserted.is_error and text_of(inserted) == "OUTPUT\n"
        text = script.read_text()
        assert "print('OUT' + 'PUT')" in text and "OUTPUT" not in text and "RESULT 42" not in text
        new_id = inserted.structured_content["cell_id"]
        ids = [ids[0], new_id, ids[1], ids[2]]
        assert await cell_ids(client) == ids

        # Edits, moves and deletions keep ids and keep the file a percent script.
        await ok(
            client,
            "edit_cell_source",
            {"cell_id": later["cell_id"], "old_string": "+ 1", "new_string": "+ 2"},
        )
        moved = await ok(
            client, "move_cell", {"source_cell_id": later["cell_id"], "target_index": 1}
        )
        assert moved["cell_index"] == 1
        deleted = await ok(client, "delete_cell", {"cell_ids_to_delete": [new_id]})
        assert deleted["deleted"] == [{"cell_id": new_id, "source": "print('OUT' + 'PUT')"}]
        assert await cell_ids(client) == [title["cell_id"], later["cell_id"], compute["cell_id"]]
        assert script_cells(script.read_text()) == [
            ("markdown", "# Title"),
            ("code", "y = x + 2"),
            ("code", "x = 21\nprint('RESULT', x * 2)"),
        ]

        # An edit made outside: unchanged cells keep their ids, the new one gets its own.
        script.write_text(script.read_text() + "\n# %%\nz = 3\n")
        after = await cell_ids(client)
        assert after[:3] == [title["cell_id"], later["cell_id"], compute["cell_id"]]
        assert len(after) == 4 and after[3] not in after[:3]
        assert await cell_ids(client) == after
        read = await ok(client, "read_cell", {"cell_id": after[3]})
        assert read["source"] == "z = 3" and read["cell_type"] == "code"


async def test_existing_percent_script(workspace):
    script = workspace / "hand.py"
    script.write_text("# %%\na = 1\n\n# %% [markdown]\n# Some *text*\n\n# %%\nprint(a)\n")
    async with serve(workspace) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "hand.py"})
        assert used["cell_count"] == 3
        read = await ok(client, "read_notebook", {"response_format": "detailed"})
        assert [(c["cell_type"], c["source"]) for c in read["cells"]] == [
            ("code", "a = 1"),
            ("markdown", "Some *text*"),
            ("code", "print(a)"),
        ]
        ids = [c["cell_id"] for c in read["cells"]]
        before = script.read_bytes()
        await ok(client, "execute_cell", {"cell_index": 0})
        printed = await client.call_tool("execute_cell", {"cell_index": 2})
        assert text_of(printed) == "1\n"
        assert script.read_bytes() == before, "running cells must not rewrite a script"
        await ok(client, "overwrite_cell_source", {"cell_index": 0, "cell_source": "a = 2"})
        assert script_cells(script.read_text()) == [
            ("code", "a = 2"),
            ("markdown", "Some *text*"),
            ("code", "print(a)"),
        ]
        assert await cell_ids(client) == ids
