"""A page of a notebook as the notebook view shows it: its outline, its cells whole, the agent's cell.

The notebook view (``ui://jupyter-mcp/notebook``, :mod:`jupyter_mcp_server._apps.documents`)
shows a person one notebook: the headings down the side, a page of cells with their sources
and outputs as nbformat keeps them (the view sanitizes their HTML as the output app does),
and the cell the agent is working on (:mod:`.working`) marked. ``outline``'s result hands it
the page the outline starts at, and the view's own tool ``view_notebook`` the page it asks
for (:mod:`jupyter_mcp_server._tools.viewing`); both build it here, only when the call's
client shows apps (:func:`.shown.apps_shown`), so no other client pays for it. The protocol
feature (:mod:`jupyter_mcp_server._protocol.apps`) keeps a page within its byte budget.
"""

from __future__ import annotations

from typing import Any

from jupyter_mcp_server._kernels.records import source_hash
from jupyter_mcp_server._kernels.staleness import states_of
from jupyter_mcp_server._rendering.headings import headings_of
from jupyter_mcp_server._state import ServerState, WorkingCell
from jupyter_mcp_server._store import NotebookView

#: Cells in one page of the view.
PAGE_SIZE = 20
#: Headings the view's outline lists at most (a notebook of thousands of headings is cut).
MAX_VIEW_HEADINGS = 500
#: Characters of one cell's source the view is handed; the rest is cut, and says so.
MAX_SOURCE_CHARS = 100_000


def page_start(index: int) -> int:
    """The first cell of the page that holds cell `index`."""
    return index - index % PAGE_SIZE


def notebook_page(
    server: ServerState, view: NotebookView, start_index: int, working: WorkingCell | None
) -> dict[str, Any]:
    """What the view shows of `view`'s notebook from `start_index`: ``{notebook, revision,
    cell_count, start_index, page_size, headings, headings_total, cells, working}``."""
    cells = view.notebook.cells
    states = states_of(server.kernels, view.path, view.notebook)
    stop = min(len(cells), start_index + PAGE_SIZE)
    shown = []
    for index in range(start_index, stop):
        cell = cells[index]
        source = str(cell.get("source", ""))
        shown.append(
            {
                "index": index,
                "cell_id": str(cell.get("id", "")),
                "cell_type": cell.get("cell_type"),
                "source": source[:MAX_SOURCE_CHARS],
                "source_cut": max(0, len(source) - MAX_SOURCE_CHARS),
                # What a run from the view sends back: the cell runs only if still this source.
                "source_hash": source_hash(source),
                "execution_count": cell.get("execution_count"),
                "state": states.state_of(index),
                "outputs": list(cell.get("outputs", []) or []),
            }
        )
    headings = headings_of(cells)
    at = None
    if working is not None:
        at = next((i for i, cell in enumerate(cells) if cell.get("id") == working.cell_id), None)
    return {
        "notebook": view.path,
        "revision": view.revision,
        "cell_count": len(cells),
        "start_index": start_index,
        "page_size": PAGE_SIZE,
        "headings": [h.model_dump() for h in headings[:MAX_VIEW_HEADINGS]],
        "headings_total": len(headings),
        "cells": shown,
        "working": None
        if at is None or working is None
        else {"cell_id": working.cell_id, "index": at, "doing": working.doing},
    }
