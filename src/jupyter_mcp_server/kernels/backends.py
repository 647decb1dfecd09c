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

import functools
import logging
import os
import uuid
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from jupyter_mcp_server.errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure
from jupyter_mcp_server.kernels.connection_files import connection_file_name

logger = logging.getLogger(__name__)

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


class NotebookSessions:
    """A Jupyter Server's sessions (``/api/sessions``): which kernel each notebook path runs on.

    A backend whose kernels live on a Jupyter Server that also keeps the
    notebooks binds each notebook's kernel there, so JupyterLab shows the
    kernel beside its notebook, and a person opening the notebook gets the
    agent's kernel. Subclasses say how to create and delete one session;
    this keeps the bookkeeping and never fails the caller (a session is a
    courtesy to the person, not part of the agent's work).

    Jupyter Server deletes a session only together with its kernel
    (``DELETE /api/sessions/{id}`` shuts the kernel down), so a session is
    deleted when the agent stops its kernel, and otherwise stays while that
    kernel runs (a shared kernel, one a person started).
    """

    #: Whether an existing session of this server's own kernel may be pointed at
    #: another kernel without stopping the first (not over REST, where it would).
    can_rebind = False

    def __init__(self) -> None:
        #: path -> (session id, kernel id), for the sessions this server made.
        self._made: dict[str, tuple[str, str]] = {}

    async def _create(self, path: str, kernel_id: str, kernel_name: str) -> tuple[str, str]:
        """``(session id, kernel id)`` of the session for `path`: a new one on
        `kernel_id`, or the one that already exists there, whichever kernel it has."""
        raise NotImplementedError

    async def _delete(self, session_id: str) -> None:
        raise NotImplementedError

    async def _rebind(self, session_id: str, kernel_id: str) -> None:
        raise NotImplementedError

    async def _kernel_of_existing(self, path: str) -> str | None:
        """The kernel id of the session `path` has now, if it has one."""
        raise NotImplementedError

    async def kernel_of(self, path: str) -> str | None:
        """The kernel of somebody else's session on `path` (a person's open notebook), so the
        agent's code runs where the person's does; None when there is none (or it cannot be
        asked: a session is a courtesy, never a failure)."""
        if path in self._made:
            return None
        try:
            return await self._kernel_of_existing(path)
        except Exception as error:
            logger.debug("Could not look up the Jupyter session of %s: %s", path, type(error).__name__)
            return None

    async def bind(self, path: str, kernel_id: str, kernel_name: str) -> None:
        """The session of `path` runs `kernel_id`, unless somebody else's session holds the path."""
        try:
            session_id, bound = await self._create(path, kernel_id, kernel_name)
            if bound != kernel_id:
                mine = self._made.get(path)
                if not (self.can_rebind and mine is not None and mine[0] == session_id):
                    # The person's session (or one this server cannot move without
                    # stopping its kernel): theirs to keep.
                    logger.info("%s already has a Jupyter session on another kernel; left as it is", path)
                    return
                await self._rebind(session_id, kernel_id)
            self._made[path] = (session_id, kernel_id)
        except Exception as error:
            logger.warning("Could not bind %s to its kernel in the Jupyter sessions: %s", path, type(error).__name__)

    async def release(self, kernel_id: str, *, stopped: bool) -> None:
        """Let go of `kernel_id`'s sessions; delete them when the kernel was stopped by this server."""
        paths = [path for path, (_, bound) in self._made.items() if bound == kernel_id]
        for path in paths:
            session_id, _ = self._made.pop(path)
            if stopped:
                try:
                    await self._delete(session_id)
                except Exception:  # the server culls a session whose kernel is gone
                    logger.debug("Deleting the Jupyter session of %s failed", path, exc_info=True)


def unknown_kernelspec(kernel_name: str, known: list[str], where: str = "") -> ToolFailure:
    return ToolFailure(
        NOT_FOUND,
        f"No kernelspec named '{kernel_name}'{where}. Installed: {', '.join(known) or 'none'}.",
        known=known,
    )


class LocalBackend:
    """Kernels as processes on this machine, started through `jupyter_client`.

    On Linux each kernel runs under a keeper process that ends everything the
    kernel started when the kernel is stopped, exits, or this server dies
    (:mod:`.process_tree`, :mod:`.keeper`).
    """

    name = "local"

    @functools.cached_property
    def _specs(self) -> Any:
        """One KernelSpecManager per backend: building one computes the Jupyter search
        path (most of a lookup's cost); its lookups still list the disk."""
        from jupyter_client.kernelspec import KernelSpecManager

        return KernelSpecManager()

    def kernelspecs(self) -> list[str]:
        """The installed kernelspecs, looked up on disk at every call."""
        return sorted(self._specs.find_kernel_specs())

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        from jupyter_client.kernelspec import NoSuchKernel

        try:
            spec = self._specs.get_kernel_spec(kernel_name)
        except NoSuchKernel:
            return None
        return {"name": kernel_name, "display_name": spec.display_name, "language": spec.language}

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}

    def origin(self) -> str:
        return "local"

    async def start(self, kernel_name: str, cwd: Path) -> StartedKernel:
        from jupyter_core.paths import jupyter_runtime_dir

        # Lazy: jupyter_client's kernel manager is imported when the first kernel starts.
        from jupyter_mcp_server.kernels.process_tree import TreeKernelManager

        if kernel_name not in self.kernelspecs():
            raise unknown_kernelspec(kernel_name, self.kernelspecs())
        kernel_id = str(uuid.uuid4())
        runtime = jupyter_runtime_dir()
        os.makedirs(runtime, exist_ok=True)
        # Its kernel's whole process tree ends with it, and with this server (process_tree.py).
        manager = TreeKernelManager(
            kernel_name=kernel_name,
            connection_file=os.path.join(runtime, connection_file_name(kernel_id)),
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
