#!/usr/bin/env python
"""Cost curves: how time and bytes grow with the notebook, the workspace and the output.

    python benchmarks/curves.py                  # full: 1,000 / 5,000 / 20,000 cells,
                                                 # 100 / 1,000 / 10,000 notebooks, 1 / 10 / 100 MB
    python benchmarks/curves.py --quick          # a tenth of each, to try it out
    python benchmarks/curves.py --only notebook  # one axis: notebook, workspace, output
    python benchmarks/curves.py --json out.json --images benchmarks/images
    python benchmarks/curves.py --only notebook --cprofile /tmp/server.prof

Issue 31, item 4. Our server is spawned over stdio as ``run.py`` spawns it
(``harness.connect``: the official ``mcp.Client``, the tool list fetched
first), with the ``history`` toolset so ``apply_edits`` is served, a fresh
server for each size. Each operation is timed around ``call_tool`` (median of
``--repetitions``) and its response's bytes counted as they travel
(``CallToolResult`` as JSON). The axes:

- **notebook**: a notebook of N cells (each a two-line source and a small
  stream output, the 2,000-cell notebook of ``run.py``'s workload 5): the
  first brief page (the server parses the file), a brief page at the start
  and in the middle, ``outline``, ``insert_cell`` at the end and in the
  middle, ``apply_edits`` of 50 operations (``workloads/history.py``'s mix);
  ``nbformat.read`` of the file beside them, for scale;
- **workspace**: N notebooks of 10 KB each in ten folders: a literal
  ``search_notebooks`` (the first, then repeated), a page of ``list_files``
  over the folders, and the whole listing (``limit=0``);
- **output**: a cell printing N MB in 1 KB lines run with
  ``insert_execute_code_cell`` (the server keeps ``--max-output-bytes``, so
  the stored output is cut), then read back; and a notebook another program
  wrote whose one cell holds N MB of output: its first brief read (parse),
  ``read_cell`` and the detailed read.

``--profile PATH`` (repeatable, the format of ``run.py``'s) adds another server
on the rows its profile maps, as ``[name]`` rows: on the notebook axis the
first and later whole reads (ours: the detailed read of every cell) and an
insert at the end; on the output axis the execution and the whole read of
the written file.

Each row's growth exponent is the log-log slope from the smallest size to the
largest (1 is linear in the size; a step that must read the whole thing
cannot be below it, one that reads a page should be near 0). The figures are
drawn with matplotlib (``--images``, default ``benchmarks/images``). Nothing
asserts. ``--cprofile PATH`` spawns the server under ``cprofiled.py`` (every
thread profiled) and prints the hottest functions at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import connect, response_bytes
from procfs import load_average, machine
from profiles import BENCH, OURS, Profile, load_profile
from workloads.finding import write_corpus
from workloads.history import fifty_operations
from workloads.reading import big_notebook, write_notebook

FULL = {"notebook": [1000, 5000, 20000], "workspace": [100, 1000, 10000], "output": [1, 10, 100]}
QUICK = {"notebook": [100, 500, 2000], "workspace": [10, 100, 1000], "output": [1, 3, 10]}
UNITS = {"notebook": "cells", "workspace": "notebooks", "output": "MB"}
NOTEBOOK = "big.ipynb"
#: Bytes of each notebook of the workspace axis: the size stays, the count grows.
CORPUS_NOTEBOOK_BYTES = 10_000


def server_profile(cprofile: str | None, label: str) -> Profile:
    env = {**OURS.env, "JUPYTER_MCP_TOOLSETS": "history"}
    profile = dataclasses.replace(OURS, env=env)
    if cprofile:
        out = f"{cprofile}.{label}"
        profile = dataclasses.replace(
            profile, args=[str(BENCH / "cprofiled.py"), out, *profile.args]
        )
    return profile


class Curves:
    def __init__(
        self,
        repetitions: int,
        root: Path,
        log: Any,
        cprofile: str | None,
        peers: list[Profile] | None = None,
    ) -> None:
        self.peers = peers or []
        self.repetitions = repetitions
        self.root = root
        self.log = log
        self.cprofile = cprofile
        #: (axis, operation) -> size -> {"seconds": [...], "bytes": int}
        self.rows: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        self.notes: dict[str, str] = {}

    def add(self, axis: str, operation: str, size: int, seconds: float, size_bytes: int) -> None:
        row = self.rows.setdefault((axis, operation), {}).setdefault(
            size, {"seconds": [], "bytes": 0}
        )
        row["seconds"].append(seconds)
        row["bytes"] = size_bytes

    async def call(
        self, session: Any, axis: str, operation: str, size: int, tool: str, arguments: Any
    ) -> Any:
        started = time.perf_counter()
        result = await session.client.call_tool(tool, arguments)
        elapsed = time.perf_counter() - started
        if result.is_error:
            text = "\n".join(getattr(b, "text", "") for b in result.content)
            raise RuntimeError(f"{operation} at {size}: {tool} failed: {text[:500]}")
        self.add(axis, operation, size, elapsed, response_bytes(result))
        return result

    def workspace(self, label: str) -> Path:
        path = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.root))
        return path

    # --- the axes -------------------------------------------------------------------------

    async def notebook(self, cells: int) -> None:
        import random

        import floor

        workspace = self.workspace(f"cells{cells}")
        notebook = big_notebook(cells)
        path = workspace / NOTEBOOK
        write_notebook(notebook, path)
        self.notes[f"notebook {cells}"] = f"file {path.stat().st_size:,} B"
        ids = [cell["id"] for cell in notebook.cells]
        rng = random.Random(cells)
        async with connect(server_profile(self.cprofile, f"cells{cells}"), workspace) as session:
            nb = {"notebook_name": NOTEBOOK}
            await self.call(
                session,
                "notebook",
                "first page (parse)",
                cells,
                "read_notebook",
                {**nb, "response_format": "brief"},
            )
            for rep in range(self.repetitions):
                started = time.perf_counter()
                floor.read_notebook(path)
                self.add(
                    "notebook", "nbformat.read (floor)", cells, time.perf_counter() - started, 0
                )
                await self.call(
                    session,
                    "notebook",
                    "read first page",
                    cells,
                    "read_notebook",
                    {**nb, "response_format": "brief"},
                )
                await self.call(
                    session,
                    "notebook",
                    "read middle page",
                    cells,
                    "read_notebook",
                    {**nb, "response_format": "brief", "start_index": cells // 2},
                )
                await self.call(session, "notebook", "outline", cells, "outline", nb)
                await self.call(
                    session,
                    "notebook",
                    "read all (detailed)",
                    cells,
                    "read_notebook",
                    {**nb, "response_format": "detailed", "limit": 0},
                )
                await self.call(
                    session,
                    "notebook",
                    "insert at the end",
                    cells,
                    "insert_cell",
                    {
                        **nb,
                        "cell_index": -1,
                        "cell_type": "code",
                        "cell_source": f"end_{rep} = {rep}",
                    },
                )
                await self.call(
                    session,
                    "notebook",
                    "insert in the middle",
                    cells,
                    "insert_cell",
                    {
                        **nb,
                        "cell_index": cells // 2,
                        "cell_type": "code",
                        "cell_source": f"mid_{rep} = {rep}",
                    },
                )
                await self.call(
                    session,
                    "notebook",
                    "apply_edits, 50 operations",
                    cells,
                    "apply_edits",
                    {**nb, "operations": fifty_operations(ids, rng, f"b{rep}")},
                )
        await self.peers_on_notebook(cells, notebook)

    async def timed_op(
        self, session: Any, axis: str, operation: str, size: int, op: str, **values: Any
    ) -> Any:
        """A peer's operation (its profile's mapping), as a row of its own: ``[name] operation``."""
        started = time.perf_counter()
        result = await session.op(op, **values)
        self.add(
            axis,
            f"{operation} [{session.profile.name}]",
            size,
            time.perf_counter() - started,
            response_bytes(result),
        )
        return result

    async def peers_on_notebook(self, cells: int, notebook: Any) -> None:
        for peer in self.peers:
            if not peer.supports("read_all", "insert_cell"):
                continue
            workspace = self.workspace(f"{peer.name}-cells{cells}")
            write_notebook(notebook, workspace / NOTEBOOK)
            async with connect(peer, workspace) as session:
                if peer.supports("open_notebook"):
                    await session.op("open_notebook", notebook=NOTEBOOK)
                await self.timed_op(
                    session,
                    "notebook",
                    "first read all (parse)",
                    cells,
                    "read_all",
                    notebook=NOTEBOOK,
                )
                for rep in range(self.repetitions):
                    await self.timed_op(
                        session,
                        "notebook",
                        "read all (detailed)",
                        cells,
                        "read_all",
                        notebook=NOTEBOOK,
                    )
                    await self.timed_op(
                        session,
                        "notebook",
                        "insert at the end",
                        cells,
                        "insert_cell",
                        notebook=NOTEBOOK,
                        source=f"end_{rep} = {rep}",
                    )

    async def peers_on_output(self, megabytes: int, workspace: Path, code: str) -> None:
        for peer in self.peers:
            if not peer.supports("insert_execute", "read_all"):
                continue
            mine = self.workspace(f"{peer.name}-output{megabytes}")
            shutil.copy(workspace / "written.ipynb", mine / "written.ipynb")
            async with connect(peer, mine) as session:
                if peer.supports("create_notebook"):
                    await session.op("create_notebook", notebook="run.ipynb")
                await session.op("insert_execute", notebook="run.ipynb", source="1+1")
                for _ in range(max(1, self.repetitions - 1)):
                    await self.timed_op(
                        session,
                        "output",
                        "execute (insert_execute_code_cell)",
                        megabytes,
                        "insert_execute",
                        notebook="run.ipynb",
                        source=code,
                    )
                # Two reads: at 100 MB a peer that answers the whole output sends 200 MB.
                for _ in range(min(2, self.repetitions)):
                    await self.timed_op(
                        session,
                        "output",
                        "written file, detailed read",
                        megabytes,
                        "read_all",
                        notebook="written.ipynb",
                    )

    async def workspace_axis(self, notebooks: int) -> None:
        workspace = self.workspace(f"corpus{notebooks}")
        total = write_corpus(workspace, notebooks, CORPUS_NOTEBOOK_BYTES)
        self.notes[f"workspace {notebooks}"] = f"{total / 1e6:.1f} MB"
        time.sleep(2.1)  # written long enough ago that a file's timestamp proves its bytes
        target = notebooks // 2
        query = {"query": f"value_{target}_7 ="}
        async with connect(
            server_profile(self.cprofile, f"corpus{notebooks}"), workspace
        ) as session:
            await self.call(
                session, "workspace", "search, first", notebooks, "search_notebooks", query
            )
            for _ in range(self.repetitions):
                await self.call(
                    session, "workspace", "search, repeated", notebooks, "search_notebooks", query
                )
                await self.call(
                    session,
                    "workspace",
                    "list_files, a page",
                    notebooks,
                    "list_files",
                    {"path": "corpus", "max_depth": 2},
                )
                await self.call(
                    session,
                    "workspace",
                    "list_files, all",
                    notebooks,
                    "list_files",
                    {"path": "corpus", "max_depth": 2, "limit": 0},
                )

    async def output(self, megabytes: int) -> None:
        from nbformat import v4

        workspace = self.workspace(f"output{megabytes}")
        line = "x" * 1023 + "\n"
        written = v4.new_notebook()
        written.cells.append(
            v4.new_code_cell(
                source="print(big)",
                outputs=[v4.new_output("stream", name="stdout", text=line * (megabytes * 1024))],
            )
        )
        write_notebook(written, workspace / "written.ipynb")
        code = f"import sys\nfor _ in range({megabytes * 1024}):\n    sys.stdout.write({line!r})"
        async with connect(
            server_profile(self.cprofile, f"output{megabytes}"), workspace
        ) as session:
            await session.client.call_tool(
                "use_notebook", {"notebook_name": "run.ipynb", "mode": "create"}
            )
            await session.client.call_tool("execute_code", {"code": "1+1"})  # kernel warm
            for rep in range(max(1, self.repetitions - 1)):
                await self.call(
                    session,
                    "output",
                    "execute (insert_execute_code_cell)",
                    megabytes,
                    "insert_execute_code_cell",
                    {"cell_index": -1, "cell_source": code},
                )
                await self.call(
                    session,
                    "output",
                    "read the cell run",
                    megabytes,
                    "read_cell",
                    {"notebook_name": "run.ipynb", "cell_index": rep},
                )
            nb = {"notebook_name": "written.ipynb"}
            await self.call(
                session,
                "output",
                "written file, first page (parse)",
                megabytes,
                "read_notebook",
                {**nb, "response_format": "brief"},
            )
            for _ in range(self.repetitions):
                await self.call(
                    session,
                    "output",
                    "written file, read_cell",
                    megabytes,
                    "read_cell",
                    {**nb, "cell_index": 0},
                )
                await self.call(
                    session,
                    "output",
                    "written file, detailed read",
                    megabytes,
                    "read_notebook",
                    {**nb, "response_format": "detailed", "limit": 0},
                )
        await self.peers_on_output(megabytes, workspace, code)

    async def run(self, axes: dict[str, list[int]]) -> None:
        do = {"notebook": self.notebook, "workspace": self.workspace_axis, "output": self.output}
        for axis, sizes in axes.items():
            for size in sizes:
                started = time.perf_counter()
                self.log(f"-- {axis} {size:,} {UNITS[axis]}")
                await do[axis](size)
                self.log(f"   done in {time.perf_counter() - started:.1f} s")


# --- the report ---------------------------------------------------------------------------


def exponent(points: list[tuple[int, float]]) -> float | None:
    """The log-log slope from the smallest size to the largest."""
    if len(points) < 2 or points[0][1] <= 0 or points[-1][1] <= 0:
        return None
    (s0, v0), (s1, v1) = points[0], points[-1]
    return math.log(v1 / v0) / math.log(s1 / s0)


def figures(curves: Curves) -> list[dict[str, Any]]:
    rows = []
    for (axis, operation), by_size in curves.rows.items():
        sizes = sorted(by_size)
        medians = [(s, statistics.median(by_size[s]["seconds"])) for s in sizes]
        sent = [(s, float(by_size[s]["bytes"])) for s in sizes]
        rows.append(
            {
                "axis": axis,
                "operation": operation,
                "sizes": sizes,
                "median_ms": [round(m * 1000, 2) for _, m in medians],
                "bytes": [int(b) for _, b in sent],
                "time_exponent": exponent(medians),
                "bytes_exponent": exponent(sent),
                "samples": [len(by_size[s]["seconds"]) for s in sizes],
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = []
    for axis in UNITS:
        mine = [row for row in rows if row["axis"] == axis]
        if not mine:
            continue
        sizes = mine[0]["sizes"]
        head = " | ".join(f"{s:,} {UNITS[axis]}" for s in sizes)
        lines.append(
            f"\n| {axis}: operation | {head} | time growth | bytes sent at {sizes[-1]:,} |"
        )
        lines.append("| --- |" + " ---: |" * (len(sizes) + 2))
        for row in mine:
            cells = " | ".join(f"{ms:,.1f} ms" for ms in row["median_ms"])
            growth = "—" if row["time_exponent"] is None else f"n^{row['time_exponent']:.2f}"
            sent = f"{row['bytes'][-1]:,} B" if row["bytes"][-1] else "—"
            lines.append(f"| {row['operation']} | {cells} | {growth} | {sent} |")
    return "\n".join(lines)


def draw(rows: list[dict[str, Any]], images: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images.mkdir(parents=True, exist_ok=True)
    drawn = []
    for axis, unit in UNITS.items():
        mine = [row for row in rows if row["axis"] == axis]
        if not mine:
            continue
        figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
        for number, row in enumerate(mine):
            color = f"C{number % 10}"  # the same operation, the same colour, on both sides
            left.plot(
                row["sizes"], row["median_ms"], marker="o", color=color, label=row["operation"]
            )
            if any(row["bytes"]):
                right.plot(
                    row["sizes"], row["bytes"], marker="o", color=color, label=row["operation"]
                )
        # A linear reference through the first floor-or-first row's first point.
        sizes = mine[0]["sizes"]
        start = max(r["median_ms"][0] for r in mine)
        left.plot(
            sizes,
            [start * s / sizes[0] for s in sizes],
            "k:",
            linewidth=1,
            label="linear (reference)",
        )
        for ax, title in ((left, "median time, ms"), (right, "response bytes")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(unit)
            ax.set_title(title)
            ax.grid(True, which="both", alpha=0.3)
        left.legend(fontsize=7)
        right.legend(fontsize=7)
        figure.suptitle(f"cost against the {axis}'s size (log-log)")
        figure.tight_layout()
        path = images / f"curves-{axis}.png"
        figure.savefig(path, dpi=90)
        plt.close(figure)
        drawn.append(path)
    return drawn


def print_hot(prefix: str, top: int = 25) -> None:
    import pstats

    for path in sorted(Path(prefix).parent.glob(Path(prefix).name + ".*")):
        print(f"\n### cProfile of the server, {path.name} (tottime, every thread)\n```")
        stats = pstats.Stats(str(path))
        stats.sort_stats("tottime").print_stats(top)
        print("```")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of each size")
    parser.add_argument("--only", choices=list(UNITS), action="append", default=[])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--images", default=str(BENCH / "images"), metavar="DIR")
    parser.add_argument("--no-images", action="store_true")
    parser.add_argument("--cprofile", metavar="PATH", help="profile the server (PATH.<size> files)")
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="PATH",
        help="another MCP notebook server (JSON profile), on the rows it can do",
    )
    args = parser.parse_args()
    axes = {
        a: s for a, s in (QUICK if args.quick else FULL).items() if not args.only or a in args.only
    }
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    info = machine()
    log(f"{info['nproc']} x {info['cpu']}, Python {info['python']}, load {info['load']}")
    root = Path(tempfile.mkdtemp(prefix="jmcp-curves-"))
    peers = [load_profile(path) for path in args.profile]
    curves = Curves(args.repetitions, root, log, args.cprofile, peers)
    try:
        asyncio.run(curves.run(axes))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = figures(curves)
    print(markdown(rows))
    for key, note in curves.notes.items():
        print(f"  note {key}: {note}")
    if not args.no_images:
        for path in draw(rows, Path(args.images)):
            print(f"  drew {path}")
    print(
        f"\n{time.perf_counter() - started:.0f} s, {args.repetitions} repetitions; "
        f"{info['nproc']} x {info['cpu']}, Python {info['python']}; "
        f"load average {info['load']} at the start, {load_average()} at the end"
    )
    if args.cprofile:
        print_hot(args.cprofile)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"machine": info, "rows": rows, "notes": curves.notes}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
