#!/usr/bin/env python
"""Where a warm persisted ``execute_cell`` spends its wall time, stage by stage, unprofiled.

    python benchmarks/stage_timers.py               # 200 calls
    python benchmarks/stage_timers.py --calls 500

``call_profile.py`` reads a call's layers from cProfile, which inflates Python
code more than system calls, so its shares are for reading where time goes.
This reads the stages of the one call whose gap to jupymcp is a write (issue
40): our server is spawned over stdio as ``run.py`` spawns it, under this file
(``--serve``), which wraps a few functions of the store, the history, the
workspace and the tool with wall-clock timers and nothing else; the driver
warms it up, clears the timers (SIGUSR1), makes ``--calls`` calls of
``execute_cell`` on a stored ``1+1`` cell, then has the timers written
(SIGUSR2). Each line is a function's mean wall time per call of the tool (a
function called more than once a call is summed), nested as the functions
nest; the client's median wall time per call is beside them, and what is
left of it outside the tool (the MCP round trip: transport, dispatch,
middleware, result validation) is said. No time is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import importlib
import inspect
import os
import runpy
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: (module, qualified name, depth in the call, what it is), in the order a call reaches them.
STAGES = (
    ("jupyter_mcp_server._tools.running", "run_stored_cell", 0, "the tool, all of it"),
    ("jupyter_mcp_server._store.store", "NotebookStore.read", 1, "the notebook as on disk"),
    ("jupyter_mcp_server._tools.running", "run_on", 1, "the kernel runs the cell"),
    ("jupyter_mcp_server._store.store", "NotebookStore.mutate", 1, "the outputs stored"),
    ("jupyter_mcp_server._store.store", "NotebookStore._current", 2, "is the file as read?"),
    ("jupyter_mcp_server._store.recording", "Recorder.will_write", 2, "history: content, note"),
    ("jupyter_mcp_server._store.formats", "serialize_notebook", 2, "the file's bytes"),
    ("jupyter_mcp_server._store.files", "WorkspaceFiles.write", 2, "the durable write"),
    ("jupyter_mcp_server._workspace", "Workspace.write_atomic", 3, "in its thread"),
    ("jupyter_mcp_server._store.files", "WorkspaceFiles.still_holds", 4, "unchanged since?"),
    ("jupyter_mcp_server._store.recording", "Recorder.written", 2, "history: the entry"),
    ("jupyter_mcp_server._tools.running", "execution_result", 1, "the result built"),
    ("jupyter_mcp_server._workspace", "Workspace.resolve", 1, "a path checked (every one)"),
)


# --- inside the server ------------------------------------------------------------------------

_totals: dict[str, list[int]] = {}


def _timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    entry = _totals.setdefault(name, [0, 0])
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def waited(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return await function(*args, **kwargs)
            finally:
                entry[0] += time.perf_counter_ns() - started
                entry[1] += 1

        return waited

    @functools.wraps(function)
    def ran(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return function(*args, **kwargs)
        finally:
            entry[0] += time.perf_counter_ns() - started
            entry[1] += 1

    return ran


def serve(out: str, arguments: list[str]) -> None:
    """Run ``-m MODULE ARGS`` with the stages timed; SIGUSR1 clears, SIGUSR2 writes ``out``."""
    for module_name, qualified, _, _ in STAGES:
        owner: Any = importlib.import_module(module_name)
        *path, attribute = qualified.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, attribute, _timed(qualified, getattr(owner, attribute)))

    def clear(_signum: int, _frame: object) -> None:
        for entry in _totals.values():
            entry[0] = entry[1] = 0

    def write(_signum: int, _frame: object) -> None:
        lines = [f"{name}\t{ns}\t{count}" for name, (ns, count) in _totals.items()]
        Path(out).write_text("\n".join(lines) + "\n")

    signal.signal(signal.SIGUSR1, clear)
    signal.signal(signal.SIGUSR2, write)
    if arguments[:1] != ["-m"] or len(arguments) < 2:
        raise SystemExit("usage: stage_timers.py --serve OUT -m MODULE ARGS...")
    sys.argv = [arguments[1], *arguments[2:]]
    runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)


# --- the driver -------------------------------------------------------------------------------


async def measure(calls: int) -> tuple[dict[str, tuple[float, int]], list[float]]:
    from call_profile import call, prepare
    from harness import connect
    from profiles import BENCH, OURS

    root = Path(tempfile.mkdtemp(prefix="stage-timers-"))
    out = root / "stages.tsv"
    launcher = [str(BENCH / "stage_timers.py"), "--serve", str(out)]
    profile = dataclasses.replace(OURS, args=[*launcher, *OURS.args])
    walls: list[float] = []
    async with connect(profile, Path(tempfile.mkdtemp(dir=root))) as session:
        await prepare(session)
        assert session.pid is not None, "the server process was not found"
        os.kill(session.pid, signal.SIGUSR1)
        await asyncio.sleep(0.2)
        for _ in range(calls):
            started = time.perf_counter()
            await call(session, "execute_cell")
            walls.append(time.perf_counter() - started)
        os.kill(session.pid, signal.SIGUSR2)
        for _ in range(50):
            await asyncio.sleep(0.1)
            if out.exists():
                break
    stages = {}
    for line in out.read_text().splitlines():
        name, ns, count = line.split("\t")
        stages[name] = (int(ns) / 1e6 / calls, int(count) // calls)
    return stages, walls


def report(stages: dict[str, tuple[float, int]], walls: list[float], calls: int) -> None:
    from procfs import load_average

    wall = statistics.median(walls) * 1000
    print(f"\nA warm execute_cell of a stored 1+1 cell, {calls} calls: ms per call (wall)\n")
    print("| stage | ms per call | times a call |")
    print("| --- | ---: | ---: |")
    print(f"| the client's call, median | {wall:.3f} | 1 |")
    for _, qualified, depth, what in STAGES:
        ms, times = stages.get(qualified, (0.0, 0))
        indent = "\u2003" * depth
        print(f"| {indent}{what} (`{qualified}`) | {ms:.3f} | {times} |")
    tool = stages.get("run_stored_cell", (0.0, 0))[0]
    print(f"| outside the tool: the MCP round trip | {wall - tool:.3f} | – |")
    print(f"\nload average {load_average()}; means per call, the client's figure a median.")


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of execute_cell measured")
    options = parser.parse_args()
    stages, walls = asyncio.run(measure(options.calls))
    report(stages, walls, options.calls)


if __name__ == "__main__":
    main()
