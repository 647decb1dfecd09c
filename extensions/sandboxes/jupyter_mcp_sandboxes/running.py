"""Running `execute_code` in the selected sandbox, and saying so in the result.

The server's own execution engine (`run_code`) does the work, with the
server's output limits, so a result from a sandbox is the same execution
result as one from a notebook's kernel: only the note at its top, and
``_meta["io.jupyter-mcp/sandbox"]``, say where it ran. A sandbox found dead,
before or during the run, is a `kernel_gone` error, never a quiet fallback
to the notebook's kernel.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult

from jupyter_mcp_sandboxes.registry import gone_message
from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_server.errors import KERNEL_GONE, ToolFailure
from jupyter_mcp_server.hooks import get_hooks
from jupyter_mcp_server.kernels.turns import run_in_turn
from jupyter_mcp_server.tools.running import CANCEL_INTERRUPTS, execution_result

#: Where a result says which sandbox ran it.
SANDBOX_META_KEY = "io.jupyter-mcp/sandbox"


def where_meta(sandbox: Sandbox) -> dict[str, Any]:
    return {
        "sandbox_name": sandbox.name,
        "variant": sandbox.variant,
        "kernel_id": sandbox.kernel_id,
        "where": sandbox.where,
        "pid": sandbox.pid,
        "directory": sandbox.directory,
        "server_url": sandbox.server_url,
    }


def _output_listener() -> Any:
    """Outputs as they arrive, to whoever follows the call, where the server offers that."""
    try:
        from jupyter_mcp_server.progress import output_listener
    except ImportError:
        return None
    return output_listener()


def _limits() -> tuple[int, int, bool]:
    from jupyter_mcp_server.capabilities import get_capabilities
    from jupyter_mcp_server.config import get_config

    config = get_config()
    return config.max_output_bytes, config.max_output_blocks, get_capabilities().enabled(CANCEL_INTERRUPTS)


async def execute_in(sandbox: Sandbox, code: str, timeout: float) -> CallToolResult:
    """Run `code` on `sandbox`, in turn with everything else running there."""
    if not await sandbox.is_alive():
        raise ToolFailure(KERNEL_GONE, gone_message(sandbox), sandbox_name=sandbox.name)
    max_bytes, max_blocks, interrupt_on_cancel = _limits()

    async def record_death() -> None:
        sandbox.mark_gone("its kernel died while running code")

    outcome = await run_in_turn(
        sandbox,
        code,
        timeout=timeout,
        max_output_bytes=max_bytes,
        max_output_blocks=max_blocks,
        hooks=get_hooks(),
        on_output=_output_listener(),
        interrupt_on_cancel=interrupt_on_cancel,
        on_death=record_death,
        gone_message=lambda: gone_message(sandbox),
    )
    result = execution_result(outcome, note=f"Ran in sandbox '{sandbox.name}' ({sandbox.variant}: {sandbox.where}).")
    return with_sandbox_meta(result, sandbox)


def with_sandbox_meta(result: CallToolResult, sandbox: Sandbox) -> CallToolResult:
    """`result` with ``_meta["io.jupyter-mcp/sandbox"]`` saying where it ran."""
    meta = dict(result.meta or {})
    meta[SANDBOX_META_KEY] = where_meta(sandbox)
    return result.model_copy(update={"meta": meta})
