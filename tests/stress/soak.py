"""Soak: hours of mixed HTTP work, and whether anything the server holds drifts.

One `jupyter-mcp-server start --transport streamable-http` on 127.0.0.1 and
`--clients` official MCP clients (half per protocol generation) on five
notebooks, for `--minutes`. Each client opens a session, does a few dozen
calls, and leaves; some leave in the middle of a call (the call's stream
cut, then the session closed), and each comes back with a new session. The
calls mix reads, edits (each client keeps at most a few cells of its own, so
the notebooks stay the same size), executions, detached runs followed with
``get_run``, detached runs stopped with ``cancel_run``, and now and then a
``restart_notebook`` (the notebook's other clients' running cells come back
``interrupted`` or ``kernel_gone``, which is the contract, and counted).

A warm-up round first (one client per notebook, every kind of call, until
each notebook has its kernel and every code path is imported) is not
measured. Then, every `--sample-seconds`, the server's RSS, open file
descriptors, threads and kernel processes (its descendants) are read from
/proc; leaving out the first fifth of the measured run (caches filling up
to their bounds), each series' least-squares slope per minute is the drift; the run fails if a slope is past its bound (`BOUNDS`), if a call
fails in a way the contract does not allow, if a call hangs, or if after the
server's SIGTERM any process it started or any connection file is left.

This machine is shared: the figures say how loaded it was (the load average
at the start and the end), and docs/reliability.md records them.

    python tests/stress/soak.py                    # full: 20 clients, 30 minutes
    python tests/stress/soak.py --short            # CI: 20 clients, 30 seconds
    python tests/stress/soak.py --minutes 10       # any length; the same code
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
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
from load import code_of, free_port, http_server_command, text_of
from rpc import alive, descendants, environment, rss_bytes, wait_until_gone
from servers import healthz, start

NOTEBOOKS = 5
#: The most cells of its own a client keeps: the notebooks stay the same size however long it runs.
OWN_CELLS = 4
#: The longest a call may take before it counts as hung.
HANG = 120.0
#: Codes the contract answers under this load, not failures: another client's restart of the
#: notebook's kernel interrupts or loses a running cell; a run asked about after its client left.
EXPECTED_UNDER_LOAD = frozenset({"interrupted", "kernel_gone"})
#: How long a finished detached run is kept (JUPYTER_MCP_TASK_TTL_SECONDS).
RUNS_KEPT_SECONDS = 60
#: How far each series may drift per minute after the warm-up and still be flat. The RSS bound
#: is two thirds of the growth the unexpired HTTP sessions caused (issue 30: ~6 MiB a minute
#: with 10 clients). Two 3-minute runs measured 2.3 and 2.4 MiB a minute, not yet explained
#: (200 sessions opened and closed alone are flat): docs/reliability.md, round three.
BOUNDS = {"rss_mib": 4.0, "fds": 2.0, "threads": 0.5, "kernels": 0.5}
#: Runs shorter than this report their slopes without judging them: in three minutes the heap
#: of a server that has just served its first few thousand calls is still settling (CI saw
#: 2.3 to 5.0 MiB a minute from the same code), so only a long run tells a leak from that.
JUDGED_MINUTES = 10.0


@dataclass
class Stats:
    calls: Counter[str] = field(default_factory=Counter)
    expected_codes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    sessions: int = 0
    left_mid_call: int = 0
    detached: int = 0
    cancelled: int = 0
    restarts: int = 0
    latencies: list[float] = field(default_factory=list)


async def client_loop(url: str, index: int, deadline: float, stats: Stats, seed: int) -> None:
    """Sessions, one after another, until the deadline."""
    rng = random.Random(seed * 1000 + index)
    notebook = f"soak-{index % NOTEBOOKS}.ipynb"
    mode = "legacy" if index % 2 else "auto"
    mine: list[str] = []  # ids of the cells this client inserted and has not deleted
    while time.monotonic() < deadline:
        await one_session(url, index, notebook, mode, rng, deadline, mine, stats)


async def one_session(
    url: str,
    index: int,
    notebook: str,
    mode: str,
    rng: random.Random,
    deadline: float,
    mine: list[str],
    stats: Stats,
    calls: int | None = None,
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    calls_this_session = calls or rng.randint(10, 40)
    leave_mid_call = rng.random() < 0.3
    stats.sessions += 1
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=HANG)) as http,
        Client(
            streamable_http_client(f"{url}?toolsets=runs", http_client=http), mode=mode
        ) as client,
    ):

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            started = time.monotonic()
            try:
                result = await asyncio.wait_for(client.call_tool(tool, arguments), HANG)
            except Exception as error:
                stats.failures.append(f"client {index} {tool}: {type(error).__name__}: {error}")
                return None
            stats.latencies.append(time.monotonic() - started)
            stats.calls[tool] += 1
            code = code_of(result)
            if code in EXPECTED_UNDER_LOAD:
                stats.expected_codes[code] += 1
                return None
            if result.is_error:
                stats.failures.append(
                    f"client {index} {tool} {json.dumps(arguments)[:200]}: {code}: {text_of(result)[:300]}"
                )
                return None
            return result.structured_content

        if await call("use_notebook", {"notebook_name": notebook}) is None:
            return
        for _ in range(calls_this_session):
            if time.monotonic() > deadline:
                break
            await one_call(call, index, notebook, rng, mine, stats)
        if leave_mid_call and time.monotonic() < deadline:
            # The call's stream is cut under it (a closed laptop, a killed client), then the
            # session ends; the server finishes or stops the call on its own.
            stats.left_mid_call += 1
            code = (
                f"import time\nprint({index}, flush=True)\ntime.sleep({rng.uniform(0.2, 2.0):.2f})"
            )
            leaving = asyncio.ensure_future(
                client.call_tool("execute_code", {"notebook_name": notebook, "code": code})
            )
            await asyncio.sleep(rng.uniform(0.05, 1.0))
            leaving.cancel()
            with contextlib.suppress(BaseException):
                await leaving


async def one_call(
    call: Any, index: int, notebook: str, rng: random.Random, mine: list[str], stats: Stats
) -> None:
    roll = rng.random()
    if len(mine) > OWN_CELLS:
        if (
            await call("delete_cell", {"notebook_name": notebook, "cell_ids_to_delete": [mine[0]]})
            is not None
        ):
            mine.pop(0)
        return
    if roll < 0.15:
        await call("read_notebook", {"notebook_name": notebook, "limit": 10})
    elif roll < 0.22:
        await call("list_files", {"max_depth": 1})
    elif roll < 0.28:
        await call("get_notebook_revision", {"notebook_name": notebook})
    elif roll < 0.38:
        placed = await call(
            "insert_cell",
            {
                "notebook_name": notebook,
                "cell_index": -1,
                "cell_type": "markdown",
                "cell_source": f"c{index} {roll:.6f}",
            },
        )
        if placed is not None:
            mine.append(placed["cell_id"])
    elif roll < 0.45 and mine:
        await call(
            "overwrite_cell_source",
            {
                "notebook_name": notebook,
                "cell_id": rng.choice(mine),
                "cell_source": f"c{index} {roll:.6f} again",
            },
        )
    elif roll < 0.50 and mine:
        if (
            await call("delete_cell", {"notebook_name": notebook, "cell_ids_to_delete": [mine[-1]]})
            is not None
        ):
            mine.pop()
    elif roll < 0.68:
        ran = await call(
            "execute_code",
            {
                "notebook_name": notebook,
                "code": f"x{index} = list(range({rng.randint(1, 1000)}))\nlen(x{index})",
            },
        )
        if ran is not None and ran.get("status") != "ok":
            stats.failures.append(f"client {index} execute_code: status {ran.get('status')}")
    elif roll < 0.74:
        ran = await call(
            "insert_execute_code_cell",
            {"notebook_name": notebook, "cell_index": -1, "cell_source": f"print('c{index}')"},
        )
        if ran is not None:
            mine.append(ran["cell_id"])
    elif roll < 0.84:
        # A detached run, followed to its end.
        started = await call(
            "execute_code",
            {
                "notebook_name": notebook,
                "code": "import time\ntime.sleep(0.3)\nprint('detached')",
                "detach": True,
            },
        )
        if started is not None:
            stats.detached += 1
            for _ in range(10):
                run = await call("get_run", {"run_id": started["run_id"], "wait_seconds": 10})
                if run is None or run.get("status") in ("completed", "failed", "cancelled"):
                    break
    elif roll < 0.92:
        # A detached run, stopped.
        started = await call(
            "execute_code",
            {"notebook_name": notebook, "code": "import time\ntime.sleep(5)", "detach": True},
        )
        if started is not None:
            stats.detached += 1
            await asyncio.sleep(rng.uniform(0.0, 0.5))
            if await call("cancel_run", {"run_id": started["run_id"]}) is not None:
                stats.cancelled += 1
    elif roll < 0.935:
        if await call("restart_notebook", {"notebook_name": notebook}) is not None:
            stats.restarts += 1
    else:
        await call("get_notebook_revision", {"notebook_name": notebook})


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def slope_per_minute(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) pairs, per minute."""
    if len(samples) < 3:
        return 0.0
    xs = [x for x, _ in samples]
    ys = [y for _, y in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return (
        60 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
        if spread
        else 0.0
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="CI mode: 30 seconds")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("STRESS_SEED", "7")))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    minutes = args.minutes if args.minutes is not None else (0.5 if args.short else 30.0)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jmcp-soak-") as directory:
        report = run(Path(directory), args.clients, minutes * 60, args.sample_seconds, args.seed)
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 1 if report["problems"] else 0


def run(
    root: Path, clients: int, seconds: float, sample_seconds: float, seed: int
) -> dict[str, Any]:
    workspace = root / "workspace"
    workspace.mkdir()
    runtime = root / "runtime"
    runtime.mkdir()
    for index in range(NOTEBOOKS):
        nbformat.write(nbformat.v4.new_notebook(), workspace / f"soak-{index}.ipynb")
    port = free_port()
    command = http_server_command(workspace, port, "--max-kernels", str(NOTEBOOKS + 2))
    log = root / "server.log"
    problems: list[str] = []
    # Finished detached runs are kept an hour by default (at most 256): kept a minute here, the
    # store is at its steady size within the run, so what grows after the warm-up is drift.
    env = environment(
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTER_MCP_HISTORY_DIR=str(root / "history"),
        JUPYTER_MCP_TASK_TTL_SECONDS=str(RUNS_KEPT_SECONDS),
    )
    server = start(command, env=env, cwd=root, log=log, port=port, stdout=subprocess.DEVNULL)
    process = server.process
    url = f"http://127.0.0.1:{port}/mcp"
    seen: set[int] = set()
    series: dict[str, list[tuple[float, float]]] = {name: [] for name in BOUNDS}
    stats = Stats()
    figures: dict[str, Any] = {
        "clients": clients,
        "minutes": round(seconds / 60, 1),
        "load_average_start": os.getloadavg()[0],
    }
    try:
        server.wait_until(healthz)

        async def soak() -> None:
            warm_up = Stats()
            await asyncio.gather(
                *(
                    one_session(
                        url,
                        index,
                        f"soak-{index}.ipynb",
                        "auto",
                        random.Random(seed + index),
                        float("inf"),
                        [],
                        warm_up,
                        calls=40,
                    )
                    for index in range(NOTEBOOKS)
                )
            )
            figures["warm_up_calls"] = sum(warm_up.calls.values())
            problems.extend(f"warm-up: {failure}" for failure in warm_up.failures[:5])
            began = time.monotonic()

            async def sample() -> None:
                while True:
                    with contextlib.suppress(OSError):
                        below = descendants(process.pid)
                        seen.update(below)
                        at = time.monotonic() - began
                        series["rss_mib"].append((at, rss_bytes(process.pid) / 2**20))
                        series["fds"].append((at, open_fds(process.pid)))
                        series["threads"].append((at, threads(process.pid)))
                        series["kernels"].append((at, len(below)))
                    await asyncio.sleep(sample_seconds)

            sampler = asyncio.ensure_future(sample())
            try:
                end = began + seconds
                await asyncio.gather(
                    *(client_loop(url, index, end, stats, seed) for index in range(clients))
                )
            finally:
                sampler.cancel()

        asyncio.run(soak())
        answered = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        if answered.status_code != 200:
            problems.append(f"the server stopped answering: {answered.status_code}")
        warm = seconds / 5
        drift: dict[str, Any] = {}
        for name, points in series.items():
            after_warm_up = [point for point in points if point[0] >= warm]
            values = [value for _, value in after_warm_up]
            slope = slope_per_minute(after_warm_up)
            drift[name] = {
                "slope_per_minute": round(slope, 3),
                "first": round(values[0], 1) if values else None,
                "last": round(values[-1], 1) if values else None,
                "min": round(min(values), 1) if values else None,
                "max": round(max(values), 1) if values else None,
                "samples": len(values),
            }
            if seconds >= JUDGED_MINUTES * 60 and slope > BOUNDS[name]:
                problems.append(
                    f"{name} drifted {slope:.2f}/min after the warm-up (bound {BOUNDS[name]}/min)"
                )
        figures["drift"] = drift
        problems.extend(stats.failures[:20])
        if len(stats.failures) > 20:
            problems.append(f"... and {len(stats.failures) - 20} more failures")
        total = sum(stats.calls.values())
        latencies = sorted(stats.latencies)
        figures.update(
            calls=total,
            calls_by_tool=dict(sorted(stats.calls.items())),
            failures=len(stats.failures),
            expected_codes=dict(stats.expected_codes),
            sessions=stats.sessions,
            left_mid_call=stats.left_mid_call,
            detached_runs=stats.detached,
            cancelled_runs=stats.cancelled,
            restarts=stats.restarts,
            median_latency_ms=round(statistics.median(latencies) * 1000, 1) if latencies else None,
            p99_latency_ms=round(latencies[int(len(latencies) * 0.99)] * 1000, 1)
            if latencies
            else None,
            processes_seen=len(seen),
            load_average_end=os.getloadavg()[0],
        )
        for index in range(NOTEBOOKS):
            nbformat.validate(nbformat.read(workspace / f"soak-{index}.ipynb", as_version=4))
    finally:
        seen.update(descendants(process.pid) if alive(process.pid) else set())
        server.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            problems.append("the server did not stop within 30 s of SIGTERM")
            server.kill()
    orphans = wait_until_gone(seen, 10)
    figures["orphaned_processes"] = len(orphans)
    if orphans:
        problems.append(f"{len(orphans)} processes outlived the server")
        for pid in orphans:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    connection_files = sorted(
        p.name for p in [*runtime.glob("kernel-*.json"), *runtime.glob("jmcp-*")]
    )
    figures["leftover_connection_files"] = len(connection_files)
    if connection_files:
        problems.append(f"connection files outlived the server: {connection_files}")
    if problems:
        print(log.read_text(errors="replace")[-20000:], file=sys.stderr)
    return {"suite": "soak", **figures, "problems": problems}


if __name__ == "__main__":
    sys.exit(main())
