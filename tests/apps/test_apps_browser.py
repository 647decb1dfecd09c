"""The output app in Chromium, hosted by the official host bridge, fed real tool results.

A test page plays the host: it loads ``AppBridge`` and ``PostMessageTransport`` from npm
``@modelcontextprotocol/ext-apps`` (installed once by ``node_tools.library``, served to the
page from a loopback HTTP server), puts the server's ``ui://`` resource into an iframe
sandboxed with ``allow-scripts`` only, and hands it the result the real server answered to
the official client. The checks read what a person sees in the frame:

- a DataFrame's rows, in a scrollable table a header click sorts;
- a matplotlib figure, an image that decoded;
- a traceback and a coloured print in the kernel's colours (SGR codes);
- a hostile output (``<script>``, ``onerror=``, a ``javascript:`` link) runs nothing: any
  script of it that ran would post a message to the host, and none arrives, even after the
  link is clicked.

Skipped, saying why, where Chromium, Playwright, pandas, matplotlib or Node is missing.
``JUPYTER_MCP_SCREENSHOTS=DIR`` saves the page (``docs/images/app-outputs.png``).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import ok
from node_tools import library
from test_apps import client_of
from test_browser import browser, chromium_or_skip, screenshot

from jupyter_mcp_server._protocol.apps import OUTPUTS_URI

EXT_APPS = "@modelcontextprotocol/ext-apps@2.0.4"
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

#: Bare module names of the bridge and its dependencies, as files under node_modules/.
IMPORTS = {
    "@modelcontextprotocol/client": "@modelcontextprotocol/client/dist/index.mjs",
    "@modelcontextprotocol/client/_shims": "@modelcontextprotocol/client/dist/shimsBrowser.mjs",
    "@modelcontextprotocol/core": "@modelcontextprotocol/core/dist/index.mjs",
    "@modelcontextprotocol/core/internal": "@modelcontextprotocol/core/dist/internal.mjs",
    "zod/v4": "zod/v4/index.js",
    "eventsource": "eventsource/dist/index.js",
    "eventsource-parser": "eventsource-parser/dist/index.js",
    "eventsource-parser/stream": "eventsource-parser/dist/stream.js",
    "pkce-challenge": "pkce-challenge/dist/index.browser.js",
    "jose": "jose/dist/webapi/index.js",
}

HOST_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>test host</title>
<script type="importmap">__IMPORTS__</script>
<style>body { margin: 0; font: 13px sans-serif; } iframe { border: 0; width: 100%; height: 700px; }</style>
</head><body>
<script type="module">
import { AppBridge, PostMessageTransport } from
  "/node_modules/@modelcontextprotocol/ext-apps/dist/src/app-bridge.js";
window.ran = [];        // anything a notebook's script managed to do
window.openedLinks = [];
window.addEventListener("message", (event) => {
  if (event.data && event.data.pwned) window.ran.push(event.data.pwned);
});
window.showApp = async (html, args, result) => {
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  document.body.appendChild(iframe);
  const bridge = new AppBridge(null, { name: "test-host", version: "1.0.0" }, { openLinks: {} });
  bridge.onopenlink = async ({ url }) => { window.openedLinks.push(url); return {}; };
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

HOSTILE_HTML = (
    "<p id='hostile'>hostile output</p>"
    "<script>parent.postMessage({pwned: 'script'}, '*')</script>"
    "<img src='x' onerror=\"parent.postMessage({pwned: 'onerror'}, '*')\">"
    "<a id='js-link' href=\"javascript:parent.postMessage({pwned: 'link'}, '*')\">click me</a>"
    "<svg onload=\"parent.postMessage({pwned: 'svg'}, '*')\"></svg>"
    "<iframe srcdoc=\"<script>parent.parent.postMessage({pwned: 'frame'}, '*')</script>\"></iframe>"
)

CELLS = {
    "frame": (
        "import pandas as pd\n"
        "pd.DataFrame({'city': ['Lyon', 'Nantes', 'Brest'], 'people': [522, 320, 139]})"
    ),
    "figure": (
        "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 3, 2], color='tab:orange'); plt.title('a figure'); plt.show()"
    ),
    "hostile": f"from IPython.display import HTML, display\ndisplay(HTML({HOSTILE_HTML!r}))",
}

#: A coloured print (a word split by a colour change) and an error, as test_colours.py runs.
COLOURED_CELL = (
    "print('\\x1b[31mred\\x1b[0m and \\x1b[1;34mbl\\x1b[0m\\x1b[34mue\\x1b[0m words')\n"
    "def f():\n    return 1 / 0\nf()"
)


@contextlib.contextmanager
def host_server(root: Path) -> Iterator[str]:
    """A loopback HTTP server for the test page and node_modules; yields its URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
    }

    def log_message(self, format: str, *args: Any) -> None:
        pass


def write_host(root: Path, node_modules: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "node_modules").symlink_to(node_modules)
    imports = {name: f"/node_modules/{path}" for name, path in IMPORTS.items()}
    page = HOST_PAGE.replace("__IMPORTS__", json.dumps({"imports": imports}))
    (root / "host.html").write_text(page)


async def test_the_output_app_shows_a_dataframe_and_a_figure_and_runs_no_notebook_script(
    tmp_path: Path,
) -> None:
    chromium = chromium_or_skip()
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    _, bridge, _ = library(EXT_APPS)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    results: dict[str, Any] = {}
    async with client_of(workspace, "legacy", True) as client:
        app = (await client.read_resource(OUTPUTS_URI)).contents[0].text
        await ok(client, "use_notebook", {"notebook_name": "shown.ipynb", "mode": "create"})
        for name, source in CELLS.items():
            arguments = {"cell_index": -1, "cell_source": source}
            result = await client.call_tool("insert_execute_code_cell", arguments)
            assert not result.is_error, result
            results[name] = (
                arguments,
                result.model_dump(by_alias=True, exclude_none=True, mode="json"),
            )
    write_host(tmp_path / "host", bridge.parent.parent)

    with host_server(tmp_path / "host") as url:
        async with browser(chromium) as chromium_browser:
            page = await chromium_browser.new_page(viewport={"width": 900, "height": 720})
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(str(error)))
            await page.goto(f"{url}/host.html")
            await page.wait_for_function("window.hostReady === true", timeout=30_000)

            async def show(name: str) -> Any:
                await page.evaluate("document.querySelectorAll('iframe').forEach(f => f.remove())")
                arguments, result = results[name]
                await page.evaluate(
                    "([html, args, result]) => window.showApp(html, args, result)",
                    [app, arguments, result],
                )
                return page.frame_locator("iframe")

            # A DataFrame: its rows, in a table that scrolls and sorts.
            frame = await show("frame")
            table = frame.locator("table.dataframe")
            await table.wait_for(timeout=10_000)
            rows = await table.locator("tbody tr").all_inner_texts()
            assert [row.split("\t") for row in rows] == [
                ["0", "Lyon", "522"],
                ["1", "Nantes", "320"],
                ["2", "Brest", "139"],
            ]
            assert await frame.locator("pre.source").inner_text() == CELLS["frame"]
            assert await frame.locator(".scroll").count() == 1
            await table.locator("thead th", has_text="people").click()
            rows = await table.locator("tbody tr").all_inner_texts()
            assert [row.split("\t")[2] for row in rows] == ["139", "320", "522"]
            await screenshot(page, "app-dataframe.png")

            # A matplotlib figure: an image that decoded, shown at its size.
            frame = await show("figure")
            image = frame.locator("img[alt='image/png']")
            await image.wait_for(timeout=10_000)
            width = await image.evaluate("img => img.complete && img.naturalWidth")
            assert width and width > 100, "the figure did not decode"
            box = await image.bounding_box()
            assert box and box["height"] > 100
            await screenshot(page, "app-outputs.png")

            # A hostile output: shown as text, nothing of it runs, even clicked.
            frame = await show("hostile")
            await frame.locator("#app .html").wait_for(timeout=10_000)
            assert "hostile output" in await frame.locator("#app .html").inner_text()
            link = frame.locator("a", has_text="click me")
            assert await link.get_attribute("href") is None
            await link.click()
            await page.wait_for_timeout(500)
            assert await page.evaluate("window.ran") == [], "a notebook's script ran"
            assert await page.evaluate("window.openedLinks") == []
            assert (
                await frame.locator("#app")
                .locator("script, iframe, svg, [onerror], [onload]")
                .count()
                == 0
            )
            assert problems == [], problems


async def test_the_output_app_colours_a_traceback_and_a_coloured_print_as_jupyterlab_does(
    tmp_path: Path,
) -> None:
    """The kernel's colours reach the person (the notebook and the app's ``_meta`` keep them)
    while the model's text has none: the traceback's exception name is red, as IPython
    coloured it, and a printed word is blue."""
    chromium = chromium_or_skip()
    _, bridge, _ = library(EXT_APPS)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    source = COLOURED_CELL
    async with client_of(workspace, "legacy", True) as client:
        app = (await client.read_resource(OUTPUTS_URI)).contents[0].text
        await ok(client, "use_notebook", {"notebook_name": "colours.ipynb", "mode": "create"})
        arguments = {"cell_index": -1, "cell_source": source}
        ran = await client.call_tool("insert_execute_code_cell", arguments)
        assert ran.is_error, ran
        result = ran.model_dump(by_alias=True, exclude_none=True, mode="json")
    model_side = json.dumps({key: result[key] for key in ("content", "structuredContent")})
    assert "\\u001b" not in model_side, "the model's text carries colour codes"
    assert "\\u001b[31mZeroDivisionError" in json.dumps(result["_meta"]), "the app's copy lost them"
    write_host(tmp_path / "host", bridge.parent.parent)

    with host_server(tmp_path / "host") as url:
        async with browser(chromium) as chromium_browser:
            page = await chromium_browser.new_page(viewport={"width": 900, "height": 720})
            problems: list[str] = []
            page.on("pageerror", lambda error: problems.append(str(error)))
            await page.goto(f"{url}/host.html")
            await page.wait_for_function("window.hostReady === true", timeout=30_000)
            await page.evaluate(
                "([html, args, result]) => window.showApp(html, args, result)",
                [app, arguments, result],
            )
            frame = page.frame_locator("iframe")
            error = frame.locator(".output.error pre")
            await error.wait_for(timeout=10_000)
            text = await error.inner_text()
            assert "\x1b" not in text, text
            assert text.rstrip().endswith("ZeroDivisionError: division by zero"), text

            async def colours(locator: Any, word: str) -> list[str]:
                spans = locator.locator("span", has_text=word)
                return [
                    await spans.nth(i).evaluate("span => getComputedStyle(span).color")
                    for i in range(await spans.count())
                ]

            # IPython's red (SGR 31) on the exception's name, in the header and the last line.
            assert set(await colours(error, "ZeroDivisionError")) == {"rgb(205, 49, 49)"}
            stream = frame.locator(".output.stream pre")
            assert await stream.inner_text() == "red and blue words\n"
            assert await colours(stream, "red") == ["rgb(205, 49, 49)"]
            # "bl" bold blue and "ue" blue: one word in two spans, both blue (SGR 34).
            assert await colours(stream, "bl") == ["rgb(36, 114, 200)"]
            assert await colours(stream, "ue") == ["rgb(36, 114, 200)"]
            await screenshot(page, "app-colours.png")
            assert problems == [], problems
