"""One way for a test to start a server process, wait until it is ready, and stop it.

A test that needs a server as a process of its own (ours over streamable HTTP, JSON
lines or raw stdio; a Jupyter Server, a hub, an identity provider) starts it here. The
process writes to a log file; `started` waits until a readiness check passes (`healthz`,
`answers`, `says`, `listening`, or any callable), yields a `ServerProcess`, and always
stops it afterwards: SIGTERM, a wait, then SIGKILL. A process that exits before it is
ready, or is never ready, fails with its log, so a broken start reads in the server's
own words rather than as a timeout somewhere else; a test that fails while it runs gets
the log's tail as a note.

`our_http_server` and `our_stdio_server` (and `our_stdio_server_async`, for async tests
that need the process's pipes) start ``jupyter-mcp-server start`` with the environment
every test server gets (`server_environment`). ``tests/test_architecture.py`` fails when
another test module starts our server by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
#: How much of a log a failure quotes: its end, where a traceback is.
LOG_TAIL = 4000

Stream = int | IO[Any] | None


def server_environment(**extra: str) -> dict[str, str]:
    """The environment every server the tests start inherits, with `extra` on top."""
    env = dict(os.environ)
    env.pop("JUPYTER_MCP_CAPABILITIES", None)
    env.pop("JUPYTER_MCP_EXTENSIONS", None)
    # The environment a developer's shell has active is not the tests' business: a test that
    # wants a launcher's environment says so.
    env.pop("VIRTUAL_ENV", None)
    env.pop("CONDA_PREFIX", None)
    # Nobody is there to approve anything: the tests of approvals (test_approvals.py) name
    # the actions that ask, every other test's server asks about none.
    env["JUPYTER_MCP_APPROVE"] = ""
    # Histories of the tests' throwaway notebooks stay out of the user's state directory.
    env.setdefault(
        "JUPYTER_MCP_HISTORY_DIR",
        os.path.join(tempfile.gettempdir(), f"jupyter-mcp-test-history-{os.getuid()}"),
    )
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p
    )
    return env


def server_command(workspace: Path, *args: str) -> list[str]:
    """``jupyter-mcp-server start`` on `workspace`, as this interpreter runs it."""
    return [
        sys.executable,
        "-m",
        "jupyter_mcp_server",
        "start",
        "--workspace-root",
        str(workspace),
        *args,
    ]


def free_port() -> int:
    """A loopback port free now (another process may take it before the server binds it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ServerDidNotStart(AssertionError):
    """The process exited before it was ready, or was not ready in time; says its log."""


def tail(text: str) -> str:
    return text[-LOG_TAIL:]


@dataclass
class ServerProcess:
    """A started process: what a test reads of it, and the ways it stops."""

    process: subprocess.Popen[bytes]
    name: str
    log: Path | None
    port: int | None = None
    workspace: Path | None = None
    #: In a process group of its own, signalled whole (its kernels and children with it).
    group: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, query: str = "") -> str:
        """Our server's MCP endpoint, with a query string if one is given."""
        return f"{self.base}/mcp{'?' + query if query else ''}"

    def log_text(self) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def running(self) -> bool:
        return self.process.poll() is None

    def wait_until(self, ready: Ready, seconds: float = 60) -> None:
        """Return once `ready` says so; fail with the log if the process exits first or time runs out."""
        deadline = time.monotonic() + seconds
        while True:
            if not self.running():
                raise ServerDidNotStart(
                    f"{self.name} exited with {self.process.returncode} before it was ready:\n"
                    f"{tail(self.log_text())}"
                )
            with contextlib.suppress(OSError):
                if ready(self):
                    return
            if time.monotonic() > deadline:
                raise ServerDidNotStart(
                    f"{self.name} was not ready within {seconds:g} s:\n{tail(self.log_text())}"
                )
            time.sleep(0.05)

    def send_signal(self, number: int) -> None:
        """Send a signal (SIGTERM, SIGKILL, ...) now, as a test that stops it on purpose does."""
        with contextlib.suppress(ProcessLookupError):
            if self.group:
                os.killpg(self.process.pid, number)
            else:
                self.process.send_signal(number)

    def kill(self) -> int:
        """SIGKILL, no warning (what a crash or the OOM killer does); answers the exit status."""
        self.send_signal(signal.SIGKILL)
        return self.process.wait()

    def stop(self, seconds: float = 20) -> int:
        """SIGTERM, up to `seconds` to exit, then SIGKILL; answers the exit status."""
        if self.running():
            self.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            return self.kill()


Ready = Callable[[ServerProcess], bool]


def healthz(server: ServerProcess) -> bool:
    """Our HTTP server's readiness: ``/healthz`` answers 200."""
    return answers("/healthz")(server)


def answers(url: str, headers: Mapping[str, str] | None = None) -> Ready:
    """Ready once a GET of `url` (a path is on the server's own port) answers 200."""
    import httpx

    def check(server: ServerProcess) -> bool:
        target = f"{server.base}{url}" if url.startswith("/") else url
        try:
            return httpx.get(target, headers=dict(headers or {}), timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    return check


def says(text: str) -> Ready:
    """Ready once `text` is in the process's log (a line it writes when it listens)."""
    return lambda server: text in server.log_text()


def listening(server: ServerProcess) -> bool:
    """Ready once the server's port accepts a connection."""
    assert server.port is not None, "listening needs the port the server binds"
    with socket.create_connection(("127.0.0.1", server.port), timeout=1):
        return True


def start(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str,
    log: Path | None = None,
    name: str = "the server",
    port: int | None = None,
    workspace: Path | None = None,
    stdin: Stream = None,
    stdout: Stream | str = "log",
    append: bool = False,
    group: bool = False,
) -> ServerProcess:
    """Start `command` (nothing waited for): stderr to `log` (or nowhere), stdout to the log as
    well unless `stdout` says where else; `group` starts it in a process group of its own,
    stopped whole. A test that runs the process's whole life itself (a stdio client closing
    stdin) uses this; every other uses `started`."""
    with contextlib.ExitStack() as files:
        written: Stream = files.enter_context(log.open("ab" if append else "wb")) if log else None
        process = subprocess.Popen(
            list(command),
            env=dict(env),
            cwd=cwd,
            stdin=stdin,
            stdout=(written or subprocess.DEVNULL) if stdout == "log" else stdout,
            stderr=written or subprocess.DEVNULL,
            start_new_session=group,
        )
    return ServerProcess(process, name, log, port, workspace, group)


@contextlib.contextmanager
def stopped_after(server: ServerProcess, stop_seconds: float = 20) -> Iterator[ServerProcess]:
    """Yield `server`; stop it however the body ended, and note its log on a failure."""
    try:
        yield server
    except BaseException as error:
        # A start that failed says its log already; an interrupt is nobody's failure.
        if server.log is not None and not isinstance(
            error, ServerDidNotStart | KeyboardInterrupt | GeneratorExit
        ):
            error.add_note(f"{server.name}'s log ends:\n{tail(server.log_text())}")
        raise
    finally:
        server.stop(stop_seconds)


@contextlib.contextmanager
def started(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str,
    log: Path | None,
    ready: Ready | None,
    seconds: float = 60,
    stop_seconds: float = 20,
    **options: Any,
) -> Iterator[ServerProcess]:
    """The shared primitive: start `command`, wait until `ready`, yield it, always stop it.

    `ready` None means ready at once (a stdio server, whose handshake is its client's to do).
    `options` are `start`'s (name, port, workspace, stdin, stdout, append, group)."""
    server = start(command, env=env, cwd=cwd, log=log, **options)
    with stopped_after(server, stop_seconds):
        if ready is not None:
            server.wait_until(ready, seconds)
        yield server


@contextlib.contextmanager
def our_http_server(
    workspace: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    seconds: float = 60,
) -> Iterator[ServerProcess]:
    """``jupyter-mcp-server start --transport streamable-http`` on a free loopback port, once
    ``/healthz`` answers. The log is ``server.log`` beside the workspace unless `log` says."""
    port = free_port()
    with started(
        server_command(workspace, "--transport", "streamable-http", "--port", str(port), *args),
        env=server_environment(**(env or {})),
        cwd=cwd or workspace,
        log=log or workspace.parent / "server.log",
        ready=healthz,
        seconds=seconds,
        name="jupyter-mcp-server (streamable HTTP)",
        port=port,
        workspace=workspace,
        stdout=subprocess.DEVNULL,
    ) as server:
        yield server


def our_stdio_server(
    workspace: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    stdin: Stream = subprocess.PIPE,
    stdout: Stream = subprocess.PIPE,
    append: bool = False,
    wrapper: Sequence[str] = (),
) -> ServerProcess:
    """``jupyter-mcp-server start`` over stdio with its pipes in the test's hands (a raw JSON-RPC
    driver, a socket); the caller ends it, by closing stdin or through `stopped_after`. A
    `wrapper` is a command the server runs under (strace)."""
    return start(
        [*wrapper, *server_command(workspace, *args)],
        env=server_environment(**(env or {})),
        cwd=cwd or workspace,
        log=log,
        name="jupyter-mcp-server (stdio)",
        workspace=workspace,
        stdin=stdin,
        stdout=stdout,
        append=append,
    )


# --- Async tests ---------------------------------------------------------------------


@dataclass
class AsyncServerProcess:
    """A process started on the event loop, for an async test that reads and writes its pipes."""

    process: asyncio.subprocess.Process
    name: str
    log: Path | None

    def log_text(self) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(encoding="utf-8", errors="replace")

    async def stop(self, seconds: float = 20) -> int:
        """SIGTERM, up to `seconds` to exit, then SIGKILL; answers the exit status."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()
        try:
            return await asyncio.wait_for(self.process.wait(), seconds)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            return await self.process.wait()


@contextlib.asynccontextmanager
async def started_async(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | str,
    log: Path | None,
    name: str = "the server",
    stdin: Stream = asyncio.subprocess.PIPE,
    stdout: Stream = asyncio.subprocess.PIPE,
    stderr: Stream | None = None,
    stop_seconds: float = 20,
) -> AsyncIterator[AsyncServerProcess]:
    """`started` for async tests, ready at once: stderr to `log` (or `stderr`), always stopped."""
    opened: list[IO[bytes]] = []
    if log is not None:
        opened.append(log.open("wb"))
        stderr = opened[0]
    try:
        process = await asyncio.create_subprocess_exec(
            *command, env=dict(env), cwd=cwd, stdin=stdin, stdout=stdout, stderr=stderr
        )
    finally:
        for written in opened:
            written.close()
    server = AsyncServerProcess(process, name, log)
    try:
        yield server
    except BaseException as error:
        if log is not None and not isinstance(error, KeyboardInterrupt | GeneratorExit):
            error.add_note(f"{name}'s log ends:\n{tail(server.log_text())}")
        raise
    finally:
        await server.stop(stop_seconds)


def our_stdio_server_async(
    workspace: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    stdin: Stream = asyncio.subprocess.PIPE,
    stdout: Stream = asyncio.subprocess.PIPE,
    stderr: Stream | None = None,
) -> contextlib.AbstractAsyncContextManager[AsyncServerProcess]:
    """``jupyter-mcp-server start`` (``--transport json-lines`` among `args`, or stdio) on the
    event loop, its pipes the test's; the log is ``server.log`` beside the workspace unless
    `stderr` asks for it as a pipe."""
    if log is None and stderr is None:
        log = workspace.parent / "server.log"
    return started_async(
        server_command(workspace, *args),
        env=server_environment(**(env or {})),
        cwd=workspace,
        log=log,
        name="jupyter-mcp-server",
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
    )
