"""A tool's call run detached: a run of the server's that outlives its request.

``detach=true`` on an execution tool, and a whole-notebook run, start the call as a run
(:mod:`jupyter_mcp_server._calls.detached`) and answer at once with its id. A run waits in
its notebook's kernel's queue (:func:`run_queue`), so two notebooks sharing a kernel never
run on it at once; a client with apps follows it in the output app (:func:`watched`).
The tools that start, follow and cancel runs call into this module; it imports none of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent

from jupyter_mcp_server._apps.shown import RunShown, apps_shown, show_run, watching_run
from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._calls.detached import Run
from jupyter_mcp_server._schemas import models, run_models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.listening import listen_only
from jupyter_mcp_server._tool_calls.results import answer


def notebook_queue(path: str) -> str:
    """The queue runs on a notebook's kernel wait in."""
    return f"notebook:{path}"


def kernel_queue(kernel_id: str) -> str:
    return f"kernel:{kernel_id}"


def run_queue(server: ServerState, path: str) -> str:
    """The queue a notebook's runs wait in: its kernel's, so two notebooks sharing one kernel
    take turns on it; a notebook with no kernel yet gets one of its own, so its own queue."""
    own = notebook_queue(path)
    kernel_id = server.kernels.kernel_id_of(path)
    # A run that started before the kernel did holds the notebook's own queue: the runs after
    # it wait there too, not beside it on the kernel's.
    if kernel_id is None or server.runs.busy(own):
        return own
    return kernel_queue(kernel_id)


async def detached(
    ctx: Context | None,
    tool: str,
    call: Callable[[], Awaitable[CallToolResult]],
    *,
    queue: str | None,
    notebook: str | None = None,
    started: dict[str, Any],
) -> CallToolResult:
    """Start `call` (the tool itself, not detached) as a run, and answer at once: the tool's
    own result shape as `started` says it (status ``running``), with the run_id."""
    server = state_of(ctx)
    caller = caller_of(ctx)
    # A client with apps shows the person the run as it goes (watch_run): it keeps its cells.
    view = RunShown(total=int(started.get("cells_selected", 1))) if apps_shown() else None

    def prepare(run: Run) -> None:
        listen_only(run.on_output)
        if view is not None:
            watching_run(view)

    run = server.runs.start(
        owner=caller.owner,
        caller=caller,
        tool=tool,
        call=call,
        queue=queue,
        notebook=notebook,
        prepare=prepare,
        fresh_context=True,
    )
    run.shown = view
    if view is not None:
        show_run(watched(run, 0)[1])
    ahead = server.runs.position(run) or 0
    waits = f", behind {ahead} run(s) on this notebook's kernel" if ahead else ""
    text = (
        f"Started {tool} as run {run.run_id}{waits}. It goes on whatever happens to this connection, and its "
        f"outputs are stored as usual. Follow it with get_run(run_id='{run.run_id}', since_output=0) "
        f"(pass next_output back as since_output); stop it with cancel_run."
    )
    return answer({**started, "status": "running", "run_id": run.run_id}, text)


def execution_started(cell_id: str | None = None, revision: str | None = None) -> dict[str, Any]:
    """An execution tool's result for a run that has only started."""
    truncation = models.TruncationModel(truncated=False, omitted_blocks=0, omitted_bytes=0)
    return models.ExecutionResult(
        execution_count=None,
        truncation=truncation,
        error=None,
        user_expressions=None,
        status="running",
        cell_id=cell_id,
        revision=revision,
    ).model_dump()


def first_text(result: CallToolResult) -> str:
    return next((block.text for block in result.content if isinstance(block, TextContent)), "")


def watched(run: Run, since_cell: int) -> tuple[run_models.RunWatch, dict[str, Any]]:
    """`run` as its app follows it: the progress, and that with the cells ended since `since_cell`."""
    view = run.shown if isinstance(run.shown, RunShown) else RunShown()
    outcome, said = None, None
    if run.result is not None:
        structured = run.result.structured_content or {}
        outcome = str(structured.get("status") or ("error" if run.result.is_error else "ok"))
        said = first_text(run.result).split("\n")[0][:500]
    elif run.error is not None:
        outcome, said = "error", str(run.error.get("message", ""))[:500]
    if run.status == "cancelled":
        # Stopped by cancel_run (its cell ended interrupted): the person reads it as cancelled.
        outcome = "cancelled"
    running = None
    if view.running is not None and not run.finished:
        running = {"index": view.running["index"], "cell_id": view.running["cell_id"]}
    watch = run_models.RunWatch(
        run_id=run.run_id,
        tool=run.tool,
        status=run.status,  # type: ignore[arg-type]
        notebook=run.notebook,
        cells_total=view.total,
        cells_done=min(view.done, view.total),
        running=running,
        next_cell=len(view.executions),
        ended=run.finished,
        outcome=outcome,
        said=said,
    )
    shown = {
        **watch.model_dump(),
        "running": view.running if running is not None else None,
        "executions": view.executions[since_cell:],
    }
    return watch, shown
