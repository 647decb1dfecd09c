"""The server's side of its keeper: the one process that starts local kernels and ends their trees.

:mod:`~jupyter_mcp_server._kernels.keeper` runs beside the server, one for
all of its local kernels, and is started with the first of them. This module
asks it to start a kernel and hands `jupyter_client` a
:class:`KeptKernelProcess` where it would hold a ``subprocess.Popen``: the
same ``pid``, ``poll``, ``wait``, ``send_signal``, ``terminate`` and
``kill``, for a process that is the keeper's child, not the server's. Its
exit status is what the keeper reports once the kernel and everything it
left are gone, so a kernel that "has exited" has no process left running.

Everything here is synchronous and quick (a kernel's fork and exec, a line
on a socket), as `jupyter_client`'s own ``Popen`` is; a lock keeps the
requests of two threads apart.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_mcp_server._kernels.keeper import read_lines

KEEPER = str(Path(__file__).with_name("keeper.py"))
#: How long the keeper gets to answer a start (it may be ending another kernel's tree).
START_ANSWER_LIMIT = 15.0
#: How long the keeper gets to end everything when the server lets it go.
CLOSE_LIMIT = 7.0
#: The status told for kernels whose keeper died under them (they die with it: SIGKILL).
KILLED = -signal.SIGKILL


class KernelKeeper:
    """One keeper process for all of a backend's local kernels, started at the first."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        #: What the keeper sent after its last complete line, and the lines not yet read.
        self._unread = b""
        self._lines: list[bytes] = []
        #: Kernels started and not yet told to have exited.
        self._running: set[int] = set()
        #: Exit statuses told, by kernel pid, until the kernel's handle has read its own.
        self._exited: dict[int, int] = {}

    def start_kernel(
        self, argv: list[str], env: Mapping[str, str] | None, cwd: str | None
    ) -> KeptKernelProcess:
        """Have the keeper start `argv`; a handle on the kernel process, or the OSError the
        start met (a missing program, a missing folder) as ``Popen`` would raise it."""
        request = {"start": list(argv), "env": dict(env if env is not None else os.environ)}
        if cwd:
            request["cwd"] = str(cwd)
        with self._lock:
            control = self._connected()
            try:
                control.sendall(json.dumps(request).encode() + b"\n")
                answer = self._answer(control)
            except OSError as error:
                self._lost()
                raise OSError(f"the kernel keeper exited: {error}") from error
            if "started" not in answer:
                raise OSError(int(answer.get("errno") or 0), str(answer.get("failed")))
            pid = int(answer["started"])
            self._running.add(pid)
        return KeptKernelProcess(self, pid)

    def end(self, pid: int) -> None:
        """Have the keeper SIGKILL kernel `pid` and everything below it."""
        with self._lock:
            if self._socket is None or pid not in self._running:
                return
            try:
                self._socket.sendall(json.dumps({"end": pid}).encode() + b"\n")
            except OSError:
                self._lost()

    def exit_status(self, pid: int) -> int | None:
        """Kernel `pid`'s status once it and its tree are gone, else None (never blocks)."""
        with self._lock:
            if pid not in self._exited and pid in self._running:
                self._read(block_for=0.0)
            return self._exited.get(pid)

    def wait_for_news(self, timeout: float) -> None:
        """Block until the keeper says something, or `timeout` seconds."""
        with self._lock:
            if self._socket is not None:
                self._read(block_for=timeout)

    def forget(self, pid: int) -> None:
        """The kernel's handle has read its status: the keeper's record of it can go."""
        with self._lock:
            self._exited.pop(pid, None)

    def close(self) -> None:
        """Let the keeper go: it ends whatever is still below it, and exits."""
        with self._lock:
            process, control = self._process, self._socket
            self._process, self._socket = None, None
        if control is not None:
            with contextlib.suppress(OSError):
                control.close()
        if process is not None:
            try:
                process.wait(timeout=CLOSE_LIMIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # --- the connection ----------------------------------------------------------------------

    def _connected(self) -> socket.socket:
        if self._socket is not None and self._process is not None:
            if self._process.poll() is None:
                return self._socket
            self._lost()
        ours, theirs = socket.socketpair()
        try:
            # A session of its own: a signal to the server's process group (a terminal's
            # Ctrl-C, a client ending the group) leaves the kernels' keeper running until
            # the server itself is gone.
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", KEEPER, str(os.getpid()), str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._socket = ours
        self._unread, self._lines = b"", []
        return ours

    def _answer(self, control: socket.socket) -> dict[str, Any]:
        """The keeper's answer to the start just sent (exit news read on the way is kept)."""
        deadline = time.monotonic() + START_ANSWER_LIMIT
        while True:
            answer = self._next_answer()
            if answer is not None:
                return answer
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OSError("the kernel keeper did not answer a start in time")
            if not self._receive(control, remaining):
                raise OSError("the kernel keeper closed its connection")

    def _next_answer(self) -> dict[str, Any] | None:
        while self._lines:
            message = json.loads(self._lines.pop(0))
            if "exited" in message:
                self._note_exit(int(message["exited"]), int(message["status"]))
            else:
                return dict(message)
        return None

    def _read(self, block_for: float) -> None:
        control = self._socket
        if control is None:
            return
        if not self._receive(control, block_for):
            self._lost()
            return
        self._next_answer()

    def _receive(self, control: socket.socket, timeout: float) -> bool:
        """Read what the keeper sent within `timeout`; False once the keeper is gone."""
        watched = select.poll()
        watched.register(control.fileno(), select.POLLIN)
        if not watched.poll(max(0.0, timeout) * 1000):
            return True
        received = read_lines(control, self._unread)
        if received is None:
            return False
        lines, self._unread = received
        self._lines.extend(lines)
        return True

    def _note_exit(self, pid: int, status: int) -> None:
        self._running.discard(pid)
        self._exited[pid] = status

    def _lost(self) -> None:
        """The keeper is gone, and with it (their parent-death signal) every kernel it started."""
        for pid in self._running:
            self._exited.setdefault(pid, KILLED)
        self._running.clear()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
        self._socket = None
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=CLOSE_LIMIT)
        self._process = None


class KeptKernelProcess:
    """A kernel the keeper started, as `jupyter_client`'s LocalProvisioner uses a ``Popen``."""

    #: The keeper's kernels read nothing from the server and write to its stderr.
    stdin = stdout = stderr = None

    def __init__(self, keeper: KernelKeeper, pid: int) -> None:
        self.keeper = keeper
        self.pid = pid
        self.returncode: int | None = None
        #: A pidfd, so that a signal never reaches another process that took the pid.
        self._handle: int | None = None
        if sys.platform == "linux":
            with contextlib.suppress(AttributeError, OSError):
                self._handle = os.pidfd_open(pid)

    def poll(self) -> int | None:
        """The kernel's status once it and everything it left are gone, else None."""
        if self.returncode is None:
            status = self.keeper.exit_status(self.pid)
            if status is not None:
                self.returncode = status
                self.keeper.forget(self.pid)
                self._close_handle()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (status := self.poll()) is None:
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout or 0.0)
            self.keeper.wait_for_news(min(remaining, 1.0))
        return status

    def kernel_exited(self) -> bool:
        """Whether the kernel process itself has ended, what it left perhaps not yet."""
        if self.poll() is not None:
            return True
        if self._handle is None:
            return False
        watched = select.poll()
        watched.register(self._handle, select.POLLIN)
        return bool(watched.poll(0))

    def send_signal(self, signum: int) -> None:
        # Like Popen's: nothing once the kernel is known to have ended.
        if self.poll() is not None:
            return
        if self._handle is not None and sys.platform == "linux":
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._handle, signum)
            return
        os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def end_tree(self) -> None:
        """Have the keeper SIGKILL the kernel and everything below it."""
        if self.poll() is None:
            self.keeper.end(self.pid)

    def _close_handle(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                os.close(self._handle)
            self._handle = None

    def __del__(self) -> None:
        self._close_handle()
