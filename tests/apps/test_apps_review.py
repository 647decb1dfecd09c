"""Review before it lands (MCP Apps): a dry run shown side by side, accepted or rejected in the view.

Over stdio with the official client, on both generations. A client that negotiated the
extension and lists the ``history`` toolset gets ``apply_edits`` and ``restore_notebook``
linked to the review app, and ``review_change`` listed with ``_meta.ui.visibility ==
["app"]`` (its host keeps it from the model); a dry run's result hands the app the cells
before and after and a review id; ``review_change`` with that id applies exactly the
previewed revision, refuses with ``revision_conflict`` when the file changed since, and
writes nothing on reject. A client without apps gets the same dry runs byte for byte,
never sees ``review_change``, cannot call it, and is asked (elicitation) as before. What the
person sees and clicks is checked in Chromium in ``test_apps_review_browser.py``.
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
from test_tools_notebooks import TOOLS_LIST_BUDGET

from jupyter_mcp_server._apps.reviews import REVIEW_URI
from jupyter_mcp_server._protocol.apps import APP_META_KEY

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
ARGS = ("--capability", "kernel.prestart=off", "--toolsets", "history")
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

#: Overwrite one cell, delete another (a deletion approvals ask about), add one.
BATCH = [
    {"op": "overwrite", "cell_id": "c0", "source": "x0 = 100\nprint(x0)"},
    {"op": "delete", "cell_id": "c1"},
    {"op": "insert", "index": -1, "source": "# the end", "cell_type": "markdown", "cell_id": "n1"},
]


def write_notebook(workspace: Path) -> Path:
    """Three code cells; the one deleted has an HTML output the review shows."""
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "execution_count": i + 1,
            "outputs": [],
            "source": f"x{i} = {i}",
        }
        for i in range(3)
    ]
    cells[1]["outputs"] = [
        {
            "output_type": "display_data",
            "data": {"text/html": "<b>bold output</b>", "text/plain": "bold output"},
            "metadata": {},
        }
    ]
    path = workspace / "a.ipynb"
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
    )
    return path


def dry_run(operations: list[dict[str, Any]] = BATCH) -> dict[str, Any]:
    return {"notebook_name": "a.ipynb", "operations": operations, "dry_run": True}


def review_in(result: Any) -> dict[str, Any]:
    shown = (result.meta or {})[APP_META_KEY]
    assert shown["view"] == "review"
    (review,) = shown["reviews"]
    return dict(review)


def model_listing(tools: list[Any]) -> list[Any]:
    """The tools a host hands its model: every tool but those visible to the app only."""
    return [
        tool
        for tool in tools
        if "model" in ((tool.meta or {}).get("ui", {}).get("visibility") or ["model"])
    ]


@MODES
async def test_a_dry_run_links_the_review_and_an_accept_applies_exactly_what_was_shown(
    tmp_path: Path, mode: str
) -> None:
    path = write_notebook(tmp_path)
    person = Person()
    async with serve(
        tmp_path,
        *ARGS,
        mode=mode,
        env=ASKING,
        extensions=[apps_extension()],
        elicitation_callback=person,
    ) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("apply_edits", "restore_notebook"):
            assert (listed[name].meta or {})["ui"] == {"resourceUri": REVIEW_URI}, name
        # The app's own tool: listed to this client for its host, visible to the app only.
        assert (listed["review_change"].meta or {})["ui"] == {
            "resourceUri": REVIEW_URI,
            "visibility": ["app"],
        }
        assert "review_change" not in {tool.name for tool in model_listing(list(listed.values()))}
        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert REVIEW_URI in resources

        before = path.read_bytes()
        result = await client.call_tool("apply_edits", dry_run())
        assert not result.is_error, text_of(result)
        assert path.read_bytes() == before, "a dry run wrote"
        review = review_in(result)
        structured = result.structured_content or {}
        assert review["from_revision"] == structured["previous_revision"]
        assert review["to_revision"] == structured["revision"]
        assert review["notebook"] == "a.ipynb"
        rows = {row["cell_id"]: row for row in review["cells"]}
        assert [row["cell_id"] for row in review["cells"]] == ["c0", "c1", "c2", "n1"]
        assert rows["c0"]["status"] == "changed"
        assert rows["c0"]["before"]["source"] == "x0 = 0"
        assert rows["c0"]["after"]["source"] == "x0 = 100\nprint(x0)"
        assert rows["c1"]["status"] == "removed" and rows["c1"]["after"] is None
        # The removed cell's output goes to the app whole: its HTML, to be sanitized there.
        (output,) = rows["c1"]["before"]["outputs"]
        assert output["data"]["text/html"] == "<b>bold output</b>"
        assert rows["c2"]["status"] == "unchanged"
        assert rows["n1"]["status"] == "added" and rows["n1"]["before"] is None

        accepted = await ok(client, "review_change", {"review_id": review["id"], "accept": True})
        assert accepted["accepted"] is True
        # Exactly the revision shown, and no second question: the click was the approval.
        assert accepted["revision"] == review["to_revision"]
        assert person.asked == []
        on_disk = json.loads(path.read_text())
        assert [c["id"] for c in on_disk["cells"]] == ["c0", "c2", "n1"]
        assert "".join(on_disk["cells"][0]["source"]) == "x0 = 100\nprint(x0)"
        revision = await ok(client, "get_notebook_revision", {"notebook_name": "a.ipynb"})
        assert revision["revision"] == review["to_revision"]

        # Each review is answered once.
        again = await refused(
            client, "review_change", {"review_id": review["id"], "accept": True}, "not_found"
        )
        assert "new preview" in text_of(again)


@MODES
async def test_an_accept_after_the_file_changed_is_refused_and_writes_nothing(
    tmp_path: Path, mode: str
) -> None:
    path = write_notebook(tmp_path)
    async with serve(tmp_path, *ARGS, mode=mode, extensions=[apps_extension()]) as client:
        review = review_in(await client.call_tool("apply_edits", dry_run()))
        # Someone else edits the notebook after the person was shown the change.
        changed = json.loads(path.read_text())
        changed["cells"][2]["source"] = "x2 = 'edited elsewhere'"
        path.write_text(json.dumps(changed, indent=1))
        edited = path.read_bytes()
        stale = await refused(
            client,
            "review_change",
            {"review_id": review["id"], "accept": True},
            "revision_conflict",
        )
        said = text_of(stale)
        assert "changed since the review was shown" in said and "nothing was written" in said
        assert path.read_bytes() == edited


@MODES
async def test_a_reject_leaves_the_notebook_byte_identical(tmp_path: Path, mode: str) -> None:
    path = write_notebook(tmp_path)
    before = path.read_bytes()
    async with serve(tmp_path, *ARGS, mode=mode, extensions=[apps_extension()]) as client:
        review = review_in(await client.call_tool("apply_edits", dry_run()))
        rejected = await ok(client, "review_change", {"review_id": review["id"], "accept": False})
        assert rejected["accepted"] is False and rejected["revision"] == review["from_revision"]
        await refused(
            client, "review_change", {"review_id": review["id"], "accept": True}, "not_found"
        )
    assert path.read_bytes() == before


@MODES
async def test_a_restore_previewed_then_accepted(tmp_path: Path, mode: str) -> None:
    path = write_notebook(tmp_path)
    async with serve(
        tmp_path, *ARGS, mode=mode, env=ASKING, extensions=[apps_extension()]
    ) as client:
        await ok(client, "checkpoint", {"notebook_name": "a.ipynb", "name": "start"})
        await ok(client, "apply_edits", {"notebook_name": "a.ipynb", "operations": BATCH[:1]})
        edited = path.read_bytes()
        arguments = {"notebook_name": "a.ipynb", "revision": "start", "dry_run": True}
        result = await client.call_tool("restore_notebook", arguments)
        assert not result.is_error, text_of(result)
        assert text_of(result).startswith("Dry run:") and path.read_bytes() == edited
        review = review_in(result)
        (changed,) = [row for row in review["cells"] if row["status"] != "unchanged"]
        assert changed["cell_id"] == "c0" and changed["after"]["source"] == "x0 = 0"
        accepted = await ok(client, "review_change", {"review_id": review["id"], "accept": True})
        assert accepted["revision"] == review["to_revision"]
    assert "".join(json.loads(path.read_text())["cells"][0]["source"]) == "x0 = 0"


@MODES
async def test_a_client_without_apps_sees_todays_results_and_is_asked_as_today(
    tmp_path: Path, mode: str
) -> None:
    plain_folder, apps_folder = tmp_path / "plain", tmp_path / "apps"
    for folder in (plain_folder, apps_folder):
        folder.mkdir()
        write_notebook(folder)

    async def the_same_calls(client: Client) -> list[dict[str, Any]]:
        """Both dry runs, and the calls between them, serialized."""
        said = [wire(await client.call_tool("apply_edits", dry_run()))]
        for name, arguments in (
            ("checkpoint", {"notebook_name": "a.ipynb", "name": "start"}),
            ("apply_edits", {"notebook_name": "a.ipynb", "operations": BATCH[:1]}),
            (
                "restore_notebook",
                {"notebook_name": "a.ipynb", "revision": "start", "dry_run": True},
            ),
        ):
            said.append(wire(await client.call_tool(name, arguments)))
        return said

    async with serve(apps_folder, *ARGS, mode=mode, extensions=[apps_extension()]) as client:
        with_apps = await the_same_calls(client)
    person = Person()
    async with serve(
        plain_folder, *ARGS, mode=mode, env=ASKING, elicitation_callback=person
    ) as client:
        listing = await client.list_tools()
        plain = await the_same_calls(client)
        hidden = await client.call_tool("review_change", {"review_id": "x", "accept": True})
        assert hidden.is_error and error_code(hidden) == "unsupported", text_of(hidden)
        # Without apps, the deletion is asked about as it was.
        await ok(client, "apply_edits", {"notebook_name": "a.ipynb", "operations": BATCH})
        assert len(person.asked) == 1 and "Delete 1 cell" in person.asked[0]
    names = {tool.name for tool in listing.tools}
    assert "review_change" not in names and "apply_edits" in names
    assert "ui://" not in listing.model_dump_json(by_alias=True, exclude_none=True)
    assert APP_META_KEY not in json.dumps(plain)
    # With apps, the two dry runs carry their review; without the review, the same bytes.
    assert [APP_META_KEY in (said.get("_meta") or {}) for said in with_apps] == [
        True,
        False,
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
async def test_the_default_listing_has_no_app_only_tool_and_stays_within_budget(
    tmp_path: Path, mode: str
) -> None:
    """The default toolsets, with apps: review_change is not listed, and what the model is handed
    stays within the budget."""
    async with serve(tmp_path, mode=mode, extensions=[apps_extension()]) as client:
        listing = await client.list_tools()
        read = await client.read_resource(REVIEW_URI)
    assert "review_change" not in {tool.name for tool in listing.tools}
    size = model_part(listing)
    assert size <= TOOLS_LIST_BUDGET, (
        f"{size:,} bytes handed to the model, over {TOOLS_LIST_BUDGET:,}"
    )
    (content,) = read.contents
    assert content.mime_type == "text/html;profile=mcp-app"
    assert all(not domains for domains in (content.meta or {})["ui"]["csp"].values())
    # One document within its budget, nothing from a network, only its own script may run.
    html = content.text
    assert len(html.encode()) <= APP_SIZE_BUDGET
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(" not in html
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    (script,) = re.findall(r"<script>(.*?)</script>", html, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy


@MODES
async def test_a_review_is_answered_only_by_the_client_it_was_shown_to(
    tmp_path: Path, mode: str
) -> None:
    """Over HTTP, where many clients share one server: another session (2025-11-25), or another
    client (stateless 2026-07-28), naming the review's id finds nothing and changes nothing."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = write_notebook(workspace)
    with our_http_server(workspace, *ARGS, cwd=tmp_path, log=tmp_path / "server.log") as server:
        base = server.base

        @contextlib.asynccontextmanager
        async def client_named(name: str) -> AsyncIterator[Client]:
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
                Client(
                    streamable_http_client(f"{base}/mcp?history", http_client=http),
                    mode=mode,
                    extensions=[apps_extension()],
                    client_info=Implementation(name=name, version="1"),
                ) as client,
            ):
                yield client

        async with client_named("shown") as shown, client_named("other") as other:
            review = review_in(await shown.call_tool("apply_edits", dry_run()))
            before = path.read_bytes()
            await refused(
                other, "review_change", {"review_id": review["id"], "accept": True}, "not_found"
            )
            assert path.read_bytes() == before
            accepted = await ok(shown, "review_change", {"review_id": review["id"], "accept": True})
            assert accepted["revision"] == review["to_revision"]


async def test_a_moved_cell_is_shown_moved_and_only_it(tmp_path: Path) -> None:
    """Statuses as the model's diff has them: one cell moved, the others unchanged."""
    write_notebook(tmp_path)
    async with serve(tmp_path, *ARGS, extensions=[apps_extension()]) as client:
        moved = [{"op": "move", "cell_id": "c2", "to_index": 0}]
        review = review_in(await client.call_tool("apply_edits", dry_run(moved)))
    assert [(row["cell_id"], row["status"]) for row in review["cells"]] == [
        ("c2", "moved"),
        ("c0", "unchanged"),
        ("c1", "unchanged"),
    ]
    # An unchanged cell is folded: its outputs are not carried.
    assert review["cells"][2]["before"]["outputs"] == []
