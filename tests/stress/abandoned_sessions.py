"""Memory under HTTP clients that go away without DELETE (docs/reliability.md, "Abandoned sessions").

One `jupyter-mcp-server start --transport streamable-http` on loopback and
`--clients` official MCP clients (2025-11-25, with sessions) in a loop for
`--seconds`: each connects, reads a notebook by name (which the connection
keeps), lists the files and leaves without DELETE, as a killed client or a
closed laptop does. The server's RSS is sampled every 5 s; the slope is
fitted over the second half of the run (after the sessions of the first
`--session-timeout` seconds have had time to expire).

    python tests/stress/abandoned_sessions.py --session-timeout 10
    python tests/stress/abandoned_sessions.py --session-timeout 100000   # none expires
    python tests/stress/abandoned_sessions.py --src /tmp/old/src --no-flag   # older code
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2
import nbformat
from load import free_port, http_server_command
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from rpc import environment, rss_bytes
from servers import healthz, start


async def abandoning_client(url: str, deadline: float, counts: list[int]) -> None:
    while time.monotonic() < deadline:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60)) as http,
            Client(
                streamable_http_client(url, http_client=http, terminate_on_close=False),
                mode="legacy",
            ) as client,
        ):
            await client.call_tool("read_notebook", {"notebook_name": "n.ipynb"})
            await client.call_tool("list_files", {})
        counts[0] += 1


def slope_mib_per_minute(samples: list[tuple[float, int]]) -> float:
    """The least-squares slope of RSS over time, MiB a minute."""
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    num = sum((t - mean_t) * (r - mean_r) for t, r in samples)
    den = sum((t - mean_t) ** 2 for t, _ in samples) or 1.0
    return num / den * 60 / (1 << 20)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--session-timeout", type=float, default=10)
    parser.add_argument(
        "--src", default=None, help="the package sources the server runs (default: this checkout's)"
    )
    parser.add_argument(
        "--no-flag", action="store_true", help="do not pass --session-timeout (older code has none)"
    )
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        workspace = root / "workspace"
        workspace.mkdir()
        nbformat.write(nbformat.v4.new_notebook(), workspace / "n.ipynb")
        port = free_port()
        command = http_server_command(workspace, port)
        if not options.no_flag:
            command += ["--session-timeout", str(options.session_timeout)]
        env = environment()
        if options.src:
            env["PYTHONPATH"] = os.pathsep.join([options.src, env["PYTHONPATH"]])
        log = root / "server.log"
        server = start(command, env=env, cwd=root, log=log, port=port, stdout=subprocess.DEVNULL)
        process = server.process
        try:
            server.wait_until(healthz)
            url = f"http://127.0.0.1:{port}/mcp"
            counts = [0]
            samples: list[tuple[float, int]] = []

            async def run() -> None:
                start = time.monotonic()
                end = start + options.seconds

                async def sample() -> None:
                    while time.monotonic() < end:
                        samples.append((time.monotonic() - start, rss_bytes(process.pid)))
                        await asyncio.sleep(5)

                await asyncio.gather(
                    sample(), *(abandoning_client(url, end, counts) for _ in range(options.clients))
                )

            asyncio.run(run())
            half = [s for s in samples if s[0] >= options.seconds / 2]
            expired = log.read_text(errors="replace").count("expired")
            figures: dict[str, Any] = {
                "clients": options.clients,
                "seconds": options.seconds,
                "session_timeout": None if options.no_flag else options.session_timeout,
                "sessions_abandoned": counts[0],
                "sessions_expired_logged": expired,
                "rss_start_mib": round(samples[0][1] / (1 << 20), 1),
                "rss_end_mib": round(samples[-1][1] / (1 << 20), 1),
                "slope_second_half_mib_per_min": round(slope_mib_per_minute(half), 2),
                "slope_whole_mib_per_min": round(slope_mib_per_minute(samples), 2),
            }
            print(json.dumps(figures))
        finally:
            server.stop(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
