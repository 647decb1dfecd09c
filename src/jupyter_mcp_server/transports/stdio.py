"""Serving over stdio, for a desktop client that starts the server itself.

Nothing but the protocol goes to stdout. The server stops when stdin closes,
on SIGTERM, SIGHUP or Ctrl-C, and in every case shuts its kernels down and
calls each extension's `on_stop` first.

The SDK reads stdin in a worker thread that no cancellation reaches: a
signal cannot make that read return while the client keeps stdin open. So a
signal does not wait for it: the request loop is cancelled, kernels and
extensions are stopped, and the process exits without joining that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from jupyter_mcp_server.config import ServerConfig
from jupyter_mcp_server.transports.lifecycle import running_server

#: Seconds the request loop gets to end after a signal before it is left behind.
STOP_GRACE = 1.0


async def serve_async() -> None:
    from jupyter_mcp_server.server import mcp

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
    left_behind = False
    async with running_server():
        serving = asyncio.ensure_future(mcp.run_stdio_async())
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if serving.done():
            with contextlib.suppress(asyncio.CancelledError):
                serving.result()
        else:
            serving.cancel()
            await asyncio.wait({serving}, timeout=STOP_GRACE)
            left_behind = not serving.done()
    if left_behind:
        # Kernels and extensions are stopped; only the blocked stdin read is left.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)


def serve(config: ServerConfig) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_async())
