"""Where kernels are started: the interface, and the local implementation.

:class:`KernelManager` decides *which* kernels exist and which notebook each
belongs to; a :class:`KernelBackend` only starts one when asked and says
what it can start. Three implementations exist:

- :class:`LocalBackend`: a process on this machine, through `jupyter_client`
  (the embedded default);
- :class:`~jupyter_mcp_server._kernels.remote.JupyterServerBackend`: a kernel
  on a Jupyter Server reached over its REST API and kernel websocket;
- :class:`~jupyter_mcp_server._kernels.inprocess.ServerAppBackend`: inside
  Jupyter Server (the server extension), through its own kernel manager.

Whatever starts it, a kernel is a pair the execution layer already knows: a
`manager` with async ``is_alive()``, ``interrupt_kernel()`` and
``shutdown_kernel(now=True)``, and a started `client` with ``execute()``,
``get_iopub_msg()``, ``get_shell_msg()`` and ``stop_channels()``.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import importlib
import inspect
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from jupyter_mcp_server._errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.activation import activated
from jupyter_mcp_server._kernels.environments import (
    Environment,
    Environments,
    installed_kernelspecs,
    kernelspec_manager,
)
from jupyter_mcp_server._kernels.kernel_choice import KernelChoice, choose, not_ready
from jupyter_mcp_server._kernels.packages import fix_command
from jupyter_mcp_server._kernels.runtime import ServerRuntime

logger = logging.getLogger(__name__)

#: How long a started kernel may take to answer its first kernel_info.
READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class JupyterServerAddress:
    """Where a Jupyter Server is reached: its URL (with its base URL) and its token."""

    url: str
    #: Never shown: kept out of the repr.
    token: str | None = field(default=None, repr=False)


class StartedKernel(NamedTuple):
    """What a backend hands back: the kernel's id, its manager and its started client."""

    kernel_id: str
    manager: Any
    client: Any


@dataclass(frozen=True)
class BackendParts:
    """What the composition root hands a kernel backend it builds (``KernelBackend.build``)."""

    #: The server's :class:`~jupyter_mcp_server._config.ServerConfig` (the Jupyter Server's URL
    #: and token, the installer, ...).
    config: Any
    #: Installed kernelspecs and the workspace's environments.
    environments: Environments
    #: The server's private runtime directory (connection files, sockets, made kernelspecs).
    runtime: ServerRuntime
    #: Whether a capability is on, asked when it matters (never cached).
    capability: Callable[[str], bool]
    #: Inside Jupyter Server: its ``ServerApp`` (kernel, kernelspec and session managers).
    serverapp: Any = None


class KernelBackend(abc.ABC):
    """Starts kernels somewhere and says what it can start: the seam for a new place kernels run.

    A backend is a subclass published under the entry-point group
    :data:`ENTRY_POINT_GROUP` (as jupyter_client publishes kernel provisioners), chosen by
    name with ``--kernel-backend`` (``JUPYTER_MCP_KERNEL_BACKEND``) and built once by the
    composition root with :meth:`build`. This package publishes its three the same way:
    ``local``, ``jupyter-server`` and ``jupyter-server-extension``.

    The abstract methods are what every backend must say. The rest are declared here with
    the answer of a backend that has nothing more to offer; a backend overrides the ones it
    can do better (the server never looks a method up by name, nor a backend by its name).
    """

    #: The entry-point name it is published under ("local", "jupyter-server", ...).
    name: ClassVar[str]
    #: Whether a kernel's folder is a path on this machine: a notebook's folder must then
    #: exist here, and a prestarted kernel is moved by its absolute path. Otherwise a folder
    #: is handed over relative to the workspace root, as a Jupyter Server's ``path`` is.
    folders_are_local: ClassVar[bool] = False
    #: A Jupyter Server's sessions, where each notebook's kernel is bound so a person opening
    #: the notebook in JupyterLab gets the agent's kernel; None: no sessions to keep.
    sessions: NotebookSessions | None = None

    @classmethod
    @abc.abstractmethod
    def build(cls, parts: BackendParts) -> KernelBackend:
        """The backend from the server's parts; ``ToolFailure`` when it cannot be used (the
        server then stops before it serves, saying why)."""

    @abc.abstractmethod
    async def start(self, kernel_name: str, cwd: Path, folder: str = "") -> StartedKernel:
        """A started, ready kernel of `kernel_name`, working in `cwd` where that means something:
        the notebook's folder, `folder` relative to the workspace root (a backend whose
        notebooks are kept elsewhere, a Jupyter Server's contents, uses `folder`).

        Raises ``ToolFailure(not_found)`` for an unknown kernelspec, naming the known ones.
        """

    @abc.abstractmethod
    def kernelspecs(self) -> list[str]:
        """The kernelspec names it can start (a remote one answers from its last look)."""

    @abc.abstractmethod
    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        """``{"name", "display_name", "language"}`` of one kernelspec, None when unknown."""

    @abc.abstractmethod
    def describe(self) -> dict[str, Any]:
        """What a caller may be told about it: never a secret."""

    @abc.abstractmethod
    def origin(self) -> str:
        """Where its kernels run, in a few words."""

    def close(self) -> None:  # noqa: B027 (optional: a backend that holds nothing lets go of nothing)
        """Let go of what it holds, once the server's kernels are stopped."""

    # --- Optional: what a backend that can do more overrides ----------------------

    @property
    def sees_notebooks(self) -> bool:
        """Whether its kernels see the notebooks' files, so a kernel runs in its notebook's
        folder; else in the workspace root. By default they do."""
        return True

    def choose(self, metadata: Mapping[str, Any] | None) -> KernelChoice:
        """The kernel a notebook with this metadata gets (None: a new notebook), and why; a
        notebook in a language none of its kernelspecs runs is refused (``not_found``).
        By default, chosen among :meth:`kernelspecs` by name and language."""
        listed = [
            Environment(
                name=name,
                kind="kernelspec",
                language=str((self.kernelspec(name) or {}).get("language", "")),
                display_name=name,
                found_in=(self.origin(),),
            )
            for name in self.kernelspecs()
        ]
        return choose(metadata, listed)

    def can_start(self, kernel_name: str) -> bool:
        """Whether a kernel of this name would start (an environment without ipykernel would
        not): a kernel that cannot start is never prestarted. By default, yes."""
        return True

    def listed(self) -> list[Environment]:
        """The environments it can start, with whether each is ready (``list_kernels``
        shows them); by default none beyond its kernelspecs."""
        return []

    @property
    def shares_kernels(self) -> bool:
        """Whether :meth:`adopt` may find a kernel it runs that this server did not start: true
        for a backend that overrides it."""
        return type(self).adopt is not KernelBackend.adopt

    async def adopt(self, kernel_id: str) -> tuple[StartedKernel, str] | None:
        """A kernel it already runs that this server did not start (one a person started in
        JupyterLab), connected to share it, with its kernelspec name; None when it has none
        of that id. By default it shares none."""
        return None

    def reached_at(self) -> JupyterServerAddress | None:
        """The Jupyter Server its kernels run on, reached over HTTP, when it is one: the
        server may then keep the notebooks there too (``--jupyter-contents``), each notebook's
        kernel bound in its sessions (:meth:`bind_sessions`). By default, none."""
        return None

    def bind_sessions(self) -> None:  # noqa: B027 (optional: nothing to bind by default)
        """From now on, bind each notebook's kernel in the sessions of the Jupyter Server that
        keeps the notebooks (:attr:`sessions`); by default there are none."""


#: The entry-point group kernel backends are published under.
ENTRY_POINT_GROUP = "jupyter_mcp_server.kernel_backends"
#: This package's own, as its entry points publish them: found also where its metadata is not
#: installed (a checkout run from its sources).
BUILT_IN_BACKENDS = {
    "local": "jupyter_mcp_server._kernels.backends:LocalBackend",
    "jupyter-server": "jupyter_mcp_server._kernels.remote:JupyterServerBackend",
    "jupyter-server-extension": "jupyter_mcp_server._kernels.inprocess:ServerAppBackend",
}


def backend_class(name: str) -> type[KernelBackend]:
    """The backend published under `name`; ``ToolFailure(invalid_argument)`` naming the known
    ones when none is, or when what is published is not a :class:`KernelBackend`."""
    from importlib import metadata

    published = {
        entry.name: entry.value for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)
    }
    known = {**BUILT_IN_BACKENDS, **published}
    target = known.get(name)
    if target is None:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"No kernel backend is named {name!r}. Known: {', '.join(sorted(known))} "
            f"(a package publishes one under the entry-point group {ENTRY_POINT_GROUP!r}).",
        )
    module, _, attribute = target.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if not (isinstance(found, type) and issubclass(found, KernelBackend)):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"The kernel backend {name!r} ({target}) is not a KernelBackend subclass.",
        )
    return found


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
            logger.debug(
                "Could not look up the Jupyter session of %s: %s", path, type(error).__name__
            )
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
                    logger.info(
                        "%s already has a Jupyter session on another kernel; left as it is", path
                    )
                    return
                await self._rebind(session_id, kernel_id)
            self._made[path] = (session_id, kernel_id)
        except Exception as error:
            logger.warning(
                "Could not bind %s to its kernel in the Jupyter sessions: %s",
                path,
                type(error).__name__,
            )

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


def takes_a_folder(backend: KernelBackend) -> bool:
    """Whether `backend.start` accepts the workspace-relative `folder`: one written before
    the seam had it takes only ``(kernel_name, cwd)`` and is called that way."""
    try:
        parameters = inspect.signature(backend.start).parameters
    except (TypeError, ValueError):
        return True
    return "folder" in parameters or any(
        each.kind is inspect.Parameter.VAR_POSITIONAL for each in parameters.values()
    )


class LocalBackend(KernelBackend):
    """Kernels as processes on this machine, started through `jupyter_client`.

    On Linux one keeper process starts its kernels and ends everything a
    kernel started when the kernel is stopped, exits, or this server dies
    (:mod:`.process_tree`, :mod:`.keeper`). Its connection file, and its
    Unix sockets when it speaks over IPC, live in the server's private runtime
    directory (:mod:`.runtime`). With `environments`, it starts the workspace's
    and the configured Python environments too, through kernelspecs made for
    them on the fly (:mod:`.environments`).
    """

    name = "local"
    folders_are_local = True

    def __init__(
        self,
        environments: Environments | None = None,
        runtime: ServerRuntime | None = None,
        ipc: Callable[[], bool] = lambda: False,
        installer: str = "auto",
    ) -> None:
        self.runtime = runtime or ServerRuntime()
        #: ``JUPYTER_MCP_INSTALLER``: which installer the command fixing an environment names.
        self.installer = installer
        #: Asked at each start: whether kernels speak over Unix sockets (``kernel.ipc``).
        self.ipc = ipc
        self.environments = environments

    @functools.cached_property
    def _specs(self) -> Any:
        """One KernelSpecManager per backend: its environments' when it has them."""
        if self.environments is not None:
            return self.environments.specs
        return kernelspec_manager(None)

    @functools.cached_property
    def _zmq_context(self) -> Any:
        """One ZeroMQ context for every local kernel's manager and client: jupyter_client
        makes one for each (an I/O thread and a reaper thread apiece, 32 threads for
        8 notebooks); a context is meant to be shared by the sockets of a process. Each
        manager and client then leaves it alone when it stops (it did not create it)."""
        import zmq.asyncio

        return zmq.asyncio.Context()

    @classmethod
    def build(cls, parts: BackendParts) -> LocalBackend:
        return cls(
            parts.environments,
            parts.runtime,
            ipc=lambda: parts.capability("kernel.ipc"),
            installer=parts.config.installer,
        )

    @functools.cached_property
    def _keeper(self) -> Any:
        """The one keeper of this backend's kernels (``keeper_client.py``), started with the first."""
        from jupyter_mcp_server._kernels.keeper_client import KernelKeeper

        return KernelKeeper()

    def close(self) -> None:
        """Let the shared ZeroMQ context and the keeper go (its kernels are stopped)."""
        keeper = self.__dict__.pop("_keeper", None)
        if keeper is not None:
            keeper.close()
        context = self.__dict__.pop("_zmq_context", None)
        if context is not None:
            context.destroy(linger=0)

    def listed(self) -> list[Environment]:
        """Every kernelspec and environment it can start, looked up now."""
        if self.environments is None:
            return installed_kernelspecs(self._specs)
        return self.environments.found()

    def kernelspecs(self) -> list[str]:
        """The kernelspecs (installed ones, then environments') it can start, looked up on disk at every call."""
        if self.environments is None:
            return sorted(self._specs.find_kernel_specs())
        return [env.name for env in self.environments.found()]

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        from jupyter_client.kernelspec import NoSuchKernel

        try:
            spec = self._specs.get_kernel_spec(kernel_name)
        except NoSuchKernel:
            env = self.environments.find(kernel_name) if self.environments is not None else None
            if env is None:
                return None
            return {"name": env.name, "display_name": env.display_name, "language": env.language}
        return {"name": kernel_name, "display_name": spec.display_name, "language": spec.language}

    def choose(self, metadata: Mapping[str, Any] | None) -> KernelChoice:
        """The kernel a notebook with this metadata gets, and why (:func:`.kernel_choice.choose`)."""
        if self.environments is not None:
            return choose(
                metadata,
                self.environments.found(),
                configured_kernel=self.environments.sources.kernel,
            )
        return choose(metadata, installed_kernelspecs(self._specs))

    def can_start(self, kernel_name: str) -> bool:
        """Whether a kernel of this name would start (its environment has ipykernel)."""
        env = next((each for each in self.listed() if each.name == kernel_name), None)
        return env is not None and env.ready

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name}

    def origin(self) -> str:
        return "local"

    async def start(self, kernel_name: str, cwd: Path, folder: str = "") -> StartedKernel:
        # Lazy: jupyter_client's kernel manager is imported when the first kernel starts.
        from jupyter_client.kernelspec import KernelSpecManager

        from jupyter_mcp_server._kernels.process_tree import TreeKernelManager

        listed = self.listed()
        env = next((each for each in listed if each.name == kernel_name), None)
        if env is None:
            raise unknown_kernelspec(kernel_name, [each.name for each in listed])
        if not env.ready:
            raise not_ready(env, fix_command(env, self.installer))
        # Ours, not one the kernel manager would build for itself (which imports IPython).
        options: dict[str, Any] = {"kernel_spec_manager": self._specs, "context": self._zmq_context}
        if env.needs_a_kernelspec and self.environments is not None:
            made = self.environments.kernelspec_dir(env)
            options["kernel_spec_manager"] = KernelSpecManager(
                kernel_dirs=[str(made)], ensure_native_kernel=False
            )
        kernel_id = str(uuid.uuid4())
        sockets = self.runtime.socket_prefix(kernel_id) if self.ipc() else None
        if sockets is not None:
            # Unix sockets in a directory only this user can enter: no port for other
            # local users to reach, and nothing for ipykernel to warn about.
            options.update(transport="ipc", ip=sockets)
        # Its kernel's whole process tree ends with it, and with this server (process_tree.py).
        manager = TreeKernelManager(
            kernel_name=kernel_name,
            connection_file=self.runtime.connection_file(kernel_id),
            **options,
        )
        manager.keeper = self._keeper
        # Activated as a shell would (activation.activated); restarts launch with it too.
        launch: dict[str, Any] = {"cwd": str(cwd)}
        environ = activated(os.environ, env)
        if environ is not None:
            launch["env"] = environ
        try:
            await manager.start_kernel(**launch)
        except OSError as error:  # its program missing or not executable, its folder gone
            with contextlib.suppress(Exception):
                manager.cleanup_resources()
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"Kernel '{kernel_name}' could not start: {error}. Fix its kernelspec's "
                "command, or pass another kernel_name (list_kernels shows them).",
            ) from error
        client = manager.client(context=self._zmq_context)
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
