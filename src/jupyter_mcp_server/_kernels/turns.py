"""Running code on a kernel in turn with every other call on it.

Whoever runs code (a tool, the JSON-lines transport, a sandbox) does the same
around `run_code`: take the kernel's lock so one notebook's cells run in
order, mark it busy, fire the execution hooks, and report a kernel that died
under the call instead of hiding it. That is this one function, so the
callers cannot drift apart.

It also refuses, at once, to send code to a kernel still running an earlier
execution it was interrupted out of (see :mod:`.execution`): the code would
only queue behind it, time out without having run, and then run unseen.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_mcp_server._errors import KERNEL_GONE, KERNEL_UNRESPONSIVE, ToolFailure
from jupyter_mcp_server._hooks import Execution, ExecutionEnded, Hooks
from jupyter_mcp_server._kernels.execution import (
    BUSY_AFTER_INTERRUPT,
    INTERRUPTED,
    ExecutionOutcome,
    ExecutionRequest,
    KernelDied,
    RunningCode,
    StillRunning,
    ended_meanwhile,
    run_code,
)
from jupyter_mcp_server._kernels.outputs import OutputCollector

STOPPED_BEFORE_ITS_TURN = (
    "Nothing ran: the kernel was restarted or released (restart_notebook / unuse_notebook) "
    "while this execution waited for its turn. Run it again on the notebook's new kernel."
)
STOPPED_UNDER_THE_CALL = (
    "The execution was stopped because its kernel was restarted or released "
    "(restart_notebook / unuse_notebook) while it ran; the outputs so far are below."
)


def still_running_message(where: str, still_running: StillRunning) -> str:
    """What a call on a kernel stuck in an earlier execution reads: nothing of it ran."""
    waited = time.monotonic() - still_running.since
    return (
        f"Nothing ran: {where} is still running an earlier execution that "
        f"{still_running.why_interrupted} and did not stop when interrupted (that code ignores or "
        f"blocks SIGINT; interrupted {waited:.0f} s ago). "
        "Until it ends, every call on this kernel is refused at once. Call restart_notebook to stop it and start "
        "a fresh kernel (its variables are lost), or retry once it has finished; the "
        "'kernel.restart-unresponsive' capability restarts such a kernel after a grace period."
    )


async def run_in_turn(
    kernel: Any,
    request: ExecutionRequest,
    *,
    hooks: Hooks,
    on_death: Callable[[], Awaitable[None]] | None = None,
    gone_message: Callable[[], str] = lambda: "The kernel is gone.",
    on_reply: Callable[[ExecutionOutcome], ExecutionOutcome] | None = None,
) -> ExecutionOutcome:
    """Run `request` on `kernel` (anything with the `Kernel` attributes) when its turn comes.

    A kernel stopped on purpose under the call (a restart, a release) ends it
    as `interrupted` with the outputs so far; one that died otherwise is
    `kernel_gone`, after `on_death` has recorded the loss. A kernel still
    running an execution it was interrupted out of (its ``still_running``)
    is refused with `timeout` and ``kernel_state: busy_after_interrupt``,
    nothing sent to it, until that execution has ended.
    """
    code, notebook = request.code, request.notebook
    async with kernel.lock:

        def stopped_before_its_turn() -> ExecutionOutcome:
            # Restarted or released while this call waited for its turn: its
            # channels are closed, and nothing of this code ran.
            hooks.fire(
                hooks.after_execution,
                ExecutionEnded(
                    code=code,
                    kernel_id=kernel.kernel_id,
                    notebook=notebook,
                    status=INTERRUPTED,
                    duration=0.0,
                ),
            )
            return ExecutionOutcome(
                status=INTERRUPTED,
                outputs=OutputCollector(
                    request.max_output_bytes, request.max_output_blocks
                ).result(),
                execution_count=None,
                user_expressions=None,
                duration=0.0,
                reason=STOPPED_BEFORE_ITS_TURN,
            )

        if getattr(kernel, "stopped", False):
            return stopped_before_its_turn()
        # A provided kernel (a sandbox) may not keep track of a stuck execution.
        keeps_track = hasattr(kernel, "still_running")
        stuck = getattr(kernel, "still_running", None)
        if stuck is not None:
            try:
                ended = await ended_meanwhile(kernel.client, stuck.msg_id)
            except KernelDied:
                if getattr(kernel, "stopped", False):
                    return stopped_before_its_turn()
                if on_death is not None:
                    await on_death()
                raise ToolFailure(KERNEL_GONE, gone_message(), kernel_id=kernel.kernel_id) from None
            if not ended:
                where = f"the kernel of '{notebook}'" if notebook else f"kernel {kernel.kernel_id}"
                raise ToolFailure(
                    KERNEL_UNRESPONSIVE,
                    still_running_message(where, stuck),
                    kernel_state=BUSY_AFTER_INTERRUPT,
                    kernel_id=kernel.kernel_id,
                    busy_for_seconds=round(time.monotonic() - stuck.since, 1),
                )
            kernel.still_running = None

        def remember_still_running(still_running: StillRunning) -> None:
            if keeps_track:
                kernel.still_running = still_running

        kernel.busy = True
        # What a question refused as busy is told runs (kernels.introspection); an
        # object standing in for a Kernel may not keep it.
        if hasattr(kernel, "running"):
            kernel.running = RunningCode(code, time.monotonic())
        kernel.interrupted.clear()
        began = getattr(kernel, "began", None)
        if began is not None:
            began.clear()
        hooks.fire(
            hooks.before_execution,
            Execution(code=code, kernel_id=kernel.kernel_id, notebook=notebook),
        )
        try:
            outcome = await run_code(
                kernel.client,
                kernel.is_alive,
                kernel.interrupt,
                request,
                interrupted=kernel.interrupted,
                began=began,
                on_still_running=remember_still_running,
                widgets=getattr(kernel, "widgets", None),
            )
        except KernelDied as died:
            if not getattr(kernel, "stopped", False) or died.outputs is None:
                hooks.fire(
                    hooks.after_execution,
                    ExecutionEnded(
                        code=code,
                        kernel_id=kernel.kernel_id,
                        notebook=notebook,
                        status="gone",
                        duration=0.0,
                    ),
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
            if began is not None:
                began.set()  # nobody waits for an execution that is over
            if hasattr(kernel, "running"):
                kernel.running = None
            kernel.last_used = time.monotonic()
    if on_reply is not None:
        # Before the hooks: what the reply teaches (a kernel's secrets) applies to them too.
        outcome = on_reply(outcome)
    hooks.fire(
        hooks.after_execution,
        ExecutionEnded(
            code=code,
            kernel_id=kernel.kernel_id,
            notebook=notebook,
            status=outcome.status,
            duration=outcome.duration,
        ),
    )
    return outcome
