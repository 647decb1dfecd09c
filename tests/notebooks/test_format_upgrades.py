"""A notebook in an older nbformat is saved as 4.5 at its first edit, and the user is told.

The server reads nbformat 2, 3 and 4.0 to 4.4 and works on them as 4.5; the
first edit writes the file as 4.5, which the tools that made it may not
expect. Nothing may happen without a word: a read says the first edit will
upgrade the file, that edit's result says it did (a ``format_upgraded`` field
and a sentence), and from then on nothing more is said. The content is kept.
Notebooks already in 4.5 carry no such field, so their results stay as they
were. The real server, the official client (which checks every result
against the tool's output schema).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ok, serve, text_of
from nbformat import v2, v3

SERVER_ARGS = ("--capability", "kernel.prestart=off")


def v2_text() -> str:
    cells = [v2.new_code_cell(input="1 + 1"), v2.new_text_cell("markdown", source="# Title")]
    return v2.writes_json(v2.new_notebook(worksheets=[v2.new_worksheet(cells=cells)]))


def v3_text() -> str:
    cells = [v3.new_code_cell(input="1 + 1"), v3.new_text_cell("markdown", source="# Title")]
    return v3.writes_json(v3.new_notebook(worksheets=[v3.new_worksheet(cells=cells)]))


def v4_text(minor: int) -> str:
    """A 4.x file as nbformat of that time wrote it (4.4 and older: no cell ids)."""
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": minor,
            "metadata": {"custom": {"kept": True}},
            "cells": [
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "metadata": {},
                    "outputs": [],
                    "source": ["1 + 1"],
                },
                {"cell_type": "markdown", "metadata": {}, "source": ["# Title"]},
            ],
        },
        indent=1,
    )


OLD_FORMATS = {"2.0": v2_text, "3.0": v3_text, "4.0": lambda: v4_text(0), "4.4": lambda: v4_text(4)}


def on_disk(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=nbformat.NO_CONVERT)


def text_and_structured(result: Any) -> tuple[str, dict[str, Any]]:
    assert not result.is_error, text_of(result)
    return text_of(result), result.structured_content


@pytest.mark.parametrize("version", sorted(OLD_FORMATS))
async def test_the_read_warns_and_the_first_edit_says_it_upgraded(
    workspace: Path, version: str
) -> None:
    path = workspace / "old.ipynb"
    path.write_text(OLD_FORMATS[version]())
    before = path.read_bytes()
    upgrade = {"from": version, "to": "4.5"}
    async with serve(workspace, *SERVER_ARGS) as client:
        text, read = text_and_structured(
            await client.call_tool("read_notebook", {"notebook_name": "old.ipynb"})
        )
        assert read["format_upgraded"] == upgrade
        assert f"nbformat {version}" in text and "first edit will save it as nbformat 4.5" in text
        assert path.read_bytes() == before, "a read never writes"

        text, inserted = text_and_structured(
            await client.call_tool(
                "insert_cell",
                {
                    "notebook_name": "old.ipynb",
                    "cell_index": -1,
                    "cell_type": "markdown",
                    "cell_source": "added",
                },
            )
        )
        assert inserted["format_upgraded"] == upgrade
        assert f"was in nbformat {version}; this edit saved it as nbformat 4.5" in text
        saved = on_disk(path)
        nbformat.validate(saved)
        assert (saved.nbformat, saved.nbformat_minor) == (4, 5)
        assert [cell.source for cell in saved.cells] == ["1 + 1", "# Title", "added"]
        if version.startswith("4."):
            assert saved.metadata == {"custom": {"kept": True}}

        # Said once: the file is 4.5 now.
        again = await ok(
            client,
            "insert_cell",
            {
                "notebook_name": "old.ipynb",
                "cell_index": -1,
                "cell_type": "raw",
                "cell_source": "again",
            },
        )
        assert "format_upgraded" not in again
        text, read = text_and_structured(
            await client.call_tool("read_notebook", {"notebook_name": "old.ipynb"})
        )
        assert "format_upgraded" not in read and "nbformat" not in text


@pytest.mark.parametrize(
    "tool, arguments",
    [
        ("overwrite_cell_source", {"cell_index": 0, "cell_source": "2 + 2"}),
        ("edit_cell_source", {"cell_index": 0, "old_string": "1 + 1", "new_string": "3 + 3"}),
        ("move_cell", {"source_index": 0, "target_index": 1}),
        ("delete_cell", {"cell_indices": [1]}),
        ("clear_cell_output", {"cell_index": 0}),
    ],
)
async def test_every_edit_says_it_upgraded(
    workspace: Path, tool: str, arguments: dict[str, Any]
) -> None:
    path = workspace / "old.ipynb"
    path.write_text(v3_text())
    async with serve(workspace, *SERVER_ARGS) as client:
        text, result = text_and_structured(
            await client.call_tool(tool, {"notebook_name": "old.ipynb", **arguments})
        )
        assert result["format_upgraded"] == {"from": "3.0", "to": "4.5"}
        assert "this edit saved it as nbformat 4.5" in text
    assert on_disk(path).nbformat_minor == 5


async def test_notebooks_already_in_4_5_say_nothing(workspace: Path) -> None:
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]),
        workspace / "new.ipynb",
    )
    async with serve(workspace, *SERVER_ARGS) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("insert_cell", "read_notebook", "execute_cell"):
            # Not listed (the listing's budget), and so allowed: never required.
            schema = tools[name].output_schema or {}
            assert "format_upgraded" not in schema["properties"]
            assert "format_upgraded" not in schema.get("required", [])
            assert schema.get("additionalProperties", True) is not False
        read = await ok(client, "read_notebook", {"notebook_name": "new.ipynb"})
        inserted = await ok(
            client,
            "insert_cell",
            {
                "notebook_name": "new.ipynb",
                "cell_index": -1,
                "cell_type": "markdown",
                "cell_source": "x",
            },
        )
    assert "format_upgraded" not in read and "format_upgraded" not in inserted


async def test_an_execution_that_makes_the_first_edit_says_so(workspace: Path) -> None:
    (workspace / "inserted.ipynb").write_text(v4_text(4))
    (workspace / "ran.ipynb").write_text(v3_text())
    async with serve(workspace, *SERVER_ARGS) as client:
        # The insert before the run is the edit that upgrades.
        text, structured = text_and_structured(
            await client.call_tool(
                "insert_execute_code_cell",
                {
                    "notebook_name": "inserted.ipynb",
                    "cell_index": -1,
                    "cell_source": "print(6 * 7)",
                },
            )
        )
        assert structured["format_upgraded"] == {"from": "4.4", "to": "4.5"}
        assert "was in nbformat 4.4; this edit saved it as nbformat 4.5" in text and "42" in text
        again = await ok(
            client, "execute_cell", {"notebook_name": "inserted.ipynb", "cell_index": 2}
        )
        assert "format_upgraded" not in again

        # Storing the outputs of a run is the edit that upgrades.
        text, structured = text_and_structured(
            await client.call_tool("execute_cell", {"notebook_name": "ran.ipynb", "cell_index": 0})
        )
        assert structured["format_upgraded"] == {"from": "3.0", "to": "4.5"}
        assert "was in nbformat 3.0; this edit saved it as nbformat 4.5" in text
    for name in ("inserted.ipynb", "ran.ipynb"):
        assert on_disk(workspace / name).nbformat_minor == 5
    assert on_disk(workspace / "ran.ipynb").cells[0].outputs
