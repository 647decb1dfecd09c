"""Changes the person reviews before they land: what the review app shows, and what an accept applies.

A dry run of ``apply_edits`` or ``restore_notebook`` by a client that shows apps
(:func:`.shown.apps_shown`) proposes its change: the proposal is kept in the server's
state (:class:`~jupyter_mcp_server._calls.proposals.Proposals`) under an unguessable
id, and the review app (``ui://jupyter-mcp/review``) is handed the notebook's cells
before and after, side by side, cell by cell, with the id. The person's accept comes
back through the app-only tool ``review_change``
(:mod:`jupyter_mcp_server._tools.reviewing`) with that id, and applies exactly the
proposal they saw, against the revision it was made from (``expected_revision``): a
notebook changed since is refused with ``revision_conflict``, nothing written.

The app never sends what to change, only which proposal it showed and the answer,
so what lands is what the server showed, not what a page says; and a proposal is
answered only by the client it was shown to (over HTTP, its session, or its credentials
and client info).
"""

from __future__ import annotations

from typing import Any

from jupyter_mcp_server._calls.proposals import Proposal
from jupyter_mcp_server._store.diffs import cell_diff

#: The review app's resource.
REVIEW_URI = "ui://jupyter-mcp/review"
#: What a proposal applies when accepted: the tool whose dry run it was.
EDITS = "apply_edits"
RESTORE = "restore_notebook"


def _cell(cell: Any) -> dict[str, Any]:
    return {
        "cell_type": cell.get("cell_type"),
        "source": cell.get("source", ""),
        "execution_count": cell.get("execution_count"),
        "outputs": list(cell.get("outputs", []) or []),
    }


def side_by_side(before_cells: list[Any], after_cells: list[Any]) -> list[dict[str, Any]]:
    """The cells before and after, paired by id in the order after, each removed cell where
    it stood: ``{cell_id, status, before, after}``; status is added, removed, changed, moved
    or unchanged, as the model's diff says (:func:`cell_diff`), the unchanged without their
    outputs (nothing of them to review)."""
    diff = cell_diff(before_cells, after_cells)
    changed = {entry["cell_id"] for entry in diff["changed"]}
    moved = {entry["cell_id"] for entry in diff["moved"]}
    before_at = {cell["id"]: index for index, cell in enumerate(before_cells)}
    after_ids = {cell["id"] for cell in after_cells}
    # Each removed cell goes after the cell that preceded it before and is still there.
    removed_after: dict[str | None, list[Any]] = {}
    previous: str | None = None
    for cell in before_cells:
        if cell["id"] in after_ids:
            previous = cell["id"]
        else:
            removed_after.setdefault(previous, []).append(cell)
    rows: list[dict[str, Any]] = []

    def removed(after_id: str | None) -> None:
        for cell in removed_after.pop(after_id, []):
            rows.append(
                {"cell_id": cell["id"], "status": "removed", "before": _cell(cell), "after": None}
            )

    removed(None)
    for cell in after_cells:
        cell_id = cell["id"]
        if cell_id not in before_at:
            rows.append(
                {"cell_id": cell_id, "status": "added", "before": None, "after": _cell(cell)}
            )
        else:
            old, new = _cell(before_cells[before_at[cell_id]]), _cell(cell)
            status = (
                "changed" if cell_id in changed else "moved" if cell_id in moved else "unchanged"
            )
            if status == "unchanged":
                old["outputs"] = new["outputs"] = []
            rows.append({"cell_id": cell_id, "status": status, "before": old, "after": new})
        removed(cell_id)
    return rows


def review_of(
    proposal: Proposal, before_cells: list[Any], after_cells: list[Any], summary: str
) -> dict[str, Any]:
    """What the review app shows of `proposal`."""
    return {
        "id": proposal.id,
        "tool": proposal.tool,
        "notebook": proposal.path,
        "from_revision": proposal.from_revision,
        "to_revision": proposal.to_revision,
        "summary": summary,
        "cells": side_by_side(before_cells, after_cells),
    }
