"""A run's outputs written into their cells as each cell finishes, behind the kernel.

A whole-notebook run stores every cell's outputs as soon as the cell ends,
so a crash, a dying kernel or a client that goes away keeps what ran. But
one write per cell, each waiting before the next cell may start, would
double the time of a run of short cells. So a write happens beside the next
cell's execution: the kernel computes while the file is replaced, and cells
that end while a write is under way go into the next one together. At most
one write is in flight; :meth:`CellWrites.drain` waits for the last.

Each cell is written by id wherever it is now, as ``execute_cell`` writes
it, and only while its source is still the one that ran: a cell deleted or
edited meanwhile keeps what it has, and the run says so.

For the notebook's history the run is one change: its writes make a single
entry, from the revision before the run to the one after its last cell
(``HeldEntry``), added by :meth:`CellWrites.drain`. One entry per cell
would push the rest of a bounded history out after a few runs, and cost
each cell four small files.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server._errors import REVISION_CONFLICT, ToolFailure
from jupyter_mcp_server._kernels.execution import ExecutionOutcome
from jupyter_mcp_server._kernels.widgets import store_widget_state
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._store import NotebookView
from jupyter_mcp_server._store.change_origins import HELD_ENTRY, HeldEntry
from jupyter_mcp_server._tool_calls.addressing import index_of_id

logger = logging.getLogger(__name__)

#: Why a cell's outputs were not stored.
DELETED = "the cell was deleted while the run went on"
EDITED = (
    "the cell's source was changed while it ran, so its outputs were not attached to other code"
)


@dataclass
class Pending:
    """One cell's outputs waiting to be written."""

    cell_id: str
    source: str
    outcome: ExecutionOutcome
    #: What else the write changes in the notebook (display updates in other cells).
    extra: Callable[[Any], None] | None = None


@dataclass
class CellWrites:
    """The writes of one run's outputs into one notebook, one in flight at a time."""

    server: ServerState
    path: str
    store: Callable[[Any, ExecutionOutcome], None]
    #: Cell id -> why its outputs were not stored.
    not_stored: dict[str, str] = field(default_factory=dict)
    #: The notebook after the last write.
    written: NotebookView | None = None
    #: A write that failed as a whole (the file went away, kept changing): its code and message.
    failure: ToolFailure | None = None
    #: The run's one history entry, added by `drain` (see the module's docstring).
    held: HeldEntry = field(default_factory=HeldEntry)
    _pending: list[Pending] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    def add(self, pending: Pending) -> None:
        """Write `pending` as soon as the write before it is done."""
        self._pending.append(pending)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._write_all())

    async def drain(self) -> None:
        """Until everything added is written (or has failed)."""
        while self._task is not None and not self._task.done():
            # Shielded: a cancelled run still stores the cells that finished.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)
        if self.held.before:
            note = await self.server.store.release_held(self.path, self.held)
            if note is not None:
                logger.info("The run of %s is not in its history: %s", self.path, note)

    async def _write_all(self) -> None:
        HELD_ENTRY.set(self.held)  # this task's own context: its writes only
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                _, self.written = await self.server.store.mutate(self.path, self._change(batch))
            except ToolFailure as error:
                self.failure = error
                for pending in batch:
                    self.not_stored[pending.cell_id] = error.message
            except Exception as error:  # a write never breaks the run; it says what was lost
                logger.exception("Storing the outputs of a run in %s failed", self.path)
                self.failure = ToolFailure(
                    REVISION_CONFLICT, f"The outputs could not be written: {error}"
                )
                for pending in batch:
                    self.not_stored[pending.cell_id] = str(error)

    def _change(self, batch: list[Pending]) -> Callable[[Any], None]:
        # Called again from the top when the store retries: it decides from the
        # notebook it is given, never from what an earlier attempt saw.
        def change(notebook: Any) -> None:
            for pending in batch:
                if pending.extra is not None:
                    pending.extra(notebook)
                index = index_of_id(notebook, pending.cell_id)
                if index is None:
                    self.not_stored[pending.cell_id] = DELETED
                    continue
                cell = notebook.cells[index]
                if cell.get("source", "") != pending.source:
                    self.not_stored[pending.cell_id] = EDITED
                    continue
                self.not_stored.pop(pending.cell_id, None)
                self.store(cell, pending.outcome)
                store_widget_state(notebook, pending.outcome.widgets)

        return change
