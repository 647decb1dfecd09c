"""A whole-notebook run: cells in order on the notebook's kernel, each stored as it ends.

``run_cells`` reads the notebook once and runs what it read: the selected
code cells (``cell_selection``), top to bottom, on the notebook's kernel
(restarted first when asked), each under the per-cell timeout, through the
same path as ``execute_cell``: in turn with every other call on the kernel,
the execution hooks fired, its outputs shown live where JupyterLab has the
notebook open, then written into the cell by id (``cell_writes``).

Whoever follows the call hears each cell's outputs and a line per cell
("cell 3 of 10 …: ok"). The run stops at the first cell that does not end
``ok`` when ``stop_on_error`` (the default; a cell tagged ``raises-exception``
may raise), at an interrupt, when its kernel
dies (``kernel_gone``: the cells that ran are kept), and when it is
cancelled; the report says where and why. Cells tagged ``skip-execution`` are
passed over, as nbclient passes over them (``cell_tags``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server._apps.shown import show_cell_started, show_execution
from jupyter_mcp_server._errors import INTERRUPTED, KERNEL_GONE, KERNEL_UNRESPONSIVE, ToolFailure
from jupyter_mcp_server._kernels.execution import ExecutionOutcome
from jupyter_mcp_server._kernels.staleness import FRESH, NotebookStates, code_cells_of
from jupyter_mcp_server._runs.cell_selection import Selection, select
from jupyter_mcp_server._runs.cell_tags import expects_an_error, skips_execution
from jupyter_mcp_server._runs.cell_writes import CellWrites, Pending
from jupyter_mcp_server._runs.displays import display_writes
from jupyter_mcp_server._runs.executions import metadata_kernel, run_on, store_outputs
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._store import NotebookView
from jupyter_mcp_server._tool_calls.listening import announce, listening
from jupyter_mcp_server._tool_calls.working import RAN, worked_on

#: Statuses a cell of a run ends with besides an execution's own (ok, error, timeout, interrupted).
CELL_GONE = "kernel_gone"
CELL_UNRESPONSIVE = "kernel_unresponsive"


@dataclass
class CellRan:
    """One cell of a run, as it ended."""

    index: int
    cell_id: str
    status: str
    outcome: ExecutionOutcome | None = None
    #: Why its outputs are not in the notebook, when they are not.
    not_stored: str | None = None
    #: It raised, as its ``raises-exception`` tag says it should: the run went on.
    expected_error: bool = False


@dataclass
class RunReport:
    """What a run did, for its result."""

    path: str
    #: The revision the run read and ran.
    read_revision: str
    kernel_id: str
    selected: int
    said: str
    #: The file kind (``ipynb``, ``py:percent``): a script stores no outputs.
    format: str = "ipynb"
    cells: list[CellRan] = field(default_factory=list)
    #: The cell it stopped at, and why (None: it ran every cell selected).
    stopped_at: CellRan | None = None
    stop_reason: str | None = None
    #: Cells selected and not run: after the stop, or fresh ones a stale run passed over.
    not_run: list[str] = field(default_factory=list)
    fresh_skipped: int = 0
    #: Ids of selected cells tagged ``skip-execution``, not run (as nbclient does).
    tag_skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The notebook after the last write, when anything was written.
    written: NotebookView | None = None
    write_failure: ToolFailure | None = None

    @property
    def status(self) -> str:
        """``ok``, or how the run ended: the stopping cell's status, ``cancelled``, or ``error``
        for a run that went on past failed cells."""
        if self.stopped_at is not None:
            return self.stopped_at.status
        if self.stop_reason is not None:
            return "cancelled"
        failed = next(
            (cell for cell in self.cells if cell.status != "ok" and not cell.expected_error), None
        )
        return failed.status if failed is not None else "ok"


@dataclass(frozen=True)
class RunRequest:
    """What ``run_cells`` was asked."""

    path: str
    cells: str | list[str] = "all"
    up_to_cell: int | str | None = None
    restart: bool = False
    stop_on_error: bool = True
    timeout: float = 120.0
    #: Asked before each cell: a reason to stop now (a cancelled run), or None.
    stop_requested: Callable[[], str | None] = lambda: None
    #: Awaited with the notebook and the selection the run will run, before anything happens
    #: (the person's approval of exactly these cells; it raises to refuse).
    approve: Callable[[Any, Selection], Awaitable[None]] | None = None


async def run_notebook(server: ServerState, request: RunRequest) -> RunReport:
    """Run the cells `request` selects; the report says what ran, what was stored and where it stopped."""
    path = request.path
    view = await server.store.read(path)
    named_kernel = metadata_kernel(server, view.notebook)
    # The live document changes under later awaits: take what the run needs now.
    selection = select(view.notebook, request.cells, request.up_to_cell)
    code_cells = code_cells_of(view.notebook)
    sources = {index: (cell_id, source) for index, cell_id, source in code_cells}
    if request.approve is not None:
        await request.approve(view.notebook, selection)
    notes = []
    if request.restart:
        await server.kernels.restart(path, metadata_kernel=named_kernel)
        notes.append(
            "The kernel was restarted first: every earlier variable, import and definition is gone."
        )
    attachment = await server.kernels.live_kernel_of(
        path, metadata_kernel=named_kernel, to_run_code=True
    )
    if attachment.note:
        notes.append(attachment.note)
    elif attachment.replaced:
        notes.append(
            f"Note: the kernel of '{path}' was gone and a replacement was started (kernel.auto-restart); "
            "earlier variables, imports and definitions are not in it."
        )
    kernel = attachment.kernel
    runs = server.kernels.records.of(path)
    states = NotebookStates(code_cells, runs, kernel.kernel_id)
    report = RunReport(
        path=path,
        read_revision=view.revision,
        kernel_id=kernel.kernel_id,
        selected=len(selection.indices),
        said=selection.said,
        format=view.format,
        notes=notes,
    )
    writes = CellWrites(server, path, store_outputs)
    planned = [index for index in selection.indices if sources[index][1].strip()]
    # nbclient's tags, read now (the document changes under later awaits). Cells the caller
    # named by id run whatever their tags: the caller chose them.
    chosen = isinstance(request.cells, list)
    skipping = {
        index for index in planned if not chosen and skips_execution(view.notebook.cells[index])
    }
    expecting = {index for index in planned if expects_an_error(view.notebook.cells[index])}
    report.tag_skipped = [sources[index][0] for index in planned if index in skipping]
    planned = [index for index in planned if index not in skipping]
    try:
        for position, index in enumerate(planned):
            cell_id, source = sources[index]
            reason = request.stop_requested()
            if reason is not None:
                report.stop_reason = reason
                report.not_run = [sources[i][0] for i in planned[position:]]
                break
            if selection.stale_only and states.state_of(index) == FRESH:
                report.fresh_skipped += 1
                continue
            step = f"cell {position + 1} of {len(planned)} ([{index}] {cell_id})"
            # Its app (a client with apps) follows the run cell by cell, as it goes.
            show_cell_started(position, len(planned), index, cell_id, source)
            with contextlib.suppress(RuntimeError):  # outside a request: no agent to mark
                worked_on(None, path, cell_id, RAN)
            try:
                async with server.store.executing(path, cell_id) as show_live:
                    with listening(show_live):
                        outcome = await run_on(server, kernel, source, request.timeout, path)
            except ToolFailure as failure:
                if failure.code not in (KERNEL_GONE, KERNEL_UNRESPONSIVE):
                    raise
                ran = CellRan(
                    index, cell_id, CELL_GONE if failure.code == KERNEL_GONE else CELL_UNRESPONSIVE
                )
                ran.not_stored = (
                    "its kernel was gone" if failure.code == KERNEL_GONE else "nothing ran"
                )
                report.cells.append(ran)
                show_execution(
                    [],
                    source=source,
                    status=ran.status,
                    execution_count=None,
                    cell_id=cell_id,
                    path=path,
                )
                report.stopped_at, report.stop_reason = ran, failure.message
                report.not_run = [sources[i][0] for i in planned[position + 1 :]]
                announce(f"{step}: {ran.status}")
                break
            runs.ran(cell_id, source, kernel.kernel_id, outcome.status)
            writes.add(
                Pending(
                    cell_id,
                    source,
                    outcome,
                    display_writes(runs, kernel.kernel_id, cell_id, outcome),
                )
            )
            ran = CellRan(index, cell_id, outcome.status, outcome)
            show_execution(
                outcome.outputs.outputs,
                source=source,
                status=outcome.status,
                execution_count=outcome.execution_count,
                cell_id=cell_id,
                path=path,
            )
            ran.expected_error = outcome.status == "error" and index in expecting
            report.cells.append(ran)
            count = f" [{outcome.execution_count}]" if outcome.execution_count is not None else ""
            announce(f"{step}: {outcome.status}{count}")
            failed = outcome.status != "ok" and not ran.expected_error
            if failed and (request.stop_on_error or outcome.status == INTERRUPTED):
                report.stopped_at = ran
                report.stop_reason = stop_reason(ran)
                report.not_run = [sources[i][0] for i in planned[position + 1 :]]
                break
    finally:
        with contextlib.suppress(Exception):
            await writes.drain()
    for ran in report.cells:
        ran.not_stored = ran.not_stored or writes.not_stored.get(ran.cell_id)
    report.written, report.write_failure = writes.written, writes.failure
    return report


def stop_reason(ran: CellRan) -> str:
    """Why a run stopped at a cell that ended `ran.status`, in a sentence."""
    outcome = ran.outcome
    if outcome is not None and outcome.reason:
        return outcome.reason
    error = outcome.outputs.error if outcome is not None else None
    if ran.status == "error" and error is not None:
        return (
            f"it raised {error.ename}: {error.evalue}"
            if error.evalue
            else f"it raised {error.ename}"
        )
    return {
        "error": "it failed",
        "timeout": "it timed out and its kernel was interrupted",
        "interrupted": "it was interrupted",
    }.get(ran.status, ran.status)
