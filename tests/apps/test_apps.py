"""MCP Apps (``io.modelcontextprotocol/ui``) over stdio, with the official client, on both generations.

A client declares the extension (``Client(extensions=[advertise(...)])`` with the app MIME
type); the server then links the execution tools to its output app in ``tools/list``, lists
the app, and hands the app each execution's source and outputs whole in the result's
``_meta``. A client that does not declare it gets every listing and result byte for byte as
the same calls give without it. What the person sees is checked in a real browser in
``test_apps_browser.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import REPO, ok, server_command, server_environment
from mcp import Client, StdioServerParameters
from mcp.client.extension import advertise
from test_tools_notebooks import TOOLS_LIST_BUDGET

from jupyter_mcp_server._apps.chart_bundle import chart_libraries
from jupyter_mcp_server._protocol.apps import APP_META_KEY, OUTPUT_TOOLS, OUTPUTS_URI

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
APP_MIME = "text/html;profile=mcp-app"
#: An app's own bytes (the review app's; the output app's without the chart libraries).
APP_SIZE_BUDGET = 48 * 1024
#: The output app's whole document, the chart libraries inlined (docs/apps.md, "Charts").
OUTPUT_APP_BUDGET = 2560 * 1024
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

DATAFRAME_HTML = (
    '<table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th>'
    "<th>city</th><th>people</th></tr></thead><tbody>"
    "<tr><th>0</th><td>Lyon</td><td>522</td></tr>"
    "<tr><th>1</th><td>Nantes</td><td>320</td></tr></tbody></table>"
)


#: A chart the app draws; the model reads its summary, as without apps.
CHART_SPEC = {
    "data": {"values": [{"city": "Lyon", "people": 522}, {"city": "Brest", "people": 139}]},
    "mark": "bar",
    "encoding": {"x": {"field": "city", "type": "nominal"}, "y": {"field": "people"}},
}


def apps_extension() -> Any:
    return advertise("io.modelcontextprotocol/ui", {"mimeTypes": [APP_MIME]})


def write_notebook(folder: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from IPython.display import HTML, display\n"
            f"display(HTML({DATAFRAME_HTML!r}))\nprint('done')",
            id="table",
        ),
        nbformat.v4.new_code_cell("1 / 0", id="fails"),
        nbformat.v4.new_code_cell(
            "from IPython.display import display\n"
            f"display({{'application/vnd.vegalite.v5+json': {CHART_SPEC!r}, "
            "'text/plain': '<VegaLite 5 object>'}, raw=True)",
            id="chart",
        ),
    ]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / "shown.ipynb")


@contextlib.asynccontextmanager
async def client_of(folder: Path, mode: str, apps: bool) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=server_command(folder)[1:],
        env=server_environment(),
        cwd=str(folder),
    )
    extensions = [apps_extension()] if apps else None
    async with Client(params, mode=mode, extensions=extensions) as client:
        yield client


def wire(model: Any) -> dict[str, Any]:
    """What was sent, as JSON."""
    return json.loads(model.model_dump_json(by_alias=True, exclude_none=True))


async def the_same_calls(client: Client) -> dict[str, Any]:
    """A listing and each output tool called, serialized."""
    said: dict[str, Any] = {
        "tools": wire(await client.list_tools()),
        "resources": wire(await client.list_resources()),
    }
    await ok(client, "use_notebook", {"notebook_name": "shown.ipynb"})
    for name, arguments in (
        ("execute_cell", {"cell_id": "table"}),
        ("execute_cell", {"cell_id": "fails"}),
        ("execute_cell", {"cell_id": "chart"}),
        ("execute_code", {"code": "print('scratch')"}),
        ("insert_execute_code_cell", {"cell_index": -1, "cell_source": "2 + 2"}),
    ):
        result = wire(await client.call_tool(name, arguments))
        said[f"{name} {arguments}"] = result
    return said


def app_only(tool: dict[str, Any]) -> bool:
    """Whether a listed tool (as sent) is visible to its app alone: a host keeps it from the model."""
    ui = (tool.get("_meta") or {}).get("ui") or {}
    return "model" not in (ui.get("visibility") or ["model"])


def model_part(listing: Any) -> int:
    """Bytes of what a host hands its model of a listing: the tools the model sees, without the
    ``_meta.ui`` the host reads to render their results (the links), as sent."""
    said = json.loads(listing.model_dump_json(by_alias=True, exclude_none=True))
    said["tools"] = [tool for tool in said["tools"] if not app_only(tool)]
    for tool in said["tools"]:
        meta = tool.get("_meta") or {}
        meta.pop("ui", None)
        if "_meta" in tool and not meta:
            del tool["_meta"]
    return len(json.dumps(said, separators=(",", ":"), ensure_ascii=False).encode())


def without_the_app(said: dict[str, Any]) -> dict[str, Any]:
    """What an apps client was told, less what the extension adds (the links, the apps' own
    tools, the apps, their data)."""
    said = json.loads(json.dumps(said))
    said["tools"]["tools"] = [tool for tool in said["tools"]["tools"] if not app_only(tool)]
    for tool in said["tools"]["tools"]:
        meta = tool.get("_meta") or {}
        meta.pop("ui", None)
        if "_meta" in tool and not meta:
            del tool["_meta"]
    said["resources"]["resources"] = [
        r for r in said["resources"]["resources"] if not r["uri"].startswith("ui://")
    ]
    for key, value in said.items():
        if key not in ("tools", "resources") and "_meta" in value:
            value["_meta"].pop(APP_META_KEY, None)
            if not value["_meta"]:
                del value["_meta"]
    return said


def new_cell_named(said: dict[str, Any]) -> dict[str, Any]:
    """The inserted cell's id (new at random in each run) and the revision it makes, named alike."""
    text = json.dumps(said)
    for key, value in said.items():
        if key.startswith("insert_execute_code_cell"):
            structured = value["structuredContent"]
            text = text.replace(structured["cell_id"], "<new cell>")
            text = text.replace(structured["revision"], "<its revision>")
    return json.loads(text)


@MODES
async def test_clients_without_apps_get_byte_identical_results(tmp_path: Path, mode: str) -> None:
    """The same calls with and without the extension negotiated: without it, nothing of the app;
    with it, the only difference is the app's link, the app and what it shows."""
    plain_folder, apps_folder = tmp_path / "plain", tmp_path / "apps"
    write_notebook(plain_folder)
    write_notebook(apps_folder)

    async def run(folder: Path, apps: bool) -> dict[str, Any]:
        async with client_of(folder, mode, apps) as client:
            return await the_same_calls(client)

    plain, with_apps = await asyncio.gather(run(plain_folder, False), run(apps_folder, True))
    assert "ui://" not in json.dumps(plain) and APP_META_KEY not in json.dumps(plain)
    assert new_cell_named(without_the_app(with_apps)) == new_cell_named(plain)
    # ... and byte for byte: the serialized results of a client without apps are the same text.
    assert json.dumps(new_cell_named(without_the_app(with_apps))) == json.dumps(
        new_cell_named(plain)
    )

    linked = {
        tool["name"]
        for tool in with_apps["tools"]["tools"]
        if (tool.get("_meta") or {}).get("ui", {}).get("resourceUri") == OUTPUTS_URI
    }
    # run_cells is linked too, listed with the runs toolset (tests/apps/test_apps_runs.py).
    assert linked == OUTPUT_TOOLS - {"run_cells"}
    assert OUTPUTS_URI in [r["uri"] for r in with_apps["resources"]["resources"]]

    table = with_apps["execute_cell {'cell_id': 'table'}"]
    (shown,) = table["_meta"][APP_META_KEY]["executions"]
    assert shown["notebook"] == "shown.ipynb" and shown["cell_id"] == "table"
    assert shown["source"].startswith("from IPython.display import HTML")
    html = [o for o in shown["outputs"] if o["output_type"] == "display_data"]
    # The app gets the HTML whole; the model reads the table as text.
    assert html[0]["data"]["text/html"] == DATAFRAME_HTML
    assert "<table" not in json.dumps(table["content"])
    assert [o["text"] for o in shown["outputs"] if o["output_type"] == "stream"] == ["done\n"]

    fails = with_apps["execute_cell {'cell_id': 'fails'}"]
    assert fails["isError"] is True
    (error,) = fails["_meta"][APP_META_KEY]["executions"][0]["outputs"]
    assert error["output_type"] == "error" and error["ename"] == "ZeroDivisionError"

    chart = with_apps["execute_cell {'cell_id': 'chart'}"]
    (drawn,) = chart["_meta"][APP_META_KEY]["executions"][0]["outputs"]
    # The app gets the spec whole, to draw; the model reads the chart's summary.
    assert drawn["data"]["application/vnd.vegalite.v5+json"] == CHART_SPEC
    assert "Vega-Lite chart" in json.dumps(chart["content"])
    assert '"values"' not in json.dumps(chart["content"])

    scratch = with_apps["execute_code {'code': \"print('scratch')\"}"]
    (ran,) = scratch["_meta"][APP_META_KEY]["executions"]
    assert ran["notebook"] is None and ran["source"] == "print('scratch')"


@MODES
async def test_the_output_app_is_one_document_that_loads_nothing(tmp_path: Path, mode: str) -> None:
    """The ui:// resource: the app MIME type, a CSP with no domain, nothing from the network,
    only its own script allowed to run, within its size budget; and the apps listing within the
    tools/list budget."""
    write_notebook(tmp_path)
    async with client_of(tmp_path, mode, True) as client:
        read = await client.read_resource(OUTPUTS_URI)
        listing = await client.list_tools()
    (content,) = read.contents
    assert content.mime_type == APP_MIME
    csp = (content.meta or {})["ui"]["csp"]
    assert all(not domains for domains in csp.values()), csp
    html = content.text
    size = len(html.encode())
    assert size <= OUTPUT_APP_BUDGET, (
        f"the output app is {size:,} bytes, over {OUTPUT_APP_BUDGET:,}"
    )
    assert html.startswith("<!doctype html>")
    # The chart libraries, inert text (run by the app when a chart needs one), byte for byte
    # the vendored (pinned) builds; then its own script.
    libraries = re.findall(
        r'<script type="text/plain" data-library="([a-z-]+)">(.*?)</script>', html, re.S
    )
    assert tuple(libraries) == chart_libraries()
    scripts = [source for _, source in libraries] + re.findall(
        r"<script>(.*?)</script>", html, re.S
    )
    assert len(scripts) == len(libraries) + 1
    own = html
    for _, library in libraries:
        own = own.replace(library, "")
    size = len(own.encode())
    assert size <= APP_SIZE_BUDGET, (
        f"the app's own part is {size:,} bytes, over {APP_SIZE_BUDGET:,}"
    )
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", own), "something from a network"
    assert "@import" not in own and "url(" not in own
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"
        for script in scripts
    ]
    # Exactly the page's scripts, by hash: no 'unsafe-eval' (Vega's expressions are
    # interpreted), no 'unsafe-inline', no host.
    (sources,) = [d for d in policy.split("; ") if d.startswith("script-src ")]
    assert sources.split()[1:] == hashes, "only the page's own scripts may run"
    # What costs the model's context: the tools a host hands it (docs/apps.md, "What the
    # listing costs"); the apps' own tools and the links are the host's.
    size = model_part(listing)
    assert size <= TOOLS_LIST_BUDGET, (
        f"what a host hands its model of the tools/list of a client with apps is {size:,} bytes, "
        f"over {TOOLS_LIST_BUDGET:,}"
    )


async def test_a_client_that_declares_apps_without_the_app_mime_type_gets_none(
    tmp_path: Path,
) -> None:
    """Declaring the extension is not enough: it must list the MIME type it renders."""
    write_notebook(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=server_command(tmp_path)[1:],
        env=server_environment(),
        cwd=str(tmp_path),
    )
    bare = advertise("io.modelcontextprotocol/ui", {"mimeTypes": ["text/html"]})
    async with Client(params, mode="legacy", extensions=[bare]) as client:
        listing = wire(await client.list_tools())
        await ok(client, "use_notebook", {"notebook_name": "shown.ipynb"})
        result = wire(await client.call_tool("execute_code", {"code": "1"}))
    assert "ui://" not in json.dumps(listing)
    assert APP_META_KEY not in json.dumps(result)


def test_the_chart_libraries_are_the_pinned_builds_with_their_licences() -> None:
    """What the output app inlines is what scripts/vendor_charts.py pinned (version and
    hash), each beside its licence text, as the wheel ships them."""
    checked = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "vendor_charts.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    folder = REPO / "src" / "jupyter_mcp_server" / "_apps" / "chart_libraries"
    licences = {path.name: path.read_text() for path in folder.glob("LICENSE-*.txt")}
    assert sorted(licences) == [
        "LICENSE-plotly.js.txt",
        "LICENSE-vega-embed.txt",
        "LICENSE-vega-lite.txt",
        "LICENSE-vega.txt",
    ]
    assert "MIT License" in licences["LICENSE-plotly.js.txt"]
    assert all(
        "Redistribution and use in source and binary forms" in text
        for name, text in licences.items()
        if name.startswith("LICENSE-vega")
    )
