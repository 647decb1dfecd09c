"""The process between the server and a local kernel, which ends the kernel's whole tree (Linux).

A kernel's processes (a ``subprocess`` it started, a forked worker, a daemon
that left its session) do not end with it: when the server is SIGKILLed,
ipykernel notices and exits, and everything it started is re-parented to
init and runs on. Process groups do not hold either: a child that calls
``setsid()`` leaves the group that `jupyter_client` signals. So the server
runs each local kernel under this keeper, a small process that

- is a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process of the
  kernel's tree that is orphaned, ``setsid()`` or not, becomes its child
  instead of init's, so the whole tree stays below it;
- watches the server through a pidfd (a ``getppid()`` poll where there is
  none), and on SIGTERM (the server stopping the kernel), on the server's
  death, or when the kernel exits, SIGKILLs every process below it until
  none is left, then exits with the kernel's status;
- starts the kernel with ``PR_SET_PDEATHSIG``, so the kernel dies with it
  even if the keeper itself is SIGKILLed.

It runs as a script (``python -I -S keeper.py SERVER_PID -- ARGV...``) and
imports nothing but the standard library, so it costs a few milliseconds
of start and about 10 MiB of memory per kernel. It never writes to stdout,
which over stdio is the server's protocol channel. SIGINT is the kernel's (an interrupt is sent to
the whole process group): the keeper ignores it.

What it cannot hold: a process that is not below it (one started through
another service: ``systemd-run``, ``at``, a container runtime, ``ssh``),
one it may not signal (setuid), and the tree of a keeper that is itself
SIGKILLed (its kernel still dies; the kernel's children are orphaned).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: How often the server is looked at where there is no pidfd to wait on.
PARENT_POLL = 0.5
#: How long the tree gets to die before the keeper gives up on the rest (a process
#: stuck in the kernel, in uninterruptible sleep, dies when it leaves it).
TAKE_DOWN_LIMIT = 5.0

#: Set by SIGTERM's handler: the server asked for the tree to end.
_stop_requested = threading.Event()


def _request_stop(signum: int, frame: object) -> None:
    _stop_requested.set()


def _nothing(signum: int, frame: object) -> None:
    """A caught signal, so that it wakes the loop; the kernel gets the default back at exec."""


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def process_stats() -> Iterator[tuple[int, list[bytes]]]:
    """Each live process and the fields of its ``/proc/PID/stat`` after the command name
    (``fields[1]`` is its parent, ``fields[19]`` its start time); the server's side of the
    tree reads them the same way (``process_tree.py``)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        yield int(entry), fields


def _descendants(root: int) -> list[int]:
    """Every live process below `root`, parents before their children."""
    parent_of = {pid: int(fields[1]) for pid, fields in process_stats()}
    found: list[int] = []
    frontier = {root}
    while frontier:
        children = [pid for pid, parent in parent_of.items() if parent in frontier]
        found.extend(children)
        frontier = set(children)
    return found


def _reap(kernel: int, status: dict[int, int]) -> bool:
    """Collect every child that ended, keeping the kernel's status; whether any child is left."""
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == kernel:
            status[kernel] = code


def _take_down_tree(kernel: int, status: dict[int, int]) -> None:
    """SIGKILL everything below this process, again and again, until nothing is.

    One pass is not enough: a process forking at that moment leaves a child
    the pass did not see, and it is re-parented here when its parent dies.
    """
    deadline = time.monotonic() + TAKE_DOWN_LIMIT
    me = os.getpid()
    while _reap(kernel, status):
        for pid in _descendants(me):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _start_kernel(argv: list[str]) -> int:
    """Fork and exec the kernel, which dies with this process (its parent-death signal)."""
    keeper = os.getpid()
    environment = dict(os.environ)
    # ipykernel exits when the process it names goes away: the keeper is its parent now.
    environment["JPY_PARENT_PID"] = str(keeper)
    pid = os.fork()
    if pid == 0:
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != keeper:
                os._exit(1)
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(signum, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)
            os.execvpe(argv[0], argv, environment)
        except BaseException as error:
            with contextlib.suppress(Exception):
                os.write(
                    2,
                    f"jupyter-mcp-server keeper: cannot start the kernel {argv[0]!r}: {error}\n".encode(),
                )
        finally:
            os._exit(127)
    return pid


def _exit_code(status: int | None) -> int:
    if status is None:
        return 1
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main(arguments: list[str]) -> int:
    if len(arguments) < 3 or arguments[1] != "--":
        os.write(2, b"usage: keeper.py SERVER_PID -- KERNEL_ARGV...\n")
        return 2
    server, argv = int(arguments[0]), arguments[2:]
    if not _prctl(PR_SET_CHILD_SUBREAPER, 1):
        os.write(
            2,
            b"jupyter-mcp-server keeper: no child subreaper here; orphans of the kernel are not kept\n",
        )
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, _nothing)
    signal.signal(signal.SIGINT, _nothing)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _request_stop)

    server_handle: int | None = None
    if sys.platform == "linux":  # pidfds are Linux's; elsewhere the parent pid is polled
        with contextlib.suppress(AttributeError, OSError):
            server_handle = os.pidfd_open(server)
    if os.getppid() != server:
        return 1  # the server died before the kernel could start
    kernel = _start_kernel(argv)
    status: dict[int, int] = {}
    watched = select.poll()
    watched.register(wake_read, select.POLLIN)
    if server_handle is not None:
        watched.register(server_handle, select.POLLIN)
    while not _stop_requested.is_set() and kernel not in status:
        events = watched.poll(None if server_handle is not None else PARENT_POLL * 1000)
        with contextlib.suppress(BlockingIOError):
            while os.read(wake_read, 512):
                pass
        server_gone = any(fd == server_handle for fd, _ in events) or os.getppid() != server
        _reap(kernel, status)
        if server_gone:
            break
    _take_down_tree(kernel, status)
    return _exit_code(status.get(kernel))


if __name__ == "__main__":
    # At once: the server learns of its kernel's end from this exit.
    os._exit(main(sys.argv[1:]))
