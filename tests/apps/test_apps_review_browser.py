"""The review app in Chromium, hosted by the official host bridge: a person accepts, or rejects.

The test page plays the host as in ``test_apps_browser.py`` (``AppBridge`` and
``PostMessageTransport`` of npm ``@modelcontextprotocol/ext-apps``, the ``ui://`` resource
in an iframe sandboxed with ``allow-scripts`` only), and passes the app's ``tools/call``
on to the real server through the official client, as a host does (``bridge.oncalltool``).
It hands the app the result of a real ``apply_edits`` dry run, and checks what a person
sees: each cell before and after, the lines removed and added, the removed cell's
output (hostile HTML in it runs nothing). Then the person clicks:

- **Accept**: the notebook on disk changes, to exactly the revision shown;
- **Reject**: the notebook on disk stays byte for byte as it was;
- **Accept** of a change whose notebook was edited since: the view says it was refused,
  and the file stays as the other edit left it.

``JUPYTER_MCP_SCREENSHOTS=DIR`` saves the page (``docs/images/app-review.png``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ok, serve
from node_tools import library
from test_apps import apps_extension
from test_apps_browser import EXT_APPS, HOSTILE_HTML, IMPORTS, host_server
from test_apps_review import ARGS, dry_run, write_notebook
from test_browser import browser, chromium_or_skip, screenshot

from jupyter_mcp_server._apps.reviews import REVIEW_URI
from jupyter_mcp_server._protocol.apps import APP_META_KEY

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

HOST_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>test host</title>
<script type="importmap">__IMPORTS__</script>
<style>body { margin: 0; font: 13px sans-serif; } iframe { border: 0; width: 100%; height: 760px; }</style>
</head><body>
<script type="module">
import { AppBridge, PostMessageTransport } from
  "/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-bridge.js";
window.ran = [];        // anything a notebook's script managed to do
window.called = [];     // the tools the app called, through this host
window.modelContext = [];  // what the app told the model
window.addEventListener("message", (event) => {
  if (event.data && event.data.pwned) window.ran.push(event.data.pwned);
});
window.showApp = async (html, args, result) => {
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  document.body.appendChild(iframe);
  const bridge = new AppBridge(
    null, { name: "test-host", version: "1.0.0" }, { openLinks: {}, serverTools: {}, updateModelContext: { text: {} } });
  bridge.onupdatemodelcontext = async (params) => { window.modelContext.push(params); return {}; };
  // The host passes the app's tool calls on to the server (here: the test's official client).
  bridge.oncalltool = async (params) => {
    window.called.push(params.name);
    return await window.callTool(params);
  };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  return true;
};
window.hostReady = true;
</script></body></html>
"""


def write_host(root: Path, node_modules: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "node_modules").symlink_to(node_modules)
    imports = {name: f"/node_modules/{path}" for name, path in IMPORTS.items()}
    (root / "host.html").write_text(
        HOST_PAGE.replace("__IMPORTS__", json.dumps({"imports": imports}))
    )


def with_hostile_output(path: Path) -> None:
    """The cell the batch deletes shows a hostile HTML output in the review."""
    notebook = json.loads(path.read_text())
    notebook["cells"][1]["outputs"] = [
        {"output_type": "display_data", "data": {"text/html": HOSTILE_HTML}, "metadata": {}}
    ]
    path.write_text(json.dumps(notebook, indent=1))


async def test_a_person_reviews_a_batch_and_accept_lands_it_and_reject_leaves_it(
    tmp_path: Path,
) -> None:
    chromium = chromium_or_skip()
    _, bridge_package, _ = library(EXT_APPS)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = write_notebook(workspace)
    with_hostile_output(path)
    write_host(tmp_path / "host", bridge_package.parent.parent)

    async with serve(workspace, *ARGS, extensions=[apps_extension()]) as client:
        app = (await client.read_resource(REVIEW_URI)).contents[0].text

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(params["name"], params.get("arguments") or {})
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")

        async def previewed() -> tuple[dict[str, Any], dict[str, Any]]:
            result = await client.call_tool("apply_edits", dry_run())
            assert not result.is_error, result
            return dry_run(), result.model_dump(by_alias=True, exclude_none=True, mode="json")

        with host_server(tmp_path / "host") as url:
            async with browser(chromium) as chromium_browser:
                page = await chromium_browser.new_page(viewport={"width": 1000, "height": 780})
                problems: list[str] = []
                page.on("pageerror", lambda error: problems.append(str(error)))
                await page.expose_function("callTool", call_tool)
                await page.goto(f"{url}/host.html")
                await page.wait_for_function("window.hostReady === true", timeout=30_000)

                async def show(arguments: dict[str, Any], result: dict[str, Any]) -> Any:
                    await page.evaluate(
                        "document.querySelectorAll('iframe').forEach(f => f.remove())"
                    )
                    await page.evaluate(
                        "([html, args, result]) => window.showApp(html, args, result)",
                        [app, arguments, result],
                    )
                    frame = page.frame_locator("iframe")
                    await frame.locator(".review").wait_for(timeout=10_000)
                    return frame

                # What the person sees: each cell, before and after.
                arguments, result = await previewed()
                review = result["_meta"][APP_META_KEY]["reviews"][0]
                frame = await show(arguments, result)
                statuses = await frame.locator("section.cell").evaluate_all(
                    "cells => cells.map(c => [c.dataset.cellId, c.dataset.status])"
                )
                assert statuses == [
                    ["c0", "changed"],
                    ["c1", "removed"],
                    ["c2", "unchanged"],
                    ["n1", "added"],
                ]
                changed = frame.locator("section.cell[data-cell-id='c0']")
                assert await changed.locator(".before .line.del").all_inner_texts() == ["x0 = 0"]
                assert await changed.locator(".after .line.add").all_inner_texts() == [
                    "x0 = 100",
                    "print(x0)",
                ]
                removed = frame.locator("section.cell[data-cell-id='c1']")
                assert await removed.locator(".after.empty").count() == 1
                assert "hostile output" in await removed.locator(".before .html").inner_text()
                assert (
                    await frame.locator("#app")
                    .locator("script, iframe, svg, [onerror], [onload]")
                    .count()
                    == 0
                )
                added = frame.locator("section.cell[data-cell-id='n1']")
                assert await added.locator(".before.empty").count() == 1
                assert await added.locator(".after .line.add").all_inner_texts() == ["# the end"]
                await screenshot(page, "app-review.png")

                # Accept: the notebook on disk becomes exactly the revision shown.
                await frame.locator("button.accept").click()
                await frame.locator(".review[data-decided='accepted']").wait_for(timeout=20_000)
                outcome = await frame.locator(".outcome").inner_text()
                assert outcome.startswith("Accepted:"), outcome
                on_disk = json.loads(path.read_text())
                assert [cell["id"] for cell in on_disk["cells"]] == ["c0", "c2", "n1"]
                revision = await ok(client, "get_notebook_revision", {"notebook_name": "a.ipynb"})
                assert revision["revision"] == review["to_revision"]
                assert await frame.locator("button.accept").is_disabled()
                # The model is told, for its next turn, what the person decided.
                await page.wait_for_function("window.modelContext.length === 1", timeout=10_000)
                (told,) = await page.evaluate("window.modelContext")
                assert "Accepted:" in told["content"][0]["text"]
                assert review["to_revision"] in told["content"][0]["text"]

                # Reject: the notebook on disk stays byte for byte.
                more = [{"op": "overwrite", "cell_id": "c2", "source": "x2 = 'rejected'"}]
                before = path.read_bytes()
                result = (await client.call_tool("apply_edits", dry_run(more))).model_dump(
                    by_alias=True, exclude_none=True, mode="json"
                )
                frame = await show(dry_run(more), result)
                await frame.locator("button.reject").click()
                await frame.locator(".review[data-decided='rejected']").wait_for(timeout=20_000)
                assert path.read_bytes() == before
                await page.wait_for_function("window.modelContext.length === 2", timeout=10_000)
                told = (await page.evaluate("window.modelContext"))[1]
                assert "Rejected: nothing was written" in told["content"][0]["text"]

                # Accept after the file changed: refused in the view, the file as the other left it.
                result = (await client.call_tool("apply_edits", dry_run(more))).model_dump(
                    by_alias=True, exclude_none=True, mode="json"
                )
                frame = await show(dry_run(more), result)
                elsewhere = json.loads(path.read_text())
                elsewhere["cells"][0]["source"] = "x0 = 'edited elsewhere'"
                path.write_text(json.dumps(elsewhere, indent=1))
                edited = path.read_bytes()
                await frame.locator("button.accept").click()
                await frame.locator(".review[data-decided='refused']").wait_for(timeout=20_000)
                said = await frame.locator(".outcome.refused").inner_text()
                assert "changed since the review was shown" in said, said
                assert path.read_bytes() == edited

                assert await page.evaluate("window.called") == ["review_change"] * 3
                assert await page.evaluate("window.ran") == [], "a notebook's script ran"
                assert problems == [], problems
