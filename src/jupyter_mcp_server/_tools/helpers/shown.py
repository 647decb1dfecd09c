"""What a call's app shows: the cell that ran and its outputs whole, for a client that shows apps.

A model reads an execution's outputs as content blocks within the inline budget (a
DataFrame as a Markdown table, an image shrunk). A client that negotiated MCP Apps
(:mod:`jupyter_mcp_server._protocol.apps`) also shows the person an output view, which
needs what the notebook holds: the source, and each output as nbformat keeps it (its HTML,
its SVG, its ANSI colours). Whether the client shows apps is not the tools' business: the
protocol feature opens a :class:`Showing` around the call, and the execution tools fill it
when one is open. No call of a client without apps opens one, so its results stay exactly
as they were.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Showing:
    """What the app of one call shows; filled by the tools, read after the call."""

    executions: list[dict[str, Any]] = field(default_factory=list)
    #: Changes proposed in this call for the person to review (:mod:`.reviews`).
    reviews: list[dict[str, Any]] = field(default_factory=list)
    #: A page of a notebook for the notebook view (:mod:`.notebook_pages`).
    notebook: dict[str, Any] | None = None
    #: False once the call has answered: a detached run that outlives it shows nothing here.
    open: bool = True


_showing: contextvars.ContextVar[Showing | None] = contextvars.ContextVar(
    "jupyter_mcp_showing", default=None
)


@contextlib.contextmanager
def showing() -> Iterator[Showing]:
    """Collect, inside this block, what its executions show."""
    shown = Showing()
    token = _showing.set(shown)
    try:
        yield shown
    finally:
        shown.open = False
        _showing.reset(token)


def show_execution(
    outputs: list[dict[str, Any]],
    *,
    source: str | None,
    status: str,
    execution_count: int | None,
    cell_id: str | None = None,
    path: str | None = None,
) -> None:
    """The app of this call (if one is open) shows this execution: its source and outputs."""
    shown = _showing.get()
    if shown is None or not shown.open:
        return
    shown.executions.append(
        {
            "notebook": path,
            "cell_id": cell_id,
            "source": source,
            "status": status,
            "execution_count": execution_count,
            "outputs": list(outputs),
        }
    )


def apps_shown() -> bool:
    """Whether this call's client shows apps (an app is open around the call): a tool
    proposes a reviewable change only then."""
    shown = _showing.get()
    return shown is not None and shown.open


def show_review(review: dict[str, Any]) -> None:
    """The app of this call (if one is open) shows this proposed change for review."""
    shown = _showing.get()
    if shown is not None and shown.open:
        shown.reviews.append(review)


def show_notebook(page: dict[str, Any]) -> None:
    """The app of this call (if one is open) shows this page of a notebook."""
    shown = _showing.get()
    if shown is not None and shown.open:
        shown.notebook = page
