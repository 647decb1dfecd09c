"""A detached run in the output app, in Chromium, hosted by the official host bridge.

The test page plays the host as in ``test_apps_review_browser.py`` (``AppBridge`` and
``PostMessageTransport`` of npm ``@modelcontextprotocol/ext-apps``, the ``ui://`` resource
in an iframe sandboxed with ``allow-scripts`` only, the app's ``tools/call`` passed on to
the real server through the official client, as a host does). The agent starts a real
``run_cells`` with ``detach=true`` on a notebook whose cells sleep and print; the page is
handed that answer, and the checks read what a person sees while the run goes on: the
progress advancing (cells done of the run's cells, the cell running now), and each cell's
output appearing before the run has ended; then the final state. A second run, of long
cells, is stopped with the page's **Cancel** (``cancel_run`` through the same bridge).

``JUPYTER_MCP_SCREENSHOTS=DIR`` saves the page mid-run (``docs/images/app-run.png``) and
ended (``docs/images/app-run-ended.png``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import ok, serve
from node_tools import library
from test_apps import apps_extension
from test_apps_browser import EXT_APPS, host_server
from test_apps_review_browser import write_host
from test_apps_runs import ARGS, write_notebook
from test_browser import browser, chromium_or_skip, screenshot

from jupyter_mcp_server._protocol.apps import OUTPUTS_URI

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CELLS = 5


async def test_a_person_watches_a_detached_run_cell_by_cell_and_cancels_another(
    tmp_path: Path,
) -> None:
    chromium = chromium_or_skip()
    _, bridge_package, _ = library(EXT_APPS)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    write_notebook(workspace, cells=CELLS, seconds=1.5)
    write_host(tmp_path / "host", bridge_package.parent.parent)

    async with serve(workspace, *ARGS, extensions=[apps_extension()]) as client:
        app = (await client.read_resource(OUTPUTS_URI)).contents[0].text

        # While `holding` is set, the page's watch_run calls wait for `released`: a host slow
        # to pass a call on, so that a poll is out when the person presses Cancel.
        holding, held, released = asyncio.Event(), asyncio.Event(), asyncio.Event()
        cancel_answered = asyncio.Event()
        watched_since: list[int] = []

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            if params["name"] == "watch_run" and holding.is_set():
                watched_since.append(params["arguments"]["since_cell"])
                held.set()
                await released.wait()
            result = await client.call_tool(params["name"], params.get("arguments") or {})
            if params["name"] == "cancel_run":
                cancel_answered.set()
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")

        async def detached_run() -> tuple[dict[str, Any], dict[str, Any]]:
            arguments = {"notebook_name": "steps.ipynb", "detach": True}
            started = await client.call_tool("run_cells", arguments)
            assert not started.is_error, started
            return arguments, started.model_dump(by_alias=True, exclude_none=True, mode="json")

        with host_server(tmp_path / "host") as url:
            async with browser(chromium) as chromium_browser:
                page = await chromium_browser.new_page(viewport={"width": 900, "height": 780})
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
                    await frame.locator("section.run").wait_for(timeout=10_000)
                    return frame

                arguments, result = await detached_run()
                run_id = result["structuredContent"]["run_id"]
                frame = await show(arguments, result)
                run = frame.locator("section.run")
                assert await run.get_attribute("data-run-id") == run_id
                assert "run_cells" in await run.locator(".what").inner_text()

                # While it runs: the cell running now, then each cell as it ends, its output
                # there before the run has ended.
                running = frame.locator(".now section.cell.running")
                await running.wait_for(timeout=60_000)
                assert "time.sleep(1.5)" in await running.locator(".source").inner_text()
                await frame.locator("section.run[data-done='2'][data-status='working']").wait_for(
                    timeout=60_000
                )
                # One look at the page, all at once (the next cell may end any moment): the
                # cells shown so far, their count and the bar agree, and the run is not over.
                seen = await run.evaluate(
                    """run => ({
                        done: Number(run.dataset.done),
                        status: run.dataset.status,
                        count: run.querySelector('.count').innerText,
                        state: run.querySelector('.state').innerText,
                        ids: [...run.querySelectorAll('.cells section.cell')].map(c => c.dataset.cellId),
                        bar: [run.querySelector('progress').value, run.querySelector('progress').max],
                        second: run.querySelectorAll('.cells section.cell')[1]
                            .querySelector('.output').innerText,
                    })"""
                )
                done_so_far = seen["done"]
                assert 2 <= done_so_far < CELLS, seen
                assert seen["status"] == "working" and seen["state"] == "running", seen
                assert seen["ids"] == [f"step{i}" for i in range(done_so_far)], seen
                assert seen["count"] == f"{done_so_far} of {CELLS} cells", seen
                assert seen["bar"] == [done_so_far, CELLS], seen
                assert "cell 1 done" in seen["second"], seen
                done = run.locator(".cells section.cell")
                state = await ok(client, "get_run", {"run_id": run_id})
                assert state["status"] == "working", "the page showed cells only at the end"
                await screenshot(page, "app-run.png")

                # The end: every cell with its output, the run ok, nothing running, no Cancel.
                await frame.locator("section.run[data-status='ok']").wait_for(timeout=90_000)
                ids = await done.evaluate_all("cells => cells.map(c => c.dataset.cellId)")
                assert ids == [f"step{i}" for i in range(CELLS)]
                for i in range(CELLS):
                    assert f"cell {i} done" in await done.nth(i).locator(".output").inner_text()
                    assert await done.nth(i).locator(".prompt").inner_text() == f"[{i + 1}]:"
                assert await run.locator(".count").inner_text() == f"{CELLS} of {CELLS} cells"
                assert await run.locator(".state").inner_text() == "ok"
                assert await frame.locator(".now section.cell").count() == 0
                assert await run.locator("button.cancel").count() == 0
                assert f"Ran {CELLS} of {CELLS}" in await run.locator(".said").inner_text()
                await screenshot(page, "app-run-ended.png")
                # It stopped following the run once it ended.
                called = await page.evaluate("window.called")
                await page.wait_for_timeout(2_500)
                assert await page.evaluate("window.called") == called
                assert set(called) == {"watch_run"}

                # A run of long cells: the person presses Cancel.
                write_notebook(workspace, cells=3, seconds=60)
                arguments, result = await detached_run()
                frame = await show(arguments, result)
                run = frame.locator("section.run")
                await frame.locator(".now section.cell.running").wait_for(timeout=60_000)
                # Cancel pressed while the page's poll is out: the poll's answer and the one
                # after the Cancel both carry the interrupted cell, which is shown once.
                holding.set()
                await asyncio.wait_for(held.wait(), 30)
                await run.locator("button.cancel").click()
                await asyncio.wait_for(cancel_answered.wait(), 30)
                await page.wait_for_timeout(500)  # the page's turn to act on the answer
                holding.clear()
                released.set()
                await frame.locator("section.run[data-status='cancelled']").wait_for(timeout=60_000)
                assert await run.locator(".state").inner_text() == "cancelled"
                stopped = run.locator(".cells section.cell")
                assert await stopped.count() == 1
                # One poll out at a time: the page asked for each since_cell once.
                assert len(set(watched_since)) == len(watched_since), watched_since
                assert await stopped.get_attribute("data-status") == "interrupted"
                assert "KeyboardInterrupt" in await stopped.locator(".output").inner_text()
                assert "cancel_run" in await page.evaluate("window.called")
                assert problems == [], problems
