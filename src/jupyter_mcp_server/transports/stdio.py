"""Serving over stdio, for a desktop client that starts the server itself.

Nothing but the protocol goes to stdout. The server stops when stdin closes,
on SIGTERM or on Ctrl-C, and in every case shuts its kernels down and calls
each extension's `on_stop` first.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

from jupyter_mcp_server.config import ServerConfig
from jupyter_mcp_server.transports.lifecycle import running_server


async def serve_async() -> None:
    from jupyter_mcp_server.server import mcp

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, task.cancel)
    async with running_server():
        with contextlib.suppress(asyncio.CancelledError):
            await mcp.run_stdio_async()


def serve(config: ServerConfig) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_async())
