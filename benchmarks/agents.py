#!/usr/bin/env python
"""Many agents at once over streamable HTTP: latency per tool, the server's CPU per call, lag.

    python benchmarks/agents.py                 # full: 1 agent, then 32 on 32 kernels, then
                                                # 64 on 16 shared kernels, 60 s each measured
    python benchmarks/agents.py --seconds 10    # the same phases, shorter, for trying it out
    python benchmarks/agents.py --json out.json

Issue 31, item 3. The real server process is started with its HTTP transport
(``start --transport streamable-http`` on loopback, the ``history`` toolset
asked for in the URL so ``apply_edits`` is served), a fresh one per phase,
and each agent is one official ``mcp.Client`` session over
``streamable_http_client``. The agents run in ``--client-processes`` worker
processes (default 2, one per core here), so one client event loop is not
the bottleneck of every agent. Every agent owns a notebook (or, in the
shared phase, shares one with three others: its kernel too) seeded with 30
executed cells, and loops with no think time over a mix of calls
(``MIX``): ``execute_code``, ``insert_execute_code_cell``, a brief
``read_notebook`` page, ``outline``, ``apply_edits`` of three operations
(insert a markdown cell of its own, overwrite one, delete its oldest past
eight, so the notebooks keep their size however long it runs) and the
trivial ``list_notebooks``.

Before the measured window each agent has initialized, started its kernel and
made every kind of call once (the client compiles each tool's output-schema
validator on its first call; a host does that once). The window starts when
every agent is warm. Measured over it:

- each tool's p50 and p99 latency, as the agent's host sees it;
- the server process's CPU (user + system, all threads, from
  ``/proc/<pid>/stat`` before and after), divided by the calls made: the
  figure the target compares with the single-agent phase's (≤ 1.5×);
- the kernels' CPU (the server's descendants), the clients' (each worker's
  ``time.process_time``) and the whole machine's busy share from
  ``/proc/stat``: who the two cores went to, and so what the bottleneck is;
- event-loop lag, inside the server: the server runs under ``looplag.py``,
  a 20 ms timer in its loop that notes how late it fires, and how much of
  that the loop itself caused (the lateness less the time the loop's thread
  waited for a core, which the kernel counts: on a busy shared machine that
  part is the machine's). From outside too: the latency of the cheapest
  request it serves, ``GET /healthz`` (no MCP, no tool, no file), polled
  every 50 ms from this process over a kept-alive connection, which also
  waits behind queued requests; and the agents' own client loops' lag (a
  20 ms sleep's overshoot), so the client's queueing can be told apart;
- errors (an exception or an ``isError`` result): must be 0.

Nothing asserts: the verdict lines say whether each target was met. The
load average goes on the report; other work on a shared machine moves every
number.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from looplag import asked_for
from procfs import cpu_seconds, descendants, load_average, machine, machine_busy_seconds
from profiles import server_environment
from results import percentile
from served import free_port, probe_healthz, stop, wait_healthy

#: The calls an agent makes, with their weights: executions, an edit that runs, reads, a batch.
MIX = (
    ("execute_code", 30),
    ("insert_execute_code_cell", 20),
    ("read_notebook", 15),
    ("outline", 10),
    ("apply_edits", 20),
    ("list_notebooks", 5),
)
#: Executed cells each notebook starts with: a page of reading and an outline worth the name.
SEED_CELLS = 30
#: Cells of its own an agent keeps; past this, its batches delete the oldest.
OWN_CELLS = 8
#: A call taking longer than this counts as an error (hung).
HANG = 120.0
ERROR_KEY = "io.jupyter-mcp/error"


@dataclass(frozen=True)
class Phase:
    name: str
    agents: int
    notebooks: int
    seconds: float


def seed_notebook(path: Path) -> None:
    import nbformat
    from nbformat import v4

    notebook = v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i in range(SEED_CELLS):
        if i % 10 == 0:
            notebook.cells.append(v4.new_markdown_cell(f"# Part {i // 10}\n\nNotes on part {i}."))
            continue
        cell = v4.new_code_cell(source=f"value_{i} = {i} * 2\nprint(value_{i})", execution_count=i)
        cell.outputs = [v4.new_output("stream", name="stdout", text=f"{i * 2}\n")]
        notebook.cells.append(cell)
    nbformat.write(notebook, str(path))


# --- the agents, in worker processes ------------------------------------------------------


def _code_of(result: Any) -> str | None:
    return ((result.meta or {}).get(ERROR_KEY) or {}).get("code")


def _text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


class Agent:
    """One agent: a session of its own, a notebook (its own or shared), its own cells."""

    def __init__(self, index: int, notebook: str, client: Any, out: dict[str, Any]) -> None:
        self.index = index
        self.notebook = notebook
        self.client = client
        self.out = out
        self.rng = random.Random(index)
        self.mine: list[str] = []
        self.counter = 0
        self.measuring = False

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(self.client.call_tool(tool, arguments), HANG)
        except Exception as error:  # every failure is counted, whatever it is
            self.out["errors"].append(f"agent {self.index} {tool}: {type(error).__name__}: {error}")
            return None
        elapsed = time.perf_counter() - started
        if result.is_error:
            self.out["errors"].append(
                f"agent {self.index} {tool}: {_code_of(result)}: {_text_of(result)[:300]}"
            )
            return None
        if self.measuring:
            self.out["latencies"].setdefault(tool, []).append(elapsed)
        return result.structured_content or {}

    async def one(self, tool: str) -> None:
        self.counter += 1
        n, nb = self.counter, self.notebook
        if tool == "execute_code":
            await self.call(
                "execute_code",
                {"notebook_name": nb, "code": f"a{self.index} = {n} * {n}\nprint(a{self.index})"},
            )
        elif tool == "insert_execute_code_cell":
            ran = await self.call(
                "insert_execute_code_cell",
                {"notebook_name": nb, "cell_index": -1, "cell_source": f"print({self.index}, {n})"},
            )
            if ran and ran.get("cell_id"):
                self.mine.append(ran["cell_id"])
        elif tool == "read_notebook":
            await self.call("read_notebook", {"notebook_name": nb, "response_format": "brief"})
        elif tool == "outline":
            await self.call("outline", {"notebook_name": nb})
        elif tool == "apply_edits":
            new_id = f"a{self.index}-{n}"
            operations: list[dict[str, Any]] = [
                {
                    "op": "insert",
                    "index": -1,
                    "cell_type": "markdown",
                    "source": f"agent {self.index} note {n}",
                    "cell_id": new_id,
                }
            ]
            if self.mine:
                operations.append(
                    {
                        "op": "overwrite",
                        "cell_id": self.rng.choice(self.mine),
                        "source": f"print('agent {self.index} rewrote at {n}')",
                    }
                )
            while len(self.mine) >= OWN_CELLS:
                operations.append({"op": "delete", "cell_id": self.mine.pop(0)})
            if await self.call("apply_edits", {"notebook_name": nb, "operations": operations}):
                self.mine.append(new_id)
        else:
            await self.call("list_notebooks", {})

    async def warm_up(self) -> None:
        await self.call("use_notebook", {"notebook_name": self.notebook})
        for tool, _weight in MIX:
            await self.one(tool)

    async def loop(self, deadline: float) -> None:
        tools = [tool for tool, _ in MIX]
        weights = [weight for _, weight in MIX]
        while time.monotonic() < deadline:
            await self.one(self.rng.choices(tools, weights)[0])


async def _lag_monitor(stop: asyncio.Event, samples: list[float], period: float = 0.02) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(period)
        samples.append(time.perf_counter() - started - period)


async def _worker_async(
    url: str, agents: list[tuple[int, str]], ready: Any, go: Any, deadline: Any
) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {"latencies": {}, "errors": [], "loop_lag": [], "calls": 0}
    async with contextlib.AsyncExitStack() as stack:
        running: list[Agent] = []
        for index, notebook in agents:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=HANG))
            )
            client = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http), mode="legacy")
            )
            await client.list_tools()  # as a host does, before its first call
            running.append(Agent(index, notebook, client, out))
        # Warm: kernels started (a few at a time, as agents arrive), every tool called once.
        for start in range(0, len(running), 4):
            await asyncio.gather(*(agent.warm_up() for agent in running[start : start + 4]))
        out["warm_errors"] = len(out["errors"])
        ready.put(os.getpid())
        await asyncio.to_thread(go.wait)
        for agent in running:
            agent.measuring = True
        stop = asyncio.Event()
        monitor = asyncio.ensure_future(_lag_monitor(stop, out["loop_lag"]))
        cpu_before = time.process_time()
        await asyncio.gather(*(agent.loop(deadline.value) for agent in running))
        out["client_cpu"] = time.process_time() - cpu_before
        stop.set()
        await monitor
        out["calls"] = sum(len(v) for v in out["latencies"].values())
    return out


def worker(
    url: str, agents: list[tuple[int, str]], ready: Any, go: Any, deadline: Any, results: Any
) -> None:
    try:
        results.put(asyncio.run(_worker_async(url, agents, ready, go, deadline)))
    except BaseException as error:  # the parent must hear of it, or it waits forever
        results.put({"fatal": f"{type(error).__name__}: {error}"})
        ready.put(-1)
        raise


# --- the phases, in this process ----------------------------------------------------------


def start_server(
    workspace: Path, port: int, kernels: int, log: Path, lag: Path
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        str(Path(__file__).with_name("looplag.py")),
        str(lag),
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
        # Every agent's kernel is started by its own first call, counted in the warm-up.
        "--capability",
        "kernel.prestart=off",
        "--max-kernels",
        str(kernels + 2),
    ]
    env = server_environment(
        {"JUPYTER_MCP_APPROVE": "", "JUPYTER_MCP_HISTORY_DIR": str(workspace.parent / "history")}
    )
    with log.open("wb") as stderr:
        return subprocess.Popen(
            command, env=env, cwd=workspace, stdout=subprocess.DEVNULL, stderr=stderr
        )


async def per_tool_cpu(url: str, pid: int, notebook: str, calls: int = 60) -> dict[str, float]:
    """The server's CPU per call of each tool, one agent calling it ``calls`` times in a row
    (after a few unmeasured calls): what the mixed figure is made of."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {"latencies": {}, "errors": []}
    figures = {}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=HANG)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        await client.list_tools()
        agent = Agent(1000, notebook, client, out)
        await agent.warm_up()
        for tool, _weight in MIX:
            for _ in range(3):
                await agent.one(tool)
            before = cpu_seconds(pid) or 0.0
            for _ in range(calls):
                await agent.one(tool)
            figures[tool] = round(((cpu_seconds(pid) or 0.0) - before) / calls * 1000, 3)
    if out["errors"]:
        raise RuntimeError(f"per-tool CPU calls failed: {out['errors'][:3]}")
    return figures


def _kernel_cpu(pid: int) -> float:
    return sum(cpu_seconds(child) or 0.0 for child in descendants(pid))


def run_phase(phase: Phase, root: Path, processes: int, log: Any) -> dict[str, Any]:
    workspace = root / phase.name / "workspace"
    workspace.mkdir(parents=True)
    notebooks = [f"nb{i:02d}.ipynb" for i in range(phase.notebooks)]
    for name in notebooks:
        seed_notebook(workspace / name)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server_log = root / phase.name / "server.log"
    lag_file = root / phase.name / "looplag.json"
    server = start_server(workspace, port, phase.notebooks, server_log, lag_file)
    context = multiprocessing.get_context("spawn")
    ready, results = context.Queue(), context.Queue()
    go = context.Event()
    deadline = context.Value("d", 0.0)
    workers = []
    try:
        wait_healthy(server, base, server_log)
        url = f"{base}/mcp?toolsets=history"
        count = min(processes, phase.agents)
        assignments: list[list[tuple[int, str]]] = [[] for _ in range(count)]
        for index in range(phase.agents):
            assignments[index % count].append((index, notebooks[index % phase.notebooks]))
        started = time.perf_counter()
        for agents in assignments:
            process = context.Process(
                target=worker, args=(url, agents, ready, go, deadline, results), daemon=True
            )
            process.start()
            workers.append(process)
        for _ in workers:
            if ready.get(timeout=600) == -1:
                raise RuntimeError(f"a worker failed while warming up: {results.get(timeout=5)}")
        log(f"   {phase.agents} agents warm in {time.perf_counter() - started:.1f} s")
        kernels = descendants(server.pid)
        load_start = load_average()
        server_cpu, kernel_cpu = cpu_seconds(server.pid) or 0.0, _kernel_cpu(server.pid)
        busy, total = machine_busy_seconds()
        wall = time.perf_counter()
        deadline.value = time.monotonic() + phase.seconds
        server.send_signal(signal.SIGUSR1)  # the loop's lag from here on, not the warm-up's
        go.set()
        probes: list[float] = []

        async def probing() -> list[dict[str, Any]]:
            stop = asyncio.Event()
            task = asyncio.ensure_future(probe_healthz(base, stop, probes))
            outs = []
            for _ in workers:
                outs.append(await asyncio.to_thread(results.get, True, phase.seconds + 600))
            stop.set()
            await task
            return outs

        outs = asyncio.run(probing())
        wall = time.perf_counter() - wall
        loop_lag = asked_for(server, lag_file)
        server_cpu = (cpu_seconds(server.pid) or 0.0) - server_cpu
        kernel_cpu = _kernel_cpu(server.pid) - kernel_cpu
        busy_end, total_end = machine_busy_seconds()
        load_end = load_average()
        per_tool = (
            asyncio.run(per_tool_cpu(url, server.pid, notebooks[0])) if phase.agents == 1 else {}
        )
    finally:
        stop(server, workers)
    fatal = [out["fatal"] for out in outs if "fatal" in out]
    if fatal:
        raise RuntimeError(f"a worker failed: {fatal}")
    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    lag: list[float] = []
    client_cpu = 0.0
    for out in outs:
        for tool, values in out["latencies"].items():
            latencies.setdefault(tool, []).extend(values)
        errors.extend(out["errors"])
        lag.extend(out["loop_lag"])
        client_cpu += out["client_cpu"]
    calls = sum(len(v) for v in latencies.values())
    machine_busy = busy_end - busy
    return {
        "phase": phase.name,
        "agents": phase.agents,
        "notebooks": phase.notebooks,
        "kernels": len(kernels),
        "client_processes": len(workers),
        "seconds": round(wall, 2),
        "calls": calls,
        "calls_per_second": round(calls / wall, 1),
        "errors": len(errors),
        "first_errors": errors[:10],
        "tools": {
            tool: {
                "calls": len(values),
                "p50_ms": round(percentile(values, 0.5) * 1000, 2),
                "p99_ms": round(percentile(values, 0.99) * 1000, 2),
            }
            for tool, values in sorted(latencies.items())
        },
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_ms_per_call": round(server_cpu / calls * 1000, 3) if calls else None,
        "kernels_cpu_s": round(kernel_cpu, 2),
        "clients_cpu_s": round(client_cpu, 2),
        "machine_busy_s": round(machine_busy, 2),
        "machine_cores_busy": round(machine_busy / wall, 2),
        "machine_capacity_s": round((total_end - total), 2),
        "healthz_p50_ms": round(percentile(probes, 0.5) * 1000, 2) if probes else None,
        "healthz_p99_ms": round(percentile(probes, 0.99) * 1000, 2) if probes else None,
        "healthz_probes": len(probes),
        "client_loop_lag_p99_ms": round(percentile(lag, 0.99) * 1000, 2) if lag else None,
        "server_loop": loop_lag,
        "server_cpu_ms_per_call_by_tool": per_tool,
        "load_start": load_start,
        "load_end": load_end,
    }


def print_phase(result: dict[str, Any], single: dict[str, Any] | None) -> None:
    print(
        f"\n## {result['phase']}: {result['agents']} agents, {result['notebooks']} notebooks "
        f"({result['kernels']} processes under the server), {result['seconds']} s, "
        f"{result['client_processes']} client processes"
    )
    print("\n| tool | calls | p50 | p99 |\n| --- | ---: | ---: | ---: |")
    for tool, figures in result["tools"].items():
        print(
            f"| {tool} | {figures['calls']:,} | {figures['p50_ms']:.1f} ms | {figures['p99_ms']:.1f} ms |"
        )
    calls = result["calls"]
    loop = result["server_loop"]
    ratio = ""
    if single and single["server_cpu_ms_per_call"] and result is not single:
        ratio = f" ({result['server_cpu_ms_per_call'] / single['server_cpu_ms_per_call']:.2f}x the single agent's)"
    print(
        f"\n- {calls:,} calls, {result['calls_per_second']} a second; errors {result['errors']}"
        f"\n- server CPU {result['server_cpu_s']} s = {result['server_cpu_ms_per_call']} ms a call{ratio}"
        f"\n- CPU where it went: server {result['server_cpu_s']} s, kernels {result['kernels_cpu_s']} s, "
        f"clients {result['clients_cpu_s']} s, whole machine {result['machine_busy_s']} s of "
        f"{result['machine_capacity_s']} s ({result['machine_cores_busy']} cores busy on average)"
        f"\n- loop lag (GET /healthz, every 50 ms): p50 {result['healthz_p50_ms']} ms, "
        f"p99 {result['healthz_p99_ms']} ms over {result['healthz_probes']} probes; "
        f"the clients' own loops: p99 {result['client_loop_lag_p99_ms']} ms"
        f"\n- inside the server's loop (a {loop.get('interval_ms')} ms timer, {loop.get('samples')} "
        f"samples): late p50 {loop.get('late_p50_ms')} / p99 {loop.get('late_p99_ms')} ms; of it "
        f"the loop's own (less the time its thread waited for a core) p50 "
        f"{loop.get('own_p50_ms')} / p99 {loop.get('own_p99_ms')} / max {loop.get('own_max_ms')} ms"
        f"\n- load average {result['load_start']} at the start, {result['load_end']} at the end"
    )
    if result["server_cpu_ms_per_call_by_tool"]:
        each = ", ".join(
            f"{t} {ms} ms" for t, ms in result["server_cpu_ms_per_call_by_tool"].items()
        )
        print(f"- server CPU a call, each tool alone (60 in a row, one agent): {each}")
    for generation, seen in result["server_loop"].get("collections", {}).items():
        print(
            f"  - garbage collections of generation {generation}: {seen['count']}, "
            f"{seen['total_ms']} ms in all, the longest {seen['longest_ms']} ms"
        )
    for place in result["server_loop"].get("held_at", [])[:8]:
        print(
            f"  - the loop held {place['ms']} ms (sampled) in {place['ours']}"
            f" (innermost: {place['innermost']})"
        )
    for error in result["first_errors"]:
        print(f"  error: {error}")


def _verdict(p99: float | None) -> str:
    if p99 is None:
        return "not measured"
    return f"{'met' if p99 <= 50 else 'NOT MET'} ({p99} ms)"


def verdicts(phases: list[dict[str, Any]]) -> list[str]:
    single = phases[0]
    lines = []
    for result in phases[1:]:
        ratio = result["server_cpu_ms_per_call"] / single["server_cpu_ms_per_call"]
        lines.append(
            f"- {result['phase']}: server CPU per call <= 1.5x the single agent's: "
            f"{'met' if ratio <= 1.5 else 'NOT MET'} ({ratio:.2f}x); "
            f"errors 0: {'met' if result['errors'] == 0 else 'NOT MET'} ({result['errors']}); "
            f"the loop's own lag p99 <= 50 ms (inside the server): "
            f"{_verdict(result['server_loop'].get('own_p99_ms'))}; "
            f"as /healthz sees it: {result['healthz_p99_ms']} ms"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds a phase (60)")
    parser.add_argument(
        "--single-seconds",
        type=float,
        default=0.0,
        help="the single agent's (default: --seconds / 2)",
    )
    parser.add_argument(
        "--agents", type=int, default=32, help="agents on kernels of their own (32)"
    )
    parser.add_argument(
        "--shared-agents", type=int, default=64, help="agents on the shared pool (64)"
    )
    parser.add_argument("--shared-notebooks", type=int, default=16, help="the shared pool (16)")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--only", choices=["single", "own", "shared"], action="append", default=[])
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    single_seconds = args.single_seconds or max(5.0, args.seconds / 2)
    phases = [
        Phase("single", 1, 1, single_seconds),
        Phase("own", args.agents, args.agents, args.seconds),
        Phase("shared", args.shared_agents, args.shared_notebooks, args.seconds),
    ]
    phases = [p for p in phases if not args.only or p.name in args.only]
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    info = machine()
    log(f"{info['nproc']} x {info['cpu']}, Python {info['python']}, load {info['load']}")
    root = Path(tempfile.mkdtemp(prefix="jmcp-agents-"))
    results = []
    try:
        for phase in phases:
            log(f"-- {phase.name}: {phase.agents} agents on {phase.notebooks} notebooks")
            results.append(run_phase(phase, root, args.client_processes, log))
            log(f"   {results[-1]['calls']} calls, {results[-1]['errors']} errors")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    single = results[0] if results and results[0]["phase"] == "single" else None
    for result in results:
        print_phase(result, single)
    if single and len(results) > 1:
        print()
        print("\n".join(verdicts(results)))
    print(
        f"\n{time.perf_counter() - started:.0f} s; {info['nproc']} x {info['cpu']}, "
        f"Python {info['python']}; load average {info['load']} at the start, {load_average()} at the end"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "phases": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
