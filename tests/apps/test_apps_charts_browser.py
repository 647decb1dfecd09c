"""Charts in the output app, in Chromium: Vega-Lite and Plotly drawn by their own libraries.

The host is ``test_apps_browser``'s: the official ``AppBridge`` of
``@modelcontextprotocol/ext-apps`` puts the server's ``ui://jupyter-mcp/outputs`` into an
iframe sandboxed with ``allow-scripts`` only, under the page's own CSP, and hands it the
result the real server answered for a real kernel cell. What a person sees is read from
the frame's DOM:

- a Vega-Lite bar chart (with a ``calculate`` transform, so Vega's expressions run, in its
  interpreter: the policy has no ``'unsafe-eval'``, and the frame refuses ``Function``):
  one ``.mark-rect`` path per data row, axis labels from the data, a tooltip on hover;
- a Vega-Lite spec under Altair 4's MIME type, and a Vega spec with a signal: their marks;
- a Plotly figure of a bar and a scatter trace: one bar path and one marker per point, and
  Plotly's hover label on hover;
- hostile specs: a Vega-Lite chart whose data is a URL of a server the test runs, with
  ``usermeta.embedOptions`` asking for the export menu, and a Plotly figure with a layout
  image from that server: no request reaches it, the view says what it did not load, and
  no menu is shown; markup in a chart's data is text in its tooltip, and a ``javascript:``
  link in a Plotly title is dropped: nothing of them runs, clicked or hovered;
- a Vega-Lite mark's link (``href``): clicked, the host is asked to open it;
- what cannot be drawn here, under a note, shows the output's other representation: a
  Plotly trace type the basic bundle has not, and inline CSV (d3-dsv inside vega compiles
  its row reader with ``Function``: the policy refuses it, and the frame records the
  refusal, ``script-src eval``).

Skipped, saying why, where Chromium, Playwright or Node is missing.
``JUPYTER_MCP_SCREENSHOTS=DIR`` saves ``app-vegalite.png`` and ``app-plotly.png``.
"""

from __future__ import annotations

import contextlib
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
from test_apps_browser import EXT_APPS, host_server, write_host
from test_browser import browser, chromium_or_skip, screenshot

from jupyter_mcp_server._protocol.apps import OUTPUTS_URI
from jupyter_mcp_server._rendering.chart_text import chart_text

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CITIES = [("Lyon", 522), ("Nantes", 320), ("Brest", 139), ("Dijon", 156)]

VEGALITE = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "title": "people by city",
    "data": {"values": [{"city": city, "people": people} for city, people in CITIES]},
    # An expression: Vega evaluates it, here in its interpreter.
    "transform": [{"calculate": "datum.people * 1000", "as": "inhabitants"}],
    "mark": "bar",
    "width": 360,
    "encoding": {
        "x": {"field": "city", "type": "nominal", "sort": None},
        "y": {"field": "inhabitants", "type": "quantitative"},
        "tooltip": [{"field": "city"}, {"field": "inhabitants"}],
    },
}

PLOTLY = {
    "data": [
        {"type": "bar", "name": "people", "x": ["Lyon", "Nantes", "Brest"], "y": [522, 320, 139]},
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "trend",
            "x": ["Lyon", "Nantes", "Brest"],
            "y": [500, 300, 150],
        },
    ],
    "layout": {"title": {"text": "a Plotly figure"}, "width": 640, "height": 360},
}


def display_cell(mime: str, spec: dict[str, Any], plain: str) -> str:
    """A cell displaying `spec` under `mime` as altair or plotly would (neither needed)."""
    return (
        f"from IPython.display import display\nspec = {spec!r}\n"
        f"display({{{mime!r}: spec, 'text/plain': {plain!r}}}, raw=True)"
    )


#: Markup in a chart's data: text in a tooltip, never an element.
HOSTILE_TEXT = "<img src=x onerror=\"parent.postMessage({pwned: 'tooltip'}, '*')\">"


def hostile_cells(url: str) -> dict[str, str]:
    linked = {
        "data": {"values": [{"city": "Lyon", "people": 522, "note": HOSTILE_TEXT}]},
        "mark": "bar",
        "encoding": {
            "x": {"field": "city", "type": "nominal"},
            "y": {"field": "people", "type": "quantitative"},
            "href": {"value": f"{url}/clicked"},
            "tooltip": [{"field": "note"}],
        },
    }
    vegalite = {
        "data": {"url": f"{url}/data.json"},
        "mark": "point",
        "encoding": {"x": {"field": "people", "type": "quantitative"}},
        "usermeta": {"embedOptions": {"actions": True, "loader": {"baseURL": url}}},
    }
    plotly = {
        "data": [{"type": "bar", "x": ["a", "b"], "y": [1, 2]}],
        "layout": {
            "title": {
                "text": "<a href=\"javascript:parent.postMessage({pwned: 'title'}, '*')\">t</a>"
            },
            "images": [
                {
                    "source": f"{url}/image.png",
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0,
                    "y": 1,
                    "sizex": 0.5,
                    "sizey": 0.5,
                }
            ],
        },
    }
    return {
        "linked-vega": display_cell(
            "application/vnd.vegalite.v5+json", linked, "<VegaLite 5 object>"
        ),
        "hostile-vega": display_cell(
            "application/vnd.vegalite.v5+json", vegalite, "<VegaLite 5 object>"
        ),
        "hostile-plotly": display_cell(
            "application/vnd.plotly.v1+json", plotly, "<a Plotly figure>"
        ),
    }


CELLS = {
    "vegalite": display_cell("application/vnd.vegalite.v5+json", VEGALITE, "<VegaLite 5 object>"),
    "plotly": display_cell("application/vnd.plotly.v1+json", PLOTLY, "Figure({...})"),
    # Altair 4's MIME type and schema, and a Vega spec: drawn by the same libraries.
    "vegalite-v4": display_cell(
        "application/vnd.vegalite.v4+json",
        {**VEGALITE, "$schema": "https://vega.github.io/schema/vega-lite/v4.json"},
        "<VegaLite 4 object>",
    ),
    "vega": display_cell(
        "application/vnd.vega.v5+json",
        {
            "$schema": "https://vega.github.io/schema/vega/v5.json",
            "width": 200,
            "height": 100,
            "data": [{"name": "table", "values": [{"x": 1}, {"x": 2}, {"x": 3}]}],
            "signals": [{"name": "size", "value": 10, "update": "width / 20"}],
            "marks": [
                {
                    "type": "rect",
                    "from": {"data": "table"},
                    "encode": {
                        "enter": {
                            "x": {"signal": "datum.x * 40"},
                            "width": {"signal": "size"},
                            "y": {"value": 0},
                            "height": {"value": 50},
                        }
                    },
                }
            ],
        },
        "<Vega 5 object>",
    ),
    # Inline CSV: d3-dsv (inside vega) compiles its row reader with Function, which the page's
    # policy refuses; the output's other representation is shown.
    "csv": display_cell(
        "application/vnd.vegalite.v5+json",
        {
            "data": {"values": "a,b\n1,2\n3,4\n", "format": {"type": "csv"}},
            "mark": "point",
            "encoding": {"x": {"field": "a", "type": "quantitative"}},
        },
        "a CSV chart, as text",
    ),
    "heatmap": display_cell(
        "application/vnd.plotly.v1+json",
        {"data": [{"type": "heatmap", "z": [[1, 2], [3, 4]]}]},
        "a heatmap, as text",
    ),
}


#: Run in every frame before its own scripts (by the browser, not the page): what its policy refused.
RECORD_VIOLATIONS = """
window.violations = [];
window.addEventListener("securitypolicyviolation", (event) =>
  window.violations.push(`${event.effectiveDirective} ${event.blockedURI}`));
"""
#: A script put into the frame: its policy must refuse it (and say so).
PLANTED = """async () => {
  const script = document.createElement("script");
  script.textContent = "window.planted = true";
  document.body.appendChild(script);
  await new Promise((resolve) => setTimeout(resolve, 200));
  return window.planted === undefined ? null : window.planted;
}"""


@contextlib.contextmanager
def recording_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback server that answers anything (with CORS, so only the app could refuse)
    and records each request's path."""
    requests: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        rows: ClassVar[bytes] = json.dumps([{"people": 1}, {"people": 2}]).encode()

        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(self.rows)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


async def test_the_output_app_draws_vega_lite_and_plotly_charts_and_loads_nothing_they_name(
    tmp_path: Path,
) -> None:
    chromium = chromium_or_skip()
    _, bridge, _ = library(EXT_APPS)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    results: dict[str, Any] = {}
    with recording_server() as (elsewhere, requests):
        cells = {**CELLS, **hostile_cells(elsewhere)}
        async with client_of(workspace, "legacy", True) as client:
            app = (await client.read_resource(OUTPUTS_URI)).contents[0].text
            await ok(client, "use_notebook", {"notebook_name": "charts.ipynb", "mode": "create"})
            for name, source in cells.items():
                arguments = {"cell_index": -1, "cell_source": source}
                result = await client.call_tool("insert_execute_code_cell", arguments)
                assert not result.is_error, result
                results[name] = (
                    arguments,
                    result.model_dump(by_alias=True, exclude_none=True, mode="json"),
                )
        # What the model reads of a chart is the chart's summary, as without apps.
        (model_text,) = [block["text"] for block in results["vegalite"][1]["content"]]
        summary = chart_text({"application/vnd.vegalite.v5+json": VEGALITE})
        assert summary and summary in model_text and "$schema" not in model_text, model_text
        write_host(tmp_path / "host", bridge.parent.parent)

        with host_server(tmp_path / "host") as url:
            async with browser(chromium) as chromium_browser:
                page = await chromium_browser.new_page(viewport={"width": 900, "height": 720})
                await page.add_init_script(RECORD_VIOLATIONS)
                problems: list[str] = []
                page.on("pageerror", lambda error: problems.append(str(error)))
                await page.goto(f"{url}/host.html")
                await page.wait_for_function("window.hostReady === true", timeout=30_000)

                async def show(name: str) -> Any:
                    await page.evaluate(
                        "document.querySelectorAll('iframe').forEach(f => f.remove())"
                    )
                    arguments, result = results[name]
                    await page.evaluate(
                        "([html, args, result]) => window.showApp(html, args, result)",
                        [app, arguments, result],
                    )
                    return page.frame_locator("iframe")

                async def globals_defined() -> dict[str, bool]:
                    """Which chart libraries ran in the app frame."""
                    (child,) = [f for f in page.frames if f != page.main_frame]
                    return await child.evaluate(
                        "() => Object.fromEntries(['vega', 'vegaEmbed', 'Plotly']"
                        ".map((name) => [name, name in window]))"
                    )

                async def violations() -> list[str]:
                    """What the app frame's policy refused so far."""
                    (child,) = [f for f in page.frames if f != page.main_frame]
                    return await child.evaluate("window.violations")

                # Vega-Lite: a bar per row, drawn as SVG, the labels from the data.
                frame = await show("vegalite")
                bars = frame.locator(".chart.vega svg .mark-rect path")
                await bars.first.wait_for(timeout=20_000)
                assert await bars.count() == len(CITIES)
                labels = await frame.locator(
                    ".chart.vega svg .role-axis-label text"
                ).all_text_contents()
                assert [city for city, _ in CITIES] == [x for x in labels if x.isalpha()]
                # The frame's policy held while Vega ran the chart's expression: nothing it
                # refused, and it does refuse (a script put in the frame does not run).
                assert await violations() == []
                # Vega's libraries ran, by their hashes; Plotly, not needed, did not.
                assert await globals_defined() == {"vega": True, "vegaEmbed": True, "Plotly": False}
                (child,) = [f for f in page.frames if f != page.main_frame]
                assert await child.evaluate(PLANTED) is None, "a planted script ran"
                assert await violations() == ["script-src-elem inline"]
                await bars.nth(0).hover()
                tooltip = frame.locator("#vg-tooltip-element")
                await tooltip.wait_for(state="visible", timeout=5_000)
                assert "522000" in (await tooltip.inner_text()).replace(",", "")
                await screenshot(page, "app-vegalite.png")

                # Plotly: a bar per point and a marker per point, and a hover label.
                frame = await show("plotly")
                plot = frame.locator(".chart.plotly")
                await plot.locator(".main-svg").first.wait_for(timeout=20_000)
                assert await plot.locator(".barlayer .point path").count() == 3
                assert await plot.locator(".scatterlayer .points path.point").count() == 3
                assert await plot.locator(".gtitle").text_content() == "a Plotly figure"
                box = await plot.locator(".barlayer .point path").first.bounding_box()
                assert box
                await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                await plot.locator(".hoverlayer .hovertext").first.wait_for(timeout=5_000)
                assert await violations() == []
                await screenshot(page, "app-plotly.png")

                # A trace type plotly.js-basic has not: the output's other representation.
                frame = await show("heatmap")
                await frame.locator(".chart .note").wait_for(timeout=10_000)
                assert "heatmap" in await frame.locator(".chart .note").inner_text()
                assert "a heatmap, as text" in await frame.locator(".chart pre").inner_text()
                # A view with no chart drawn ran no chart library.
                assert await globals_defined() == {
                    "vega": False,
                    "vegaEmbed": False,
                    "Plotly": False,
                }

                for name, rows in (("vegalite-v4", len(CITIES)), ("vega", 3)):
                    frame = await show(name)
                    marks = frame.locator(".chart.vega svg .mark-rect path")
                    await marks.first.wait_for(timeout=20_000)
                    assert await marks.count() == rows, name
                    assert await violations() == [], name

                # A mark's link is the host's to open: the bar clicked, the host asked.
                frame = await show("linked-vega")
                bar = frame.locator(".chart.vega svg .mark-rect path")
                await bar.first.wait_for(timeout=20_000)
                await bar.first.hover()
                tooltip = frame.locator("#vg-tooltip-element")
                await tooltip.wait_for(state="visible", timeout=5_000)
                assert HOSTILE_TEXT in await tooltip.inner_text()
                assert await tooltip.locator("img").count() == 0
                await bar.first.click()
                await page.wait_for_function("window.openedLinks.length > 0", timeout=5_000)
                assert await page.evaluate("window.openedLinks") == [f"{elsewhere}/clicked"]
                assert await violations() == []

                # Code from a string (d3-dsv's CSV reader): the policy refuses it, and says so.
                frame = await show("csv")
                await frame.locator(".chart .note").wait_for(timeout=10_000)
                assert "policy refuses" in await frame.locator(".chart .note").inner_text()
                assert "a CSV chart, as text" in await frame.locator(".chart pre").inner_text()
                assert await violations() == ["script-src eval"]

                # Hostile specs: nothing they name is fetched; the view says so.
                frame = await show("hostile-vega")
                said = frame.locator(".chart.vega .note")
                await said.wait_for(timeout=20_000)
                assert f"{elsewhere}/data.json" in await said.inner_text()
                assert await frame.locator(".vega-actions, details").count() == 0
                # Refused by the app itself, before its policy had anything to refuse.
                assert await violations() == []
                frame = await show("hostile-plotly")
                plot = frame.locator(".chart.plotly")
                await plot.locator(".barlayer .point path").first.wait_for(timeout=20_000)
                assert await plot.locator(".layer-above image, .layer-below image").count() == 0
                title = plot.locator(".gtitle")
                assert await title.text_content() == "t"
                # Plotly drops a javascript: link (its own rule); clicked, nothing runs.
                assert "javascript:" not in await title.inner_html()
                box = await title.bounding_box()
                assert box
                await page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                await page.wait_for_timeout(1_000)
                assert requests == [], f"the app fetched what a spec named: {requests}"
                assert await page.evaluate("window.ran") == [], "a spec's script ran"
                # Refused by the app itself, before its policy had anything to refuse.
                assert await violations() == []
                assert problems == [], problems
