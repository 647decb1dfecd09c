"""One execution on a kernel, as every way of running code does it.

A cell run by a tool, a whole-notebook run, the JSON-lines transport's
``execute`` and an extension's ``ServerAccess.run_code`` all run code in turn
with everything else on the kernel, choose a notebook's kernel from its
metadata only when one has to start, store outputs into the cell the same way
and answer with the same execution schema: those are here, once.
"""

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.types import CallToolResult, TextContent

from jupyter_mcp_server._apps.shown import show_execution
from jupyter_mcp_server._errors import (
    EXECUTION_ERROR,
    INTERRUPTED,
    INVALID_ARGUMENT,
    TIMEOUT,
    ToolFailure,
)
from jupyter_mcp_server._kernels.execution import ExecutionOutcome
from jupyter_mcp_server._kernels.kernel import Kernel
from jupyter_mcp_server._kernels.widgets import widget_models
from jupyter_mcp_server._rendering.budget import head_and_tail
from jupyter_mcp_server._rendering.content import (
    DEFAULT_INLINE,
    InlineLimits,
    OutputLink,
    output_blocks,
)
from jupyter_mcp_server._rendering.model_text import held_text
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._tool_calls.listening import output_listener
from jupyter_mcp_server._tool_calls.results import answer, failure
from jupyter_mcp_server._workspace.notebook_uris import output_uri

#: The capability that makes a cancelled request interrupt its kernel.
CANCEL_INTERRUPTS = "execution.cancel-interrupts"

STATUS_CODES = {"error": EXECUTION_ERROR, "timeout": TIMEOUT, "interrupted": INTERRUPTED}


def effective_timeout(server: ServerState, timeout: float | None) -> float:
    config = server.config
    if timeout is None:
        return config.default_timeout
    if timeout <= 0:
        raise ToolFailure(INVALID_ARGUMENT, f"timeout must be positive, not {timeout}.")
    if timeout > config.max_timeout:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"timeout {timeout:g}s is above this server's --max-timeout of {config.max_timeout:g}s. "
            "Pass a smaller timeout, or split the work into shorter cells.",
            max_timeout=config.max_timeout,
        )
    return timeout


async def run_on(
    server: ServerState, kernel: Kernel, code: str, timeout: float, notebook: str | None
) -> ExecutionOutcome:
    """Run code on a kernel, in order with the other calls on it; a death is reported, not hidden."""
    return await server.run_in_turn(
        kernel,
        code,
        timeout,
        notebook,
        # Outputs as they arrive, to whoever follows this call (progress, a task).
        output_listener(),
        # Whether a cancelled request stops the kernel too is the operator's
        # choice (by default it does not: the code may be worth finishing).
        interrupt_on_cancel=server.capabilities.enabled(CANCEL_INTERRUPTS),
    )


def execution_result(
    outcome: ExecutionOutcome,
    *,
    cell_id: str | None = None,
    revision: str | None = None,
    note: str | None = None,
    path: str | None = None,
    limits: InlineLimits = DEFAULT_INLINE,
    format_upgraded: dict[str, str] | None = None,
    link: OutputLink | None = None,
    source: str | None = None,
) -> CallToolResult:
    """Output schema 1.0 in structuredContent; the outputs themselves in content, within the budget.

    With `path` (the outputs were stored in that notebook's cell), what is
    left out is linked to its ``notebook-output:`` resource; with `link`
    (kept elsewhere, e.g. ``scratch_link``), there.
    """
    collected = outcome.outputs
    show_execution(
        collected.outputs,
        source=source,
        status=outcome.status,
        execution_count=outcome.execution_count,
        cell_id=cell_id,
        path=path,
    )
    structured = models.ExecutionResult(
        **execution_fields(outcome),
        cell_id=cell_id,
        revision=revision,
        format_upgraded=format_upgraded,
    ).model_dump()
    content: list[Any] = []
    if note:
        content.append(TextContent(type="text", text=note))
    if path is not None and cell_id is not None:

        def link(index: int) -> str:
            return output_uri(path, cell_id, index)

    models_saved = widget_models({"widgets": outcome.widgets})
    content.extend(output_blocks(collected.outputs, link, limits, models_saved))
    for model_id in outcome.captured:
        # Not in the cell: an Output widget shown elsewhere took it, as Jupyter routes it.
        held = held_text(model_id, models_saved)
        if held:
            text = f"[jupyter-mcp-server: output of this code went into an Output widget, not into the cell]\n{held}"
            content.append(
                TextContent(type="text", text=head_and_tail(text, limits.budget_chars, None))
            )
    truncation = collected.truncation
    if truncation.omitted_blocks:
        content.append(
            TextContent(
                type="text",
                text=f"[jupyter-mcp-server: {truncation.omitted_blocks} output block(s), {truncation.omitted_bytes} bytes, "
                "omitted by --max-output-bytes/--max-output-blocks]",
            )
        )
    if outcome.status == "ok":
        if outcome.reason:  # it ran, but something about the result is not as usual
            content.append(TextContent(type="text", text=f"[jupyter-mcp-server: {outcome.reason}]"))
        if not content:
            content.append(TextContent(type="text", text="(no output)"))
        return answer(structured, content=content)
    code = STATUS_CODES[outcome.status]
    messages = {
        "error": "The code raised an exception (see the traceback).",
        "timeout": "The execution timed out and the kernel was interrupted; the outputs so far are below. "
        "Pass a larger timeout, or make the cell faster.",
        "interrupted": "The execution was interrupted; the outputs so far are below.",
    }
    message = outcome.reason or messages[outcome.status]
    details = {"kernel_state": outcome.kernel_state} if outcome.kernel_state else {}
    return failure(ToolFailure(code, message, **details), structured=structured, content=content)


def execution_fields(outcome: ExecutionOutcome) -> dict[str, Any]:
    """Output schema 1.0 of an execution: what every way of running code answers."""
    collected = outcome.outputs
    return {
        "schema_version": "1.0",
        "execution_count": outcome.execution_count,
        "truncation": collected.truncation.as_dict(),
        "error": collected.error.as_dict() if collected.error else None,
        "user_expressions": outcome.user_expressions,
        "status": outcome.status,
    }


def store_outputs(cell: Any, outcome: ExecutionOutcome) -> None:
    """Put an execution's outputs and count into the cell that ran."""
    from nbformat import from_dict

    cell["outputs"] = [from_dict(output) for output in outcome.outputs.outputs]
    cell["execution_count"] = outcome.execution_count


def metadata_kernel(server: ServerState, notebook: Any) -> Callable[[], Awaitable[str]]:
    """The kernel the notebook gets if one has to start (the kernelspec its metadata names,
    the workspace's environment, the configured default, …), decided only then: a call on a
    notebook whose kernel runs already looks at nothing."""

    async def chosen() -> str:
        return server.kernels.choose(notebook.get("metadata")).kernel_name

    return chosen
