"""The apps' documents: each one self-contained HTML page, assembled from the files in ``pages/``.

Their HTML, CSS and JavaScript are files of the package (``pages/``, shipped in the wheel
and the sdist), read when a client first reads an app (``_protocol/apps.py`` builds each
page then, never when the server is made), and joined here into one document per app:

- the output app (``ui://jupyter-mcp/outputs``), a cell and its outputs as JupyterLab
  shows them: its source, and each output whole: HTML, images, SVG, DataFrames
  (scrollable, sortable by a column's header), ANSI colours, tracebacks, and Vega-Lite,
  Vega and Plotly charts, interactive (:mod:`.chart_bundle`). Handed a detached run
  (``detach=true``), it follows the run through its host: it calls the app-only tool
  ``watch_run`` every half second while cells end, backing off to every four while one
  runs long, and shows the run's progress and each cell as it ends, until the run ends or
  the view goes away (``ui/resource-teardown``, the page left, another result). Its
  Cancel button calls ``cancel_run``;
- the notebook view (``ui://jupyter-mcp/notebook``), for ``outline``'s result: the
  notebook's headings down the side, a page of its cells with their outputs, a pager, the
  agent's cell marked, and a Run button on each code cell (the app-only tools
  ``view_notebook`` and ``run_cell_from_view``, :mod:`jupyter_mcp_server._tools.viewing`).
  A Markdown cell is shown as its text, never as HTML;
- the review app (``ui://jupyter-mcp/review``), for a dry run of ``apply_edits`` or
  ``restore_notebook``: the cells before and after side by side, and Accept and Reject,
  each calling the app-only tool ``review_change``.

All three share ``style.css``, ``rendering.js`` (the sanitizer, DataFrames, ANSI colours,
one output) and ``bridge.js`` (results in, sizes and links out, ``ui/initialize``), and
each is safe by construction:

- one document, no CDN and no network: its script and style are inline, its
  Content-Security-Policy (a ``<meta>``, and ``_meta.ui.csp`` with no domain) lets the page
  load nothing and run only its own scripts, by hash (its own, and the chart libraries the
  output app inlines);
- a notebook's HTML and SVG are untrusted: HTML is parsed into an inert document and only
  an allowlist of elements and attributes is copied out (no script, no ``on*`` attribute,
  no ``javascript:`` link, no frame, no form); SVG is shown as an image
  (``<img src="data:image/svg+xml...">``), where no script of it runs. A script the
  sanitizer missed would still not run: the policy names the page's one;
- it talks to no server: only to its host, through the host bridge (``postMessage``
  JSON-RPC: ``ui/initialize``, the tool result, ``ui/open-link``, and ``tools/call`` of
  the app-only tools).
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources
from string import Template

from jupyter_mcp_server._apps.chart_bundle import chart_libraries

#: The ext-apps protocol version the pages speak (``@modelcontextprotocol/ext-apps`` 2.x).
APPS_PROTOCOL_VERSION = "2026-01-26"


def page_file(name: str) -> str:
    """One file of ``pages/``, as the package ships it."""
    return (resources.files("jupyter_mcp_server._apps") / "pages" / name).read_text(
        encoding="utf-8"
    )


def joined(*names: str) -> str:
    return "".join(page_file(name) for name in names)


def app_script(*views: str) -> str:
    """The app's one script: the shared rendering, its views, the bridge, in one closure."""
    return "\n(() => {\n" + joined("rendering.js", *views, "bridge.js") + "})();\n"


def script_hash(script: str) -> str:
    """The CSP source that lets exactly `script` run (``'sha256-...'``)."""
    digest = hashlib.sha256(script.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def app_document(
    title: str,
    style: str,
    script: str,
    app_name: str,
    libraries: tuple[tuple[str, str], ...] = (),
) -> str:
    """One app's whole document, its policy naming its scripts: its own, and each library's.

    A library, ``(name, source)``, is in the page as inert text (``<script type="text/plain"
    data-library=name>``) until the app's script runs it, as an inline script the policy
    allows by its hash: a page that shows no chart never runs a chart library."""
    script = script.replace("__PROTOCOL__", APPS_PROTOCOL_VERSION).replace("__APP_NAME__", app_name)
    scripts = (*(source for _, source in libraries), script)
    policy = "; ".join(
        (
            "default-src 'none'",
            f"script-src {' '.join(script_hash(each) for each in scripts)}",
            # Colours of ANSI spans are set by the page's script as style properties.
            "style-src 'unsafe-inline'",
            "img-src data:",
            "connect-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        )
    )
    inert = "".join(
        f'<script type="text/plain" data-library="{name}">{source}</script>'
        for name, source in libraries
    )
    return Template(page_file("page.html")).substitute(
        policy=policy, title=title, style=style, libraries=inert, script=script
    )


def output_app_html() -> str:
    """The output app, its policy naming its scripts (the chart libraries' and its own)."""
    return app_document(
        "Cell outputs",
        joined("style.css", "charts.css"),
        app_script("charts.js", "executions.js", "run_view.js"),
        "jupyter-mcp-outputs",
        chart_libraries(),
    )


def notebook_app_html() -> str:
    """The notebook view, its policy naming its one script."""
    return app_document(
        "Notebook",
        joined("style.css", "notebook.css"),
        app_script("notebook_view.js"),
        "jupyter-mcp-notebook",
    )


def review_app_html() -> str:
    """The review app, its policy naming its one script."""
    return app_document(
        "Review a change",
        joined("style.css", "review.css"),
        app_script("review_view.js"),
        "jupyter-mcp-review",
    )
