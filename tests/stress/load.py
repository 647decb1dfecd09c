"""Load: 50 concurrent HTTP clients reading, editing and executing, on loopback.

One `jupyter-mcp-server start --transport streamable-http` bound to
127.0.0.1, and 50 official MCP clients (half of them on each protocol
generation) sharing five notebooks, ten clients a notebook and so one kernel
each. Every client loops until the deadline over a mix of calls: reads
(read_notebook, read_cell, list_files, get_notebook_revision, resources/read),
edits (insert_cell, overwrite_cell_source, edit_cell_source, delete_cell,
some with expected_revision) and executions (execute_code,
insert_execute_code_cell). Nothing may fail except a revision_conflict on a
call that named an expected_revision, which is the contract working; no call
may hang; every insert a client was told succeeded must be in the file at
the end unless that client deleted it; once the notebooks are released no
kernel is left; and the server's memory after the run is flat (measured
after a warm-up, and again after a second, shorter round).

    python tests/stress/load.py            # full: 50 clients for 60 s
    python tests/stress/load.py --short    # CI: 50 clients for 10 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import nbformat
from rpc import descendants, environment, rss_bytes, wait_until_gone
from servers import healthz, start

NOTEBOOKS = 5
ERROR_KEY = "io.jupyter-mcp/error"


def is_the_keeper(pid: int) -> bool:
    try:
        return b"keeper.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_server_command(workspace: Path, port: int, *options: str) -> list[str]:
    """The server on `workspace` over streamable HTTP on loopback `port`, without a warm
    kernel (the runs measure the kernels their clients ask for), plus `options`."""
    return [
        sys.executable,
        "-m",
        "jupyter_mcp_server",
        "start",
        "--workspace-root",
        str(workspace),
        "--transport",
        "streamable-http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--capability",
        "kernel.prestart=off",
        *options,
    ]


@dataclass
class Stats:
    calls: Counter[str] = field(default_factory=Counter)
    conflicts: int = 0
    failures: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    acknowledged: dict[str, set[str]] = field(
        default_factory=dict
    )  # notebook -> sources still expected


def code_of(result: Any) -> str | None:
    if not result.is_error:
        return None
    return ((result.meta or {}).get(ERROR_KEY) or {}).get("code")


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def client_loop(url: str, index: int, deadline: float, stats: Stats, seed: int) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(seed * 1000 + index)
    notebook = f"load-{index % NOTEBOOKS}.ipynb"
    mode = "legacy" if index % 2 else "auto"
    mine: list[tuple[str, str]] = []  # (cell_id, source) this client inserted and has not deleted
    counter = 0
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=120)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):

        async def call(tool: str, arguments: dict[str, Any], conflict_allowed: bool = False) -> Any:
            started = time.monotonic()
            try:
                result = await asyncio.wait_for(client.call_tool(tool, arguments), 120)
            except Exception as error:
                stats.failures.append(f"client {index} {tool}: {type(error).__name__}: {error}")
                return None
            stats.latencies.append(time.monotonic() - started)
            stats.calls[tool] += 1
            code = code_of(result)
            if code == "revision_conflict" and conflict_allowed:
                stats.conflicts += 1
                return None
            if result.is_error:
                stats.failures.append(
                    f"client {index} {tool} {arguments}: {code}: {text_of(result)[:300]}"
                )
                return None
            return result.structured_content

        used = await call("use_notebook", {"notebook_name": notebook})
        if used is None:
            return
        while time.monotonic() < deadline:
            roll = rng.random()
            counter += 1
            if roll < 0.12:
                await call("read_notebook", {"notebook_name": notebook, "limit": 10})
            elif roll < 0.20:
                await call("list_files", {"max_depth": 1})
            elif roll < 0.26:
                await call("get_notebook_revision", {"notebook_name": notebook})
            elif roll < 0.32 and mine:
                await call("read_cell", {"notebook_name": notebook, "cell_id": rng.choice(mine)[0]})
            elif roll < 0.38:
                started = time.monotonic()
                try:
                    read = await asyncio.wait_for(
                        client.read_resource(f"notebook:///{notebook}"), 120
                    )
                    json.loads(read.contents[0].text)
                    stats.calls["resources/read"] += 1
                    stats.latencies.append(time.monotonic() - started)
                except Exception as error:
                    stats.failures.append(
                        f"client {index} resources/read: {type(error).__name__}: {error}"
                    )
            elif roll < 0.58:
                source = f"c{index}-{counter}"
                placed = await call(
                    "insert_cell",
                    {
                        "notebook_name": notebook,
                        "cell_index": -1,
                        "cell_type": "markdown",
                        "cell_source": source,
                    },
                )
                if placed is not None:
                    mine.append((placed["cell_id"], source))
            elif roll < 0.66 and mine:
                position = rng.randrange(len(mine))
                cell_id, _ = mine[position]
                source = f"c{index}-{counter} overwritten"
                if (
                    await call(
                        "overwrite_cell_source",
                        {"notebook_name": notebook, "cell_id": cell_id, "cell_source": source},
                    )
                    is not None
                ):
                    mine[position] = (cell_id, source)
            elif roll < 0.71 and mine:
                position = rng.randrange(len(mine))
                cell_id, old = mine[position]
                source = old + " edited"
                edited = await call(
                    "edit_cell_source",
                    {
                        "notebook_name": notebook,
                        "cell_id": cell_id,
                        "old_string": old,
                        "new_string": source,
                    },
                )
                if edited is not None:
                    mine[position] = (cell_id, source)
            elif roll < 0.76 and mine:
                position = rng.randrange(len(mine))
                if (
                    await call(
                        "delete_cell",
                        {"notebook_name": notebook, "cell_ids_to_delete": [mine[position][0]]},
                    )
                    is not None
                ):
                    mine.pop(position)
            elif roll < 0.82:
                # With expected_revision: a conflict is the right answer when another client got there first.
                revision = await call("get_notebook_revision", {"notebook_name": notebook})
                if revision is not None:
                    source = f"c{index}-{counter} guarded"
                    placed = await call(
                        "insert_cell",
                        {
                            "notebook_name": notebook,
                            "cell_index": 0,
                            "cell_type": "raw",
                            "cell_source": source,
                            "expected_revision": revision["revision"],
                        },
                        conflict_allowed=True,
                    )
                    if placed is not None:
                        mine.append((placed["cell_id"], source))
            elif roll < 0.94:
                ran = await call(
                    "execute_code",
                    {"notebook_name": notebook, "code": f"print({index} * {counter})"},
                )
                if ran is not None and ran.get("status") != "ok":
                    stats.failures.append(
                        f"client {index} execute_code: status {ran.get('status')}"
                    )
            else:
                source = f"print('c{index}-{counter}')"
                ran = await call(
                    "insert_execute_code_cell",
                    {"notebook_name": notebook, "cell_index": -1, "cell_source": source},
                )
                if ran is not None:
                    mine.append((ran["cell_id"], source))
        stats.acknowledged.setdefault(notebook, set()).update(source for _, source in mine)


async def release(url: str) -> None:
    """unuse_notebook for every notebook, once every client is done (a notebook's
    kernel is shared by its clients: releasing it stops their executions)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        for index in range(NOTEBOOKS):
            result = await client.call_tool(
                "unuse_notebook", {"notebook_name": f"load-{index}.ipynb"}
            )
            assert not result.is_error, text_of(result)


async def run_round(url: str, clients: int, seconds: float, stats: Stats, seed: int) -> None:
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        *(client_loop(url, index, deadline, stats, seed) for index in range(clients))
    )
    await release(url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="CI mode: 10 s")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("STRESS_SEED", "7")))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (10.0 if args.short else 60.0)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jmcp-load-") as directory:
        report = run(Path(directory), args.clients, seconds, args.seed)
    report["seconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 1 if report["problems"] else 0


def run(root: Path, clients: int, seconds: float, seed: int) -> dict[str, Any]:
    workspace = root / "workspace"
    workspace.mkdir()
    runtime = root / "runtime"
    runtime.mkdir()
    for index in range(NOTEBOOKS):
        nbformat.write(nbformat.v4.new_notebook(), workspace / f"load-{index}.ipynb")
    port = free_port()
    command = http_server_command(workspace, port, "--max-kernels", str(NOTEBOOKS + 1))
    log = root / "server.log"
    problems: list[str] = []
    server = start(
        command,
        env=environment(JUPYTER_RUNTIME_DIR=str(runtime)),
        cwd=root,
        log=log,
        port=port,
        stdout=subprocess.DEVNULL,
    )
    process = server.process
    url = f"http://127.0.0.1:{port}/mcp"
    kernels: set[int] = set()
    figures: dict[str, Any] = {"clients": clients, "seconds_per_round": seconds}
    try:
        server.wait_until(healthz)
        stats = Stats()
        # A short warm-up round (kernels started, code paths imported), then the measured rounds.
        asyncio.run(run_round(url, min(clients, NOTEBOOKS), 2, Stats(), seed + 1))
        rss_warm = rss_bytes(process.pid)

        async def sampled_round() -> None:
            async def sample() -> None:
                while True:
                    kernels.update(descendants(process.pid))
                    await asyncio.sleep(0.5)

            sampler = asyncio.ensure_future(sample())
            try:
                await run_round(url, clients, seconds, stats, seed)
            finally:
                sampler.cancel()

        asyncio.run(sampled_round())
        rss_after = rss_bytes(process.pid)
        asyncio.run(run_round(url, clients, max(2.0, seconds / 4), stats, seed + 2))
        rss_second = rss_bytes(process.pid)
        # Every acknowledged insert still there, unless its own client deleted it.
        for notebook, expected in stats.acknowledged.items():
            sources = {
                cell.source for cell in nbformat.read(workspace / notebook, as_version=4).cells
            }
            missing = expected - sources
            if missing:
                problems.append(
                    f"{notebook}: {len(missing)} acknowledged cells are missing, e.g. {sorted(missing)[:3]}"
                )
            nbformat.validate(nbformat.read(workspace / notebook, as_version=4))
        listed = httpx.post(
            url,
            headers={
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "check", "version": "0"},
                },
            },
        )
        if listed.status_code != 200:
            problems.append(f"the server stopped answering: {listed.status_code}")
        # The keeper that started the kernels stays for the next one; all else must go.
        leaked = wait_until_gone(
            {pid for pid in descendants(process.pid) if not is_the_keeper(pid)}, 10
        )
        if leaked:
            problems.append(
                f"{len(leaked)} kernel processes still running after every notebook was released"
            )
        problems.extend(stats.failures[:20])
        if len(stats.failures) > 20:
            problems.append(f"... and {len(stats.failures) - 20} more failures")
        total = sum(stats.calls.values())
        figures.update(
            calls=total,
            calls_by_tool=dict(sorted(stats.calls.items())),
            calls_per_second=round(total / (seconds * 1.25), 1),
            failures=len(stats.failures),
            revision_conflicts=stats.conflicts,
            median_latency_ms=round(statistics.median(stats.latencies) * 1000, 1)
            if stats.latencies
            else None,
            p99_latency_ms=round(
                sorted(stats.latencies)[int(len(stats.latencies) * 0.99)] * 1000, 1
            )
            if stats.latencies
            else None,
            kernel_processes_seen=len(kernels),
            rss_warm_mib=round(rss_warm / 2**20),
            rss_after_mib=round(rss_after / 2**20),
            rss_after_second_round_mib=round(rss_second / 2**20),
        )
        # Flat: the second round must not keep growing what the first left.
        if rss_second - rss_after > 64 * 2**20:
            problems.append(
                f"memory kept growing: {figures['rss_after_mib']} MiB -> {figures['rss_after_second_round_mib']} MiB"
            )
        if rss_after - rss_warm > 256 * 2**20:
            problems.append(f"memory grew by {(rss_after - rss_warm) // 2**20} MiB during the run")
    finally:
        server.stop(30)
    left = wait_until_gone(kernels, 10)
    if left:
        problems.append(f"{len(left)} processes outlived the server")
    connection_files = sorted(
        p.name for p in [*runtime.glob("kernel-*.json"), *runtime.glob("jmcp-*")]
    )
    if connection_files:
        problems.append(f"connection files outlived the server: {connection_files}")
    if problems:
        print(log.read_text(errors="replace")[-20000:], file=sys.stderr)
    return {"suite": "load", **figures, "problems": problems}


if __name__ == "__main__":
    sys.exit(main())
