"""The notebook view (MCP Apps): ``outline`` opens it, its own tools page through and run a cell.

Over stdio with the official client, on both generations. A client that negotiated the
extension gets ``outline`` linked to ``ui://jupyter-mcp/notebook``, and the view's two tools
(``view_notebook``, ``run_cell_from_view``) listed with ``_meta.ui.visibility == ["app"]``;
an outline's result hands the view a page of cells whole (sources, outputs as nbformat keeps
them), every heading, and the cell the agent last edited or ran, marked. A run from the view
runs on the notebook's real kernel and lands in the file, only if the cell is still the one
shown, behind the same walls as ``execute_cell`` (profile, approvals). A client without apps
gets ``outline`` byte for byte as before, never sees the view's tools and cannot call them.
What the person sees and clicks is checked in Chromium in ``test_apps_notebook_browser.py``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import (
    error_code,
    ok,
    refused,
    serve,
    text_of,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation
from servers import our_http_server
from test_approvals import ASKING, Person
from test_apps import APP_SIZE_BUDGET, apps_extension, model_part, wire
from test_apps_review import model_listing
from test_tools_notebooks import TOOLS_LIST_BUDGET

from jupyter_mcp_server._calls.callers import AGENT_META_KEY
from jupyter_mcp_server._protocol.apps import APP_META_KEY, NOTEBOOK_URI

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
ARGS = ("--capability", "kernel.prestart=off", "--toolsets", "history")
VIEW_TOOLS = {"view_notebook", "run_cell_from_view"}
#: What a client with apps is sent beyond the model's part: the links and the apps' own tools.
APP_ONLY_BUDGET = 4_000
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def write_notebook(workspace: Path, code_cells: int = 24) -> Path:
    """A title, two sections, and `code_cells` code cells (more than a page), one with an output."""

    def code(index: int, source: str) -> dict[str, Any]:
        return {
            "cell_type": "code",
            "id": f"c{index}",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": source,
        }

    def markdown(cell_id: str, source: str) -> dict[str, Any]:
        return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}

    cells: list[dict[str, Any]] = [
        markdown("title", "# Sales report\nWhat sold where."),
        markdown("data", "## Loading the data"),
    ]
    cells += [code(i, f"x{i} = {i} * 10\nprint('x{i} is', x{i})") for i in range(code_cells)]
    cells.insert(12, markdown("results", "## Results"))
    cells[3]["outputs"] = [
        {
            "output_type": "display_data",
            "data": {"text/html": "<b>bold output</b>", "text/plain": "bold output"},
            "metadata": {},
        }
    ]
    cells[3]["execution_count"] = 1
    path = workspace / "report.ipynb"
    path.write_text(
        json.dumps(
            {
                "cells": cells,
                "metadata": {
                    "kernelspec": {
                        "name": "python3",
                        "display_name": "Python 3",
                        "language": "python",
                    }
                },
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        )
    )
    return path


def page_in(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    shown = (result.meta or {})[APP_META_KEY]
    assert shown["view"] == "notebook", shown
    return dict(shown)


def stored(path: Path, cell_id: str) -> dict[str, Any]:
    return next(c for c in json.loads(path.read_text())["cells"] if c["id"] == cell_id)


@MODES
async def test_outline_opens_the_view_with_the_agents_cell_and_the_view_pages_and_runs(
    tmp_path: Path, mode: str
) -> None:
    path = write_notebook(tmp_path)
    async with serve(tmp_path, *ARGS, mode=mode, extensions=[apps_extension()]) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert (listed["outline"].meta or {})["ui"] == {"resourceUri": NOTEBOOK_URI}
        assert "ui" not in (listed["read_notebook"].meta or {})
        for name in VIEW_TOOLS:
            assert (listed[name].meta or {})["ui"] == {
                "resourceUri": NOTEBOOK_URI,
                "visibility": ["app"],
            }, name
        assert not VIEW_TOOLS & {tool.name for tool in model_listing(list(listed.values()))}
        assert listed["view_notebook"].annotations.read_only_hint is True
        assert listed["run_cell_from_view"].annotations.read_only_hint is False
        assert NOTEBOOK_URI in [str(r.uri) for r in (await client.list_resources()).resources]

        # No agent's cell yet: the view shows the first page and marks nothing.
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        assert page["notebook"] == "report.ipynb" and page["cell_count"] == 27
        assert page["working"] is None
        assert [(h["level"], h["text"], h["cell_index"]) for h in page["headings"]] == [
            (1, "Sales report", 0),
            (2, "Loading the data", 1),
            (2, "Results", 12),
        ]
        assert page["start_index"] == 0 and len(page["cells"]) == page["page_size"] == 20
        shown = {cell["cell_id"]: cell for cell in page["cells"]}
        # Sources and outputs whole: the HTML goes to the view, to be sanitized there.
        assert shown["c1"]["source"] == "x1 = 1 * 10\nprint('x1 is', x1)"
        assert shown["c1"]["outputs"][0]["data"]["text/html"] == "<b>bold output</b>"
        assert shown["title"]["cell_type"] == "markdown"

        # The agent edits one cell, then runs another: the last is its cell.
        await ok(
            client,
            "overwrite_cell_source",
            {"notebook_name": "report.ipynb", "cell_id": "c4", "cell_source": "x4 = 'edited'"},
        )
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        assert page["working"] == {"cell_id": "c4", "index": 6, "doing": "edited"}
        await ok(client, "execute_cell", {"notebook_name": "report.ipynb", "cell_id": "c2"})
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        assert page["working"] == {"cell_id": "c2", "index": 4, "doing": "ran"}
        # A batch of edits: the last cell it named that is still there.
        batch = [
            {"op": "overwrite", "cell_id": "c6", "source": "x6 = 'batch'"},
            {"op": "overwrite", "cell_id": "c7", "source": "x7 = 'batch'"},
            {"op": "insert", "index": -1, "source": "tmp", "cell_type": "code", "cell_id": "tmp"},
            {"op": "delete", "cell_id": "tmp"},
        ]
        await ok(client, "apply_edits", {"notebook_name": "report.ipynb", "operations": batch})
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        assert page["working"] == {"cell_id": "c7", "index": 9, "doing": "edited"}
        await ok(client, "execute_cell", {"notebook_name": "report.ipynb", "cell_id": "c2"})

        # The view's pager: the page holding a cell index.
        later = page_in(
            await client.call_tool(
                "view_notebook", {"notebook_name": "report.ipynb", "start_index": 23}
            )
        )
        assert later["start_index"] == 20
        assert [c["index"] for c in later["cells"]] == list(range(20, 27))
        await refused(
            client,
            "view_notebook",
            {"notebook_name": "report.ipynb", "start_index": 27},
            "invalid_argument",
        )

        # The person runs a cell from the view: a real kernel, the outputs in the file.
        cell = next(c for c in later["cells"] if c["cell_id"] == "c20")
        ran = await client.call_tool(
            "run_cell_from_view",
            {"notebook_name": "report.ipynb", "cell_id": "c20", "source_hash": cell["source_hash"]},
        )
        assert not ran.is_error, text_of(ran)
        (execution,) = (ran.meta or {})[APP_META_KEY]["executions"]
        assert execution["outputs"][0]["text"] == "x20 is 200\n"
        assert "".join(stored(path, "c20")["outputs"][0]["text"]) == "x20 is 200\n"
        assert (ran.structured_content or {})["revision"] == (
            await ok(client, "get_notebook_revision", {"notebook_name": "report.ipynb"})
        )["revision"]
        # It ran in the notebook's kernel, the agent's: x2 is there.
        shared = await client.call_tool(
            "execute_code", {"notebook_name": "report.ipynb", "code": "print(x2 + x20)"}
        )
        assert "220" in text_of(shared)
        # The person's run is not the agent's: its cell stays marked.
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        assert page["working"]["cell_id"] == "c2"

        # A cell edited since the view showed it does not run.
        before = path.read_bytes()
        stale = shown["c5"]["source_hash"]
        await ok(
            client,
            "overwrite_cell_source",
            {"notebook_name": "report.ipynb", "cell_id": "c5", "cell_source": "print('new')"},
        )
        edited = path.read_bytes()
        assert edited != before
        refusal = await refused(
            client,
            "run_cell_from_view",
            {"notebook_name": "report.ipynb", "cell_id": "c5", "source_hash": stale},
            "revision_conflict",
        )
        assert "edited since the view showed it" in text_of(refusal)
        assert path.read_bytes() == edited


@MODES
async def test_a_read_only_profile_pages_the_view_and_cannot_run_from_it(
    tmp_path: Path, mode: str
) -> None:
    path = write_notebook(tmp_path)
    before = path.read_bytes()
    async with serve(
        tmp_path,
        *ARGS,
        "--capability",
        "profile=read-only",
        mode=mode,
        extensions=[apps_extension()],
    ) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "view_notebook" in names
        assert "run_cell_from_view" not in names and "execute_cell" not in names
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        page_in(
            await client.call_tool(
                "view_notebook", {"notebook_name": "report.ipynb", "start_index": 20}
            )
        )
        cell = page["cells"][2]
        result = await refused(
            client,
            "run_cell_from_view",
            {
                "notebook_name": "report.ipynb",
                "cell_id": cell["cell_id"],
                "source_hash": cell["source_hash"],
            },
            "not_permitted",
        )
        assert "read-only" in text_of(result)
        assert not (await ok(client, "list_kernels"))["kernels"], "a kernel started"
    assert path.read_bytes() == before


async def test_a_run_from_the_view_asks_as_execute_cell_does(tmp_path: Path) -> None:
    """A cell with a shell line: the person is asked, as for execute_cell; declined, nothing runs."""
    path = write_notebook(tmp_path, code_cells=2)
    notebook = json.loads(path.read_text())
    notebook["cells"][2]["source"] = "!echo from-the-shell"
    path.write_text(json.dumps(notebook, indent=1))
    person = Person(action="decline")
    async with serve(
        tmp_path,
        *ARGS,
        env=ASKING,
        extensions=[apps_extension()],
        elicitation_callback=person,
    ) as client:
        page = page_in(await client.call_tool("outline", {"notebook_name": "report.ipynb"}))
        cell = next(c for c in page["cells"] if c["cell_id"] == "c0")
        before = path.read_bytes()
        result = await client.call_tool(
            "run_cell_from_view",
            {"notebook_name": "report.ipynb", "cell_id": "c0", "source_hash": cell["source_hash"]},
        )
        assert result.is_error and error_code(result) == "declined", text_of(result)
        assert len(person.asked) == 1 and "!echo from-the-shell" in person.asked[0]
        assert path.read_bytes() == before


@MODES
async def test_a_client_without_apps_gets_todays_outline_and_not_the_views_tools(
    tmp_path: Path, mode: str
) -> None:
    plain_folder, apps_folder = tmp_path / "plain", tmp_path / "apps"
    for folder in (plain_folder, apps_folder):
        folder.mkdir()
        write_notebook(folder)

    async def the_same_calls(client: Any) -> list[dict[str, Any]]:
        said = []
        for name, arguments in (
            ("outline", {"notebook_name": "report.ipynb"}),
            ("outline", {"notebook_name": "report.ipynb", "start_index": 20, "limit": 5}),
            (
                "overwrite_cell_source",
                {"notebook_name": "report.ipynb", "cell_id": "c1", "cell_source": "1"},
            ),
            ("outline", {"notebook_name": "report.ipynb", "section": 12}),
        ):
            said.append(wire(await client.call_tool(name, arguments)))
        return said

    async with serve(apps_folder, *ARGS, mode=mode, extensions=[apps_extension()]) as client:
        with_apps = await the_same_calls(client)
    async with serve(plain_folder, *ARGS, mode=mode) as client:
        listing = await client.list_tools()
        plain = await the_same_calls(client)
        for name, arguments in (
            ("view_notebook", {"notebook_name": "report.ipynb"}),
            (
                "run_cell_from_view",
                {"notebook_name": "report.ipynb", "cell_id": "c2", "source_hash": "x"},
            ),
        ):
            hidden = await client.call_tool(name, arguments)
            assert hidden.is_error and error_code(hidden) == "unsupported", text_of(hidden)
        assert not (await ok(client, "list_kernels"))["kernels"]
    assert not VIEW_TOOLS & {tool.name for tool in listing.tools}
    assert "ui://" not in listing.model_dump_json(by_alias=True, exclude_none=True)
    assert APP_META_KEY not in json.dumps(plain)
    assert [APP_META_KEY in (said.get("_meta") or {}) for said in with_apps] == [
        True,
        True,
        False,
        True,
    ]
    for said in with_apps:
        meta = said.get("_meta") or {}
        meta.pop(APP_META_KEY, None)
        if "_meta" in said and not meta:
            del said["_meta"]
    assert json.dumps(with_apps) == json.dumps(plain)


@MODES
async def test_the_default_listing_with_apps_costs_the_model_nothing_more(
    tmp_path: Path, mode: str
) -> None:
    """What the model is handed of an apps client's listing is within the tools/list budget, and
    is exactly a client's without apps; the links and the apps' own tools stay within theirs."""
    async with serve(tmp_path, mode=mode) as client:
        plain = await client.list_tools()
    async with serve(tmp_path, mode=mode, extensions=[apps_extension()]) as client:
        listing = await client.list_tools()
        read = await client.read_resource(NOTEBOOK_URI)
    plain_size = len(plain.model_dump_json(by_alias=True, exclude_none=True).encode())
    sent = len(listing.model_dump_json(by_alias=True, exclude_none=True).encode())
    assert plain_size <= TOOLS_LIST_BUDGET
    assert model_part(listing) <= TOOLS_LIST_BUDGET, model_part(listing)
    assert model_part(listing) == model_part(plain)
    assert sent - plain_size <= APP_ONLY_BUDGET, f"the apps add {sent - plain_size:,} bytes"
    (content,) = read.contents
    assert content.mime_type == "text/html;profile=mcp-app"
    assert all(not domains for domains in (content.meta or {})["ui"]["csp"].values())
    html = content.text
    assert len(html.encode()) <= APP_SIZE_BUDGET
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    (script,) = re.findall(r"<script>(.*?)</script>", html, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy


async def test_a_page_stays_within_its_budget(tmp_path: Path) -> None:
    """An output past the page's budget is named with its size, not carried; the file has it."""
    path = write_notebook(tmp_path, code_cells=3)
    notebook = json.loads(path.read_text())
    big = "y" * (5 * 1024 * 1024)
    notebook["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": big}]
    path.write_text(json.dumps(notebook))
    async with serve(tmp_path, *ARGS, extensions=[apps_extension()]) as client:
        result = await client.call_tool("outline", {"notebook_name": "report.ipynb"})
    page = page_in(result)
    (output,) = next(c for c in page["cells"] if c["cell_id"] == "c0")["outputs"]
    assert output["output_type"] == "omitted" and "left out" in output["text"]
    assert len(result.model_dump_json().encode()) < 5 * 1024 * 1024


@MODES
async def test_each_agent_has_its_own_cell(tmp_path: Path, mode: str) -> None:
    """Over HTTP, two clients of one server (two sessions on 2025-11-25, two stateless agents with
    their handles on 2026-07-28), working in turn: each view marks the cell its own agent
    worked on, not the other's last."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_notebook(workspace, code_cells=4)
    with our_http_server(workspace, *ARGS, cwd=tmp_path, log=tmp_path / "server.log") as server:
        base = server.base

        @contextlib.asynccontextmanager
        async def client_named(name: str) -> AsyncIterator[Client]:
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
                Client(
                    streamable_http_client(f"{base}/mcp", http_client=http),
                    mode=mode,
                    extensions=[apps_extension()],
                    client_info=Implementation(name=name, version="1"),
                ) as client,
            ):
                yield client

        def edit(cell_id: str) -> dict[str, Any]:
            return {"notebook_name": "report.ipynb", "cell_id": cell_id, "cell_source": "1"}

        async with client_named("first") as first, client_named("second") as second:
            outline = {"notebook_name": "report.ipynb"}
            handles: list[dict[str, Any] | None] = []
            for client, cell_id in ((first, "c0"), (second, "c3")):
                # Stateless (2026-07-28), an agent is the handle the server gave it, passed back.
                handle = ((await client.call_tool("list_notebooks", {})).meta or {}).get(
                    AGENT_META_KEY
                )
                me = {AGENT_META_KEY: handle} if handle else None
                edited = await client.call_tool("overwrite_cell_source", edit(cell_id), meta=me)
                assert not edited.is_error, text_of(edited)
                working = page_in(await client.call_tool("outline", outline, meta=me))["working"]
                assert working is not None and working["cell_id"] == cell_id, working
                handles.append(me)
            # The second agent worked since: the first's cell is still its own.
            working = page_in(await first.call_tool("outline", outline, meta=handles[0]))["working"]
            assert working["cell_id"] == "c0", working
            # A stateless call that brings no handle is no agent: it has no cell.
            if mode == "auto":
                assert page_in(await first.call_tool("outline", outline))["working"] is None
