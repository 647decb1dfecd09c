"""The tools that run code: cells, scratch code, and interrupts.

An execution holds its kernel's lock, so one notebook's cells run in order
while different notebooks run in parallel. A cell's outputs are written back
into that cell by id when it finishes, even when it failed, so an unrelated
edit made during a long execution never costs the outputs; only a changed
source of that very cell is a conflict.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.approvals import (
    SHELL_CODE,
    approve_shell_code,
    approved_already,
    shell_lines,
)
from jupyter_mcp_server._calls.scratch import scratch_uri
from jupyter_mcp_server._errors import (
    INVALID_ARGUMENT,
    KERNEL_GONE,
    NOT_FOUND,
    REVISION_CONFLICT,
    ToolFailure,
)
from jupyter_mcp_server._kernels.execution import ExecutionOutcome
from jupyter_mcp_server._kernels.kernel import gone_message
from jupyter_mcp_server._kernels.records import source_hash
from jupyter_mcp_server._kernels.widgets import store_widget_state
from jupyter_mcp_server._rendering.content import (
    DEFAULT_INLINE,
    InlineLimits,
    OutputLink,
    upgrade_by_edit,
)
from jupyter_mcp_server._runs.detaching import detached, execution_started, kernel_queue, run_queue
from jupyter_mcp_server._runs.displays import display_writes
from jupyter_mcp_server._runs.executions import (
    effective_timeout,
    execution_result,
    metadata_kernel,
    run_on,
    store_outputs,
)
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._store import NotebookView, new_cell
from jupyter_mcp_server._store.store import revision_conflict
from jupyter_mcp_server._tool_calls.addressing import (
    cell_position,
    index_of_id,
    insertion_index,
    notebook_path,
)
from jupyter_mcp_server._tool_calls.arguments import (
    Detach,
    ExpectedRevision,
    MaxOutputChars,
    NotebookName,
)
from jupyter_mcp_server._tool_calls.listening import listening
from jupyter_mcp_server._tool_calls.results import answer, failure, tool_handler
from jupyter_mcp_server._tool_calls.working import RAN, worked_on
from jupyter_mcp_server._workspace.storage_errors import STORAGE_CODES

logger = logging.getLogger(__name__)
T = TypeVar("T")

Timeout = Annotated[
    float | None,
    Field(description="Seconds before interrupting (default: server's)."),
]


def scratch_link(server: ServerState, outcome: ExecutionOutcome) -> OutputLink | None:
    """The link to each output no notebook stores, kept among the scratch outputs the first
    time a result needs it (a result that cuts nothing keeps nothing)."""
    outputs = outcome.outputs.outputs
    if not outputs:
        return None
    keys: list[str] = []

    def link(index: int) -> str:
        if not keys:
            keys.append(server.scratch.put(outputs))
        return scratch_uri(keys[0], index)

    return link


#: A new cell whose run ends within this many seconds is written once, with its outputs;
#: a longer run (or one waiting for its kernel) has the cell written as it starts.
WRITTEN_WITH_OUTPUTS_WITHIN = 0.2


@dataclass(frozen=True)
class NewCell:
    """A code cell ``insert_execute_code_cell`` runs before it is in the notebook.

    Written before its run and again after it, a new cell costs two durable
    writes (each a file and a directory ``fsync``) and two history entries.
    A quick run instead writes the cell and its outputs once, when it ends.
    That is as safe for everything a caller was told: until the call answers
    nobody was told the cell exists, and a crash before the write loses only
    a cell no answer named (its kernel dies with the server); once it answers,
    the cell and its outputs are durable exactly as before. Readers meanwhile
    see the notebook as it was before the call, then with the cell and its
    outputs together, never the cell without them. A run still going after
    :data:`WRITTEN_WITH_OUTPUTS_WITHIN` has its cell written then, so a
    person looking at the file sees what is running, as before.
    """

    #: Where the caller asked for it (-1 appends); past the end of a notebook that
    #: shrank while the code ran, it goes last.
    index: int
    cell_id: str
    source: str

    def insert(self, notebook: Any) -> None:
        cells = notebook.cells
        index = len(cells) if self.index == -1 else min(self.index, len(cells))
        cell = new_cell("code", self.source)
        cell["id"] = self.cell_id
        cells.insert(index, cell)

    def inserted_then(self, change: Callable[[Any], T]) -> Callable[[Any], T]:
        """`change` (its outputs' writer), applied to the notebook with this cell inserted."""

        def both(notebook: Any) -> T:
            self.insert(notebook)
            return change(notebook)

        return both


async def _run_then_insert(
    server: ServerState,
    path: str,
    new: NewCell,
    execute: Callable[[], Awaitable[ExecutionOutcome]],
) -> tuple[ExecutionOutcome, NewCell | None]:
    """Run `new`'s code; write the cell as the run starts only if it is not quick (see
    :class:`NewCell`). The outcome, and `new` if the cell is still to be written."""
    run = asyncio.ensure_future(execute())
    pending: NewCell | None = new
    try:
        done, _ = await asyncio.wait({run}, timeout=WRITTEN_WITH_OUTPUTS_WITHIN)
        if not done:
            try:
                await server.store.mutate(path, new.insert)
                pending = None
            except ToolFailure:
                # The code runs regardless; the write after it tries again, and its
                # failure is what the answer reports (the code ran, its outputs are not stored).
                logger.debug("Could not write new cell %s before its run ended", new.cell_id)
        return await run, pending
    except BaseException:
        # Cancelled while it waited: the run is cancelled too, and ends (its interrupt, its
        # kernel's turn) before this does, as when it is awaited directly.
        run.cancel()
        await asyncio.wait({run})
        if not run.cancelled():
            run.exception()  # seen: what it raised is not what the caller is told
        raise


def cell_writer(
    cell_id: str,
    source: str,
    outcome: ExecutionOutcome,
    displays: Callable[[Any], None] | None = None,
) -> Any:
    """Write an execution's outputs into its cell by id, wherever the cell is now (and with
    `displays`, its display updates into the cells showing those ids)."""

    def change(notebook: Any) -> None:
        index = index_of_id(notebook, cell_id)
        if index is None:
            raise ToolFailure(
                NOT_FOUND,
                f"Cell {cell_id} was deleted while it ran; its outputs are returned but not stored.",
                cell_id=cell_id,
            )
        cell = notebook.cells[index]
        if cell.get("source", "") != source:
            raise ToolFailure(
                REVISION_CONFLICT,
                f"Cell {cell_id}'s source was changed while it ran; its outputs are returned but not "
                "stored, so they are not attached to code that did not produce them. Run it again.",
                cell_id=cell_id,
            )
        store_outputs(cell, outcome)
        store_widget_state(notebook, outcome.widgets)
        if displays is not None:
            displays(notebook)

    return change


async def run_cell(
    server: ServerState,
    view: NotebookView,
    cell_id: str,
    source: str,
    timeout: float,
    limits: InlineLimits = DEFAULT_INLINE,
    new: NewCell | None = None,
) -> CallToolResult:
    """Run a cell of the notebook ``view`` was just read from (or written to), and store its
    outputs. With `new`, the cell is not in the notebook yet: it is inserted with its outputs,
    in one write when the run is quick (see :class:`NewCell`)."""
    path = view.path
    attachment = await server.kernels.live_kernel_of(
        path, metadata_kernel=metadata_kernel(server, view.notebook), to_run_code=True
    )

    async def execute() -> ExecutionOutcome:
        async with server.store.executing(path, cell_id) as show_live:
            with listening(show_live):
                return await run_on(server, attachment.kernel, source, timeout, path)

    if new is None:
        outcome = await execute()
    else:
        outcome, new = await _run_then_insert(server, path, new, execute)
    runs = server.kernels.records.of(path)
    runs.ran(cell_id, source, attachment.kernel.kernel_id, outcome.status)
    displays = display_writes(runs, attachment.kernel.kernel_id, cell_id, outcome)
    notes = [attachment.note] if attachment.note else []
    if attachment.replaced:
        notes.append(
            f"Note: the kernel of '{path}' was gone and a replacement was started (kernel.auto-restart); "
            "earlier variables, imports and definitions are not in it."
        )
    change = cell_writer(cell_id, source, outcome, displays)
    if new is not None:
        change = new.inserted_then(change)
    try:
        _, written = await server.store.mutate(path, change)
    except ToolFailure as error:
        # The insert before the run may have been the edit that upgraded the file.
        upgraded, said = upgrade_by_edit(view)
        result = execution_result(
            outcome,
            cell_id=cell_id,
            note=" ".join([*notes, said.strip()]).strip() or None,
            format_upgraded=upgraded,
            limits=limits,
            link=scratch_link(server, outcome),
            source=source,
        )
        error.details.setdefault("current_revision", await _revision_or_none(server, path))
        if error.code in STORAGE_CODES:
            # The code did run: say so before what the disk said, so that nobody runs it twice
            # thinking it did not.
            error = ToolFailure(
                error.code,
                f"Cell {cell_id} ran (status {outcome.status}; its outputs are below) but its outputs "
                f"were not stored in {path}: {error.message}",
                **error.details,
            )
        return failure(error, structured=result.structured_content, content=result.content[:])
    upgraded, said = upgrade_by_edit(view if view.upgraded_from else written)
    return execution_result(
        outcome,
        cell_id=cell_id,
        revision=written.revision,
        note=" ".join([*notes, said.strip()]).strip() or None,
        path=path,
        format_upgraded=upgraded,
        limits=limits,
        source=source,
    )


async def _revision_or_none(server: ServerState, path: str) -> str | None:
    with contextlib.suppress(ToolFailure):
        return await server.store.revision(path)
    return None


@tool_handler("execute_cell")
async def execute_cell(
    cell_index: Annotated[int | None, Field(description="0-based index; or give cell_id.")] = None,
    cell_id: Annotated[str | None, Field(description="Stable id; or give cell_index.")] = None,
    timeout: Timeout = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    max_output_chars: MaxOutputChars = None,
    detach: Detach = False,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.ExecutionResult]:
    """Run a code cell on the notebook's kernel and store its outputs (even when it fails); a timeout interrupts the kernel and returns the outputs so far."""
    return await run_stored_cell(
        ctx,
        notebook_path(ctx, notebook_name),
        cell_index,
        cell_id,
        expected_revision=expected_revision,
        timeout=timeout,
        max_output_chars=max_output_chars,
        detach=detach,
    )


async def run_stored_cell(
    ctx: Context | None,
    path: str,
    cell_index: int | None,
    cell_id: str | None,
    *,
    expected_revision: str | None = None,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    detach: bool = False,
    seen_source: str | None = None,
) -> CallToolResult:
    """Run a code cell of `path` as it is stored: the one way ``execute_cell`` and the notebook
    view (``_tools/viewing.py``) run a cell, with the same checks and the same approval of its
    shell lines. `seen_source` (the view's): the hash of the source the person was shown, a
    cell changed since is refused; and the run is the person's, not the agent's working cell."""
    server = state_of(ctx)
    seconds = effective_timeout(server, timeout)
    limits = InlineLimits.of(server.config, max_output_chars)
    view = await server.store.read(path)
    if expected_revision is not None and expected_revision != view.revision:
        raise ToolFailure(
            REVISION_CONFLICT,
            f"'{path}' changed since revision {expected_revision}; it is now at {view.revision}. "
            f"Read it again and retry with expected_revision={view.revision}.",
            current_revision=view.revision,
        )
    cell = view.notebook.cells[cell_position(view.notebook, cell_index, cell_id)]
    if cell.get("cell_type") != "code":
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"Cell {cell['id']} is a {cell['cell_type']} cell; only code cells run.",
        )
    if seen_source is not None and seen_source != source_hash(cell.get("source", "")):
        raise ToolFailure(
            REVISION_CONFLICT,
            f"Cell {cell['id']} of '{path}' was edited since the view showed it: it did not run. "
            "Its source now is in the view; run it again if it is what you want to run.",
            cell_id=cell["id"],
            current_revision=view.revision,
        )
    await approve_shell_code(ctx, cell.get("source", ""), f"in cell {cell['id']} of '{path}'")
    if detach:
        approved_already(SHELL_CODE)  # asked above, while the caller was there to answer
        return await _detached_cell(
            ctx, "execute_cell", path, cell["id"], view.revision, timeout, max_output_chars
        )
    if seen_source is None:
        worked_on(ctx, path, cell["id"], RAN)
    return await run_cell(server, view, cell["id"], cell.get("source", ""), seconds, limits)


async def _detached_cell(
    ctx: Context | None,
    tool: str,
    path: str,
    cell_id: str,
    revision: str,
    timeout: float | None,
    max_output_chars: int | None,
) -> CallToolResult:
    """Run the cell `cell_id` as a detached run (its turn comes after the runs queued on the notebook)."""

    async def call() -> CallToolResult:
        return await execute_cell(
            cell_id=cell_id,
            timeout=timeout,
            notebook_name=path,
            max_output_chars=max_output_chars,
            ctx=ctx,
        )

    started = execution_started(cell_id, revision)
    return await detached(
        ctx, tool, call, queue=run_queue(state_of(ctx), path), notebook=path, started=started
    )


@tool_handler("insert_execute_code_cell")
async def insert_execute_code_cell(
    cell_index: Annotated[
        int, Field(description="Where the new code cell goes (0-based); -1 appends.")
    ],
    cell_source: Annotated[str, Field(description="The code to put in the cell and run.")],
    timeout: Timeout = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    max_output_chars: MaxOutputChars = None,
    detach: Detach = False,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.ExecutionResult]:
    """Insert a new code cell and run it; its outputs are stored in the notebook. The usual way to add and run code."""
    server = state_of(ctx)
    seconds = effective_timeout(server, timeout)
    limits = InlineLimits.of(server.config, max_output_chars)
    path = notebook_path(ctx, notebook_name)
    await approve_shell_code(ctx, cell_source, f"in a new cell of '{path}'")

    if not detach and not await server.store.shows_runs_live(path):
        # Written once, with its outputs, when the run is quick (NewCell says why that is
        # as safe); checked now as the insert would be, before any code runs.
        view = await server.store.read(path)
        if expected_revision is not None and expected_revision != view.revision:
            raise revision_conflict(path, expected_revision, view.revision)
        insertion_index(view.notebook.cells, cell_index)
        new = NewCell(cell_index, new_cell("code", cell_source)["id"], cell_source)
        worked_on(ctx, path, new.cell_id, RAN)
        return await run_cell(server, view, new.cell_id, cell_source, seconds, limits, new)

    def change(notebook: Any) -> str:
        index = insertion_index(notebook.cells, cell_index)
        cell = new_cell("code", cell_source)
        notebook.cells.insert(index, cell)
        return cell["id"]

    cell_id, view = await server.store.mutate(path, change, expected_revision)
    worked_on(ctx, path, cell_id, RAN)
    if detach:
        approved_already(SHELL_CODE)  # asked above, while the caller was there to answer
        return await _detached_cell(
            ctx, "insert_execute_code_cell", path, cell_id, view.revision, timeout, max_output_chars
        )
    return await run_cell(server, view, cell_id, cell_source, seconds, limits)


@tool_handler("execute_code")
async def execute_code(
    code: Annotated[str, Field(description="Code to run.")],
    timeout: Timeout = None,
    kernel_id: Annotated[
        str | None,
        Field(description="Run on this kernel (see list_kernels) instead of the notebook's."),
    ] = None,
    notebook_name: NotebookName = None,
    max_output_chars: MaxOutputChars = None,
    detach: Detach = False,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.ExecutionResult]:
    """Run scratch code on a notebook's kernel (or kernel_id) without storing it: to inspect variables, install packages, check quickly. What it defines stays in the kernel."""
    server = state_of(ctx)
    seconds = effective_timeout(server, timeout)
    limits = InlineLimits.of(server.config, max_output_chars)
    if shell_lines(code):
        where = f"on kernel {kernel_id}"
        if kernel_id is None:
            try:
                where = f"on the kernel of '{notebook_path(ctx, notebook_name)}'"
            except ToolFailure:
                where = "as scratch code"
        await approve_shell_code(ctx, code, where)
    if detach:
        approved_already(SHELL_CODE)  # asked above, while the caller was there to answer
        path = None if kernel_id is not None else notebook_path(ctx, notebook_name)
        if kernel_id is not None:
            server.kernels.get(kernel_id)

        async def call() -> CallToolResult:
            return await execute_code(
                code=code,
                timeout=timeout,
                kernel_id=kernel_id,
                notebook_name=path,
                max_output_chars=max_output_chars,
                ctx=ctx,
            )

        queue = kernel_queue(kernel_id) if kernel_id is not None else run_queue(server, str(path))
        return await detached(
            ctx, "execute_code", call, queue=queue, notebook=path, started=execution_started()
        )
    for intercept in server.interceptors:
        intercepted = await intercept(code, seconds)
        if intercepted is not None:
            return intercepted
    if kernel_id is not None:
        kernel = server.kernels.get(kernel_id)
        if not await kernel.is_alive():
            await server.kernels.mark_lost(kernel)
            raise ToolFailure(KERNEL_GONE, gone_message(f"kernel {kernel_id}"), kernel_id=kernel_id)
        outcome = await run_on(server, kernel, code, seconds, None)
        return execution_result(
            outcome, limits=limits, link=scratch_link(server, outcome), source=code
        )
    path = notebook_path(ctx, notebook_name)

    async def named_kernel() -> str | None:
        # Read only when a kernel has to start: scratch code needs no file.
        return await metadata_kernel(server, (await server.store.read(path)).notebook)()

    attachment = await server.kernels.live_kernel_of(
        path, metadata_kernel=named_kernel, to_run_code=True
    )
    outcome = await run_on(server, attachment.kernel, code, seconds, path)
    note = attachment.note or (
        "Note: the kernel was gone and a replacement was started (kernel.auto-restart)."
        if attachment.replaced
        else None
    )
    return execution_result(
        outcome, note=note, limits=limits, link=scratch_link(server, outcome), source=code
    )


@tool_handler("interrupt_kernel")
async def interrupt_kernel(
    kernel_id: Annotated[str, Field(description="The kernel to interrupt (see list_kernels).")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.KernelOnly]:
    """Interrupt what a kernel is running (like Ctrl-C); its variables are kept. Says whether anything was running."""
    server = state_of(ctx)
    kernel = server.kernels.get(kernel_id)
    was_busy = await server.kernels.interrupt(kernel)
    text = (
        f"Interrupted kernel {kernel_id}."
        if was_busy
        else f"Kernel {kernel_id} was idle; the interrupt had nothing to stop."
    )
    return answer({"kernel_id": kernel_id}, text)


@tool_handler("interrupt_notebook_session")
async def interrupt_notebook_session(
    notebook_name: Annotated[str, Field(description="use_notebook name or path.")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.KernelOnly]:
    """Interrupt the code a notebook's kernel is running (like Ctrl-C); its variables are kept."""
    server = state_of(ctx)
    path = notebook_path(ctx, notebook_name)
    kernel_id = server.kernels.kernel_id_of(path)
    if kernel_id is None and server.kernels.is_lost(path):
        raise ToolFailure(KERNEL_GONE, gone_message(path), notebook=path)
    if kernel_id is None:
        raise ToolFailure(
            NOT_FOUND,
            f"'{path}' has no kernel; nothing is running. Call use_notebook to attach one.",
        )
    kernel = server.kernels.get(kernel_id)
    was_busy = await server.kernels.interrupt(kernel)
    text = (
        f"Interrupted '{path}' (kernel {kernel_id})."
        if was_busy
        else f"'{path}' was idle; the interrupt had nothing to stop."
    )
    return answer({"kernel_id": kernel_id}, text)
