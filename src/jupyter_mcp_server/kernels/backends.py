"""Where kernels are started: the interface, and the local implementation.

:class:`KernelManager` decides *which* kernels exist and which notebook each
belongs to; a :class:`KernelBackend` only starts one when asked and says
what it can start. Three implementations exist:

- :class:`LocalBackend`: a process on this machine, through `jupyter_client`
  (the embedded default);
- :class:`~jupyter_mcp_server.kernels.remote.JupyterServerBackend`: a kernel
  on a Jupyter Server reached over its REST API and kernel websocket;
- :class:`~jupyter_mcp_server.kernels.inprocess.ServerAppBackend`: inside
  Jupyter Server (the server extension), through its own kernel manager.

Whatever starts it, a kernel is a pair the execution layer already knows: a
`manager` with async ``is_alive()``, ``interrupt_kernel()`` and
``shutdown_kernel(now=True)``, and a started `client` with ``execute()``,
``get_iopub_msg()``, ``get_shell_msg()`` and ``stop_channels()``.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from jupyter_mcp_server.errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure

#: How long a started kernel may take to answer its first kernel_info.
READY_TIMEOUT = 60.0


class StartedKernel(NamedTuple):
    """What a backend hands back: the kernel's id, its manager and its started client."""

    kernel_id: str
    manager: Any
    client: Any


@runtime_checkable
class KernelBackend(Protocol):
    """Starts kernels somewhere and says what it can start."""

    #: "local", "jupyter-server" or "jupyter-server-extension".
    name: str

    async def start(self, kernel_name: str, cwd: Path) -> StartedKernel:
        """A started, ready kernel of `kernel_name`, working in `cwd` where that means something.

        Raises ``ToolFailure(not_found)`` for an unknown kernelspec, naming the known ones.
        """
        ...

    def kernelspecs(self) -> list[str]:
        """The kernelspec names it can start (a remote one answers from its last look)."""
        ...

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        """``{"name", "display_name", "language"}`` of one kernelspec, None when unknown."""
        ...

    def describe(self) -> dict[str, Any]:
        """What a caller may be told about it: never a secret."""
        ...

    def origin(self) -> str:
        """Where its kernels run, in a few words."""
        ...


def unknown_kernelspec(kernel_name: str, known: list[str], where: str = "") -> ToolFailure:
    return ToolFailure(
        NOT_FOUND,
        f"No kernelspec named '{kernel_name}'{where}. Installed: {', '.join(known) or 'none'}.",
        known=known,
    )


_SPEC_MANAGER: Any = None


def spec_manager() -> Any:
    """One KernelSpecManager for the process: building one computes the Jupyter
    search path (most of a lookup's cost); its lookups still list the disk."""
    global _SPEC_MANAGER
    if _SPEC_MANAGER is None:
        from jupyter_client.kernelspec import KernelSpecManager

        _SPEC_MANAGER = KernelSpecManager()
    return _SPEC_MANAGER


class LocalBackend:
    """Kernels as processes on this machine, started through `jupyter_client`."""

    name = "local"

    def kernelspecs(self) -> list[str]:
        """The installed kernelspecs, looked up on disk at every call."""
        return sorted(spec_manager().find_kernel_specs())

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        from jupyter_client.kernelspec import NoSuchKernel

        try:
            spec = spec_manager().get_kernel_spec(kernel_name)
        except NoSuchKernel:
            return None
        return {"name": kernel_name, "display_name": spec.display_name, "language": spec.language}

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}

    def origin(self) -> str:
        return "local"

    async def start(self, kernel_name: str, cwd: Path) -> StartedKernel:
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.paths import jupyter_runtime_dir

        if kernel_name not in self.kernelspecs():
            raise unknown_kernelspec(kernel_name, self.kernelspecs())
        kernel_id = str(uuid.uuid4())
        runtime = jupyter_runtime_dir()
        os.makedirs(runtime, exist_ok=True)
        manager = AsyncKernelManager(
            kernel_name=kernel_name,
            connection_file=os.path.join(runtime, f"kernel-{kernel_id}.json"),
        )
        await manager.start_kernel(cwd=str(cwd))
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=READY_TIMEOUT)
        except Exception as error:
            client.stop_channels()
            await manager.shutdown_kernel(now=True)
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"Kernel '{kernel_name}' did not become ready: {error}",
            ) from error
        return StartedKernel(kernel_id, manager, client)
