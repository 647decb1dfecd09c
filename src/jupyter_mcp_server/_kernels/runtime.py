"""The server's own runtime directory: private, one per server process, removed with it.

Local kernels talk to the server over sockets and a connection file that
carries their signing key. Jupyter's runtime directory is shared by every
Jupyter program of the user (and often readable by others), and TCP ports on
loopback can be reached by every local user. So each server makes one
directory of its own, mode 0700, named ``jmcp-<pid>-<random>``, and keeps in
it:

- the connection files of its local kernels (``kernel-jmcp-<pid>-<id>.json``);
- their Unix sockets (``<id8>-1`` … ``<id8>-5``) when kernels speak over IPC
  (the ``kernel.ipc`` capability, on by default where the platform has Unix
  sockets): nobody but the user can connect, and ipykernel has no reason to
  warn that its traffic is unencrypted;
- the kernelspecs made on the fly for environments that have none
  (``kernels/<name>/kernel.json``), never written into the user's Jupyter paths.

A Unix socket's path is short (107 bytes on Linux, 103 on macOS), so the
directory goes in Jupyter's runtime directory when a socket path there fits,
else in the temporary directory; where neither fits, kernels use TCP and the
log says why. A server stopped cleanly removes its directory; one killed
outright leaves it, and the next server to start removes the directories of
servers that no longer run (only its own user's, only names it makes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jupyter_mcp_server._kernels.connection_files import alive, connection_file_name

logger = logging.getLogger(__name__)

_NAME = re.compile(r"jmcp-(\d+)-[A-Za-z0-9_]{8}")
#: The longest path a Unix socket may have, less its terminating NUL.
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107
#: What a socket's name adds to the directory: "/" + 8 characters of the kernel id + "-NN".
SOCKET_TAIL = len("/12345678-12")


def ipc_possible() -> bool:
    """Whether kernels can speak over Unix sockets here (zmq's ipc:// transport)."""
    return os.name == "posix"


def _directory_name_length() -> int:
    return len(f"jmcp-{os.getpid()}-") + 8


def default_bases() -> list[str]:
    """Where the directory may go, in order of preference."""
    from jupyter_core.paths import jupyter_runtime_dir

    return [jupyter_runtime_dir(), tempfile.gettempdir()]


def fits(base: str) -> bool:
    """Whether a socket of a directory made in `base` has a path short enough."""
    return (
        len(os.path.abspath(base)) + 1 + _directory_name_length() + SOCKET_TAIL <= MAX_SOCKET_PATH
    )


class ServerRuntime:
    """This server's private runtime directory, made when first needed."""

    def __init__(self, bases: Sequence[str] | None = None) -> None:
        self._bases = list(bases) if bases is not None else None
        self._path: Path | None = None
        #: Whether a Unix socket in it has a path short enough.
        self.sockets_fit = False

    @property
    def bases(self) -> list[str]:
        if self._bases is None:
            self._bases = default_bases()
        return self._bases

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = self._make()
        return self._path

    def _make(self) -> Path:
        chosen = next((base for base in self.bases if fits(base)), None)
        self.sockets_fit = chosen is not None and ipc_possible()
        if chosen is None:
            chosen = self.bases[0]
            logger.warning(
                "No runtime directory has a path short enough for Unix sockets (%s); local kernels use TCP",
                ", ".join(self.bases),
            )
        os.makedirs(chosen, mode=0o700, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix=f"jmcp-{os.getpid()}-", dir=chosen))
        os.chmod(path, 0o700)  # mkdtemp's already; said, not assumed
        return path

    def connection_file(self, kernel_id: str) -> str:
        return str(self.path / connection_file_name(kernel_id))

    def socket_prefix(self, kernel_id: str) -> str | None:
        """The path prefix of a kernel's Unix sockets (``ip`` for the ipc transport), or None
        where they cannot be used."""
        path = self.path
        if not self.sockets_fit:
            return None
        return str(path / kernel_id.replace("-", "")[:8])

    @property
    def kernels_dir(self) -> Path:
        """Where kernelspecs made on the fly live (``kernels/<name>/kernel.json``)."""
        kernels = self.path / "kernels"
        kernels.mkdir(mode=0o700, exist_ok=True)
        return kernels

    def remove(self) -> None:
        """Remove the directory and everything in it (the server is stopping)."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


def remove_orphaned_runtime_dirs(bases: Sequence[str] | None = None) -> int:
    """Remove the runtime directories of servers that no longer run; how many there were.

    Only directories this module makes (``jmcp-<pid>-<random>``), owned by this
    user and not symlinks; a process id reused by a live program keeps its directory.
    """
    removed = 0
    for base in bases if bases is not None else default_bases():
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            match = _NAME.fullmatch(name)
            if match is None or int(match.group(1)) == os.getpid() or alive(int(match.group(1))):
                continue
            path = os.path.join(base, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            with contextlib.suppress(OSError):
                shutil.rmtree(path)
                removed += 1
    return removed
