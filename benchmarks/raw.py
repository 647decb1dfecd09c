"""A server's own round trip: plain blocking pipes, in a process of their own.

Every other latency is a call made through the official client inside the
harness's event loop, which also drives the other servers and the floor's
kernel: the client's work and the loop's wake-ups are in all of them, for
every server alike. This times the same trivial call with nothing around it:
a separate process spawns the server, writes one JSON-RPC line to its stdin,
blocks on the answer line, and reports every latency as JSON. What remains
is the server (and the pipes): the difference from the "MCP round trip" row
is what the client and the harness add to every call.

    python raw.py < spec.json   # {"launch": {...}, "tool": ..., "arguments": {...}, "count": N}
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from profiles import Profile

PROTOCOL = "2025-11-25"
WARM_UP_CALLS = 20


async def raw_round_trips(
    profile: Profile,
    workspace: Path,
    tool: str,
    arguments: dict[str, Any],
    count: int,
    env: dict[str, str] | None = None,
) -> list[float]:
    """``count`` latencies of ``tool`` on a fresh server spawned from ``profile`` (``env`` added)."""
    launch = profile.launch(workspace)
    launch["env"] = {**launch["env"], **(env or {})}
    spec = {"launch": launch, "tool": tool, "arguments": arguments, "count": count}
    driver = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).resolve()),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await driver.communicate(json.dumps(spec).encode())
    if driver.returncode != 0:
        raise RuntimeError(f"the raw driver failed (exit {driver.returncode}) on {profile.name}")
    return [float(value) for value in json.loads(out)]


def _drive(spec: dict[str, Any]) -> list[float]:
    launch = spec["launch"]
    server = subprocess.Popen(
        [launch["command"], *launch["args"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=launch["env"],
        cwd=launch["cwd"],
    )
    assert server.stdin is not None and server.stdout is not None
    ids = iter(range(1, 1 << 30))

    def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(ids)
        server.stdin.write(
            (
                json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
                + "\n"
            ).encode()
        )  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        while True:
            line = server.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise SystemExit(f"the server exited (status {server.wait()})")
            message = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message or message["result"].get("isError"):
                    raise SystemExit(f"{method} failed: {message}")
                return message["result"]

    try:
        request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        server.stdin.flush()
        call = {"name": spec["tool"], "arguments": spec["arguments"]}
        for _ in range(WARM_UP_CALLS):
            request("tools/call", call)
        latencies = []
        for _ in range(spec["count"]):
            started = time.perf_counter()
            request("tools/call", call)
            latencies.append(time.perf_counter() - started)
        return latencies
    finally:
        server.stdin.close()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    json.dump(_drive(json.load(sys.stdin)), sys.stdout)
