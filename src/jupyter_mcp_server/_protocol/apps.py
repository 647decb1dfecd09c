"""MCP Apps (``io.modelcontextprotocol/ui``): the person sees a cell's outputs as JupyterLab shows them.

Built on the SDK's own seam, :class:`mcp.server.apps.Apps`: the extension is
advertised under the server's ``capabilities.extensions``, and the apps are its ``ui://``
resources (the output app, the review app and the notebook view, whose pages
:mod:`jupyter_mcp_server._apps.documents` assembles from the package's files), served as ``text/html;profile=mcp-app`` with a
declared CSP that names no domain.

Negotiated per request with :func:`mcp.server.apps.client_supports_apps` (the
client declared the extension with that MIME type). For such a client, and only
for it:

- ``tools/list`` links the execution tools to the output app, the dry-run tools to the
  review app and ``outline`` to the notebook view (``_meta.ui.resourceUri``);
- ``resources/list`` lists the app;
- an execution tool's result carries what the app shows under
  ``_meta["io.jupyter-mcp/app"]``: the cell's source and its outputs whole
  (:mod:`jupyter_mcp_server._apps.shown`), within :data:`PAYLOAD_BUDGET`.
  A host hands ``_meta`` to the app, not to the model, so the model's context pays
  nothing for it.

A detached run an apps client started (``detach=true``) carries its id to the output app,
which follows it with ``watch_run``: its progress, and each cell as it ends (a Cancel
button calls ``cancel_run``, visible to model and app alike).

The apps' own tools (:data:`APP_ONLY`: the review's answer, the notebook view's pages and
Run, ``watch_run``) are listed with ``_meta.ui.visibility == ["app"]`` to such a client only, and refused
to any other. A client that did not negotiate the extension gets every listing and every
result byte for byte as without it.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from mcp.server.apps import APP_MIME_TYPE, Apps, ResourceCsp, client_supports_apps
from mcp.server.mcpserver.resources import FunctionResource
from mcp.types import CallToolResult

from jupyter_mcp_server._apps.documents import notebook_app_html, output_app_html, review_app_html
from jupyter_mcp_server._apps.reviews import REVIEW_URI
from jupyter_mcp_server._apps.shown import showing
from jupyter_mcp_server._errors import UNSUPPORTED, ToolFailure
from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler
from jupyter_mcp_server._tool_calls.results import failure

OUTPUTS_URI = "ui://jupyter-mcp/outputs"
NOTEBOOK_URI = "ui://jupyter-mcp/notebook"
#: The result ``_meta`` key the app reads what it shows from.
APP_META_KEY = "io.jupyter-mcp/app"
#: The tools whose results the output app shows.
OUTPUT_TOOLS = frozenset({"execute_cell", "execute_code", "insert_execute_code_cell", "run_cells"})
#: The tools whose dry runs the review app shows, for the person to accept or reject.
REVIEW_TOOLS = frozenset({"apply_edits", "restore_notebook"})
#: The tool whose result opens the notebook view: the one an agent starts a notebook with.
NOTEBOOK_TOOLS = frozenset({"outline"})
#: The apps' own tools, each with its app (the review's Accept and Reject; the notebook
#: view's pages and Run; the output app following a detached run): listed to, and called
#: by, clients with apps only.
APP_ONLY = {
    "review_change": REVIEW_URI,
    "view_notebook": NOTEBOOK_URI,
    "run_cell_from_view": NOTEBOOK_URI,
    "watch_run": OUTPUTS_URI,
}
APP_ONLY_TOOLS = frozenset(APP_ONLY)
#: What a client without apps does instead, where that is not the default sentence.
INSTEAD = {"watch_run": "get_run follows a detached run (pass next_output back as since_output)."}
#: Where each linked tool's result is shown.
LINKS = {
    **dict.fromkeys(OUTPUT_TOOLS, OUTPUTS_URI),
    **dict.fromkeys(REVIEW_TOOLS, REVIEW_URI),
    **dict.fromkeys(NOTEBOOK_TOOLS, NOTEBOOK_URI),
}
#: Each linked tool's ``_meta.ui`` as listed: an app-only tool is visible to its app alone.
UI: dict[str, dict[str, Any]] = {
    **{name: {"resourceUri": uri} for name, uri in LINKS.items()},
    **{name: {"resourceUri": uri, "visibility": ["app"]} for name, uri in APP_ONLY.items()},
}
#: Bytes of outputs one result hands its app; the outputs after are named, not carried.
PAYLOAD_BUDGET = 4 * 1024 * 1024
#: Every page's ``_meta.ui``, as ``Apps.add_html_resource`` would write it: no domain at
#: all (the page loads nothing from anywhere), no border.
PAGE_UI: dict[str, Any] = {
    "csp": ResourceCsp(connect_domains=[], resource_domains=[], frame_domains=[]).model_dump(
        by_alias=True, exclude_none=True
    ),
    "prefersBorder": False,
}


class NotebookApps(Apps):
    """The extension with the output app, and the tools/call interceptor that fills it."""

    def __init__(self) -> None:
        super().__init__()
        # Each page is built when a client first reads it, not when the server is made: the
        # output app inlines the chart libraries (about 4 MiB of text, twice while it is
        # built), which a session whose client shows no apps would hold for nothing.
        for uri, page, name, title, description in (
            (
                OUTPUTS_URI,
                output_app_html,
                "cell-outputs",
                "Cell outputs",
                "A cell and its outputs as JupyterLab shows them (the execution tools' app).",
            ),
            (
                REVIEW_URI,
                review_app_html,
                "change-review",
                "Review a change",
                "A proposed change side by side, cell by cell, to accept or reject.",
            ),
            (
                NOTEBOOK_URI,
                notebook_app_html,
                "notebook-view",
                "Notebook",
                "One notebook: its outline, its cells with outputs, the agent's cell marked.",
            ),
        ):
            self.add_resource(
                FunctionResource(
                    uri=uri,
                    name=name,
                    title=title,
                    description=description,
                    mime_type=APP_MIME_TYPE,
                    meta={"ui": PAGE_UI},
                    fn=functools.cache(page),
                )
            )

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        apps = client_supports_apps(ctx)
        if params.name in APP_ONLY_TOOLS and not apps:
            return failure(
                ToolFailure(
                    UNSUPPORTED,
                    f"{params.name} is an app's own tool ({APP_ONLY[params.name]}): only a client "
                    "that shows MCP Apps calls it. "
                    + INSTEAD.get(
                        params.name,
                        "Approvals reach this client as questions (elicitation); the notebook's "
                        "own tools (outline, execute_cell) do the rest.",
                    ),
                )
            )
        if (params.name not in LINKS and params.name not in APP_ONLY) or not apps:
            return await call_next(ctx)
        with showing() as shown:
            result = await call_next(ctx)
        if not isinstance(result, CallToolResult):
            return result
        if shown.run is not None:
            # A detached run (its start, or watch_run): the app follows it as it goes.
            executions = within_budget(shown.run["executions"])
            shows = {"view": "run", **shown.run, "executions": executions}
        elif shown.executions:
            shows = {"view": "outputs", "executions": within_budget(shown.executions)}
        elif shown.reviews:
            shows = {"view": "review", "reviews": reviews_within_budget(shown.reviews)}
        elif shown.notebook is not None:
            shows = {"view": "notebook", **page_within_budget(shown.notebook)}
        else:
            return result
        meta = dict(result.meta or {})
        meta[APP_META_KEY] = shows
        return result.model_copy(update={"meta": meta})


def within_budget(
    executions: list[dict[str, Any]], budget: int = PAYLOAD_BUDGET
) -> list[dict[str, Any]]:
    """The executions with their outputs up to `budget` bytes; each output past it is
    replaced by a note of its size (the resource ``notebook-output:`` still has it whole)."""
    left = budget
    kept: list[dict[str, Any]] = []
    for execution in executions:
        outputs = []
        for output in execution["outputs"]:
            size = len(json.dumps(output, ensure_ascii=False, default=str))
            if size > left:
                outputs.append(
                    {"output_type": "omitted", "text": f"(an output of {size:,} bytes, left out)"}
                )
                continue
            left -= size
            outputs.append(output)
        kept.append({**execution, "outputs": outputs})
    return kept


def reviews_within_budget(reviews: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reviews with their cells' outputs, before and after, up to :data:`PAYLOAD_BUDGET`."""
    left = PAYLOAD_BUDGET
    kept = []
    for review in reviews:
        rows = []
        for row in review["cells"]:
            sides: dict[str, dict[str, Any] | None] = {}
            for side in ("before", "after"):
                cell = row[side]
                if cell is None:
                    sides[side] = None
                    continue
                (shown,) = within_budget([{"outputs": cell["outputs"]}], left)
                left -= len(json.dumps(shown["outputs"], ensure_ascii=False, default=str))
                sides[side] = {**cell, "outputs": shown["outputs"]}
            rows.append({**row, **sides})
        kept.append({**review, "cells": rows})
    return kept


def page_within_budget(page: dict[str, Any]) -> dict[str, Any]:
    """A notebook view's page with its cells' outputs up to :data:`PAYLOAD_BUDGET` bytes, less
    what its sources and outline take."""
    cells = page["cells"]
    rest = len(json.dumps({**page, "cells": [{**c, "outputs": []} for c in cells]}, default=str))
    return {**page, "cells": within_budget(cells, max(0, PAYLOAD_BUDGET - rest))}


def feature() -> Feature:
    """The apps: the extension (:class:`NotebookApps`), the output tools linked to the app in
    ``tools/list`` and the app listed in ``resources/list``, for a client that negotiated the
    extension only."""

    def linked(server: Any, original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            if not client_supports_apps(ctx):
                # The apps' own tools are nobody else's: not listed, not a byte of them.
                result.tools = [tool for tool in result.tools if tool.name not in APP_ONLY_TOOLS]
                return result
            # Copies: whatever the SDK keeps of its tools stays as every other client sees it.
            result.tools = [
                tool.model_copy(update={"meta": {**(tool.meta or {}), "ui": UI[tool.name]}})
                if tool.name in UI
                else tool
                for tool in result.tools
            ]
            return result

        return listed

    def hidden(server: Any, original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            if client_supports_apps(ctx) or not hasattr(result, "resources"):
                return result
            kept = [r for r in result.resources if not str(r.uri).startswith("ui://")]
            return result.model_copy(update={"resources": kept})

        return listed

    return Feature(
        "apps",
        extension=NotebookApps(),
        wraps=(Wrapped("tools/list", linked), Wrapped("resources/list", hidden)),
    )
