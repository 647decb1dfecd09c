"""Servers spawned over stdio and driven by the official MCP client, as an agent's host does.

Every latency here is the wall time of a call as the host sees it: a server
is spawned from its profile over stdio, ``mcp.Client`` completes the
initialize handshake (timed from spawn), lists the tools untimed as a host
does (the client keeps the output schemas it validates results against), and
each operation is timed around ``client.call_tool``. ``Harness`` holds what
every workload shares: a fresh workspace per server, the servers in the run
(ours first, then each ``--profile``), which of them map a workload's
operations, and the samples. The workloads interleave ours and the floor
sample by sample, so that load on the machine hits both alike.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procfs import find_server_pid, rss_mib
from profiles import OURS, Profile
from results import Results
from sizes import Sizes

try:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError:  # pragma: no cover - a friendly message beats a traceback
    sys.exit(
        "benchmarks/run.py needs the project's environment: run it with the venv's python, "
        "e.g. .venv/bin/python benchmarks/run.py"
    )


class ToolError(RuntimeError):
    pass


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def response_bytes(result: Any) -> int:
    """The size of a result as it travels: its JSON."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def content_bytes(result: Any) -> int:
    """The size of a result's content blocks alone (their JSON), without ``structuredContent``."""
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return len(json.dumps(dumped.get("content", []), separators=(",", ":")).encode("utf-8"))


@dataclass
class Session:
    """A running server and the client connected to it."""

    profile: Profile
    client: Any
    workspace: Path
    pid: int | None
    init_seconds: float
    #: The ``tools/list`` answer's size (compact JSON): what a model reads in every conversation.
    tools_bytes: int = 0

    async def op(self, operation: str, *, check: bool = True, **values: Any) -> Any:
        tool, arguments = self.profile.call(operation, values)
        result = await self.client.call_tool(tool, arguments)
        if check and result.is_error:
            raise ToolError(
                f"{self.profile.name}: {operation} ({tool}) failed: {text_of(result)[:500]}"
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
    params = StdioServerParameters(**profile.launch(workspace))
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
            listed = await client.list_tools()
            tools_bytes = len(listed.model_dump_json(by_alias=True, exclude_none=True))
            try:
                pid = find_server_pid(str(workspace), profile.process_match)
                yield Session(profile, client, workspace, pid, elapsed, tools_bytes)
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


#: A workload: measures every server (and the floor) into ``harness.results``.
Workload = Callable[["Harness"], Awaitable[None]]


class Harness:
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

    def serving(self, what: str, *operations: str) -> list[Profile]:
        """The servers whose profiles map these operations; the others skip ``what``."""
        chosen = []
        for profile in self.servers:
            if profile.supports(*operations):
                chosen.append(profile)
            else:
                self.skipped.setdefault(profile.name, []).append(what)
        return chosen

    def workspace(self, label: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.root))

    def connect(self, profile: Profile, workspace: Path) -> Any:
        """A server session whose exit time is recorded."""
        return connect(
            profile, workspace, lambda seconds: self.results.add("exit", profile.name, seconds)
        )

    async def measure(self, metric: str, session: Session, operation: str, **values: Any) -> Any:
        """Run an operation, add its latency under the session's server, return the result."""
        elapsed, result = await session.timed(operation, **values)
        self.results.add(metric, session.profile.name, elapsed)
        return result

    def record_rss(self, metric: str, session: Session) -> None:
        if (rss := session.rss_mib()) is not None:
            self.results.add(metric, session.profile.name, rss)

    async def run(self, steps: list[tuple[str, Workload]]) -> Results:
        for title, step in steps:
            started = time.perf_counter()
            self.log(f"-- {title}")
            await step(self)
            self.log(f"   done in {time.perf_counter() - started:.1f} s")
        return self.results
