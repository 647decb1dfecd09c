"""The notebook view in Chromium, hosted by the official host bridge: a person reads and runs.

The test page plays the host as in ``test_apps_review_browser.py`` (``AppBridge`` and
``PostMessageTransport`` of npm ``@modelcontextprotocol/ext-apps``, the ``ui://`` resource
in an iframe sandboxed with ``allow-scripts`` only, the app's ``tools/call`` passed on to
the real server through the official client, as a host does). The agent runs two cells of
a real notebook on a real kernel; the page is handed the result of its ``outline``, and the
checks read what a person sees: the outline's headings, the page's cells with their outputs
(a DataFrame's rows; a hostile HTML output that runs nothing), the agent's cell marked.
Then the person clicks **Run** on another cell: it runs on the notebook's kernel (it uses
the agent's variables), its output appears in the view and is in the file on disk. Next
and a heading open other pages through ``view_notebook``.

``JUPYTER_MCP_SCREENSHOTS=DIR`` saves the page (``docs/images/app-notebook.png``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ok, serve
from node_tools import library
from test_apps import apps_extension
from test_apps_browser import EXT_APPS, HOSTILE_HTML, host_server
from test_apps_review_browser import write_host
from test_browser import browser, chromium_or_skip, screenshot

from jupyter_mcp_server._protocol.apps import NOTEBOOK_URI

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

SOURCES = [
    ("markdown", "title", "# Sales report\nQuarterly sales by city."),
    ("markdown", "loading", "## Loading the data"),
    (
        "code",
        "load",
        "import pandas as pd\n"
        "sales = pd.DataFrame({'city': ['Lyon', 'Nantes', 'Brest'], 'sold': [522, 320, 139]})\n"
        "sales",
    ),
    ("code", "total", "total = int(sales['sold'].sum())\nprint('total sold:', total)"),
    ("markdown", "results", "## Results"),
    ("code", "hostile", "from IPython.display import HTML, display\ndisplay(HTML(page))"),
    ("code", "share", "print('Lyon share:', round(522 / total, 2))"),
    *(("code", f"more{i}", f"step{i} = {i}") for i in range(16)),
    ("markdown", "appendix", "## Appendix"),
    *(("code", f"late{i}", f"late{i} = {i}") for i in range(4)),
]


def write_notebook(workspace: Path) -> Path:
    cells = []
    for kind, cell_id, source in SOURCES:
        cell: dict[str, Any] = {"cell_type": kind, "id": cell_id, "metadata": {}, "source": source}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cells.append(cell)
    # An output stored earlier, as a notebook downloaded from somewhere may hold.
    cells[5]["outputs"] = [
        {"output_type": "display_data", "data": {"text/html": HOSTILE_HTML}, "metadata": {}}
    ]
    path = workspace / "sales.ipynb"
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


async def test_a_person_sees_the_notebook_and_the_agents_cell_and_runs_a_cell_from_the_view(
    tmp_path: Path,
) -> None:
    chromium = chromium_or_skip()
    pytest.importorskip("pandas")
    _, bridge_package, _ = library(EXT_APPS)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = write_notebook(workspace)
    write_host(tmp_path / "host", bridge_package.parent.parent)

    async with serve(
        workspace, "--capability", "kernel.prestart=off", extensions=[apps_extension()]
    ) as client:
        app = (await client.read_resource(NOTEBOOK_URI)).contents[0].text

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(params["name"], params.get("arguments") or {})
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")

        # The agent at work: it loads the data and sums it, on the notebook's kernel.
        for cell_id in ("load", "total"):
            await ok(client, "execute_cell", {"notebook_name": "sales.ipynb", "cell_id": cell_id})
        arguments = {"notebook_name": "sales.ipynb"}
        outlined = await client.call_tool("outline", arguments)
        assert not outlined.is_error, outlined
        result = outlined.model_dump(by_alias=True, exclude_none=True, mode="json")

        with host_server(tmp_path / "host") as url:
            async with browser(chromium) as chromium_browser:
                page = await chromium_browser.new_page(viewport={"width": 1000, "height": 780})
                problems: list[str] = []
                page.on("pageerror", lambda error: problems.append(str(error)))
                await page.expose_function("callTool", call_tool)
                await page.goto(f"{url}/host.html")
                await page.wait_for_function("window.hostReady === true", timeout=30_000)
                await page.evaluate(
                    "([html, args, result]) => window.showApp(html, args, result)",
                    [app, arguments, result],
                )
                frame = page.frame_locator("iframe")
                view = frame.locator(".nb")
                await view.wait_for(timeout=10_000)

                # The outline: every heading, indented by level.
                assert await frame.locator(".toc button.heading").all_inner_texts() == [
                    "Sales report",
                    "Loading the data",
                    "Results",
                    "Appendix",
                ]
                # The first page of cells, in order, with their outputs.
                ids = await frame.locator("section.cell").evaluate_all(
                    "cells => cells.map(c => c.dataset.cellId)"
                )
                assert ids == [cell_id for _, cell_id, _ in SOURCES[:20]]
                load = frame.locator("section.cell[data-cell-id='load']")
                rows = await load.locator("table.dataframe tbody tr").all_inner_texts()
                assert [row.split("\t") for row in rows] == [
                    ["0", "Lyon", "522"],
                    ["1", "Nantes", "320"],
                    ["2", "Brest", "139"],
                ]
                assert await load.locator(".prompt").inner_text() == "[1]:"
                total = frame.locator("section.cell[data-cell-id='total']")
                assert "total sold: 981" in await total.locator(".output").inner_text()
                # The agent's cell: the last one it ran, marked, and only it.
                working = frame.locator("section.cell.working")
                assert await working.count() == 1
                assert await working.get_attribute("data-cell-id") == "total"
                assert await working.locator(".badge").inner_text() == "agent \u00b7 ran"
                # A hostile output stored in the notebook runs nothing.
                hostile = frame.locator("section.cell[data-cell-id='hostile']")
                assert "hostile output" in await hostile.locator(".html").inner_text()
                assert (
                    await frame.locator("#app")
                    .locator("script, iframe, svg, [onerror], [onload]")
                    .count()
                    == 0
                )
                # Markdown as text, its headings as headings: none of it is HTML.
                title = frame.locator("section.cell[data-cell-id='title'] .md")
                assert await title.locator("h1").inner_text() == "Sales report"
                assert await title.locator("p").inner_text() == "Quarterly sales by city."
                await screenshot(page, "app-notebook.png")

                # The person presses Run on a cell: the notebook's kernel runs it.
                share = frame.locator("section.cell[data-cell-id='share']")
                assert await share.locator(".output").count() == 0
                assert await share.locator(".head .state-never_run").inner_text() == "never run"
                await share.locator("button.run").click()
                await frame.locator("section.cell[data-cell-id='share'][data-ran='ok']").wait_for(
                    timeout=60_000
                )
                assert "Lyon share: 0.53" in await share.locator(".output").inner_text()
                assert await share.locator(".prompt").inner_text() == "[3]:"
                # It was "never run"; now the kernel holds it.
                assert await share.locator(".head [class^='state-']").count() == 0
                on_disk = next(
                    c for c in json.loads(path.read_text())["cells"] if c["id"] == "share"
                )
                assert "".join(on_disk["outputs"][0]["text"]) == "Lyon share: 0.53\n"
                assert on_disk["execution_count"] == 3
                revision = await ok(
                    client, "get_notebook_revision", {"notebook_name": "sales.ipynb"}
                )
                assert revision["revision"] in await frame.locator(".nb-head .meta").inner_text()
                await screenshot(page, "app-notebook-ran.png")

                # Next: the second page, read through the view's own tool.
                await frame.locator(".pager button.next").click()
                await frame.locator(".nb[data-start='20']").wait_for(timeout=10_000)
                ids = await frame.locator("section.cell").evaluate_all(
                    "cells => cells.map(c => c.dataset.cellId)"
                )
                assert ids == [cell_id for _, cell_id, _ in SOURCES[20:]]
                # The agent's cell is on the first page: the header links to it.
                await frame.locator(".nb-head button.to-agent").click()
                await frame.locator(".nb[data-start='0']").wait_for(timeout=10_000)
                assert await frame.locator("section.cell.working").count() == 1
                # A heading opens the page that holds it.
                await frame.locator(".toc button.heading", has_text="Appendix").click()
                await frame.locator(".nb[data-start='20']").wait_for(timeout=10_000)

                assert await page.evaluate("window.called") == [
                    "run_cell_from_view",
                    "view_notebook",
                    "view_notebook",
                    "view_notebook",
                ]
                assert await page.evaluate("window.ran") == [], "a notebook's script ran"
                assert problems == [], problems
