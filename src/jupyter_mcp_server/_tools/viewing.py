"""The notebook view's own tools: a page of cells read, and a cell run, when the person asks.

The notebook view (``ui://jupyter-mcp/notebook``, linked from ``outline``) is handed the
page the outline starts at. Its pager, its outline's headings and its "agent's cell" link
read other pages with ``view_notebook``; its Run button runs a cell with
``run_cell_from_view``. Both are app-only: their ``_meta.ui.visibility`` is ``["app"]``, so
a host keeps them from the model, and the protocol feature
(:mod:`jupyter_mcp_server._protocol.apps`) lists them to, and lets them be called by,
clients that negotiated apps only.

Two tools, not one with an ``action``: a profile allows or refuses a tool by its
annotations (:mod:`jupyter_mcp_server._policy.profiles`), and reading a page only reads
while running a cell runs code. So a ``read-only`` or ``edit`` profile lets the view page
through a notebook and refuses its Run, as it refuses ``execute_cell``.

A run from the view is ``execute_cell``'s own (:func:`.running.run_stored_cell`): the same
checks, the same approval of shell lines, the same kernel, its outputs stored in the
notebook. It runs the cell only if its source is still the one the person was shown (the
view sends the hash it was given), and it is the person's run, so the agent's working cell
stays where it was.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from jupyter_mcp_server._apps.notebook_pages import PAGE_SIZE, notebook_page, page_start
from jupyter_mcp_server._apps.shown import show_notebook
from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import state_of
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._tool_calls.working import working_on
from jupyter_mcp_server._tools.running import run_stored_cell

NotebookPath = Annotated[str, Field(description="The notebook's path, as the view was given it.")]


class ViewPage(BaseModel):
    notebook: str
    revision: str
    cell_count: int
    start_index: int


@tool_handler("view_notebook")
async def view_notebook(
    notebook_name: NotebookPath,
    start_index: Annotated[int, Field(description="A cell index: its page is shown.", ge=0)] = 0,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, ViewPage]:
    """A page of a notebook for the notebook view (app-only)."""
    path = notebook_path(ctx, notebook_name)
    server = state_of(ctx)
    view = await server.store.read(path)
    cells = len(view.notebook.cells)
    if start_index > max(cells - 1, 0):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"start_index {start_index} is past the end: '{path}' has {cells} cells now.",
        )
    start = page_start(start_index)
    show_notebook(notebook_page(server, view, start, working_on(ctx, path)))
    stop = min(cells, start + PAGE_SIZE)
    page = ViewPage(notebook=path, revision=view.revision, cell_count=cells, start_index=start)
    return answer(
        page.model_dump(),
        f"Cells {start}-{stop - 1} of '{path}' ({cells} cells), revision {view.revision}.",
    )


@tool_handler("run_cell_from_view")
async def run_cell_from_view(
    notebook_name: NotebookPath,
    cell_id: Annotated[str, Field(description="The cell the person ran.")],
    source_hash: Annotated[str, Field(description="Its source_hash, as the view was given it.")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.ExecutionResult]:
    """Run the cell the person chose in the notebook view, as execute_cell does (app-only)."""
    path = notebook_path(ctx, notebook_name)
    return await run_stored_cell(ctx, path, None, cell_id, seen_source=source_hash)
