"""The one process between the server and its local kernels, which ends each kernel's whole tree (Linux).

A kernel's processes (a ``subprocess`` it started, a forked worker, a daemon
that left its session) do not end with it: when the server is SIGKILLed,
ipykernel notices and exits, and everything it started is re-parented to
init and runs on. Process groups do not hold either: a child that calls
``setsid()`` leaves the group that `jupyter_client` signals. So the server
starts every local kernel through this keeper, one small process for all of
them, which

- starts each kernel a child subreaper (``PR_SET_CHILD_SUBREAPER``, kept
  across ``exec``) in a session of its own: a process of the kernel's tree
  orphaned while the kernel runs, ``setsid()`` or not, becomes the kernel's
  child instead of init's, so each kernel's tree stays below that kernel
  and is never mixed with another's;
- is a child subreaper itself: when a kernel ends, what is left of its tree
  becomes the keeper's. So whatever is below the keeper and not below a
  running kernel was left by one that ended, and the keeper SIGKILLs it
  until none is left, then tells the server the kernel's exit status;
- told to end a kernel, SIGKILLs it and its tree the same way;
- watches the server through a pidfd (a ``getppid()`` poll where there is
  none) and its control socket; on the server's death, the socket's close
  or SIGTERM it SIGKILLs everything below it and exits;
- starts each kernel with ``PR_SET_PDEATHSIG``, so kernels die with it even
  if the keeper itself is SIGKILLed.

One keeper for every kernel costs one interpreter (about 10 MiB) however
many kernels run; one keeper per kernel, as before, cost that per kernel.

It runs as a script (``python -I -S keeper.py SERVER_PID CONTROL_FD``) and
imports nothing but the standard library. It speaks JSON lines on the
control socket: ``{"start": argv, "env": {...}, "cwd": path}`` is answered,
in order, by ``{"started": pid}`` or ``{"failed": message, "errno": n}``;
``{"end": pid}`` ends that kernel; ``{"exited": pid, "status": code}`` (the
status as ``subprocess`` gives it, a negative number for a signal) is sent
once a kernel and all it left are gone. It never writes to stdout, which
over stdio is the server's protocol channel. SIGINT is the kernels' (an
interrupt is sent to a kernel's process group): the keeper ignores it.

What it cannot hold: a process that is not below it (one started through
another service: ``systemd-run``, ``at``, a container runtime, ``ssh``),
one it may not signal (setuid), and the trees of a keeper that is itself
SIGKILLed (its kernels still die; their children are orphaned). An orphan
that ends while its kernel runs stays a zombie of that kernel until the
kernel ends, as it would under any kernel that is its own subreaper.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: How often the server is looked at where there is no pidfd to wait on.
PARENT_POLL = 0.5
#: How long what a kernel left gets to die before the keeper gives up on the rest (a
#: process stuck in the kernel, in uninterruptible sleep, dies when it leaves it).
TAKE_DOWN_LIMIT = 5.0


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def process_stats() -> Iterator[tuple[int, list[bytes]]]:
    """Each live process and the fields of its ``/proc/PID/stat`` after the command name
    (``fields[1]`` is its parent, ``fields[19]`` its start time)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(entry), fields


def read_lines(connection: socket.socket, unread: bytes) -> tuple[list[bytes], bytes] | None:
    """One read of `connection`: the lines it completed after `unread`, and the unfinished
    rest; None once the other side closed it. The server reads the keeper's lines with it too."""
    try:
        data = connection.recv(65536)
    except BlockingIOError:
        return [], unread
    except OSError:
        return None
    if not data:
        return None
    *lines, rest = (unread + data).split(b"\n")
    return lines, rest


def _strays(me: int, running: set[int]) -> list[int]:
    """Every process below `me` that is not a running kernel or below one: what ended
    kernels left (and kernels being ended), parents before their children."""
    children_of: dict[int, list[int]] = {}
    for pid, fields in process_stats():
        children_of.setdefault(int(fields[1]), []).append(pid)
    found: list[int] = []
    frontier = [pid for pid in children_of.get(me, []) if pid not in running]
    while frontier:
        found.extend(frontier)
        frontier = [child for pid in frontier for child in children_of.get(pid, [])]
    return found


class Keeper:
    """The kernels this process started, and the socket the server speaks on."""

    def __init__(self, server: int, control: socket.socket) -> None:
        self.server = server
        self.control = control
        self.me = os.getpid()
        #: Running kernels; those asked to end are moved to `ending`.
        self.running: set[int] = set()
        self.ending: set[int] = set()
        #: Kernels reaped whose exit is told once what they left is gone.
        self.ended: dict[int, int] = {}
        self.unread = b""
        #: Set by SIGTERM's handler: the server asked for everything to end.
        self.stop_requested = False

    def request_stop(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    # --- the server's requests -------------------------------------------------------------

    def tell(self, message: dict[str, object]) -> None:
        with contextlib.suppress(OSError):
            self.control.sendall(json.dumps(message).encode() + b"\n")

    def read_requests(self) -> bool:
        """Serve what the server sent; False once it closed the socket."""
        received = read_lines(self.control, self.unread)
        if received is None:
            return False
        lines, self.unread = received
        for line in lines:
            with contextlib.suppress(ValueError, TypeError, KeyError):
                self.serve(json.loads(line))
        return True

    def serve(self, request: dict[str, object]) -> None:
        if "start" in request:
            self.start_kernel(request)
        elif "end" in request:
            pid = int(request["end"])  # type: ignore[call-overload]
            if pid in self.running:
                self.running.discard(pid)
                self.ending.add(pid)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def start_kernel(self, request: dict[str, object]) -> None:
        """Fork and exec a kernel: a subreaper in a session of its own that dies with this process."""
        argv = [str(each) for each in request["start"]]  # type: ignore[attr-defined]
        environment = {str(k): str(v) for k, v in dict(request.get("env") or os.environ).items()}  # type: ignore[call-overload]
        # ipykernel exits when the process it names goes away: the keeper is its parent.
        environment["JPY_PARENT_PID"] = str(self.me)
        cwd = request.get("cwd")
        try:
            report_read, report_write = os.pipe()  # closed by exec: nothing read means it ran
        except OSError as error:  # out of file descriptors: that start fails, the keeper goes on
            self.cannot_start(argv[0], error, error.errno)
            return
        try:
            pid = os.fork()
        except OSError as error:  # out of processes or memory: likewise
            os.close(report_read)
            os.close(report_write)
            self.cannot_start(argv[0], error, error.errno)
            return
        if pid == 0:
            try:
                os.close(report_read)
                os.setsid()
                _prctl(PR_SET_CHILD_SUBREAPER, 1)
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                if os.getppid() != self.me:
                    os._exit(1)
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
                    signal.signal(signum, signal.SIG_DFL)
                signal.set_wakeup_fd(-1)
                if cwd:
                    os.chdir(str(cwd))
                os.execvpe(argv[0], argv, environment)
            except BaseException as error:
                with contextlib.suppress(Exception):
                    code = error.errno if isinstance(error, OSError) else 0
                    os.write(report_write, json.dumps([code or 0, str(error)]).encode())
            finally:
                os._exit(127)
        os.close(report_write)
        report = b""
        with contextlib.suppress(OSError):
            while chunk := os.read(report_read, 4096):
                report += chunk
        os.close(report_read)
        if report:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            code, message = json.loads(report)
            self.cannot_start(argv[0], message, code)
            return
        self.running.add(pid)
        self.tell({"started": pid})

    def cannot_start(self, program: str, error: object, code: int | None) -> None:
        self.tell({"failed": f"cannot start the kernel {program!r}: {error}", "errno": code or 0})

    # --- ends ------------------------------------------------------------------------------

    def reap(self) -> bool:
        """Collect every child that ended; whether a kernel was among them."""
        kernel_ended = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return kernel_ended
            if pid == 0:
                return kernel_ended
            if pid in self.running or pid in self.ending:
                self.running.discard(pid)
                self.ending.discard(pid)
                self.ended[pid] = os.waitstatus_to_exitcode(status)
                kernel_ended = True

    def take_down_strays(self) -> None:
        """SIGKILL all that ended kernels left (and kernels being ended), again and again, until
        nothing is. One pass is not enough: a process forking at that moment leaves a child the
        pass did not see, and it is re-parented here when its parent dies."""
        deadline = time.monotonic() + TAKE_DOWN_LIMIT
        while True:
            self.reap()
            strays = _strays(self.me, self.running)
            if not strays or time.monotonic() > deadline:
                break
            for pid in strays:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        for pid, status in sorted(self.ended.items()):
            self.tell({"exited": pid, "status": status})
        self.ended.clear()

    def take_down_everything(self) -> None:
        self.ending |= self.running
        self.running.clear()
        for pid in self.ending:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.take_down_strays()


def _nothing(signum: int, frame: object) -> None:
    """A caught signal, so that it wakes the loop; a kernel gets the default back at exec."""


def main(arguments: list[str]) -> int:
    if len(arguments) != 2:
        os.write(2, b"usage: keeper.py SERVER_PID CONTROL_FD\n")
        return 2
    server, control_fd = int(arguments[0]), int(arguments[1])
    os.set_inheritable(control_fd, False)
    control = socket.socket(fileno=control_fd)
    control.setblocking(False)
    if not _prctl(PR_SET_CHILD_SUBREAPER, 1):
        os.write(
            2,
            b"jupyter-mcp-server keeper: no child subreaper here; orphans of kernels are not kept\n",
        )
    keeper = Keeper(server, control)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, _nothing)
    signal.signal(signal.SIGINT, _nothing)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, keeper.request_stop)

    server_handle: int | None = None
    if sys.platform == "linux":  # pidfds are Linux's; elsewhere the parent pid is polled
        with contextlib.suppress(AttributeError, OSError):
            server_handle = os.pidfd_open(server)
    if os.getppid() != server:
        return 1  # the server died before anything could start
    watched = select.poll()
    watched.register(wake_read, select.POLLIN)
    watched.register(control.fileno(), select.POLLIN)
    if server_handle is not None:
        watched.register(server_handle, select.POLLIN)
    server_gone = False
    while not keeper.stop_requested and not server_gone:
        events = watched.poll(None if server_handle is not None else PARENT_POLL * 1000)
        with contextlib.suppress(BlockingIOError):
            while os.read(wake_read, 512):
                pass
        ready = {fd for fd, _ in events}
        if control.fileno() in ready and not keeper.read_requests():
            server_gone = True
        if server_handle in ready or os.getppid() != server:
            server_gone = True
        if keeper.reap() or keeper.ending:
            keeper.take_down_strays()
    keeper.take_down_everything()
    return 0


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
