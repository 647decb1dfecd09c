"""Crash consistency: SIGKILL the server at random points of a stream of edits.

Each life of the server starts on the notebook the previous one left, makes
a few acknowledged mutations, then sends one more and is killed with SIGKILL
after a random delay drawn around that mutation's own latency, so kills land
before, during and after the write. After every kill the notebook on disk
must be a valid notebook equal to the state after the last acknowledged
mutation or to the state after the one being made (for an execution: after
its insert, or after its outputs were stored), never anything else. A
temporary file a kill leaves behind must be gone shortly after the next
server has started (the sweep runs beside serving, not before the handshake). Most lives use no kernel (a server answers within a second); a few
run code, and their orphaned kernels must exit on their own.

    python tests/stress/crash.py              # full: 200 kills, 10 of them executing
    python tests/stress/crash.py --short      # CI: 15 kills, 2 of them executing

Exit status 0 when nothing was lost; the figures go to stdout as JSON (and to
--json FILE).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nbformat
from rpc import RawServer, descendants, wait_until_gone

NOTEBOOK = "crash.ipynb"
TEMPORARY_SUFFIX = ".jmcp-tmp"
SERVER_ARGS = ("--capability", "kernel.prestart=off")

Cell = tuple[str | None, str, str]  # (id, type, source); id None: any (a cell being inserted)


def revision_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def cells_on_disk(path: Path) -> tuple[list[Cell], list[Any], bytes]:
    """The cells of the notebook file, after checking it is a valid notebook."""
    data = path.read_bytes()
    notebook = nbformat.reads(data.decode("utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(notebook)
    cells = [(cell.id, cell.cell_type, cell.source) for cell in notebook.cells]
    return cells, [cell.get("outputs") for cell in notebook.cells], data


def matches(actual: list[Cell], expected: list[Cell]) -> bool:
    if len(actual) != len(expected):
        return False
    return all(
        (want_id is None or have_id == want_id)
        and have_type == want_type
        and have_source == want_source
        for (have_id, have_type, have_source), (want_id, want_type, want_source) in zip(
            actual, expected, strict=True
        )
    )


def temporary_files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.name.endswith(TEMPORARY_SUFFIX)]


def seed_notebook(path: Path, cells: int, rng: random.Random) -> None:
    """A notebook big enough (~0.5 MB) that writing it takes a while: kills land mid-write."""
    notebook = nbformat.v4.new_notebook()
    for index in range(cells):
        source = f"# seed {index}\n" + "x = 1  # filler\n" * rng.randint(5, 60)
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [
            nbformat.v4.new_output(
                "stream", name="stdout", text="output line\n" * rng.randint(0, 200)
            )
        ]
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


class Mutation:
    """One edit: the tool call, and the cells it should produce from `before`."""

    def __init__(self, tool: str, arguments: dict[str, Any], expected: list[Cell]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.expected = expected


def random_mutation(rng: random.Random, cells: list[Cell], tag: str) -> Mutation:
    source = f"# {tag}\n" + "y = 2  # edited\n" * rng.randint(0, 40)
    kinds = ["insert", "overwrite", "move"] + (["delete"] if len(cells) > 20 else [])
    kind = rng.choice(kinds) if cells else "insert"
    base = {"notebook_name": NOTEBOOK}
    if kind == "insert":
        index = rng.randint(0, len(cells))
        cell_type = rng.choice(["code", "markdown", "raw"])
        expected = [*cells[:index], (None, cell_type, source), *cells[index:]]
        return Mutation(
            "insert_cell",
            {**base, "cell_index": index, "cell_type": cell_type, "cell_source": source},
            expected,
        )
    index = rng.randrange(len(cells))
    cell_id, cell_type, _ = cells[index]
    assert cell_id is not None
    if kind == "overwrite":
        expected = [*cells[:index], (cell_id, cell_type, source), *cells[index + 1 :]]
        return Mutation(
            "overwrite_cell_source", {**base, "cell_id": cell_id, "cell_source": source}, expected
        )
    if kind == "delete":
        expected = [*cells[:index], *cells[index + 1 :]]
        return Mutation("delete_cell", {**base, "cell_ids_to_delete": [cell_id]}, expected)
    target = rng.randrange(len(cells))
    rest = [*cells[:index], *cells[index + 1 :]]
    expected = [*rest[:target], cells[index], *rest[target:]]
    return Mutation(
        "move_cell", {**base, "source_cell_id": cell_id, "target_index": target}, expected
    )


class Figures:
    def __init__(self) -> None:
        self.kills = 0
        self.execution_kills = 0
        self.acknowledged = 0
        self.landed_before = 0  # the disk held the last acknowledged state
        self.landed_after = 0  # the disk held the state of the mutation being made
        self.landed_between = 0  # executions: the cell inserted, its outputs not yet stored
        self.answered_before_kill = 0
        self.temporary_files_left = 0
        self.temporary_files_after_restart = 0
        self.orphaned_kernels_left = 0
        self.latencies: list[float] = []
        self.problems: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        figures = {k: v for k, v in vars(self).items() if k not in ("latencies", "problems")}
        figures["median_mutation_ms"] = (
            round(statistics.median(self.latencies) * 1000, 2) if self.latencies else None
        )
        figures["problems"] = self.problems
        return figures


def check_after_kill(
    path: Path, options: list[tuple[str, list[Cell]]], figures: Figures, context: str
) -> list[Cell] | None:
    """The state the disk is in, which must be one of `options`."""
    try:
        cells, _, _ = cells_on_disk(path)
    except Exception as error:
        figures.problems.append(f"{context}: the notebook on disk is not valid: {error}")
        return None
    for name, expected in options:
        if matches(cells, expected):
            setattr(figures, f"landed_{name}", getattr(figures, f"landed_{name}") + 1)
            return cells
    figures.problems.append(
        f"{context}: the notebook on disk ({len(cells)} cells) is none of the allowed states "
        f"({', '.join(f'{name}: {len(e)} cells' for name, e in options)})"
    )
    return None


def start_server(workspace: Path, figures: Figures, log: Path, env: dict[str, str]) -> RawServer:
    server = RawServer(workspace, *SERVER_ARGS, env=env, stderr=log)
    # The sweep runs beside serving: give it a moment, not a head start.
    deadline = time.monotonic() + 30
    while (left := temporary_files(workspace)) and time.monotonic() < deadline:
        time.sleep(0.02)
    if left:
        figures.temporary_files_after_restart += len(left)
        figures.problems.append(f"temporary files survived a restart: {[p.name for p in left]}")
    return server


def mutation_life(
    workspace: Path,
    rng: random.Random,
    cells: list[Cell],
    life: int,
    figures: Figures,
    log: Path,
    env: dict[str, str],
) -> list[Cell]:
    path = workspace / NOTEBOOK
    server = start_server(workspace, figures, log, env)
    try:
        for step in range(rng.randint(0, 4)):
            mutation = random_mutation(rng, cells, f"life {life} step {step}")
            started = time.monotonic()
            result = server.call(mutation.tool, mutation.arguments)
            figures.latencies.append(time.monotonic() - started)
            if result.get("isError"):
                figures.problems.append(f"life {life}: {mutation.tool} failed: {result}")
                return cells_on_disk(path)[0]
            figures.acknowledged += 1
            on_disk, _, data = cells_on_disk(path)
            if not matches(on_disk, mutation.expected):
                figures.problems.append(
                    f"life {life}: {mutation.tool} was acknowledged but the disk differs"
                )
            if result["structuredContent"]["revision"] != revision_of(data):
                figures.problems.append(f"life {life}: acknowledged revision is not the file's")
            cells = on_disk
        mutation = random_mutation(rng, cells, f"life {life} killed")
        typical = statistics.median(figures.latencies[-50:]) if figures.latencies else 0.02
        request = server.start(
            "tools/call", {"name": mutation.tool, "arguments": mutation.arguments}
        )
        time.sleep(rng.uniform(0.2, 1.1) * typical)
        answered = server.poll_answer(request)
        server.kill()
    finally:
        if server.process.poll() is None:
            server.kill()
    figures.kills += 1
    figures.temporary_files_left += len(temporary_files(workspace))
    if answered is not None:
        figures.answered_before_kill += 1
        options = [("after", mutation.expected)]
    else:
        options = [("before", cells), ("after", mutation.expected)]
    state = check_after_kill(path, options, figures, f"life {life} ({mutation.tool})")
    return state if state is not None else cells_on_disk(path)[0]


def execution_life(
    workspace: Path,
    rng: random.Random,
    cells: list[Cell],
    life: int,
    figures: Figures,
    log: Path,
    env: dict[str, str],
) -> list[Cell]:
    """Kill while a cell runs or its outputs are stored; its kernel must not outlive the server for long."""
    path = workspace / NOTEBOOK
    server = start_server(workspace, figures, log, env)
    try:
        server.ok("use_notebook", {"notebook_name": NOTEBOOK})
        kernels = descendants(server.pid)
        warm = server.ok("execute_code", {"code": "1"})
        assert warm["status"] == "ok", warm
        source = f"# life {life} executing\nprint('out ' * {rng.randint(1, 2000)})"
        started = time.monotonic()
        request = server.start(
            "tools/call",
            {
                "name": "insert_execute_code_cell",
                "arguments": {"cell_index": -1, "cell_source": source},
            },
        )
        # An execution's insert, run and store take ~10-100 ms: kill anywhere across it.
        time.sleep(rng.uniform(0, 0.15))
        answered = server.poll_answer(request)
        elapsed = time.monotonic() - started
        kernels |= descendants(server.pid)
        server.kill()
    finally:
        if server.process.poll() is None:
            server.kill()
    figures.kills += 1
    figures.execution_kills += 1
    figures.temporary_files_left += len(temporary_files(workspace))
    inserted = [*cells, (None, "code", source)]
    if answered is not None:
        figures.answered_before_kill += 1
        if answered.get("result", {}).get("isError"):
            figures.problems.append(f"life {life}: the execution failed: {answered}")
        options = [("after", inserted)]
    else:
        options = [("before", cells), ("after", inserted)]
    state = check_after_kill(
        path, options, figures, f"life {life} (execution, killed after {elapsed:.3f} s)"
    )
    if state is not None and len(state) == len(inserted) and not cells_on_disk(path)[1][-1]:
        # The cell was inserted but its outputs were not stored yet.
        if answered is not None:
            figures.problems.append(
                f"life {life}: the execution was answered but its outputs are not on disk"
            )
        figures.landed_after -= 1
        figures.landed_between += 1
    living = wait_until_gone(kernels, 15)
    if living:
        figures.orphaned_kernels_left += len(living)
        figures.problems.append(
            f"life {life}: kernel processes outlived the killed server: {sorted(living)}"
        )
    return state if state is not None else cells_on_disk(path)[0]


def run(kills: int, executions: int, seed: int, root: Path) -> Figures:
    rng = random.Random(seed)
    workspace = root / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    runtime = root / "runtime"
    runtime.mkdir(exist_ok=True)
    env = {"JUPYTER_RUNTIME_DIR": str(runtime)}
    log = root / "server.log"
    seed_notebook(workspace / NOTEBOOK, 150, rng)
    cells = cells_on_disk(workspace / NOTEBOOK)[0]
    figures = Figures()
    execution_lives = set(rng.sample(range(kills), min(executions, kills)))
    for life in range(kills):
        if life in execution_lives:
            cells = execution_life(workspace, rng, cells, life, figures, log, env)
        else:
            cells = mutation_life(workspace, rng, cells, life, figures, log, env)
        if len(figures.problems) > 20:
            break
    # The last start cleans what the last kill left.
    with RawServer(workspace, *SERVER_ARGS, env=env, stderr=log) as server:
        server.ok("read_notebook", {"notebook_name": NOTEBOOK, "limit": 1})
        left = temporary_files(workspace)
        figures.temporary_files_after_restart += len(left)
        if left:
            figures.problems.append(
                f"temporary files survived the final restart: {[p.name for p in left]}"
            )
    strays = sorted(p.name for p in workspace.iterdir() if p.name != NOTEBOOK)
    if strays:
        figures.problems.append(f"files other than the notebook in the workspace: {strays}")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--short", action="store_true", help="CI mode: 15 kills, 2 of them executing"
    )
    parser.add_argument("--kills", type=int, default=None)
    parser.add_argument("--executions", type=int, default=None)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("STRESS_SEED", "7")))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    kills = args.kills if args.kills is not None else (15 if args.short else 200)
    executions = args.executions if args.executions is not None else (2 if args.short else 10)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jmcp-crash-") as root:
        figures = run(kills, executions, args.seed, Path(root))
    report = {
        "suite": "crash",
        "seed": args.seed,
        "seconds": round(time.monotonic() - started, 1),
        **figures.as_dict(),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 1 if figures.problems else 0


if __name__ == "__main__":
    sys.exit(main())
