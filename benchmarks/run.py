#!/usr/bin/env python
"""Benchmarks for jupyter-mcp-server against the floor, in one interleaved run.

    python benchmarks/run.py [--quick] [--json out.json] [--repetitions N]
                             [--profile other.json]...

Every workload of issue 6 is run against our server, spawned over stdio and
driven by the official ``mcp.Client`` (``mode="legacy"``, the initialize
handshake) exactly as an agent's host would drive it, and against its floor
in the same run, interleaved repetition by repetition (ours, floor, ours,
floor, ...) so that noise on the machine hits both alike:

- the floor of spawn-to-initialize is the SDK's own minimal ``MCPServer`` with
  one tool (``benchmarks/minimal_server.py``), spawned the same way;
- the floor of execution is raw ``jupyter_client`` on a warm ``ipykernel`` in
  this process (execute, read iopub until the kernel says idle, take the
  shell reply), and of a first execution a raw kernel start to ready plus
  that execution;
- the floor of reading a notebook is ``nbformat.read`` of the file.

``--profile`` adds another MCP notebook server (its command and a mapping of
operations to its tool names and arguments; see README.md) measured in the
same interleaved run. Results are printed as a table and, with ``--json``,
written as JSON. Nothing asserts times: the verdict column says whether each
target of issue 6 was met.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MINIMAL_SERVER = BENCH / "minimal_server.py"

#: The server's default --max-output-bytes: the 5 MB print is measured under it.
MAX_OUTPUT_BYTES = 1_048_576
#: What a truncated execution result may carry beyond the kept output bytes.
RESPONSE_OVERHEAD_BYTES = 16_384
CONCURRENT_NOTEBOOKS = 8

try:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError:  # pragma: no cover - a friendly message beats a traceback
    sys.exit(
        "benchmarks/run.py needs the project's environment: run it with the venv's python, "
        "e.g. .venv/bin/python benchmarks/run.py"
    )


# --- Sizes -------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    repetitions: int
    #: Samples per repetition for the millisecond workloads (warm executions).
    batch: int
    inserts: int
    read_cells: int
    print_bytes: int
    #: Repetitions of the print workload (each moves print_bytes twice per target).
    print_repetitions: int
    #: Seconds a fresh server is left alone before its first notebook (the pool warms).
    settle: float
    #: Inserts into the big notebook, for insert latency at read_cells cells.
    big_inserts: int


FULL = Sizes(
    repetitions=5,
    batch=20,
    inserts=500,
    read_cells=2000,
    print_bytes=5_000_000,
    print_repetitions=3,
    settle=3.0,
    big_inserts=20,
)
QUICK = Sizes(
    repetitions=2,
    batch=5,
    inserts=100,
    read_cells=500,
    print_bytes=1_000_000,
    print_repetitions=1,
    settle=2.0,
    big_inserts=5,
)


# --- Statistics and results ----------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p90": percentile(values, 0.9),
        "min": min(values),
        "max": max(values),
        "samples": [round(v, 6) for v in values],
    }


@dataclass
class Target:
    """A check of issue 6 on the medians of this run."""

    text: str
    check: Callable[[Results], tuple[bool, str]]


class Results:
    """Samples by (metric, who); `who` is "ours", "floor" or a profile's name."""

    def __init__(self) -> None:
        self.samples: dict[tuple[str, str], list[float]] = {}
        self.notes: dict[str, list[str]] = {}

    def add(self, metric: str, who: str, value: float) -> None:
        self.samples.setdefault((metric, who), []).append(value)

    def note(self, metric: str, text: str) -> None:
        notes = self.notes.setdefault(metric, [])
        if text not in notes:
            notes.append(text)

    def has(self, metric: str, who: str) -> bool:
        return bool(self.samples.get((metric, who)))

    def median(self, metric: str, who: str = "ours") -> float:
        values = self.samples.get((metric, who))
        if not values:
            raise KeyError(f"no samples of {metric} for {who}")
        return statistics.median(values)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str  # "s" (shown in ms), "B" (bytes), "MB" (RSS, MiB)
    #: The metric of the floor column, when the floor is measured under another key.
    floor_key: str | None = None


METRICS: list[Metric] = [
    Metric("spawn", "1 spawn -> initialize", "s"),
    Metric("exit", "1 exit after stdin closes", "s"),
    Metric("first_exec_settled", "2 first exec, new notebook (after settle)", "s"),
    Metric(
        "first_exec_cold",
        "2 first exec, new notebook (right after init)",
        "s",
        floor_key="first_exec_settled",
    ),
    Metric("round_trip", "3 MCP round trip, trivial tool", "s"),
    Metric("execute_code", "3 warm execute_code 1+1", "s"),
    Metric("execute_cell", "3 warm execute_cell 1+1 (persisted)", "s", floor_key="execute_code"),
    Metric("insert_first", "4 insert_cell, first 50", "s"),
    Metric("insert_last", "4 insert_cell, last 50", "s"),
    Metric("insert_big", "4 insert_cell at the big notebook", "s"),
    Metric("write_once", "4 write the big notebook once", "s"),
    Metric("read_detailed", "5 read all cells, detailed", "s"),
    Metric("read_changed", "5 read all, after an outside change", "s", floor_key="read_detailed"),
    Metric("read_first", "5 first read (parse) of the file", "s", floor_key="read_detailed"),
    Metric("read_brief", "5 read brief first page", "s"),
    Metric("read_bytes", "5 response bytes, detailed all", "B"),
    Metric("read_brief_bytes", "5 response bytes, brief page", "B"),
    Metric("print_one", "6 big print, one line", "s"),
    Metric("print_lines", "6 big print, 1 KB lines", "s"),
    Metric("print_one_bytes", "6 response bytes, one line", "B"),
    Metric("print_lines_bytes", "6 response bytes, 1 KB lines", "B"),
    Metric("print_rss_growth", "6 server RSS growth (worst after a print)", "MB"),
    Metric("rss_init", "7 server RSS right after initialize", "MB"),
    Metric("rss_settled", "7 server RSS, idle after settle", "MB", floor_key="rss_init"),
    Metric("rss_8", "7 server RSS with 8 notebooks on 8 kernels", "MB", floor_key="rss_init"),
    Metric("concurrent_sleep", "8 eight notebooks sleep(1) at once", "s"),
]


def metric_floor(metric: Metric) -> str:
    return metric.floor_key or metric.key


TARGETS: list[Target] = []


def target(text: str) -> Callable[[Callable[[Results], tuple[bool, str]]], None]:
    def register(check: Callable[[Results], tuple[bool, str]]) -> None:
        TARGETS.append(Target(text, check))

    return register


def _ratio_check(value: float, limit: float, what: str) -> tuple[bool, str]:
    met = value <= limit
    margin = (limit - value) / limit * 100
    side = "under" if met else "over"
    return met, f"{what} {value:.2f}x against {limit:g}x ({abs(margin):.0f}% {side})"


@target("spawn to initialize <= 1.25x the SDK's minimal MCPServer")
def _spawn(r: Results) -> tuple[bool, str]:
    return _ratio_check(r.median("spawn") / r.median("spawn", "floor"), 1.25, "ratio")


@target("first execution in a new notebook < 4x warm execute_code")
def _first(r: Results) -> tuple[bool, str]:
    ratio = r.median("first_exec_settled") / r.median("execute_code")
    return _ratio_check(ratio, 4.0, "ratio")


@target("warm execute_code <= 1.2x raw jupyter_client")
def _exec_code(r: Results) -> tuple[bool, str]:
    return _ratio_check(r.median("execute_code") / r.median("execute_code", "floor"), 1.2, "ratio")


@target("warm execute_cell <= 1.5x raw jupyter_client")
def _exec_cell(r: Results) -> tuple[bool, str]:
    return _ratio_check(r.median("execute_cell") / r.median("execute_code", "floor"), 1.5, "ratio")


@target("insert at the big notebook <= 2x insert at 0 cells + writing the file once")
def _insert_big(r: Results) -> tuple[bool, str]:
    limit = 2 * r.median("insert_first") + r.median("write_once", "floor")
    value = r.median("insert_big")
    met = value <= limit
    return met, (
        f"{value * 1e3:.1f} ms against {limit * 1e3:.1f} ms "
        f"(2 x {r.median('insert_first') * 1e3:.1f} + {r.median('write_once', 'floor') * 1e3:.1f})"
    )


@target("insert, last 50 <= 2x first 50 + writing that file once")
def _insert_last(r: Results) -> tuple[bool, str]:
    limit = 2 * r.median("insert_first") + r.median("write_once", "ours")
    value = r.median("insert_last")
    return value <= limit, f"{value * 1e3:.2f} ms against {limit * 1e3:.2f} ms"


@target("read all cells detailed <= 3x nbformat.read, each cell once")
def _read(r: Results) -> tuple[bool, str]:
    met, text = _ratio_check(
        r.median("read_detailed") / r.median("read_detailed", "floor"), 3.0, "ratio"
    )
    once = r.notes.get("read_cells_once", ["not checked"])[0]
    return met and once == "yes", f"{text}; each cell once: {once}"


@target("big print: response <= --max-output-bytes + 16 KiB, RSS growth <= the limit")
def _print(r: Results) -> tuple[bool, str]:
    worst = max(r.median("print_one_bytes"), r.median("print_lines_bytes"))
    growth = r.median("print_rss_growth")
    met = worst <= MAX_OUTPUT_BYTES + RESPONSE_OVERHEAD_BYTES and growth * 2**20 <= MAX_OUTPUT_BYTES
    return met, (
        f"response {worst:,.0f} B against {MAX_OUTPUT_BYTES + RESPONSE_OVERHEAD_BYTES:,} B; "
        f"RSS growth {growth:.2f} MiB against {MAX_OUTPUT_BYTES / 2**20:.0f} MiB"
    )


@target("8 concurrent sleep(1) < 1.5 s wall")
def _concurrent(r: Results) -> tuple[bool, str]:
    value = r.median("concurrent_sleep")
    return (
        value < 1.5,
        f"{value:.3f} s against 1.5 s ({abs(1.5 - value) / 1.5 * 100:.0f}% {'under' if value < 1.5 else 'over'})",
    )


# --- Servers: ours, the minimal one, and profiles --------------------------------


def server_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("JUPYTER_MCP_CAPABILITIES", None)
    env.pop("JUPYTER_MCP_EXTENSIONS", None)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


#: Our server, written in the profile format (see README.md).
OURS_PROFILE: dict[str, Any] = {
    "name": "ours",
    "command": "{python}",
    "args": ["-m", "jupyter_mcp_server", "start", "--workspace-root", "{workspace}"],
    "cwd": "{workspace}",
    "tools": {
        "create_notebook": _call("use_notebook", notebook_name="{notebook}", mode="create"),
        "insert_cell": _call(
            "insert_cell",
            notebook_name="{notebook}",
            cell_index=-1,
            cell_type="code",
            cell_source="{source}",
        ),
        "insert_execute": _call(
            "insert_execute_code_cell",
            notebook_name="{notebook}",
            cell_index=-1,
            cell_source="{source}",
        ),
        "execute_cell": _call("execute_cell", notebook_name="{notebook}", cell_index="{index}"),
        "execute_code": _call("execute_code", notebook_name="{notebook}", code="{code}"),
        "read_all": _call(
            "read_notebook",
            notebook_name="{notebook}",
            response_format="detailed",
            start_index=0,
            limit=0,
        ),
        "read_page": _call("read_notebook", notebook_name="{notebook}", response_format="brief"),
        "release_notebook": _call("unuse_notebook", notebook_name="{notebook}"),
    },
}

MINIMAL_PROFILE: dict[str, Any] = {
    "name": "floor",
    "command": "{python}",
    "args": [str(MINIMAL_SERVER), "--marker", "{workspace}"],
    "cwd": "{workspace}",
    "tools": {},
}

OPERATIONS = (
    "create_notebook",
    "open_notebook",
    "insert_cell",
    "insert_execute",
    "execute_cell",
    "execute_code",
    "read_all",
    "read_page",
    "release_notebook",
)


def substitute(template: Any, values: dict[str, Any]) -> Any:
    """Fill ``{name}`` placeholders; a string that is exactly one placeholder takes the value's type."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        with contextlib.suppress(KeyError, IndexError, ValueError):
            return template.format_map(values)
        return template
    if isinstance(template, list):
        return [substitute(item, values) for item in template]
    if isinstance(template, dict):
        return {key: substitute(value, values) for key, value in template.items()}
    return template


@dataclass
class Profile:
    name: str
    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = "{workspace}"
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: A substring of the server process's command line, when the command is a wrapper.
    process_match: str | None = None
    mode: str = "legacy"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        unknown = set(data.get("tools", {})) - set(OPERATIONS)
        if unknown:
            raise SystemExit(
                f"profile {data.get('name')!r}: unknown operations {sorted(unknown)}; known: {list(OPERATIONS)}"
            )
        for operation, call in data.get("tools", {}).items():
            if not isinstance(call, dict) or "tool" not in call:
                raise SystemExit(
                    f"profile {data.get('name')!r}: {operation} needs {{'tool': NAME, 'arguments': {{...}}}}"
                )
        return cls(
            name=data["name"],
            command=data["command"],
            args=list(data.get("args", [])),
            env=dict(data.get("env", {})),
            cwd=data.get("cwd", "{workspace}"),
            tools=dict(data.get("tools", {})),
            process_match=data.get("process_match"),
            mode=data.get("mode", "legacy"),
        )

    def supports(self, *operations: str) -> bool:
        return all(op in self.tools for op in operations)

    def parameters(self, workspace: Path) -> StdioServerParameters:
        values = {"python": sys.executable, "workspace": str(workspace), "repo": str(REPO)}
        return StdioServerParameters(
            command=substitute(self.command, values),
            args=[str(substitute(a, values)) for a in self.args],
            env=server_environment({k: str(substitute(v, values)) for k, v in self.env.items()}),
            cwd=substitute(self.cwd, values) if self.cwd else None,
        )


OURS = Profile.from_dict(OURS_PROFILE)
MINIMAL = Profile.from_dict(MINIMAL_PROFILE)


class ToolError(RuntimeError):
    pass


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def response_bytes(result: Any) -> int:
    """The size of a result as it travels: its JSON."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


@dataclass
class Session:
    """A running server and the client connected to it."""

    profile: Profile
    client: Any
    workspace: Path
    pid: int | None
    init_seconds: float

    async def op(self, operation: str, *, check: bool = True, **values: Any) -> Any:
        call = self.profile.tools[operation]
        arguments = substitute(call.get("arguments", {}), values)
        result = await self.client.call_tool(call["tool"], arguments)
        if check and result.is_error:
            raise ToolError(
                f"{self.profile.name}: {operation} ({call['tool']}) failed: {text_of(result)[:500]}"
            )
        return result

    async def timed(self, operation: str, **values: Any) -> tuple[float, Any]:
        started = time.perf_counter()
        result = await self.op(operation, **values)
        return time.perf_counter() - started, result

    def rss_mib(self) -> float | None:
        return rss_mib(self.pid) if self.pid else None


@contextlib.asynccontextmanager
async def connect(
    profile: Profile, workspace: Path, on_exit: Callable[[float], None] | None = None
) -> AsyncIterator[Session]:
    """Spawn the server over stdio and complete the handshake; timed from spawn to initialized.

    The server's stderr (and its kernels') goes to a log beside the workspace,
    shown when something fails. ``on_exit`` is told how long the server took
    to exit once the client closed its stdin.
    """
    params = profile.parameters(workspace)
    log_path = workspace.parent / f"{workspace.name}.log"
    with open(log_path, "w") as errlog:
        try:
            stack = contextlib.AsyncExitStack()
            started = time.perf_counter()
            client = await stack.enter_async_context(
                Client(stdio_client(params, errlog=errlog), mode=profile.mode)
            )
            elapsed = time.perf_counter() - started
            # What a host does next, untimed: the tool list (the client also
            # keeps the output schemas it validates results against).
            await client.list_tools()
            try:
                pid = find_server_pid(str(workspace), profile.process_match)
                yield Session(profile, client, workspace, pid, elapsed)
            finally:
                stopping = time.perf_counter()
                await stack.aclose()
            if on_exit is not None:
                on_exit(time.perf_counter() - stopping)
        except BaseException:
            errlog.flush()
            tail = log_path.read_text(errors="replace").splitlines()[-30:]
            print(f"--- {profile.name} server log ({log_path}):", *tail, sep="\n", file=sys.stderr)
            raise


# --- Processes ----------------------------------------------------------------------


def _process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, command line, working directory), for every readable process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
        except (OSError, IndexError, ValueError):
            continue
        table[pid] = (parent, cmdline, cwd)
    return table


def find_server_pid(marker: str, process_match: str | None = None) -> int | None:
    """The server process this benchmark spawned: the shallowest of its descendants
    whose command line carries the unique workspace path (and ``process_match``)."""
    table = _process_table()
    me = os.getpid()
    depth: dict[int, int] = {}

    def depth_of(pid: int) -> int | None:
        seen = 0
        current = pid
        while current not in (me, 0, 1) and seen < 64:
            if current not in table:
                return None
            current = table[current][0]
            seen += 1
        return seen if current == me else None

    for pid, (_parent, cmdline, _cwd) in table.items():
        if marker not in cmdline or (process_match and process_match not in cmdline):
            continue
        d = depth_of(pid)
        if d is not None:
            depth[pid] = d
    if not depth:
        # A server told its workspace only through its working directory: the direct child.
        children = [
            pid for pid, (parent, _c, cwd) in table.items() if parent == me and cwd == marker
        ]
        return children[-1] if children else None
    return min(depth, key=lambda pid: depth[pid])


def rss_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# --- The floor: raw jupyter_client in this process -----------------------------------


class RawKernel:
    """A kernel started and driven with jupyter_client and nothing else."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.manager: Any = None
        self.client: Any = None

    async def start(self) -> None:
        from jupyter_client.manager import AsyncKernelManager

        self.manager = AsyncKernelManager(kernel_name="python3")
        await self.manager.start_kernel(cwd=str(self.cwd), stderr=subprocess.DEVNULL)
        self.client = self.manager.client()
        self.client.start_channels()
        await self.client.wait_for_ready(timeout=60)

    async def execute(self, code: str) -> list[dict[str, Any]]:
        """Run code; wait for idle on iopub (as our server does), then the shell reply."""
        client = self.client
        msg_id = client.execute(code, store_history=True, allow_stdin=False)
        outputs: list[dict[str, Any]] = []
        while True:
            message = await client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if kind == "status":
                if message["content"]["execution_state"] == "idle":
                    break
                continue
            outputs.append(message["content"])
        while True:
            reply = await client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        return outputs

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        with contextlib.suppress(Exception):
            await self.manager.shutdown_kernel(now=True)
        with contextlib.suppress(Exception):
            self.manager.cleanup_connection_file()


async def drain_raw(kernel: RawKernel) -> None:
    """Drop messages left on the floor kernel's channels."""
    for channel in (kernel.client.get_iopub_msg, kernel.client.get_shell_msg):
        with contextlib.suppress(queue.Empty):
            while True:
                await channel(timeout=0.01)


# --- Notebooks on disk ---------------------------------------------------------------


def big_notebook(cells: int) -> Any:
    import nbformat
    from nbformat import v4

    notebook = v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i in range(cells):
        cell = v4.new_code_cell(source=f"x_{i} = {i} * 2\nprint(x_{i})", execution_count=i + 1)
        cell.outputs = [v4.new_output("stream", name="stdout", text=f"{i * 2}\n")]
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def write_notebook(notebook: Any, path: Path) -> None:
    import nbformat

    nbformat.write(notebook, str(path))


# --- The run ----------------------------------------------------------------------------


class Bench:
    def __init__(
        self, sizes: Sizes, profiles: list[Profile], root: Path, log: Callable[[str], None]
    ) -> None:
        self.sizes = sizes
        self.profiles = profiles
        self.root = root
        self.results = Results()
        self.log = log
        self.skipped: dict[str, list[str]] = {}

    @property
    def servers(self) -> list[Profile]:
        return [OURS, *self.profiles]

    def workspace(self, label: str) -> Path:
        path = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.root))
        return path

    def connect(self, profile: Profile, workspace: Path) -> Any:
        """A server session whose exit time is recorded."""
        return connect(
            profile, workspace, lambda seconds: self.results.add("exit", profile.name, seconds)
        )

    def skip(self, profile: Profile, what: str) -> None:
        self.skipped.setdefault(profile.name, []).append(what)

    async def run(self) -> Results:
        steps = [
            ("spawn, first execution, memory at initialize", self.spawn_and_first_execution),
            ("warm executions", self.warm_executions),
            ("inserts", self.inserts),
            ("reading a big notebook", self.read_big),
            ("big prints", self.big_prints),
            ("eight notebooks", self.eight_notebooks),
        ]
        for title, step in steps:
            started = time.perf_counter()
            self.log(f"-- {title}")
            await step()
            self.log(f"   done in {time.perf_counter() - started:.1f} s")
        return self.results

    # 1, 2, 7 -------------------------------------------------------------------------

    async def spawn_and_first_execution(self) -> None:
        r = self.results
        for rep in range(self.sizes.repetitions):
            for profile in self.servers:
                # A: spawn, then the first execution at once (kernels may still be starting).
                async with self.connect(profile, self.workspace("spawn")) as session:
                    r.add("spawn", profile.name, session.init_seconds)
                    if profile.supports("create_notebook", "insert_execute"):
                        t0 = time.perf_counter()
                        await session.op("create_notebook", notebook="cold.ipynb")
                        await session.op("insert_execute", notebook="cold.ipynb", source="1+1")
                        r.add("first_exec_cold", profile.name, time.perf_counter() - t0)
                await self.spawn_minimal()
                # B: spawn, memory, a settle (an agent reads the tool list and thinks), then a new notebook.
                async with self.connect(profile, self.workspace("settle")) as session:
                    r.add("spawn", profile.name, session.init_seconds)
                    if (rss := session.rss_mib()) is not None:
                        r.add("rss_init", profile.name, rss)
                    await asyncio.sleep(self.sizes.settle)
                    if (rss := session.rss_mib()) is not None:
                        r.add("rss_settled", profile.name, rss)
                    if profile.supports("create_notebook", "insert_execute"):
                        t0 = time.perf_counter()
                        await session.op("create_notebook", notebook="first.ipynb")
                        await session.op("insert_execute", notebook="first.ipynb", source="1+1")
                        r.add("first_exec_settled", profile.name, time.perf_counter() - t0)
                await self.spawn_minimal()
            # The floor of a first execution: a raw kernel start to ready, and 1+1 on it.
            kernel = RawKernel(self.workspace("rawstart"))
            t0 = time.perf_counter()
            await kernel.start()
            await kernel.execute("1+1")
            r.add("first_exec_settled", "floor", time.perf_counter() - t0)
            await kernel.stop()
            self.log(f"   repetition {rep + 1}/{self.sizes.repetitions}")
        r.note("first_exec_settled", f"settle {self.sizes.settle:g} s after initialize")

    async def spawn_minimal(self) -> None:
        async with self.connect(MINIMAL, self.workspace("minimal")) as session:
            self.results.add("spawn", "floor", session.init_seconds)
            if (rss := session.rss_mib()) is not None:
                self.results.add("rss_init", "floor", rss)

    # 3 ----------------------------------------------------------------------------------

    async def warm_executions(self) -> None:
        r = self.results
        kernel = RawKernel(self.workspace("rawwarm"))
        await kernel.start()
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for profile in self.servers:
                if not profile.supports("create_notebook", "insert_execute"):
                    self.skip(profile, "warm executions")
                    continue
                session = await stack.enter_async_context(
                    self.connect(profile, self.workspace("warm"))
                )
                await session.op("create_notebook", notebook="warm.ipynb")
                await session.op("insert_execute", notebook="warm.ipynb", source="1+1")
                sessions.append(session)
            minimal = await stack.enter_async_context(
                self.connect(MINIMAL, self.workspace("minimal"))
            )
            # Warm-up: every path once or a few times, nothing recorded.
            for _ in range(5):
                await kernel.execute("1+1")
                for session in sessions:
                    if session.profile.supports("execute_code"):
                        await session.op("execute_code", notebook="warm.ipynb", code="1+1")
                    if session.profile.supports("execute_cell"):
                        await session.op("execute_cell", notebook="warm.ipynb", index=0)
            for _rep in range(self.sizes.repetitions):
                for _ in range(self.sizes.batch):
                    for session in sessions:
                        name = session.profile.name
                        if session.profile.supports("execute_code"):
                            elapsed, _ = await session.timed(
                                "execute_code", notebook="warm.ipynb", code="1+1"
                            )
                            r.add("execute_code", name, elapsed)
                        t0 = time.perf_counter()
                        await kernel.execute("1+1")
                        r.add("execute_code", "floor", time.perf_counter() - t0)
                        if session.profile.supports("execute_cell"):
                            elapsed, _ = await session.timed(
                                "execute_cell", notebook="warm.ipynb", index=0
                            )
                            r.add("execute_cell", name, elapsed)
                        if session.profile is OURS:
                            t0 = time.perf_counter()
                            await session.client.call_tool(
                                "get_notebook_revision", {"notebook_name": "warm.ipynb"}
                            )
                            r.add("round_trip", name, time.perf_counter() - t0)
                            t0 = time.perf_counter()
                            await minimal.client.call_tool("add", {"a": 1, "b": 2})
                            r.add("round_trip", "floor", time.perf_counter() - t0)
        await kernel.stop()

    # 4 ----------------------------------------------------------------------------------

    async def inserts(self) -> None:
        from jupyter_mcp_server.store import formats
        from jupyter_mcp_server.workspace import Workspace

        r = self.results
        count = self.sizes.inserts
        window = min(50, count // 2)
        for profile in self.servers:
            if not profile.supports("create_notebook", "insert_cell"):
                self.skip(profile, "inserts")
                continue
            async with self.connect(profile, self.workspace("insert")) as session:
                await session.op("create_notebook", notebook="inserts.ipynb")
                latencies = []
                for i in range(count):
                    elapsed, _ = await session.timed(
                        "insert_cell", notebook="inserts.ipynb", source=f"y_{i} = {i}"
                    )
                    latencies.append(elapsed)
                for value in latencies[:window]:
                    r.add("insert_first", profile.name, value)
                for value in latencies[-window:]:
                    r.add("insert_last", profile.name, value)
                # The cost of writing that notebook once, our own way (serialize + atomic write).
                if profile is OURS:
                    import nbformat

                    notebook = nbformat.read(str(session.workspace / "inserts.ipynb"), as_version=4)
                    space = Workspace(session.workspace)
                    for _ in range(10):
                        t0 = time.perf_counter()
                        space.write_atomic(
                            "copy.ipynb", formats.serialize_notebook(notebook, formats.IPYNB)
                        )
                        r.add("write_once", "ours", time.perf_counter() - t0)
        r.note(
            "insert_first", f"{count} inserts one by one into a new notebook; windows of {window}"
        )
        r.note(
            "write_once",
            "floor: serialize + atomic write (fsync) of the big notebook; ours: of the insert notebook",
        )

    # 5 ----------------------------------------------------------------------------------

    async def read_big(self) -> None:
        import nbformat

        from jupyter_mcp_server.store import formats
        from jupyter_mcp_server.workspace import Workspace

        r = self.results
        cells = self.sizes.read_cells
        notebook = big_notebook(cells)
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for profile in self.servers:
                if not profile.supports("read_all"):
                    self.skip(profile, "reading")
                    continue
                workspace = self.workspace("read")
                write_notebook(notebook, workspace / "big.ipynb")
                session = await stack.enter_async_context(self.connect(profile, workspace))
                if profile.supports("open_notebook"):
                    await session.op("open_notebook", notebook="big.ipynb")
                elapsed, result = await session.timed("read_all", notebook="big.ipynb")
                r.add("read_first", profile.name, elapsed)
                sessions.append(session)
            path = (
                sessions[0].workspace / "big.ipynb"
                if sessions
                else self.workspace("read") / "big.ipynb"
            )
            if not path.exists():
                write_notebook(notebook, path)
            r.note("read_detailed", f"{cells} cells, file {path.stat().st_size:,} B")
            for rep in range(self.sizes.repetitions):
                for session in sessions:
                    name = session.profile.name
                    for _ in range(3):
                        elapsed, result = await session.timed("read_all", notebook="big.ipynb")
                        r.add("read_detailed", name, elapsed)
                    r.add("read_bytes", name, response_bytes(result))
                    if name == "ours" and rep == 0:
                        returned = len((result.structured_content or {}).get("cells", []))
                        sources = text_of(result).count("print(x_")
                        once = returned == cells and sources <= cells
                        r.note(
                            "read_cells_once",
                            "yes" if once else f"no ({returned} structured, {sources} in text)",
                        )
                    t0 = time.perf_counter()
                    nbformat.read(str(path), as_version=4)
                    r.add("read_detailed", "floor", time.perf_counter() - t0)
                    if session.profile.supports("read_page"):
                        elapsed, page = await session.timed("read_page", notebook="big.ipynb")
                        r.add("read_brief", name, elapsed)
                        r.add("read_brief_bytes", name, response_bytes(page))
                    # Somebody else saves the file: the next read must see it.
                    changed = nbformat.read(str(session.workspace / "big.ipynb"), as_version=4)
                    changed.metadata["saved_by"] = f"someone else {rep}"
                    write_notebook(changed, session.workspace / "big.ipynb")
                    elapsed, _ = await session.timed("read_all", notebook="big.ipynb")
                    r.add("read_changed", name, elapsed)
            # Insert latency at this size, alternating with the cost of writing
            # this file once (our store's serializer and atomic write).
            space = Workspace(path.parent)
            for i in range(self.sizes.big_inserts):
                for session in sessions:
                    if session.profile.supports("insert_cell"):
                        elapsed, _ = await session.timed(
                            "insert_cell", notebook="big.ipynb", source=f"z_{i} = {i}"
                        )
                        r.add("insert_big", session.profile.name, elapsed)
                t0 = time.perf_counter()
                space.write_atomic(
                    "copy.ipynb", formats.serialize_notebook(notebook, formats.IPYNB)
                )
                r.add("write_once", "floor", time.perf_counter() - t0)
        r.note("insert_big", f"appending to the {cells}-cell notebook")

    # 6 ----------------------------------------------------------------------------------

    async def big_prints(self) -> None:
        r = self.results
        size = self.sizes.print_bytes
        one = f"print('x' * {size})"
        lines = f"for _ in range({size // 1024}):\n    print('x' * 1023)"
        kernel = RawKernel(self.workspace("rawprint"))
        await kernel.start()
        for profile in self.servers:
            if not profile.supports("create_notebook", "execute_code"):
                self.skip(profile, "big prints")
                continue
            async with self.connect(profile, self.workspace("print")) as session:
                await session.op("create_notebook", notebook="print.ipynb")
                await session.op("execute_code", notebook="print.ipynb", code="1+1")
                await asyncio.sleep(0.5)
                before = session.rss_mib()
                seen: list[float] = []
                for _rep in range(self.sizes.print_repetitions):
                    for metric, code in (("print_one", one), ("print_lines", lines)):
                        elapsed, result = await session.timed(
                            "execute_code", notebook="print.ipynb", code=code
                        )
                        r.add(metric, profile.name, elapsed)
                        r.add(f"{metric}_bytes", profile.name, response_bytes(result))
                        if profile is OURS:
                            truncation = (result.structured_content or {}).get("truncation") or {}
                            r.note(
                                metric,
                                f"omitted {truncation.get('omitted_bytes', '?'):,} B"
                                if isinstance(truncation.get("omitted_bytes"), int)
                                else "no truncation",
                            )
                        if profile is OURS:
                            t0 = time.perf_counter()
                            await kernel.execute(code)
                            r.add(metric, "floor", time.perf_counter() - t0)
                        await asyncio.sleep(0.2)
                        if (rss := session.rss_mib()) is not None:
                            seen.append(rss)
                if before is not None and seen:
                    # The worst the server stayed at after a print, not only the last.
                    r.add("print_rss_growth", profile.name, max(seen) - before)
                    trail = " ".join(f"{v:.1f}" for v in seen)
                    r.note(
                        "print_rss_growth",
                        f"{profile.name}: {before:.1f} MiB, after each print {trail}",
                    )
        await kernel.stop()
        r.note("print_one", f"{size:,} B; default --max-output-bytes {MAX_OUTPUT_BYTES:,}")

    # 7, 8 -------------------------------------------------------------------------------

    async def eight_notebooks(self) -> None:
        r = self.results
        sleep = "import time\ntime.sleep(1)"
        for profile in self.servers:
            if not profile.supports("create_notebook", "execute_code"):
                self.skip(profile, "eight notebooks")
                continue
            async with self.connect(profile, self.workspace("eight")) as session:
                names = [f"nb{i}.ipynb" for i in range(CONCURRENT_NOTEBOOKS)]
                for name in names:
                    await session.op("create_notebook", notebook=name)
                    await session.op("execute_code", notebook=name, code="1+1")
                await asyncio.sleep(1.0)
                if (rss := session.rss_mib()) is not None:
                    r.add("rss_8", profile.name, rss)
                for _rep in range(self.sizes.repetitions):
                    t0 = time.perf_counter()
                    results = await asyncio.gather(
                        *(session.op("execute_code", notebook=name, code=sleep) for name in names)
                    )
                    r.add("concurrent_sleep", profile.name, time.perf_counter() - t0)
                    assert len(results) == CONCURRENT_NOTEBOOKS
        r.note(
            "concurrent_sleep",
            "execute_code on 8 notebooks at once over one connection (asyncio.gather)",
        )


# --- Reporting ------------------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "s":
        return f"{value * 1e3:.1f} ms" if value < 10 else f"{value:.1f} s"
    if unit == "B":
        return f"{value:,.0f} B"
    if unit == "MB":
        return f"{value:.1f} MiB"
    return f"{value:g}"


def table(results: Results, profiles: list[Profile]) -> tuple[str, list[dict[str, Any]]]:
    header = ("workload", "median", "p90", "floor median", "ratio")
    rows: list[tuple[str, ...]] = []
    records: list[dict[str, Any]] = []
    for metric in METRICS:
        floor_values = results.samples.get((metric_floor(metric), "floor"))
        floor_median = statistics.median(floor_values) if floor_values else None
        for who in ["ours", *(p.name for p in profiles)]:
            values = results.samples.get((metric.key, who))
            if not values:
                continue
            median = statistics.median(values)
            ratio = median / floor_median if floor_median else None
            label = metric.label if who == "ours" else f"  {metric.label} [{who}]"
            rows.append(
                (
                    label,
                    fmt(median, metric.unit),
                    fmt(percentile(values, 0.9), metric.unit),
                    fmt(floor_median, metric.unit)
                    if who == "ours" or floor_median is not None
                    else "—",
                    f"{ratio:.2f}x" if ratio is not None else "—",
                )
            )
            records.append(
                {
                    "metric": metric.key,
                    "workload": metric.label,
                    "who": who,
                    "unit": metric.unit,
                    **{k: v for k, v in summary(values).items()},
                    "floor": summary(floor_values) if floor_values else None,
                    "ratio": ratio,
                    "notes": results.notes.get(metric.key, []),
                }
            )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "| " + " | ".join(("-" * w) for w in widths) + " |",
    ]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), records


def verdicts(results: Results) -> list[dict[str, Any]]:
    out = []
    for t in TARGETS:
        try:
            met, detail = t.check(results)
        except (KeyError, ZeroDivisionError, statistics.StatisticsError) as error:
            met, detail = None, f"not measured ({error})"
        out.append({"target": t.text, "met": met, "detail": detail})
    return out


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    total = ""
    with contextlib.suppress(OSError), open("/proc/meminfo") as handle:
        total = handle.readline().split(":", 1)[1].strip()
    return {
        "load": load_average(),
        "nproc": os.cpu_count(),
        "cpu": model,
        "memory": total,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews a run."""
    try:
        with open("/proc/loadavg") as handle:
            return " ".join(handle.read().split()[:3])
    except OSError:
        return "unknown"


def load_profile(path: str) -> Profile:
    data = json.loads(Path(path).read_text())
    profile = Profile.from_dict(data)
    if profile.name in ("ours", "floor"):
        raise SystemExit(f"{path}: a profile cannot be named {profile.name!r}")
    return profile


async def main_async(args: argparse.Namespace) -> int:
    sizes = QUICK if args.quick else FULL
    if args.repetitions:
        sizes = Sizes(**{**sizes.__dict__, "repetitions": args.repetitions})
    profiles = [load_profile(p) for p in args.profile]
    root = Path(tempfile.mkdtemp(prefix="jmcp-bench-"))
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    info = machine()
    log(
        f"{'quick' if args.quick else 'full'} mode, {sizes.repetitions} repetitions; {info['nproc']} x {info['cpu']}, Python {info['python']}"
    )
    bench = Bench(sizes, profiles, root, log)
    try:
        results = await bench.run()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    elapsed = time.perf_counter() - started
    info["load_at_end"] = load_average()
    text, records = table(results, profiles)
    checks = verdicts(results)
    print()
    print(text)
    print()
    for check in checks:
        mark = {True: "met", False: "NOT MET", None: "not measured"}[check["met"]]
        print(f"- {check['target']}: {mark} — {check['detail']}")
    for metric, notes in results.notes.items():
        print(f"  note {metric}: {'; '.join(notes)}")
    for name, skipped in bench.skipped.items():
        print(f"  {name}: skipped {', '.join(skipped)} (no mapping in its profile)")
    print(
        f"\n{'quick' if args.quick else 'full'} run, {sizes.repetitions} repetitions, {elapsed:.0f} s; "
        f"{info['nproc']} x {info['cpu']}, Python {info['python']}; "
        f"load average {info['load']} at the start, {info['load_at_end']} at the end"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "mode": "quick" if args.quick else "full",
                    "sizes": sizes.__dict__,
                    "machine": info,
                    "seconds": elapsed,
                    "profiles": [p.name for p in profiles],
                    "results": records,
                    "targets": checks,
                    "notes": results.notes,
                    "skipped": bench.skipped,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="few repetitions and small sizes (CI, ~1 minute)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--repetitions", type=int, default=0, help="repetitions (default 5, quick 2)"
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
