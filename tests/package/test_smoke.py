"""The shortest path a user takes: open a notebook, run a cell, read it back."""

from conftest import ok, serve


async def test_create_run_read(workspace):
    async with serve(workspace) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"use_notebook", "execute_cell", "read_notebook"} <= tools
        used = await ok(client, "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"})
        assert used["cell_count"] == 0
        ran = await ok(
            client, "insert_execute_code_cell", {"cell_index": -1, "cell_source": "print(6*7)"}
        )
        assert ran["status"] == "ok" and ran["revision"] != used["revision"]
        read = await ok(client, "read_notebook", {"response_format": "detailed"})
        assert read["cells"][0]["outputs"][0]["text"] == "42\n"
    assert (workspace / "a.ipynb").read_text().endswith("\n")
