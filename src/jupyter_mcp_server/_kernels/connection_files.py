"""The connection files of this server's local kernels, and those a killed server left.

`jupyter_client` writes one file per kernel (ports and the signing key) into
the Jupyter runtime directory and removes it when the kernel is shut down. A
server killed outright (SIGKILL, the OOM killer) shuts nothing down: its
kernels notice their parent is gone and exit, but their files stay, one more
after every crash. So each file's name carries the process id of the server
that started it, and a starting server removes the files whose server no
longer exists. Only names this module makes are ever touched: other Jupyter
programs' files are theirs.
"""

from __future__ import annotations

import contextlib
import os
import re

_NAME = re.compile(
    r"kernel-jmcp-(\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json"
)


def connection_file_name(kernel_id: str) -> str:
    """The file name for a kernel this process starts (``kernel-*.json``, as Jupyter tools expect)."""
    return f"kernel-jmcp-{os.getpid()}-{kernel_id}.json"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # somebody else's process: alive
        return True
    return True


def remove_orphaned_connection_files(runtime_dir: str | None = None) -> int:
    """Remove the connection files of servers that no longer run; how many there were.

    A process id reused since by another program keeps its files: a leftover
    is better than removing what a live process may use.
    """
    if runtime_dir is None:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime_dir = jupyter_runtime_dir()
    try:
        names = os.listdir(runtime_dir)
    except OSError:
        return 0
    removed = 0
    for name in names:
        match = _NAME.fullmatch(name)
        if match is None or int(match.group(1)) == os.getpid() or alive(int(match.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(runtime_dir, name))
            removed += 1
    return removed
