"""A detached run in the output app (MCP Apps): the person watches it, cell by cell, as it goes.

Over stdio and HTTP with the official client, real kernels. A client that negotiated the
extension gets ``run_cells`` linked to ``ui://jupyter-mcp/outputs`` and the output app's own
tool ``watch_run`` listed with ``_meta.ui.visibility == ["app"]``; a detached run's answer
hands the app the run's id (``_meta``), and ``watch_run`` answers the run's progress (cells
done of its cells, the one running now) and each cell whole as it ended, only what is new.
The run is its owner's: another session is told it does not exist. A client without apps
never sees ``watch_run``, cannot call it, and gets every answer as before. What the person
sees is checked in Chromium in ``test_apps_runs_browser.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import error_code, ok, refused, serve, text_of
from mcp import Client
from mcp.types import Implementation
from test_apps import apps_extension, model_part, wire
from test_protocol import http_server

from jupyter_mcp_server._protocol.apps import APP_META_KEY, OUTPUTS_URI

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

ARGS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")
#: Each cell sleeps a little, then prints: the run takes a few seconds, cell by cell.
SLEEPS = 1.0
CELLS = 4


def write_notebook(workspace: Path, cells: int = CELLS, seconds: float = SLEEPS) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_code_cell(
            f"import time\ntime.sleep({seconds})\nprint('cell {i} done', flush=True)",
            id=f"step{i}",
        )
        for i in range(cells)
    ]
    path = workspace / "steps.ipynb"
    nbformat.write(notebook, str(path))
    return path


def shown_of(result: Any) -> dict[str, Any]:
    shown = (result.meta or {}).get(APP_META_KEY)
    assert shown is not None and shown["view"] == "run", result
    return shown


async def watch_to_the_end(
    client: Client, run_id: str, seconds: float = 90
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """watch_run as the app calls it until the run ends: every answer, and the cells shown."""
    answers: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    since = 0
    deadline = time.monotonic() + seconds
    while True:
        result = await client.call_tool("watch_run", {"run_id": run_id, "since_cell": since})
        assert not result.is_error, text_of(result)
        shown = shown_of(result)
        assert result.structured_content["next_cell"] == shown["next_cell"]
        # Only what is new: the cells since the last answer.
        assert len(shown["executions"]) == shown["next_cell"] - since
        cells.extend(shown["executions"])
        since = shown["next_cell"]
        answers.append(shown)
        if shown["ended"]:
            return answers, cells
        assert time.monotonic() < deadline, shown
        await _pause()


async def _pause() -> None:
    import asyncio

    await asyncio.sleep(0.3)


async def test_a_detached_run_is_watched_cell_by_cell_until_it_ends(tmp_path: Path) -> None:
    write_notebook(tmp_path)
    async with serve(tmp_path, *ARGS, extensions=[apps_extension()]) as client:
        listing = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert (listing["watch_run"].meta or {})["ui"] == {
            "resourceUri": OUTPUTS_URI,
            "visibility": ["app"],
        }
        assert (listing["run_cells"].meta or {})["ui"] == {"resourceUri": OUTPUTS_URI}
        started = await client.call_tool(
            "run_cells", {"notebook_name": "steps.ipynb", "detach": True}
        )
        assert not started.is_error, text_of(started)
        run_id = started.structured_content["run_id"]
        first = shown_of(started)
        assert first["run_id"] == run_id and first["tool"] == "run_cells"
        assert first["notebook"] == "steps.ipynb" and first["ended"] is False
        assert first["cells_total"] == CELLS and first["cells_done"] == 0
        assert first["executions"] == []

        answers, cells = await watch_to_the_end(client, run_id)
    # Progress advanced one cell at a time, each seen running before it ended.
    done = [answer["cells_done"] for answer in answers]
    assert done == sorted(done) and done[-1] == CELLS
    assert len({d for d in done if d < CELLS}) >= 2, done
    running = [a["running"]["cell_id"] for a in answers if a["running"] and not a["ended"]]
    assert len(set(running)) >= 2, running
    assert all(a["running"]["source"].startswith("import time") for a in answers if a["running"])
    # Cells were shown before the run ended, each with its output whole.
    assert any(a["executions"] and not a["ended"] for a in answers), answers
    assert [c["cell_id"] for c in cells] == [f"step{i}" for i in range(CELLS)]
    assert [c["status"] for c in cells] == ["ok"] * CELLS
    assert [c["execution_count"] for c in cells] == list(range(1, CELLS + 1))
    assert [c["outputs"] for c in cells] == [
        [{"output_type": "stream", "name": "stdout", "text": f"cell {i} done\n"}]
        for i in range(CELLS)
    ]
    final = answers[-1]
    assert final["status"] == "completed" and final["outcome"] == "ok"
    assert final["running"] is None and final["cells_done"] == CELLS
    assert "4 cell" in final["said"]


async def test_a_run_not_detached_shows_each_cell_once_it_has_ended(tmp_path: Path) -> None:
    write_notebook(tmp_path, cells=2, seconds=0)
    async with serve(tmp_path, *ARGS, extensions=[apps_extension()]) as client:
        result = await client.call_tool("run_cells", {"notebook_name": "steps.ipynb"})
    assert not result.is_error, text_of(result)
    shown = (result.meta or {})[APP_META_KEY]
    assert shown["view"] == "outputs"
    assert [(e["cell_id"], e["outputs"][0]["text"]) for e in shown["executions"]] == [
        ("step0", "cell 0 done\n"),
        ("step1", "cell 1 done\n"),
    ]


async def test_cancel_from_the_app_ends_the_run_cancelled(tmp_path: Path) -> None:
    write_notebook(tmp_path, cells=3, seconds=30)
    async with serve(tmp_path, *ARGS, extensions=[apps_extension()]) as client:
        started = await client.call_tool(
            "run_cells", {"notebook_name": "steps.ipynb", "detach": True}
        )
        run_id = started.structured_content["run_id"]
        deadline = time.monotonic() + 60
        while True:
            watched = shown_of(await client.call_tool("watch_run", {"run_id": run_id}))
            if watched["running"] is not None:
                break
            assert time.monotonic() < deadline, watched
            await _pause()
        assert watched["running"]["cell_id"] == "step0"
        await ok(client, "cancel_run", {"run_id": run_id})
        answers, cells = await watch_to_the_end(client, run_id)
    final = answers[-1]
    assert final["status"] == "cancelled" and final["outcome"] == "cancelled"
    assert final["cells_done"] == 1 and final["running"] is None
    assert "did not run" in final["said"]
    # The cell it stopped in is shown, interrupted, as the notebook keeps it: with the
    # KeyboardInterrupt its code raised, or with nothing, when the interrupt landed as the
    # kernel began it (cancelled at once, as here, it may: ipykernel then sends no reply).
    assert [(c["cell_id"], c["status"]) for c in cells] == [("step0", "interrupted")]
    shown = [output.get("ename") for output in cells[0]["outputs"]]
    assert shown in (["KeyboardInterrupt"], []), cells[0]


async def test_without_apps_nothing_changes_and_watch_run_is_refused(tmp_path: Path) -> None:
    """A client without apps: no watch_run listed, refused when called; its detached run's
    answers carry nothing for an app."""
    write_notebook(tmp_path, cells=2, seconds=0)
    async with serve(tmp_path, *ARGS) as client:
        listing = await client.list_tools()
        assert "watch_run" not in {tool.name for tool in listing.tools}
        assert "ui://" not in json.dumps(wire(listing))
        started = await client.call_tool(
            "run_cells", {"notebook_name": "steps.ipynb", "detach": True}
        )
        assert not started.is_error and started.meta is None, started
        run_id = started.structured_content["run_id"]
        hidden = await client.call_tool("watch_run", {"run_id": run_id})
        assert hidden.is_error and error_code(hidden) == "unsupported", text_of(hidden)
        assert "get_run" in text_of(hidden)
        state = await ok(client, "get_run", {"run_id": run_id, "wait_seconds": 30})
        while state["status"] not in ("completed", "failed", "cancelled"):
            state = await ok(client, "get_run", {"run_id": run_id, "wait_seconds": 30})
        assert state["result"]["status"] == "ok"


async def test_the_detached_answer_is_the_models_as_without_apps(tmp_path: Path) -> None:
    """The model reads the same answer whether the client shows apps or not: only ``_meta``
    (for the app) differs."""
    said = []
    for apps in (False, True):
        folder = tmp_path / ("apps" if apps else "plain")
        folder.mkdir()
        write_notebook(folder, cells=2, seconds=0)
        options = {"extensions": [apps_extension()]} if apps else {}
        async with serve(folder, *ARGS, **options) as client:
            started = await client.call_tool(
                "run_cells", {"notebook_name": "steps.ipynb", "detach": True}
            )
            run_id = started.structured_content["run_id"]
            await ok(client, "get_run", {"run_id": run_id, "wait_seconds": 30})
            sent = wire(started)
            sent.pop("_meta", None)
            said.append(json.dumps(sent).replace(run_id, "<run>"))
    assert said[0] == said[1]


async def test_only_the_runs_owner_can_watch_it(tmp_path: Path) -> None:
    """Over HTTP: the session that started the run watches it; another session (another
    client, with apps too) is told there is no such run, and cannot cancel it."""
    write_notebook(tmp_path, cells=3, seconds=2)
    with http_server(tmp_path, "--capability", "kernel.prestart=off") as base:
        url = base + "?runs"
        async with (
            Client(
                url,
                mode="legacy",
                extensions=[apps_extension()],
                client_info=Implementation(name="person", version="1"),
            ) as owner,
            Client(
                url,
                mode="legacy",
                extensions=[apps_extension()],
                client_info=Implementation(name="someone-else", version="1"),
            ) as other,
        ):
            started = await owner.call_tool(
                "run_cells", {"notebook_name": "steps.ipynb", "detach": True}
            )
            assert not started.is_error, text_of(started)
            run_id = started.structured_content["run_id"]
            await refused(other, "watch_run", {"run_id": run_id}, "not_found")
            await refused(other, "cancel_run", {"run_id": run_id}, "not_found")
            answers, cells = await watch_to_the_end(owner, run_id)
            assert answers[-1]["outcome"] == "ok" and len(cells) == 3
            await refused(other, "watch_run", {"run_id": run_id}, "not_found")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_watch_run_costs_the_model_nothing(tmp_path: Path, mode: str) -> None:
    """With the runs toolset, what a host hands its model of an apps client's listing is a
    plain client's, byte for byte; the plain listing is as it was."""
    async with serve(tmp_path, *ARGS, mode=mode) as client:
        plain = await client.list_tools()
    async with serve(tmp_path, *ARGS, mode=mode, extensions=[apps_extension()]) as client:
        listing = await client.list_tools()
    assert model_part(listing) == model_part(plain)
    assert "watch_run" not in {tool.name for tool in plain.tools}
    (watch,) = [tool for tool in listing.tools if tool.name == "watch_run"]
    size = len(watch.model_dump_json(by_alias=True, exclude_none=True).encode())
    assert size < 2_000, size


async def test_a_detached_execute_cell_is_watched_too(tmp_path: Path) -> None:
    write_notebook(tmp_path, cells=2, seconds=1)
    async with serve(tmp_path, *ARGS, extensions=[apps_extension()]) as client:
        started = await client.call_tool(
            "execute_cell", {"notebook_name": "steps.ipynb", "cell_id": "step1", "detach": True}
        )
        assert not started.is_error, text_of(started)
        first = shown_of(started)
        assert first["tool"] == "execute_cell" and first["cells_total"] == 1
        answers, cells = await watch_to_the_end(client, started.structured_content["run_id"])
    assert answers[-1]["outcome"] == "ok" and answers[-1]["cells_done"] == 1
    assert [(c["cell_id"], c["outputs"][0]["text"]) for c in cells] == [("step1", "cell 1 done\n")]
