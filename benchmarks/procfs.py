"""What the harness reads from /proc: the server process, its memory, the machine and its load.

A host sees the server's memory, not the client's, so RSS is read from the
server process itself (``VmRSS``, never its kernels); what a server and its
kernels cost together is read from the whole tree below it, as RSS summed
(which counts a page every kernel shares once per kernel) and as PSS summed
(which counts it once). That process is found
among this process's descendants by the unique workspace path on its command
line, which works when the profile's command is a wrapper such as ``uv run``.
The machine description and load average go on the report's last line:
other work on a shared machine moves every number.
"""

from __future__ import annotations

import contextlib
import os
import platform
from typing import Any


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


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews a run."""
    try:
        with open("/proc/loadavg") as handle:
            return " ".join(handle.read().split()[:3])
    except OSError:
        return "unknown"


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


#: Clock ticks per second, the unit of /proc/<pid>/stat's CPU times.
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a process (all its threads), from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().decode(errors="replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # Fields after the command: state is [0], utime [11], stime [12] (man 5 proc, 14 and 15).
    return (int(fields[11]) + int(fields[12])) / _TICKS


def pss_mib(pid: int) -> float | None:
    """A process's proportional set size: its private pages, and its share of each page it
    shares with others (a library every kernel maps counts once across them, not once each)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def tree_memory_mib(pid: int) -> tuple[float, float, int]:
    """``pid`` and every process below it (a server and its kernels): the sum of their RSS,
    the sum of their PSS, and how many processes they are."""
    pids = [pid, *descendants(pid)]
    rss = sum(rss_mib(each) or 0.0 for each in pids)
    pss = sum(pss_mib(each) or 0.0 for each in pids)
    return rss, pss, len(pids)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its kernels, for a server)."""
    children: dict[int, list[int]] = {}
    for child, (parent, _cmdline, _cwd) in _process_table().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, every core, from /proc/stat."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    total = sum(values[:8])  # guest time is already counted in user
    idle = values[3] + values[4]  # idle + iowait
    return (total - idle) / _TICKS, total / _TICKS
