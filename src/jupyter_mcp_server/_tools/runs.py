"""The ``runs`` toolset: whole-notebook runs, stale cells, and clearing outputs.

One tool runs any selection of a notebook's cells, so a model reads one
schema instead of four: ``run_cells(cells="all")`` is run-all,
``run_cells(cells="all", restart=True)`` restart-and-run-all,
``run_cells(cells="stale", up_to_cell=X)`` runs what is stale above and
including X, and ``cells="3-7"`` or a list of ids runs those. The toolset is
opt-in (``/mcp?runs``, ``--toolsets runs``): every tool costs context in
every conversation.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.approvals import (
    RESTART_KERNEL,
    SHELL_CODE,
    approve,
    approve_shell_cells,
    approved_already,
)
from jupyter_mcp_server._calls.detached import cancelled_reason
from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._rendering.content import InlineLimits, upgrade_by_edit
from jupyter_mcp_server._runs.cell_selection import CELLS_HELP, Selection, select
from jupyter_mcp_server._runs.detaching import detached, run_queue
from jupyter_mcp_server._runs.executions import effective_timeout
from jupyter_mcp_server._runs.notebook_runs import RunRequest, run_notebook
from jupyter_mcp_server._runs.run_summary import run_result
from jupyter_mcp_server._schemas import run_models
from jupyter_mcp_server._state import state_of
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import (
    Detach,
    ExpectedRevision,
    MaxOutputChars,
    NotebookName,
)
from jupyter_mcp_server._tool_calls.results import answer, tool_handler

RUNS_TOOLSET = "runs"

Cells = Annotated[str | list[str], Field(description=CELLS_HELP)]
UpToCell = Annotated[
    int | str | None,
    Field(description="End the selection at this cell, included: its id or 0-based index."),
]


@tool_handler("run_cells")
async def run_cells(
    cells: Cells = "all",
    up_to_cell: UpToCell = None,
    restart: Annotated[
        bool,
        Field(
            description="Restart the kernel first (every variable is lost): restart-and-run-all."
        ),
    ] = False,
    stop_on_error: Annotated[
        bool,
        Field(
            description="Stop at the first cell that fails (default); false runs on past errors."
        ),
    ] = True,
    timeout: Annotated[
        float | None,
        Field(
            description="Seconds each cell may run before its kernel is interrupted; default: the server's."
        ),
    ] = None,
    notebook_name: NotebookName = None,
    max_output_chars: MaxOutputChars = None,
    detach: Detach = False,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, run_models.NotebookRun]:
    """Run a notebook's code cells in order on its kernel: run all, run a range or a list of ids, restart and run all, or run the stale cells.

    Each cell's outputs are stored in the notebook as soon as it ends, so whatever ran is kept if the run stops. Answers a line per cell (id, status, execution count, its outputs cut to the budget) and where the run stopped and why.
    """
    server = state_of(ctx)
    seconds = effective_timeout(server, timeout)
    limits = InlineLimits.of(server.config, max_output_chars)
    path = notebook_path(ctx, notebook_name)
    if detach:
        return await _detached_run(
            ctx, path, cells, up_to_cell, restart, stop_on_error, timeout, max_output_chars
        )

    async def approved(notebook: Any, selection: Selection) -> None:
        await _approve_run(ctx, path, notebook, selection, restart)

    request = RunRequest(
        path=path,
        cells=cells,
        up_to_cell=up_to_cell,
        restart=restart,
        stop_on_error=stop_on_error,
        timeout=seconds,
        stop_requested=cancelled_reason,
        approve=approved,
    )
    # One run on a kernel at a time, in order with its detached runs: cells of two runs never interleave.
    async with server.runs.turn(run_queue(server, path)):
        report = await run_notebook(server, request)
    revision = report.written.revision if report.written is not None else report.read_revision
    with contextlib.suppress(ToolFailure):
        revision = await server.store.revision(path)
    return run_result(report, revision, limits)


async def _detached_run(
    ctx: Context | None,
    path: str,
    cells: str | list[str],
    up_to_cell: int | str | None,
    restart: bool,
    stop_on_error: bool,
    timeout: float | None,
    max_output_chars: int | None,
) -> CallToolResult:
    """run_cells as a detached run; the selection is checked now, so a bad one is refused at once."""
    server = state_of(ctx)
    view = await server.store.read(path)
    selection = select(view.notebook, cells, up_to_cell)
    # Asked now, while the caller is there to answer; the run itself comes later.
    await _approve_run(ctx, path, view.notebook, selection, restart)
    approved_already(RESTART_KERNEL, SHELL_CODE)

    async def call() -> CallToolResult:
        return await run_cells(
            cells=cells,
            up_to_cell=up_to_cell,
            restart=restart,
            stop_on_error=stop_on_error,
            timeout=timeout,
            notebook_name=path,
            max_output_chars=max_output_chars,
            ctx=ctx,
        )

    started = run_models.NotebookRun(
        status="running",
        kernel_id=server.kernels.kernel_id_of(path),
        read_revision=view.revision,
        revision=view.revision,
        cells_selected=len(selection.indices),
        cells_run=0,
        cells=[],
        stopped_at=None,
        stop_reason=None,
        not_run=[],
        fresh_skipped=0,
    ).model_dump()
    return await detached(
        ctx, "run_cells", call, queue=run_queue(server, path), notebook=path, started=started
    )


async def _approve_run(
    ctx: Context | None, path: str, notebook: Any, selection: Selection, restart: bool
) -> None:
    """Ask the person before a run restarts the notebook's kernel or runs cells with shell commands."""
    server = state_of(ctx)
    attached = server.kernels.kernel_id_of(path)
    if restart and attached is not None:
        await approve(
            ctx,
            RESTART_KERNEL,
            f"Restart the kernel of '{path}' (kernel {attached}) before running its cells: every variable it holds is lost.",
        )
    chosen = (notebook.cells[index] for index in selection.indices)
    await approve_shell_cells(
        ctx, ((str(cell.get("id", "")), cell.get("source", "")) for cell in chosen), f"of '{path}'"
    )


@tool_handler("clear_outputs")
async def clear_outputs(
    cells: Cells = "all",
    up_to_cell: UpToCell = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, run_models.OutputsCleared]:
    """Remove the outputs and execution counts of a notebook's code cells (all of them, a range, or a list of ids) in one revision. Sources are kept."""
    path = notebook_path(ctx, notebook_name)
    if isinstance(cells, str) and cells.strip().lower() == "stale":
        raise ToolFailure(
            INVALID_ARGUMENT, 'clear_outputs takes "all", a range or a list of ids, not "stale".'
        )

    def change(notebook: Any) -> list[str]:
        cleared = []
        for index in select(notebook, cells, up_to_cell).indices:
            cell = notebook.cells[index]
            if cell.get("outputs") or cell.get("execution_count") is not None:
                cleared.append(str(cell["id"]))
            cell["outputs"] = []
            cell["execution_count"] = None
        return cleared

    server = state_of(ctx)
    cleared, view = await server.store.mutate(path, change, expected_revision)
    runs = server.kernels.records.peek(path)
    if runs is not None:
        for cell_id in cleared:
            runs.forget_cell(cell_id)
    upgraded, said = upgrade_by_edit(view)
    result = run_models.OutputsCleared(
        cleared=cleared, revision=view.revision, format_upgraded=upgraded
    )
    what = (
        f"Cleared the outputs of {len(cleared)} cell(s)"
        if cleared
        else "No selected cell had outputs; nothing changed"
    )
    return answer(result.model_dump(), f"{what} in '{path}'; revision {view.revision}.{said}")
