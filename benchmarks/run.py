#!/usr/bin/env python
"""Benchmarks for jupyter-mcp-server against the floor, in one interleaved run.

    python benchmarks/run.py [--quick] [--json out.json] [--repetitions N]
                             [--profile other.json]...
                             [--only 'words in a workload title']...

Every workload of issue 6 is run against our server, spawned over stdio and
driven by the official ``mcp.Client`` (``mode="legacy"``, the initialize
handshake) exactly as an agent's host would drive it, and against its floor
in the same run, interleaved repetition by repetition (ours, floor, ours,
floor, ...) so that noise on the machine hits both alike. ``--profile`` adds
another MCP notebook server measured in the same run. Nothing asserts times:
the verdict lines say whether each target of issue 6 was met.

This file is the command line only. The rest, beside it (Python puts this
directory first on ``sys.path`` when the script runs):

- ``sizes.py``: how big each workload is, full and quick;
- ``profiles.py``: servers as data (ours, the SDK's minimal one, ``--profile``);
- ``harness.py``: spawning and driving servers with the MCP client;
- ``procfs.py``: the server process and its RSS, the machine and its load;
- ``floor.py``: raw ``jupyter_client`` and ``nbformat``, the floor;
- ``workloads/``: the workloads, one concern a module, in run order;
- ``results.py``, ``targets.py``, ``report.py``: samples, verdicts, output.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from harness import Harness
from procfs import load_average, machine
from profiles import load_profile
from report import Run, print_report, write_json
from sizes import FULL, QUICK
from targets import verdicts
from workloads import STEPS


async def main_async(args: argparse.Namespace) -> int:
    mode = "quick" if args.quick else "full"
    sizes = QUICK if args.quick else FULL
    if args.repetitions:
        sizes = replace(sizes, repetitions=args.repetitions)
    profiles = [load_profile(p) for p in args.profile]
    root = Path(tempfile.mkdtemp(prefix="jmcp-bench-"))
    # The servers' notebook histories go with the run, not into the user's state directory
    # (JUPYTER_MCP_HISTORY_DIR=off measures without them).
    os.environ.setdefault("JUPYTER_MCP_HISTORY_DIR", str(root / "history"))
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    info = machine()
    log(
        f"{mode} mode, {sizes.repetitions} repetitions; {info['nproc']} x {info['cpu']}, Python {info['python']}"
    )
    harness = Harness(sizes, profiles, root, log)
    steps = [step for step in STEPS if not args.only or any(word in step[0] for word in args.only)]
    try:
        results = await harness.run(steps)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    info["load_at_end"] = load_average()
    run = Run(
        mode=mode,
        sizes=sizes,
        machine=info,
        seconds=time.perf_counter() - started,
        profiles=[p.name for p in profiles],
        results=results,
        checks=verdicts(results),
        skipped=harness.skipped,
    )
    print_report(run)
    if args.json:
        write_json(args.json, run)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="few repetitions and small sizes (CI, ~1 minute)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--repetitions", type=int, default=0, help="repetitions (default 5, quick 1)"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="WORDS",
        help="run only the workloads whose title contains WORDS (repeatable), e.g. 'searching'",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="PATH",
        help="another MCP notebook server (JSON profile)",
    )
    args = parser.parse_args()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
