"""Running `execute_code` in the selected sandbox, and saying so in the result.

The server's own execution engine (`ServerAccess.run_code`) does the work, with the
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
from jupyter_mcp_server.api import KERNEL_GONE, ServerAccess, ToolFailure, execution_result

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


async def execute_in(
    server: ServerAccess, sandbox: Sandbox, code: str, timeout: float
) -> CallToolResult:
    """Run `code` on `sandbox`, in turn with everything else running there."""
    if not await sandbox.is_alive():
        raise ToolFailure(KERNEL_GONE, gone_message(sandbox), sandbox_name=sandbox.name)

    async def record_death() -> None:
        sandbox.mark_gone("its kernel died while running code")

    outcome = await server.run_code(
        sandbox,
        code,
        timeout=timeout,
        on_death=record_death,
        gone_message=lambda: gone_message(sandbox),
    )
    result = execution_result(
        outcome, note=f"Ran in sandbox '{sandbox.name}' ({sandbox.variant}: {sandbox.where})."
    )
    return with_sandbox_meta(result, sandbox)


def with_sandbox_meta(result: CallToolResult, sandbox: Sandbox) -> CallToolResult:
    """`result` with ``_meta["io.jupyter-mcp/sandbox"]`` saying where it ran."""
    meta = dict(result.meta or {})
    meta[SANDBOX_META_KEY] = where_meta(sandbox)
    return result.model_copy(update={"meta": meta})
