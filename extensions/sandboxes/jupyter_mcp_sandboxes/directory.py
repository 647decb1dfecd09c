"""A sandbox's private directory, outside the workspace, gone when it ends.

Three parts, so that what the kernel may write and what controls it are
apart (the confined variant mounts them differently)::

    ROOT/            0700, made with mkdtemp
      work/          the kernel's working directory and HOME: its to write
      kernel/        its kernelspec, connection file and log: not its to write
      run/           the kernel's ipc sockets (it binds them)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jupyter_mcp_server.api import (
    UNSUPPORTED,
    ToolFailure,
)

#: A unix socket path must fit in sun_path (108 bytes on Linux), ipc suffix included.
MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class SandboxDirectory:
    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def kernel(self) -> Path:
        return self.root / "kernel"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def socket_prefix(self) -> Path:
        """The ipc `ip` of the kernel's connection: sockets are ``k-1`` ... ``k-5`` here."""
        return self.run / "k"

    @property
    def connection_file(self) -> Path:
        return self.kernel / "connection.json"

    @property
    def log(self) -> Path:
        return self.kernel / "kernel.log"

    @classmethod
    def create(cls, name: str, base: Path, workspace_root: Path) -> SandboxDirectory:
        base = base.expanduser().resolve()
        workspace = workspace_root.resolve()
        if base == workspace or workspace in base.parents:
            raise ToolFailure(
                UNSUPPORTED,
                f"Sandbox directories would be made in {base}, which is inside the workspace {workspace}; "
                "a sandbox's directory must be outside it. Set JUPYTER_MCP_SANDBOX_ROOT to a directory "
                "outside the workspace and restart the server.",
            )
        base.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=f"jms-{name[:16]}-", dir=base))
        directory = cls(root)
        if len(str(directory.socket_prefix)) + 4 > MAX_SOCKET_PATH:
            directory.remove()
            raise ToolFailure(
                UNSUPPORTED,
                f"Sandbox directories under {base} have paths too long for the kernel's unix sockets; "
                "set JUPYTER_MCP_SANDBOX_ROOT to a shorter directory (for example /tmp).",
            )
        for part in (directory.work, directory.kernel, directory.run):
            part.mkdir(mode=0o700)
        (directory.work / "tmp").mkdir(mode=0o700)
        return directory

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the kernel's own output, for a launch that failed."""
        try:
            with self.log.open("rb") as stream:
                stream.seek(0, os.SEEK_END)
                size = stream.tell()
                stream.seek(max(0, size - limit))
                return stream.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
