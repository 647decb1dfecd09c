"""While a notebook's history cannot be written, every change says so, and capabilities:// too.

The history directory is made really unwritable: a path whose parent is a
regular file (ENOTDIR, even for root), or, where the tests do not run as root,
a directory without write permission. Every tool that writes a notebook is
called: its change is made (the file holds it), and its result carries
``history_off`` and a sentence saying that history is off and why, so nobody
believes it can be undone. ``capabilities://`` says the same before any change
and after. Once the directory can be written again, results and
``capabilities://`` stop saying it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import error_code, ok, serve, text_of
from mcp import Client
from mcp.types import CallToolResult

from jupyter_mcp_server._tools.declarations import NOTEBOOK_TOOLS

ARGS = ("--toolsets", "runs,history", "--capability", "kernel.prestart=off")


@dataclass(frozen=True)
class Change:
    tool: str
    arguments: Callable[[dict[str, Any]], dict[str, Any]]


#: Every tool that writes a notebook, each with arguments that change it (`ids`: the cells so far).
CHANGES = (
    Change(
        "insert_cell", lambda ids: {"cell_index": -1, "cell_type": "code", "cell_source": "y = 1"}
    ),
    Change("overwrite_cell_source", lambda ids: {"cell_id": ids["first"], "cell_source": "x = 2"}),
    Change(
        "edit_cell_source",
        lambda ids: {"cell_id": ids["first"], "old_string": "x = 2", "new_string": "x = 3"},
    ),
    Change("move_cell", lambda ids: {"source_index": 0, "target_index": 1}),
    Change("execute_cell", lambda ids: {"cell_id": ids["first"]}),
    Change("clear_cell_output", lambda ids: {"cell_id": ids["first"]}),
    Change(
        "insert_execute_code_cell", lambda ids: {"cell_index": -1, "cell_source": "print('ran')"}
    ),
    Change("run_cells", lambda ids: {"cells": "all"}),
    Change("clear_outputs", lambda ids: {}),
    Change(
        "apply_edits",
        lambda ids: {
            "operations": [{"op": "insert", "index": 0, "cell_type": "markdown", "source": "# t"}]
        },
    ),
    Change("set_cell_metadata", lambda ids: {"cell_id": ids["first"], "tags": ["kept"]}),
    Change("delete_cell", lambda ids: {"cell_indices": [0]}),
)
#: The tools that change something but write no notebook of their own accord, and why.
NOT_WRITING = {
    "use_notebook": "walked first, creating the notebook",
    "restart_notebook": "kernels only",
    "unuse_notebook": "kernels only",
    "execute_code": "runs scratch code; the notebook is not written",
    "interrupt_kernel": "kernels only",
    "interrupt_notebook_session": "kernels only",
    "connect_to_jupyter": "where later kernels start",
    "install_packages": "an environment, not a notebook",
    "cancel_run": "stops a run; what the run wrote is its own tool's result",
    "verify_notebook": "a throwaway kernel; the file is never written",
    "restore_notebook": "needs a kept revision: with history off there is none to restore",
    "checkpoint": "labels a revision in the history: refused while it is off",
    "review_change": "applies an apply_edits or restore_notebook dry run, walked as those are",
    "run_cell_from_view": "writes as execute_cell does (run_stored_cell, walked); app-only, not callable here",
}


def test_every_tool_that_writes_a_notebook_is_walked() -> None:
    changing = {tool.name for tool in NOTEBOOK_TOOLS if not tool.read_only}
    walked = {change.tool for change in CHANGES}
    assert not changing - walked - set(NOT_WRITING), sorted(changing - walked - set(NOT_WRITING))


def unwritable_history(tmp_path: Path, how: str) -> Path:
    if how == "parent-is-a-file":
        blocker = tmp_path / "blocker"
        blocker.write_text("a file where the history's folder would go\n")
        return blocker / "history"
    if os.geteuid() == 0:
        pytest.skip(
            "running as root, whom a directory's permissions do not stop (parent-is-a-file covers root)"
        )
    history = tmp_path / "history"
    history.mkdir()
    history.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return history


async def history_described(client: Client) -> dict[str, Any]:
    described = json.loads((await client.read_resource("capabilities://")).contents[0].text)
    history: dict[str, Any] = described["history"]
    return history


def says_history_is_off(result: CallToolResult, tool: str, history: Path) -> None:
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    structured = result.structured_content or {}
    assert str(history) in structured.get("history_off", ""), (
        f"{tool}: no history_off in {structured}"
    )
    assert "History is off" in text_of(result) and str(history) in text_of(result), (
        f"{tool}: {text_of(result)}"
    )


@pytest.mark.parametrize("how", ["parent-is-a-file", "read-only-directory"])
async def test_every_change_says_history_is_off_and_is_made(tmp_path: Path, how: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    history = unwritable_history(tmp_path, how)
    path = workspace / "a.ipynb"
    try:
        async with serve(workspace, *ARGS, env={"JUPYTER_MCP_HISTORY_DIR": str(history)}) as client:
            before = await history_described(client)
            assert before["on"] is False and str(history) in before["off"], before

            created = await client.call_tool(
                "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"}
            )
            says_history_is_off(created, "use_notebook", history)
            first = (
                await ok(
                    client,
                    "insert_cell",
                    {"cell_index": 0, "cell_type": "code", "cell_source": "x = 1"},
                )
            )["cell_id"]
            ids = {"first": first}
            for change in CHANGES:
                bytes_before = path.read_bytes()
                result = await client.call_tool(change.tool, change.arguments(ids))
                says_history_is_off(result, change.tool, history)
                assert path.read_bytes() != bytes_before, (
                    f"{change.tool} said it changed the notebook, but did not"
                )
            # What needs the history says so, with a code, and writes nothing.
            bytes_before = path.read_bytes()
            refused = await client.call_tool("checkpoint", {"name": "kept"})
            assert refused.is_error and error_code(refused) is not None, text_of(refused)
            assert path.read_bytes() == bytes_before
            after = await history_described(client)
            assert after["on"] is False and str(history) in after["off"], after

            # The directory can be written again: the next change is kept, and nothing says otherwise.
            if how == "parent-is-a-file":
                (tmp_path / "blocker").unlink()
            else:
                history.chmod(stat.S_IRWXU)
            back = await client.call_tool(
                "insert_cell", {"cell_index": -1, "cell_type": "markdown", "cell_source": "back"}
            )
            assert not back.is_error and "history_off" not in (back.structured_content or {}), (
                text_of(back)
            )
            assert "History is off" not in text_of(back)
            assert (await history_described(client))["on"] is True
            entries = (await ok(client, "notebook_history", {}))["entries"]
            assert entries and entries[0]["revision"] == back.structured_content["revision"]
    finally:
        if history.is_dir():
            history.chmod(stat.S_IRWXU)
