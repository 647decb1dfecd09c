"""The prestarted kernel goes to the first caller as soon as it is up: its warm-up never keeps
a caller waiting (it stays the kernel's to finish, ahead of the caller's first request)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from jupyter_mcp_server._kernels.execution import OK, ExecutionRequest, run_code
from jupyter_mcp_server._kernels.kernel import Kernel
from jupyter_mcp_server._kernels.pool import WarmPool


async def test_a_caller_gets_the_kernel_before_its_warm_up_ends_and_runs_right_after_it(
    tmp_path: Path,
):
    release = tmp_path / "release"
    # A warm-up that ends only when the test says so: a caller who waited for it would wait forever.
    warm_up = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    started: list[Kernel] = []

    async def launch(kernel_name: str) -> Kernel:
        manager = AsyncKernelManager(kernel_name=kernel_name)
        await manager.start_kernel()
        client = manager.client()
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        kernel = Kernel(f"k{len(started)}", kernel_name, manager, client)
        started.append(kernel)
        return kernel

    async def shut_down(kernel: Kernel) -> None:
        kernel.client.stop_channels()
        await kernel.manager.shutdown_kernel(now=True)

    pool = WarmPool(launch, shut_down, warm_up=warm_up)
    pool.fill(3600.0, "python3")  # a long delay: only a caller's hurry starts it
    try:
        kernel = await asyncio.wait_for(pool.take("python3"), 60)
        assert kernel is started[0] and not release.exists()

        async def alive() -> bool:
            return True

        async def interrupt() -> None:
            return None

        running = asyncio.create_task(
            run_code(
                kernel.client,
                alive,
                interrupt,
                ExecutionRequest("41 + 1", 60, max_output_bytes=1 << 20, max_output_blocks=10),
            )
        )
        await asyncio.sleep(0.5)
        assert not running.done(), "the caller's code ran before the warm-up it queued behind"
        release.touch()
        outcome = await asyncio.wait_for(running, 30)
        assert outcome.status == OK and outcome.execution_count == 1
        assert outcome.outputs.outputs[0]["data"]["text/plain"] == "42"
    finally:
        release.touch()
        await pool.stop()
        for kernel in started:
            await shut_down(kernel)


async def test_the_first_kernel_is_prestarted_at_the_handshake_and_every_kernel_shares_one_context(
    tmp_path: Path,
):
    from jupyter_mcp_server._app import build_application
    from jupyter_mcp_server._config import read_config

    application = build_application(read_config({"workspace_root": str(tmp_path)}))
    state = application.state
    async with application.running():
        await asyncio.sleep(0.05)
        assert not state.kernels._pool._waiting, "prestarted before the handshake"
        state.kernels.handshake_done()
        await asyncio.sleep(0.05)
        assert state.kernels._pool._waiting, "the handshake did not start the prestart"
        first = await state.kernels.attach("a.ipynb", kernel_name="python3")
        second = await state.kernels.attach("b.ipynb", kernel_name="python3")
        context = state.local_backend._zmq_context
        assert first.client.context is context and second.client.context is context
        assert first.manager.context is context
    assert context.closed and "_zmq_context" not in vars(state.local_backend)
