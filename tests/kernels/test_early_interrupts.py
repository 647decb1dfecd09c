"""An interrupt on purpose stops the code it was meant for, however soon after the request.

ipykernel ignores SIGINT outside its message handlers, and inside one, a KeyboardInterrupt
raised before the code starts escapes the handler with no reply. So an interrupt sent the
moment an execution is asked for (a detached run cancelled at once, a call cancelled as it
starts) was lost: the code ran in full, or ended ``ok`` with nothing run. The real kernel layer
(`KernelFleet`, `run_in_turn`) on a real kernel, interrupting 0-3 ms after the request left.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from jupyter_mcp_server._errors import KERNEL_UNRESPONSIVE, ToolFailure
from jupyter_mcp_server._hooks import Hooks
from jupyter_mcp_server._kernels.execution import (
    INTERRUPTED,
    INTERRUPTED_WITHOUT_REPLY,
    OK,
    ExecutionRequest,
)
from jupyter_mcp_server._kernels.fleet import KernelFleet
from jupyter_mcp_server._kernels.turns import run_in_turn

#: A cell whose end is seen afterwards: `finished` is set only when it ran in full.
SLEEPER = "import time\ntime.sleep(5)\nfinished = True\nprint('ran in full')"
#: Asked after each: whether the interrupted cell ran in full after all.
FINISHED = "print(globals().pop('finished', False))"
#: How long after the request left each interrupt is sent: within the window where it was lost.
DELAYS = (0.0, 0.001, 0.002, 0.003) * 3


def request(code: str, *, interrupt_on_cancel: bool = False) -> ExecutionRequest:
    return ExecutionRequest(
        code,
        timeout=60,
        max_output_bytes=1 << 20,
        max_output_blocks=100,
        interrupt_on_cancel=interrupt_on_cancel,
    )


@pytest.fixture
async def fleet(tmp_path: Path):
    fleet = KernelFleet(workspace_root=tmp_path, max_kernels=2, idle_timeout=3600)
    try:
        yield fleet
    finally:
        await fleet.shutdown_all()


async def asked_for(kernel, code: str, **options) -> asyncio.Task:
    """The execution of `code` on `kernel`, once its request has left for the kernel (its turn
    taken: `run_code` sends the request before it first waits)."""
    task = asyncio.create_task(run_in_turn(kernel, request(code, **options), hooks=Hooks()))
    while not kernel.busy:
        await asyncio.sleep(0)
    return task


async def test_an_interrupt_right_after_the_request_ends_the_execution_interrupted(fleet):
    """Each execution ends ``interrupted``, the rest of its cell never run. Almost always at
    once; on a loaded machine the kernel now and then raises the KeyboardInterrupt only when the
    cell's blocking call returns, which still ends it there."""
    kernel = await fleet.start("python3")
    assert (await run_in_turn(kernel, request("kept = 42"), hooks=Hooks())).status == OK
    for delay in DELAYS:
        execution = await asked_for(kernel, SLEEPER)
        await asyncio.sleep(delay)
        assert await fleet.interrupt(kernel), delay
        outcome = await asyncio.wait_for(execution, 20)
        assert outcome.status == INTERRUPTED, (delay, outcome)
        texts = "".join(output.get("text", "") for output in outcome.outputs.outputs)
        assert "ran in full" not in texts
        # Stopped in its code (the KeyboardInterrupt shown), or as its handler began: said so.
        error = outcome.outputs.error
        assert (error is not None and error.ename == "KeyboardInterrupt") or (
            outcome.reason == INTERRUPTED_WITHOUT_REPLY
        ), (delay, outcome)
        assert await ran_in_full(kernel) is False, delay
    # The session lives on, its variables kept.
    after = await run_in_turn(kernel, request("print(kept)"), hooks=Hooks())
    assert after.status == OK and after.outputs.outputs[0]["text"] == "42\n"


async def ran_in_full(kernel) -> bool:
    """Whether the last SLEEPER ran to its end, asked once the kernel takes calls again (a
    cancelled call's kernel may still be settling: such calls are refused, nothing run)."""
    started = time.monotonic()
    while True:
        try:
            asked = await run_in_turn(kernel, request(FINISHED), hooks=Hooks())
            break
        except ToolFailure as refused:
            assert refused.code == KERNEL_UNRESPONSIVE, refused
            assert time.monotonic() - started < 20, refused
            await asyncio.sleep(0.2)
    assert asked.status == OK, asked
    return {"True\n": True, "False\n": False}[asked.outputs.outputs[0]["text"]]


async def test_a_call_cancelled_right_after_its_request_stops_its_code(fleet):
    kernel = await fleet.start("python3")
    for delay in DELAYS[:4]:
        execution = await asked_for(kernel, SLEEPER, interrupt_on_cancel=True)
        await asyncio.sleep(delay)
        execution.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(execution, 20)
        # Stopped, not run in full; and the kernel then takes calls again.
        assert await ran_in_full(kernel) is False, delay
        assert kernel.still_running is None


async def test_an_execution_interrupted_on_purpose_without_a_reply_is_never_ok(fleet):
    """Sent straight to the kernel, with no wait for the code to begin, some interrupts land as
    the handler starts: no reply comes. Such an execution reads ``interrupted`` and says why; one
    whose interrupt was ignored (still queued) ran in full, and reads ``ok``."""
    kernel = await fleet.start("python3")
    code = "import time\ntime.sleep(0.5)\nprint('ran in full')"
    for delay in (0.0005, 0.001, 0.0015, 0.002) * 2:
        execution = await asked_for(kernel, code)
        await asyncio.sleep(delay)
        kernel.interrupted.set()
        await kernel.interrupt()
        outcome = await asyncio.wait_for(execution, 20)
        texts = "".join(output.get("text", "") for output in outcome.outputs.outputs)
        if outcome.status == OK:
            assert texts == "ran in full\n", (delay, outcome)
        else:
            assert outcome.status == INTERRUPTED, (delay, outcome)
            error = outcome.outputs.error
            assert (error is not None and error.ename == "KeyboardInterrupt") or (
                outcome.reason == INTERRUPTED_WITHOUT_REPLY
            ), (delay, outcome)


async def test_a_cancelled_call_whose_code_ignores_the_interrupt_is_said_to_be_cancelled(fleet):
    """The later call's refusal says why the earlier execution was interrupted: cancelled, not
    timed out."""
    kernel = await fleet.start("python3")
    stubborn = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(8)"
    execution = await asked_for(kernel, stubborn, interrupt_on_cancel=True)
    await asyncio.sleep(0.5)
    execution.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(execution, 20)
    assert kernel.still_running is not None
    with pytest.raises(ToolFailure) as refused:
        await run_in_turn(kernel, request("print('next')"), hooks=Hooks())
    assert refused.value.code == KERNEL_UNRESPONSIVE
    said = str(refused.value)
    assert "earlier execution that was cancelled and did not stop when interrupted" in said, said
    assert "timed out" not in said, said
