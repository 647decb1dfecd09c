#!/usr/bin/env python
"""What one warm call spends in the server, layer by layer (issue 31, item 1).

    python benchmarks/call_profile.py                 # 5 rounds of 40 calls, 200 profiled of each tool
    python benchmarks/call_profile.py --calls 400 --rounds 5
    python benchmarks/call_profile.py --functions     # also print each layer's functions
    python benchmarks/call_profile.py --quick         # CI: small, and LAYERS checked

Two measurements in one run, for the two calls every agent makes most:
warm ``execute_code`` of ``1+1`` (nothing stored) and warm ``execute_cell``
of a stored ``1+1`` cell (outputs written back, the file replaced atomically,
an entry in the notebook's history).

1. **Wall and CPU, unprofiled.** Our server spawned over stdio exactly as
   ``run.py`` spawns it, driven by the official ``mcp.Client``; rounds of
   ``--rounds``: a batch of ``execute_code``, then a batch of raw
   ``jupyter_client`` executions on a warm kernel in this process (the floor,
   ``floor.py``), then a batch of ``execute_cell``, then a batch of the floor
   each followed by one atomic write of the same notebook our store's way
   (``floor.atomic_writer``: serialize, write, fsync, rename, fsync the
   directory), the least a persisted call can cost; load on the machine hits
   all alike. Around each batch of ours the server process's CPU (user +
   system, every thread) is read from ``/proc/<pid>/stat``: the server's CPU
   per call.
2. **Layers, profiled.** The same server spawned under ``cprofiled.py``
   (cProfile in every thread), once per tool: warmed up, its statistics
   cleared (SIGUSR1), then ``--calls`` calls, then stopped. Each layer's time
   is the cumulative time of the functions that implement it (``LAYERS``,
   below, by file and function name), less the functions of other layers it
   calls (``inside``), divided by the calls. cProfile's clock is the wall
   clock, and a coroutine's time excludes its awaits, so a layer's figure is
   the server's time in it, including system calls that block (``fsync``),
   not the time it waits for the kernel. The server's busy time is every
   thread's time outside its idle waits (the event loop's ``epoll``, the
   worker threads' queue); what no layer claims is shown as the rest
   (dispatch, the middleware chain, the tool's own logic, the event loop).
   Profiling inflates Python-heavy code more than system calls, so the
   shares are for reading where time goes; the CPU per call of (1) is the
   real figure.

No time is asserted. The one failure is a stale ``LAYERS``: an entry that
matched no profiled function (and ``OFF_PATH`` does not explain) exits with
status 1, since its layer would silently read low. The table's last lines say whether the targets of issue 31
were met (warm ``execute_code`` ≤ 1.15× the floor, persisted ≤ 1.4×), with the
load average, which moves every number on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import pstats
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import floor
from harness import Session, connect
from procfs import cpu_seconds, load_average, machine
from profiles import BENCH, OURS

NOTEBOOK = "warm.ipynb"
TOOLS = ("execute_code", "execute_cell")


@dataclass(frozen=True)
class Layer:
    """A layer of a call: the functions that implement it, and those of other layers they call.

    A function is ``(path suffix, name)``: every profiled function whose file ends with the
    suffix and whose name is the name (both the SDK's and ours)."""

    name: str
    functions: tuple[tuple[str, str], ...]
    inside: tuple[tuple[str, str], ...] = ()


#: Which functions implement which layer. Reviewable on purpose: a layer's figure is only as
#: good as this list (``--functions`` prints what each entry matched and its time).
LAYERS = (
    Layer(
        "transport read (stdin line, JSON-RPC parse)",
        (("_transports/pipes.py", "stdin_reader"),),
    ),
    Layer(
        "transport write (JSON dump, pipe write)",
        (("_transports/pipes.py", "stdout_writer"), ("mcp/server/runner.py", "_serialize")),
    ),
    Layer(
        "argument validation (declared schema, SDK model)",
        (
            ("_protocol/declared_schemas.py", "problems"),
            ("mcpserver/utilities/func_metadata.py", "validate_arguments"),
        ),
    ),
    Layer(
        "hooks, profile and approval checks",
        (
            ("jupyter_mcp_server/_hooks.py", "fire"),
            ("_protocol/profile_guard.py", "request_profile"),
            ("_calls/approvals.py", "approve_shell_code"),
            ("_calls/approvals.py", "asks_for"),
        ),
        inside=(("_calls/approvals.py", "shell_lines"),),
    ),
    Layer("shell-command scan", (("_calls/approvals.py", "shell_lines"),)),
    Layer(
        "redaction (arguments, reply, result)",
        (
            ("jupyter_mcp_server/_hooks.py", "redacted"),
            ("jupyter_mcp_server/_state.py", "_learned_secrets"),
            ("_protocol/masking.py", "mask_result"),
            ("_protocol/masking.py", "mask"),
        ),
    ),
    Layer(
        "kernel round trip (send, receive, decode)",
        (("_kernels/execution.py", "run_code"),),
        inside=(
            ("_kernels/outputs.py", "add"),
            ("_kernels/outputs.py", "result"),
            ("jupyter_mcp_server/_state.py", "_learned_secrets"),
        ),
    ),
    Layer(
        "output collection and rendering",
        (
            ("_kernels/outputs.py", "add"),
            ("_kernels/outputs.py", "result"),
            ("_runs/executions.py", "execution_result"),  # calls _rendering/content.output_blocks
        ),
    ),
    Layer(
        "output-schema validation (SDK)",
        (("mcpserver/utilities/func_metadata.py", "convert_result"),),
    ),
    Layer(
        "durable write (read-check, serialize, write, fsync, rename)",
        (("_store/store.py", "mutate"),),
        inside=(
            ("_store/recording.py", "will_write"),
            ("_store/recording.py", "written"),
            ("_tools/running.py", "change"),
        ),
    ),
    Layer(
        "history entry",
        (("_store/recording.py", "will_write"), ("_store/recording.py", "written")),
    ),
)

#: Entries these two calls do not reach by design: an approval is asked only when the
#: operator asks for approvals (``asks_for``), and progress text is masked only for a client
#: that follows the call's progress (``mask``). Any other entry matching nothing is stale
#: (a function renamed or moved), and the run exits with status 1: its layer would read low.
OFF_PATH = frozenset({"_calls/approvals.py:asks_for", "_protocol/masking.py:mask"})

#: Where the event loop waits with nothing to do: not the server's time.
IDLE = (("selectors.py", "select"),)
#: Where the busy threads' time is counted from: the event loop's passes and the worker
#: threads' work items (a worker's wait for its next item is outside them).
BUSY = (("asyncio/base_events.py", "_run_once"), ("concurrent/futures/thread.py", "run"))


def _matches(stats: pstats.Stats, function: tuple[str, str]) -> list[tuple[Any, float]]:
    suffix, name = function
    return [
        (key, value[3])
        for key, value in stats.stats.items()  # type: ignore[attr-defined]
        if key[2] == name and key[0].endswith(suffix)
    ]


def _cumulative(stats: pstats.Stats, functions: Iterable[tuple[str, str]]) -> float:
    return sum(seconds for function in functions for _key, seconds in _matches(stats, function))


def busy_seconds(stats: pstats.Stats) -> float:
    """Every thread's time outside its idle waits: the loop's passes less its epoll waits,
    plus the worker threads' work items."""
    loop = _cumulative(stats, [BUSY[0]]) - _cumulative(stats, IDLE)
    return loop + _cumulative(stats, [BUSY[1]])


def layer_seconds(stats: pstats.Stats, layer: Layer) -> float:
    return max(0.0, _cumulative(stats, layer.functions) - _cumulative(stats, layer.inside))


@dataclass(frozen=True)
class Breakdown:
    tool: str
    calls: int
    busy_ms: float
    layers: tuple[tuple[str, float], ...]  # name, ms per call
    functions: tuple[str, ...]  # what each entry matched, for --functions
    unmatched: tuple[str, ...]  # entries that matched no profiled function


def breakdown(tool: str, path: str, calls: int) -> Breakdown:
    stats = pstats.Stats(path)
    layers = tuple((layer.name, layer_seconds(stats, layer) * 1000 / calls) for layer in LAYERS)
    lines = []
    unmatched = []
    for layer in LAYERS:
        lines.append(f"  {layer.name}")
        for sign, group in (("+", layer.functions), ("-", layer.inside)):
            for function in group:
                found = _matches(stats, function)
                if not found:
                    unmatched.append(f"{function[0]}:{function[1]}")
                    lines.append(f"    {sign} {function[0]}:{function[1]}  (not called)")
                for key, seconds in found:
                    lines.append(
                        f"    {sign} {key[0].split('site-packages/')[-1]}:{key[1]} {key[2]}"
                        f"  {seconds * 1000 / calls:.3f} ms/call"
                    )
    return Breakdown(
        tool, calls, busy_seconds(stats) * 1000 / calls, layers, tuple(lines), tuple(unmatched)
    )


# --- driving the server ---------------------------------------------------------------------


async def prepare(session: Session) -> None:
    await session.op("create_notebook", notebook=NOTEBOOK)
    await session.op("insert_execute", notebook=NOTEBOOK, source="1+1")
    for _ in range(10):  # every path warm, the client's output-schema validators compiled
        await call(session, "execute_code")
        await call(session, "execute_cell")


async def call(session: Session, tool: str) -> None:
    if tool == "execute_code":
        await session.op("execute_code", notebook=NOTEBOOK, code="1+1")
    else:
        await session.op("execute_cell", notebook=NOTEBOOK, index=0)


@dataclass
class Timings:
    wall: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    cpu: dict[str, list[float]] = dataclasses.field(default_factory=dict)  # seconds per call


async def unprofiled(root: Path, rounds: int, batch: int) -> Timings:
    timings = Timings()
    async with (
        floor.warm_kernel(Path(tempfile.mkdtemp(dir=root))) as kernel,
        connect(OURS, Path(tempfile.mkdtemp(dir=root))) as session,
    ):
        await prepare(session)
        for _ in range(5):
            await kernel.execute("1+1")
        assert session.pid is not None, "the server process was not found"
        # The persisted call's floor: the same execution, then the same notebook written once
        # our store's way (serialize, write, fsync, rename, fsync the directory).
        write = floor.atomic_writer(Path(tempfile.mkdtemp(dir=root)))
        notebook = floor.read_notebook(session.workspace / NOTEBOOK)
        for _ in range(rounds):
            for tool in ("execute_code", "floor", "execute_cell", "floor + write"):
                before = cpu_seconds(session.pid) if not tool.startswith("floor") else None
                for _ in range(batch):
                    started = time.perf_counter()
                    if tool == "floor":
                        await kernel.execute("1+1")
                    elif tool == "floor + write":
                        await kernel.execute("1+1")
                        await asyncio.to_thread(write, notebook)
                    else:
                        await call(session, tool)
                    timings.wall.setdefault(tool, []).append(time.perf_counter() - started)
                if before is not None:
                    after = cpu_seconds(session.pid) or before
                    timings.cpu.setdefault(tool, []).append((after - before) / batch)
    return timings


async def profiled(root: Path, tool: str, calls: int) -> Breakdown:
    out = str(root / f"{tool}.prof")
    profile = dataclasses.replace(OURS, args=[str(BENCH / "cprofiled.py"), out, *OURS.args])
    async with connect(profile, Path(tempfile.mkdtemp(dir=root))) as session:
        await prepare(session)
        assert session.pid is not None, "the server process was not found"
        os.kill(session.pid, signal.SIGUSR1)  # the statistics from here on: the measured calls
        await asyncio.sleep(0.2)
        for _ in range(calls):
            await call(session, tool)
    for _ in range(100):  # the statistics are written at exit
        if Path(out).exists():
            break
        await asyncio.sleep(0.1)
    return breakdown(tool, out, calls)


# --- the report -------------------------------------------------------------------------------


def ms(seconds: float) -> float:
    return seconds * 1000


def unmatched_of(breakdowns: list[Breakdown]) -> list[tuple[str, ...]]:
    return [b.unmatched for b in breakdowns]


def stale(breakdowns: list[Breakdown]) -> set[str]:
    """The entries of ``LAYERS`` that neither call reached and ``OFF_PATH`` does not explain."""
    return set.intersection(*map(set, unmatched_of(breakdowns))) - OFF_PATH


def report(
    timings: Timings, breakdowns: list[Breakdown], info: dict[str, Any], functions: bool
) -> None:
    wall = {tool: statistics.median(samples) for tool, samples in timings.wall.items()}
    cpu = {tool: statistics.median(samples) for tool, samples in timings.cpu.items()}
    print("\nUnprofiled, interleaved (median wall per call; server CPU per call from /proc):\n")
    print("| call | wall ms | × floor | server CPU ms/call | target | met |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    print(f"| raw jupyter_client (floor) | {ms(wall['floor']):.2f} | 1.00 | – | – | – |")
    print(
        f"| floor + one atomic write of the notebook | {ms(wall['floor + write']):.2f} "
        f"| {wall['floor + write'] / wall['floor']:.2f} | – | – | – |"
    )
    for tool, target in (("execute_code", 1.15), ("execute_cell", 1.4)):
        ratio = wall[tool] / wall["floor"]
        print(
            f"| warm `{tool}` | {ms(wall[tool]):.2f} | {ratio:.2f} | {ms(cpu[tool]):.2f} "
            f"| ≤ {target}× | {'yes' if ratio <= target else 'no'} |"
        )
    names = [name for name, _ in breakdowns[0].layers]
    print("\nProfiled (cProfile in every thread), server time per call by layer, ms (share):\n")
    print("| layer | " + " | ".join(f"`{b.tool}`" for b in breakdowns) + " |")
    print("| --- |" + " ---: |" * len(breakdowns))
    for i, name in enumerate(names):
        cells = [f"{b.layers[i][1]:.3f} ({b.layers[i][1] / b.busy_ms:.0%})" for b in breakdowns]
        print(f"| {name} | " + " | ".join(cells) + " |")
    rest = [b.busy_ms - sum(v for _, v in b.layers) for b in breakdowns]
    print(
        "| the rest (dispatch, middleware chain, tool logic, event loop) | "
        + " | ".join(
            f"{r:.3f} ({r / b.busy_ms:.0%})" for r, b in zip(rest, breakdowns, strict=True)
        )
        + " |"
    )
    print(
        "| **server busy, profiled** | "
        + " | ".join(f"**{b.busy_ms:.3f}**" for b in breakdowns)
        + " |"
    )
    print(
        f"\n{info['nproc']} x {info['cpu']}, Python {info['python']}; "
        f"load {info['load']} at the start, {load_average()} at the end; "
        f"{len(timings.wall['floor'])} samples of each unprofiled, "
        f"{breakdowns[0].calls} calls of each profiled."
    )
    unmatched = set.intersection(*map(set, unmatched_of(breakdowns)))
    if unmatched:
        print("Entries of LAYERS neither call reached: " + ", ".join(sorted(unmatched)))
    if functions:
        for b in breakdowns:
            print(f"\n{b.tool}: what each layer's entries matched")
            print("\n".join(b.functions))


async def main_async(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="jmcp-callprofile-"))
    os.environ.setdefault("JUPYTER_MCP_HISTORY_DIR", str(root / "history"))
    info = machine()
    try:
        print(f"unprofiled: {args.rounds} rounds of {args.batch}", file=sys.stderr, flush=True)
        timings = await unprofiled(root, args.rounds, args.batch)
        breakdowns = []
        for tool in TOOLS:
            print(f"profiled: {args.calls} x {tool}", file=sys.stderr, flush=True)
            breakdowns.append(await profiled(root, tool, args.calls))
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                shutil.copy(root / f"{tool}.prof", Path(args.keep) / f"{tool}.prof")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(timings, breakdowns, info, args.functions)
    if gone := stale(breakdowns):
        print(
            f"LAYERS is stale: {', '.join(sorted(gone))} matched no profiled function; "
            "name the function that now implements that layer.",
            file=sys.stderr,
        )
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI: 1 round of 5, 20 profiled calls; checks that LAYERS still matches the code",
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--batch", type=int, default=40, help="calls per batch (default 40)")
    parser.add_argument("--calls", type=int, default=200, help="profiled calls of each tool")
    parser.add_argument(
        "--keep", metavar="DIR", help="keep the profiles as DIR/<tool>.prof (for pstats)"
    )
    parser.add_argument(
        "--functions", action="store_true", help="print what each layer's entries matched"
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.batch, args.calls = 1, 5, 20
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
