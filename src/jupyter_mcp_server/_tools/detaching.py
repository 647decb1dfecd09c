"""``detach=true``, ``get_run`` and ``cancel_run``: long runs that never time out a client.

Any execution tool given ``detach=true`` answers at once with a ``run_id``
and goes on as a run of the server's (:mod:`jupyter_mcp_server._calls.detached`),
whatever happens to the connection that started it: its outputs are stored
in the notebook as they would have been. ``get_run`` answers where the run
is (its place in its notebook's queue), the outputs added since
``since_output``, and, once it ended, the tool's own result; ``cancel_run``
interrupts it. A run belongs to the caller that started it: the same person,
client and session (or agent handle, which carries it to the client's next
connection, ``_calls/callers.py``); any other id, or one that expired, is
``not_found``. A run a client with apps started is also followed by the output app
(``watch_run``, app-only): its progress, and each cell whole as it ends. Runs wait in
their notebook's kernel's queue (:mod:`jupyter_mcp_server._runs.detaching`): two notebooks
sharing a kernel never run on it at once.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ContentBlock, TextContent
from pydantic import Field

from jupyter_mcp_server._apps.shown import show_run
from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._calls.detached import Run
from jupyter_mcp_server._errors import NOT_FOUND, ToolFailure
from jupyter_mcp_server._rendering.content import InlineLimits, bounded_outputs, output_blocks
from jupyter_mcp_server._runs.detaching import (
    first_text,
    watched,
)
from jupyter_mcp_server._schemas import run_models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._text.timestamps import iso_utc
from jupyter_mcp_server._tool_calls.results import answer, outcome_of, tool_handler


def without_detach(
    tool: Callable[..., Awaitable[CallToolResult]],
) -> Callable[..., Awaitable[CallToolResult]]:
    """`tool` as the default toolset offers it: the same call, without its ``detach`` argument.

    Following a detached run takes get_run and cancel_run, which are in the ``runs``
    toolset; a client without them would be handed a run_id it cannot use. With that
    toolset on, the tool with ``detach`` is offered under the same name in its place
    (declared after, it replaces this one). Tasks, the protocol's own way of not
    waiting, stay on the default tools for clients that ask for them.
    """

    @functools.wraps(tool)
    async def offered(*args: Any, **kwargs: Any) -> CallToolResult:
        return await tool(*args, **kwargs)

    signature = inspect.signature(tool, eval_str=True)
    offered.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[
            parameter for parameter in signature.parameters.values() if parameter.name != "detach"
        ]
    )
    offered.__annotations__ = {
        name: hint for name, hint in tool.__annotations__.items() if name != "detach"
    }
    return offered


#: The longest a get_run waits for something new.
MAX_WAIT = 60.0


def run_state(
    server: ServerState, run: Run, since_output: int, limits: InlineLimits
) -> run_models.RunState:
    """`run` as get_run answers it."""
    outputs: list[dict[str, Any]] = []
    missed = 0
    if not run.finished:
        kept, missed = run.outputs_since(since_output)
        outputs, _ = bounded_outputs(kept, lambda index: "the notebook (read_cell)", limits)
    result, is_error, error = None, None, run.error
    if run.result is not None:
        result = run.result.structured_content
        is_error = bool(run.result.is_error)
        if is_error:
            error = {"code": outcome_of(run.result), "message": first_text(run.result)}
    return run_models.RunState(
        run_id=run.run_id,
        tool=run.tool,
        status=run.status,  # type: ignore[arg-type]
        queue_position=server.runs.position(run),
        notebook=run.notebook,
        created_at=iso_utc(run.created),
        updated_at=iso_utc(run.updated),
        status_message=run.status_message,
        outputs=outputs,
        next_output=run.output_count,
        outputs_missed=missed,
        result=result,
        result_is_error=is_error,
        error=error,
    )


def _find(ctx: Context | None, run_id: str) -> tuple[ServerState, Run]:
    server = state_of(ctx)
    run = server.runs.find(run_id, caller_of(ctx))
    if run is None:
        raise ToolFailure(
            NOT_FOUND,
            f"No run '{run_id}' of yours is known here: it never existed, belongs to another caller (another person, client or session), or ended "
            f"more than {server.runs.ttl_seconds:g} s ago (finished runs are kept that long). The notebook keeps "
            "the outputs of its cells.",
            run_id=run_id,
        )
    return server, run


@tool_handler("get_run")
async def get_run(
    run_id: Annotated[str, Field(description="The run_id a detach=true call answered.")],
    since_output: Annotated[
        int,
        Field(
            ge=0, description="Only outputs from this number on (next_output of the last answer)."
        ),
    ] = 0,
    wait_seconds: Annotated[
        float,
        Field(
            ge=0,
            le=MAX_WAIT,
            description="Wait up to this long for the run to end or print something new.",
        ),
    ] = 0,
    max_output_chars: Annotated[
        int | None, Field(description="Output characters to return; default: the server's.")
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, run_models.RunState]:
    """Follow a detached run: its status and place in its kernel's queue, the outputs added since since_output, and, once it ended, the tool's own result."""
    server, run = _find(ctx, run_id)
    limits = InlineLimits.of(server.config, max_output_chars)
    deadline = time.monotonic() + wait_seconds
    while not run.finished and run.output_count <= since_output and time.monotonic() < deadline:
        await asyncio.sleep(min(0.2, max(deadline - time.monotonic(), 0)))
    state = run_state(server, run, since_output, limits)
    where = {
        "queued": f"queued, {state.queue_position} run(s) ahead on its kernel",
        "working": "running",
        "input_required": "waiting for its client's answer (a task: tasks/update)",
        "completed": "finished" + (" with an error" if state.result_is_error else ""),
        "failed": "failed",
        "cancelled": "cancelled",
    }[run.status]
    lines = [
        f"Run {run.run_id} ({run.tool}{f' on {run.notebook!r}' if run.notebook else ''}) is {where}."
    ]
    if run.progress and not run.finished:
        lines.append(f"Last step: {run.progress}")
    if state.outputs_missed:
        lines.append(
            f"{state.outputs_missed} output(s) asked for are no longer held; the notebook has them."
        )
    content: list[ContentBlock] = [TextContent(type="text", text=" ".join(lines))]
    if run.finished and run.result is not None:
        content.extend(run.result.content)
    elif run.error is not None:
        content.append(
            TextContent(type="text", text=f"Error {run.error['code']}: {run.error['message']}")
        )
    else:
        kept, _ = run.outputs_since(since_output)
        content.extend(output_blocks(kept, None, limits))
        content.append(TextContent(type="text", text=f"(next_output={state.next_output})"))
    return answer(state.model_dump(), content=content)


@tool_handler("cancel_run")
async def cancel_run(
    run_id: Annotated[str, Field(description="The run to stop.")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, run_models.RunState]:
    """Stop a detached run: the code it runs is interrupted (variables kept), or, still queued, it never starts. What it stored so far stays."""
    server, run = _find(ctx, run_id)
    stopped = await server.runs.cancel(run)
    if stopped:
        await server.runs.wait(run, 5.0)
    state = run_state(server, run, run.output_count, InlineLimits.of(server.config))
    said = (
        f"Run {run.run_id} is {run.status}."
        if stopped
        else f"Run {run.run_id} had already ended ({run.status}); nothing to stop."
    )
    return answer(state.model_dump(), said)


@tool_handler("watch_run")
async def watch_run(
    run_id: Annotated[str, Field(description="The run_id a detach=true call answered.")],
    since_cell: Annotated[
        int,
        Field(ge=0, description="Only cells from this number on (next_cell of the last answer)."),
    ] = 0,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, run_models.RunWatch]:
    """A detached run for the output app (app-only): its progress and each cell ended since."""
    _, run = _find(ctx, run_id)
    watch, shown = watched(run, since_cell)
    show_run(shown)
    now = f"; running cell {watch.running['cell_id']}" if watch.running else ""
    ended = f", ended {watch.outcome}" if watch.ended else ""
    return answer(
        watch.model_dump(),
        f"Run {run.run_id} ({run.status}{ended}): {watch.cells_done} of {watch.cells_total} cell(s) done{now}.",
    )
