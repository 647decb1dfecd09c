"""What a call's app shows: the cell that ran and its outputs whole, for a client that shows apps.

A model reads an execution's outputs as content blocks within the inline budget (a
DataFrame as a Markdown table, an image shrunk). A client that negotiated MCP Apps
(:mod:`jupyter_mcp_server._protocol.apps`) also shows the person an output view, which
needs what the notebook holds: the source, and each output as nbformat keeps it (its HTML,
its SVG, its ANSI colours). Whether the client shows apps is not the tools' business: the
protocol feature opens a :class:`Showing` around the call, and the execution tools fill it
when one is open. No call of a client without apps opens one, so its results stay exactly
as they were.

A detached run outlives its call: its app follows it (``watch_run``). A run an apps client
started keeps a :class:`RunShown` of its own, filled as each of its cells ends, in the run's
own context (:func:`watching_run`); the call that started it shows the run's id
(:func:`show_run`), and each ``watch_run`` shows what ended since.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
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
    #: A detached run, as its app follows it (``watch_run``): its progress, the cells since.
    run: dict[str, Any] | None = None
    #: False once the call has answered: a detached run that outlives it shows nothing here.
    open: bool = True


_showing: contextvars.ContextVar[Showing | None] = contextvars.ContextVar(
    "jupyter_mcp_showing", default=None
)

#: Output bytes a run keeps whole for its app; the outputs after are named, not kept (the
#: notebook has them). Only runs an apps client started keep any.
RUN_KEPT_BYTES = 4 * 1024 * 1024


@dataclass
class RunShown:
    """What a detached run shows its app as it goes: kept on the run, filled in its context."""

    #: Cells it is to run (run_cells refines it once it knows which it will run).
    total: int = 1
    #: Cells passed so far: ended, or passed over.
    done: int = 0
    #: The cell running now (``index``, ``cell_id``, ``source``), if any.
    running: dict[str, Any] | None = None
    #: Each cell as it ended: what :func:`show_execution` is given.
    executions: list[dict[str, Any]] = field(default_factory=list)
    kept_bytes: int = 0

    def ended(self, execution: dict[str, Any]) -> None:
        outputs = []
        for output in execution["outputs"]:
            size = len(json.dumps(output, ensure_ascii=False, default=str))
            if self.kept_bytes + size > RUN_KEPT_BYTES:
                outputs.append(
                    {"output_type": "omitted", "text": f"(an output of {size:,} bytes, left out)"}
                )
                continue
            self.kept_bytes += size
            outputs.append(output)
        self.executions.append({**execution, "outputs": outputs})
        self.done = max(self.done + 1, len(self.executions))
        self.running = None


_run_shown: contextvars.ContextVar[RunShown | None] = contextvars.ContextVar(
    "jupyter_mcp_run_shown", default=None
)


def watching_run(view: RunShown) -> None:
    """This context (a detached run's own) fills `view` as its cells start and end."""
    _run_shown.set(view)


def show_run(run: dict[str, Any]) -> None:
    """The app of this call (if one is open) follows this detached run."""
    shown = _showing.get()
    if shown is not None and shown.open:
        shown.run = run


def show_cell_started(done: int, total: int, index: int, cell_id: str, source: str) -> None:
    """The run this code is part of (if its app follows it) runs this cell now: `done` of
    `total` cells are behind it."""
    view = _run_shown.get()
    if view is not None:
        view.total, view.done = total, done
        view.running = {"index": index, "cell_id": cell_id, "source": source}


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
    execution = {
        "notebook": path,
        "cell_id": cell_id,
        "source": source,
        "status": status,
        "execution_count": execution_count,
        "outputs": list(outputs),
    }
    view = _run_shown.get()
    if view is not None:
        view.ended(execution)
    shown = _showing.get()
    if shown is None or not shown.open:
        return
    shown.executions.append(execution)


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
