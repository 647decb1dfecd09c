"""An execution whose messages go missing ends honestly, not at its timeout.

A real kernel, driven by the kernel layer's `run_code`, with the messages it
sends made to go missing for real: the client's iopub subscription dropped
(what a subscriber past its high-water mark, or one reconnected late to a
restarted kernel, lives through), or its shell requests sent to a port
where no kernel listens.
"""

from __future__ import annotations

import socket
import time

import pytest
import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager

from jupyter_mcp_server._kernels.execution import (
    IOPUB_GRACE,
    IOPUB_LOST,
    NEVER_ACKNOWLEDGED,
    OK,
    TIMEOUT,
    ExecutionRequest,
    run_code,
)


@pytest.fixture
async def kernel():
    manager = AsyncKernelManager(kernel_name="python3")
    await manager.start_kernel()
    client = manager.client()
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


async def alive() -> bool:
    return True


async def nothing() -> None:
    return None


def run(client, code: str, timeout: float):
    return run_code(
        client,
        alive,
        nothing,
        ExecutionRequest(code, timeout, max_output_bytes=1 << 20, max_output_blocks=100),
    )


async def test_a_reply_without_its_iopub_messages_ends_after_a_grace_saying_outputs_may_be_missing(
    kernel,
):
    _, client = kernel
    client.iopub_channel.socket.setsockopt(zmq.UNSUBSCRIBE, b"")
    started = time.monotonic()
    outcome = await run(client, "x = 41 + 1\nprint('unseen')", timeout=60)
    elapsed = time.monotonic() - started
    assert outcome.status == OK and outcome.reason == IOPUB_LOST and outcome.execution_count == 1
    assert IOPUB_GRACE <= elapsed < IOPUB_GRACE + 5, elapsed
    # Subscribed again, the next execution reads as usual, and the first one did run.
    client.iopub_channel.socket.setsockopt(zmq.SUBSCRIBE, b"")
    time.sleep(0.3)  # the subscription reaches the kernel's publisher
    outcome = await run(client, "print(x)", timeout=60)
    assert outcome.status == OK and outcome.reason is None
    assert [o.get("text") for o in outcome.outputs.outputs] == ["42\n"]


async def test_a_request_never_acknowledged_times_out_saying_so(kernel):
    manager, _ = kernel
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        nowhere = probe.getsockname()[1]
    info = manager.get_connection_info(session=False)
    info["shell_port"] = nowhere
    lost = AsyncKernelClient()
    lost.load_connection_info(info)
    lost.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=False)
    try:
        outcome = await run(lost, "print('never sent')", timeout=1)
    finally:
        lost.stop_channels()
    assert outcome.status == TIMEOUT and outcome.reason == NEVER_ACKNOWLEDGED
    assert outcome.kernel_state == "busy_after_interrupt" and outcome.outputs.outputs == []
