"""The resource limits a kernel sandbox runs under, as a value.

Limits are set with ``setrlimit`` on the kernel process before it starts
(see :mod:`jupyter_mcp_sandboxes.limited`), so they hold for everything the
kernel runs. They are per process, not per sandbox: a memory limit is on the
kernel's address space, and the process limit is Linux's RLIMIT_NPROC, which
counts every process and thread of the user running the kernel. Where Linux
does not enforce one (RLIMIT_NPROC for root), the result says so rather than
pretending.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jupyter_mcp_server.api import (
    INVALID_ARGUMENT,
    ToolFailure,
)

DEFAULT_MEMORY_MB = 1024
DEFAULT_CPU_SECONDS = 1800
DEFAULT_OPEN_FILES = 256
#: Processes and threads the sandbox may add to what its user already runs.
PROCESS_HEADROOM = 256
#: Below this a Python kernel cannot even start.
MIN_MEMORY_MB = 256
MIN_OPEN_FILES = 64


@dataclass(frozen=True)
class Limits:
    """RLIMIT_AS (MiB), RLIMIT_CPU (seconds), RLIMIT_NOFILE and RLIMIT_NPROC."""

    memory_mb: int
    cpu_seconds: int
    open_files: int
    processes: int

    @classmethod
    def resolve(
        cls,
        memory_mb: int | None = None,
        cpu_seconds: int | None = None,
        open_files: int | None = None,
        processes: int | None = None,
    ) -> Limits:
        """The limits asked for, defaults filled in; a value that cannot work is refused."""
        checks = (
            ("memory_mb", memory_mb, MIN_MEMORY_MB),
            ("cpu_seconds", cpu_seconds, 1),
            ("open_files", open_files, MIN_OPEN_FILES),
            ("processes", processes, 1),
        )
        for name, value, minimum in checks:
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < minimum
            ):
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    f"{name} must be a whole number of at least {minimum}, not {value!r}.",
                    argument=name,
                )
        return cls(
            memory_mb=memory_mb or DEFAULT_MEMORY_MB,
            cpu_seconds=cpu_seconds or DEFAULT_CPU_SECONDS,
            open_files=open_files or DEFAULT_OPEN_FILES,
            processes=processes or tasks_of_user(os.getuid()) + PROCESS_HEADROOM,
        )

    def launcher_arguments(self) -> list[str]:
        """The arguments of :mod:`jupyter_mcp_sandboxes.limited` that set these limits."""
        return [
            "--as",
            str(self.memory_mb * 1024 * 1024),
            "--cpu",
            str(self.cpu_seconds),
            "--nofile",
            str(self.open_files),
            "--nproc",
            str(self.processes),
        ]

    def caveats(self, *, confined: bool) -> tuple[str, ...]:
        """What Linux does not enforce here, said plainly."""
        if os.geteuid() != 0:
            return ()
        notes = [
            "processes is not enforced: the server runs as root, and Linux exempts root from RLIMIT_NPROC."
        ]
        if not confined:
            notes.append(
                "The kernel runs as root, so code in it could raise its own limits; the confined variant drops that right."
            )
        return tuple(notes)

    def as_dict(self) -> dict[str, int]:
        return {
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "open_files": self.open_files,
            "processes": self.processes,
        }


def tasks_of_user(uid: int) -> int:
    """How many processes and threads `uid` runs now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count
