"""A server process a benchmark runs over HTTP: a free port, its first answer, its end.

``agents.py`` and ``auth_load.py`` each start the real server with its HTTP
transport, wait until ``GET /healthz`` answers, load it from worker processes
and stop it all; this is the part they share. ``probe_healthz`` is the
outside view of the server's loop: the latency of the cheapest request it
serves, which also waits behind queued requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_healthy(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    """Until ``base``'s ``/healthz`` answers; the end of the server's log if it never does."""
    import httpx

    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server did not answer /healthz:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


async def probe_healthz(base: str, stop: asyncio.Event, samples: list[float]) -> None:
    """``GET /healthz`` every 50 ms over one kept-alive connection, each latency noted."""
    import httpx

    async with httpx.AsyncClient(timeout=30) as http:
        await http.get(f"{base}/healthz")
        while not stop.is_set():
            started = time.perf_counter()
            await http.get(f"{base}/healthz")
            samples.append(time.perf_counter() - started)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.05)


def stop(server: subprocess.Popen[bytes], workers: Iterable[Any]) -> None:
    """SIGTERM the server (SIGKILL after 60 s), then join the worker processes (kill after 30 s)."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    for process in workers:
        process.join(30)
        if process.is_alive():
            process.kill()
