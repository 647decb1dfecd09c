"""A sandbox that is an ipykernel process this server starts: local or confined.

The kernel is started through jupyter_client with a kernelspec written for
this sandbox alone: its argv is the launcher that sets the resource limits,
then (for the confined variant) bubblewrap, then ipykernel. It listens on
unix sockets in the sandbox's own directory (``transport="ipc"``), which a
kernel in a network namespace can still serve and no other user can reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_mcp_sandboxes import limited
from jupyter_mcp_sandboxes.directory import SandboxDirectory
from jupyter_mcp_sandboxes.limits import Limits
from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_server.api import (
    TIMEOUT,
    UNSUPPORTED,
    ToolFailure,
)

KERNELSPEC_NAME = "sandbox"
#: The launcher is run by its file, so the kernel needs nothing of this package.
LAUNCHER = str(Path(limited.__file__).resolve())


def launcher_command(limits: Limits) -> list[str]:
    """Limits, then death with the server, then whatever follows ``--``."""
    return [
        sys.executable,
        LAUNCHER,
        *limits.launcher_arguments(),
        "--die-with-parent",
        str(os.getpid()),
        "--",
    ]


def ipykernel_command(python: str = sys.executable) -> list[str]:
    return [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


def kernel_environment(name: str, directory: SandboxDirectory) -> dict[str, str]:
    """Its own environment: nothing of the server's (no tokens, no keys), just enough to run."""
    return {
        "PATH": os.pathsep.join(
            [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        "HOME": str(directory.work),
        "TMPDIR": str(directory.work / "tmp"),
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        # Python's allocator reserves address space per thread; two arenas keep
        # a kernel's baseline well under a memory limit of a few hundred MiB.
        "MALLOC_ARENA_MAX": "2",
        "JUPYTER_MCP_SANDBOX": name,
    }


class KernelSandbox(Sandbox):
    """An ipykernel process under resource limits, in its own directory."""

    def __init__(
        self,
        spec: SandboxSpec,
        *,
        manager: Any,
        client: Any,
        directory: SandboxDirectory,
        limits: Limits,
        confined: bool,
    ) -> None:
        super().__init__(spec, kernel_id=str(manager.kernel_id), manager=manager, client=client)
        self._pid: int | None = getattr(manager.provisioner, "pid", None)
        self._directory = directory
        self._limits = limits
        self._confined = confined

    @property
    def where(self) -> str:
        how = (
            "under bubblewrap (no network, read-only system)"
            if self._confined
            else "a local process"
        )
        return f"{how}, pid {self.pid}, in {self._directory.work}"

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def directory(self) -> str:
        return str(self._directory.work)

    @property
    def limits(self) -> Limits:
        return self._limits

    def caveats(self) -> tuple[str, ...]:
        return self._limits.caveats(confined=self._confined)

    async def _alive(self) -> bool:
        return bool(await self.manager.is_alive())

    def _gone_reason(self) -> str:
        code = None
        provisioner = self.manager.provisioner
        process = getattr(provisioner, "process", None) if provisioner else None
        if process is not None:
            code = process.poll()
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"its kernel was killed by {signal.Signals(-code).name}"
        return "its kernel exited" if code is None else f"its kernel exited with status {code}"

    async def _terminate(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        try:
            await self.manager.shutdown_kernel(now=True)
        except Exception:
            abandon(self.manager, None, self._directory)
        self._directory.remove()

    def _terminate_now(self) -> None:
        abandon(self.manager, self.client, self._directory)


def abandon(manager: Any, client: Any, directory: SandboxDirectory) -> None:
    """Kill the kernel's whole process group and delete its directory, without awaiting anything.

    For the paths where awaiting is not possible or not safe: the server
    stopping, and a launch cancelled half way.
    """
    if client is not None:
        with contextlib.suppress(Exception):
            client.stop_channels()
    provisioner = getattr(manager, "provisioner", None)
    process: subprocess.Popen[bytes] | None = getattr(provisioner, "process", None)
    if process is not None:
        pgid = getattr(provisioner, "pgid", None)
        with contextlib.suppress(OSError):
            if pgid:
                os.killpg(pgid, signal.SIGKILL)
            else:
                process.kill()
        with contextlib.suppress(Exception):
            process.wait(timeout=5)
    directory.remove()


async def start_kernel_sandbox(
    spec: SandboxSpec,
    directory: SandboxDirectory,
    argv: list[str],
    *,
    limits: Limits,
    confined: bool,
    interrupt_mode: str = "signal",
) -> KernelSandbox:
    """Start the kernel `argv` describes in `directory` and wait until it answers."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    specs = directory.kernel / "specs"
    (specs / KERNELSPEC_NAME).mkdir(parents=True)
    (specs / KERNELSPEC_NAME / "kernel.json").write_text(
        json.dumps(
            {
                "argv": argv,
                "display_name": f"Sandbox {spec.name}",
                "language": "python",
                "interrupt_mode": interrupt_mode,
                "metadata": {"debugger": False},
            }
        ),
        encoding="utf-8",
    )
    manager = AsyncKernelManager(
        kernel_name=KERNELSPEC_NAME,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)], ensure_native_kernel=False),
        transport="ipc",
        ip=str(directory.socket_prefix),
        connection_file=str(directory.connection_file),
    )
    with directory.log.open("ab") as log:
        try:
            await manager.start_kernel(
                env=kernel_environment(spec.name, directory),
                cwd=str(directory.work),
                stdout=log,
                stderr=log,
            )
        except BaseException as error:
            abandon(manager, None, directory)
            if not isinstance(error, Exception):
                raise
            raise ToolFailure(
                UNSUPPORTED, f"The {spec.variant} sandbox '{spec.name}' could not start: {error}"
            ) from error
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=spec.timeout)
    except BaseException as error:
        process = getattr(manager.provisioner, "process", None)
        died = process is not None and process.poll() is not None
        tail = directory.log_tail()
        # Nothing of a launch that did not finish is left running, cancelled or not.
        abandon(manager, client, directory)
        if not isinstance(error, Exception):
            raise
        if died:
            raise ToolFailure(
                UNSUPPORTED,
                f"The {spec.variant} sandbox '{spec.name}' exited while starting"
                + (f"; it said:\n{tail}" if tail else "."),
            ) from error
        raise ToolFailure(
            TIMEOUT,
            f"The {spec.variant} sandbox '{spec.name}' did not answer within {spec.timeout:g}s; it was stopped. "
            "Launch it again with a larger timeout.",
        ) from error
    return KernelSandbox(
        spec, manager=manager, client=client, directory=directory, limits=limits, confined=confined
    )
