"""Running code on a kernel in turn with every other call on it.

Whoever runs code (a tool, the JSON-lines transport, a sandbox) does the same
around `run_code`: take the kernel's lock so one notebook's cells run in
order, mark it busy, fire the execution hooks, and report a kernel that died
under the call instead of hiding it. That is this one function, so the
callers cannot drift apart.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_mcp_server.errors import KERNEL_GONE, ToolFailure
from jupyter_mcp_server.hooks import Execution, ExecutionEnded, Hooks
from jupyter_mcp_server.kernels.execution import INTERRUPTED, ExecutionOutcome, KernelDied, run_code
from jupyter_mcp_server.kernels.outputs import OutputCollector

STOPPED_BEFORE_ITS_TURN = (
    "Nothing ran: the kernel was restarted or released (restart_notebook / unuse_notebook) "
    "while this execution waited for its turn. Run it again on the notebook's new kernel."
)
STOPPED_UNDER_THE_CALL = (
    "The execution was stopped because its kernel was restarted or released "
    "(restart_notebook / unuse_notebook) while it ran; the outputs so far are below."
)


async def run_in_turn(
    kernel: Any,
    code: str,
    *,
    timeout: float,
    max_output_bytes: int,
    max_output_blocks: int,
    hooks: Hooks,
    notebook: str | None = None,
    on_output: Callable[[dict[str, Any]], None] | None = None,
    interrupt_on_cancel: bool = False,
    on_death: Callable[[], Awaitable[None]] | None = None,
    gone_message: Callable[[], str] = lambda: "The kernel is gone.",
) -> ExecutionOutcome:
    """Run `code` on `kernel` (anything with the `Kernel` attributes) when its turn comes.

    A kernel stopped on purpose under the call (a restart, a release) ends it
    as `interrupted` with the outputs so far; one that died otherwise is
    `kernel_gone`, after `on_death` has recorded the loss.
    """
    async with kernel.lock:
        if getattr(kernel, "stopped", False):
            # Restarted or released while this call waited for its turn: its
            # channels are closed, and nothing of this code ran.
            outcome = ExecutionOutcome(
                status=INTERRUPTED,
                outputs=OutputCollector(max_output_bytes, max_output_blocks).result(),
                execution_count=None,
                user_expressions=None,
                duration=0.0,
                reason=STOPPED_BEFORE_ITS_TURN,
            )
            hooks.fire(
                hooks.after_execution,
                ExecutionEnded(code=code, kernel_id=kernel.kernel_id, notebook=notebook, status=INTERRUPTED, duration=0.0),
            )
            return outcome
        kernel.busy = True
        kernel.interrupted.clear()
        hooks.fire(hooks.before_execution, Execution(code=code, kernel_id=kernel.kernel_id, notebook=notebook))
        try:
            outcome = await run_code(
                kernel.client,
                kernel.is_alive,
                kernel.interrupt,
                code,
                timeout=timeout,
                max_output_bytes=max_output_bytes,
                max_output_blocks=max_output_blocks,
                interrupted=kernel.interrupted,
                on_output=on_output,
                interrupt_on_cancel=interrupt_on_cancel,
            )
        except KernelDied as died:
            if not getattr(kernel, "stopped", False) or died.outputs is None:
                hooks.fire(
                    hooks.after_execution,
                    ExecutionEnded(code=code, kernel_id=kernel.kernel_id, notebook=notebook, status="gone", duration=0.0),
                )
                if on_death is not None:
                    await on_death()
                raise ToolFailure(KERNEL_GONE, gone_message(), kernel_id=kernel.kernel_id) from None
            outcome = ExecutionOutcome(
                status=INTERRUPTED,
                outputs=died.outputs,
                execution_count=died.outputs.execution_count,
                user_expressions=None,
                duration=0.0,
                reason=STOPPED_UNDER_THE_CALL,
            )
        finally:
            kernel.busy = False
            kernel.last_used = time.monotonic()
    hooks.fire(
        hooks.after_execution,
        ExecutionEnded(
            code=code, kernel_id=kernel.kernel_id, notebook=notebook, status=outcome.status, duration=outcome.duration
        ),
    )
    return outcome
