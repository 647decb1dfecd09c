"""A bare JSON-RPC driver for the stdio server: no SDK, no asyncio.

The stress suites kill, flood and fuzz the server; they need to send raw
bytes, read exactly what comes back, and SIGKILL the process at a moment of
their choosing, which the official client (rightly) does not let a caller do.
Requests are newline-delimited JSON on stdin, answers on stdout; stderr goes
to a file so a full pipe never blocks the server. The process is started by
`servers.our_stdio_server`, as every test's server is.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from servers import our_stdio_server
from servers import server_environment as environment

#: `environment` stays importable from here, where the stress scripts and tests first found it.
__all__ = [
    "ERROR_KEY",
    "LEGACY",
    "RawServer",
    "ServerDied",
    "alive",
    "descendants",
    "environment",
    "error_code",
    "rss_bytes",
    "text_of",
    "wait_until_gone",
]
LEGACY = "2025-11-25"
ERROR_KEY = "io.jupyter-mcp/error"


class ServerDied(Exception):
    pass


class RawServer:
    """`jupyter-mcp-server start` over stdio, driven line by line."""

    def __init__(
        self,
        workspace: Path,
        *args: str,
        env: dict[str, str] | None = None,
        stderr: Path | None = None,
        initialize: bool = True,
        wrapper: tuple[str, ...] = (),
    ) -> None:
        self.workspace = workspace
        # A command the server runs under (strace, to see its system calls in order).
        self.server = our_stdio_server(
            workspace, *args, env=env, log=stderr, append=True, wrapper=wrapper
        )
        self.process = self.server.process
        self._ids = itertools.count(1)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._pending: dict[Any, dict[str, Any]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.unsolicited: list[Any] = []
        reader = threading.Thread(target=self._read, daemon=True)
        reader.start()
        if initialize:
            self.initialize()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def initialize(self, version: str = LEGACY) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "rpc", "version": "0"},
            },
            timeout=60,
        )
        self.notify("notifications/initialized")
        return answer

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError) as error:
            raise ServerDied(f"the server's stdin is closed: {error}") from error

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw((json.dumps(message) + "\n").encode())

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "method": method,
                **({"params": params} if params is not None else {}),
            }
        )

    def start(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting; answers its id."""
        request_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}})
        return request_id

    def next_message(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no message from the server within {timeout} s") from None
        if line is None:
            self._lines.put(None)
            raise ServerDied(f"the server closed stdout (exit status {self.process.poll()})")
        try:
            return json.loads(line)
        except json.JSONDecodeError as error:
            raise AssertionError(
                f"the server wrote something that is not JSON on stdout: {line[:200]!r}"
            ) from error

    def wait(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        """The answer to `request_id` (a result or an error message), whatever arrives first."""
        deadline = time.monotonic() + timeout
        while request_id not in self._pending:
            message = self.next_message(max(0.0, deadline - time.monotonic()))
            if "id" in message and ("result" in message or "error" in message):
                self._pending[message["id"]] = message
            elif "method" in message:
                self.notifications.append(message)
            else:
                self.unsolicited.append(message)
        return self._pending.pop(request_id)

    def poll_answer(self, request_id: Any) -> dict[str, Any] | None:
        """The answer to `request_id` if it has already arrived, without waiting."""
        with contextlib.suppress(TimeoutError):
            while request_id not in self._pending:
                message = self.next_message(0)
                if "id" in message and ("result" in message or "error" in message):
                    self._pending[message["id"]] = message
                elif "method" in message:
                    self.notifications.append(message)
        return self._pending.pop(request_id, None)

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        """The result of a request; an error answer raises."""
        answer = self.wait(self.start(method, params), timeout)
        if "error" in answer:
            raise RuntimeError(f"{method} failed: {answer['error']}")
        return answer["result"]

    def call(
        self, tool: str, arguments: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        """A tools/call result (successful or not)."""
        return self.request("tools/call", {"name": tool, "arguments": arguments or {}}, timeout)

    def ok(
        self, tool: str, arguments: dict[str, Any] | None = None, timeout: float = 60
    ) -> dict[str, Any]:
        result = self.call(tool, arguments, timeout)
        assert not result.get("isError"), f"{tool} failed: {result}"
        return result["structuredContent"]

    def kill(self) -> None:
        """SIGKILL, no warning: what a crash or the OOM killer does."""
        self.server.kill()
        self._close()

    def close(self, timeout: float = 30) -> int:
        """Close stdin, as a client does, and wait for a clean exit."""
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        self._close()
        return code

    def _close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]

    def stderr_text(self) -> str:
        return self.server.log_text()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            try:
                self.close(30)
            except Exception:
                self.kill()


def error_code(result: dict[str, Any]) -> str | None:
    if not result.get("isError"):
        return None
    return ((result.get("_meta") or {}).get(ERROR_KEY) or {}).get("code")


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result.get("content", []))


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped has already ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until_gone(pids: set[int], timeout: float) -> set[int]:
    """The pids still alive after waiting up to `timeout` seconds for them to end."""
    deadline = time.monotonic() + timeout
    while True:
        living = {pid for pid in pids if alive(pid)}
        if not living or time.monotonic() > deadline:
            return living
        time.sleep(0.05)
