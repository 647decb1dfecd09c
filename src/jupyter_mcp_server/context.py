"""The server's process-wide state, and each connection's own.

One :class:`ServerContext` per process holds the workspace, the notebook
store, the kernels, the capabilities and the hooks, built from the
configuration once the command line has been read. What a client chose with
``use_notebook`` is not in it: that belongs to the connection that chose it
(:class:`ConnectionState`), so two clients never share a "current notebook".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jupyter_mcp_server.capabilities import CapabilityRegistry, get_capabilities
from jupyter_mcp_server.config import ServerConfig, get_config
from jupyter_mcp_server.hooks import Hooks, get_hooks
from jupyter_mcp_server.kernels.manager import KernelManager
from jupyter_mcp_server.store import NotebookStore
from jupyter_mcp_server.workspace import Workspace

if TYPE_CHECKING:
    from jupyter_mcp_server.kernels.execution import ExecutionOutcome

#: How many connections' choices are remembered at once.
MAX_CONNECTIONS = 1024

#: Runs `execute_code` somewhere else (a sandbox) or answers None to decline.
ExecutionInterceptor = Callable[[str, float], Awaitable[Any]]


@dataclass
class ConnectionState:
    """What one client connection has chosen: its named notebooks and its current one."""

    names: dict[str, str] = field(default_factory=dict)
    current: str | None = None


class ServerContext:
    """Everything a tool needs, built once from the configuration."""

    _instance: ServerContext | None = None

    def __init__(self, config: ServerConfig, capabilities: CapabilityRegistry, hooks: Hooks) -> None:
        self.config = config
        self.capabilities = capabilities
        self.hooks = hooks
        self.workspace = Workspace(config.workspace_root)
        self.store = NotebookStore(self.workspace)
        self.kernels = KernelManager(
            workspace_root=self.workspace.root,
            max_kernels=config.max_kernels,
            idle_timeout=config.idle_timeout,
            unresponsive_grace=config.unresponsive_grace,
            capability=capabilities.enabled,
        )
        self.interceptors: list[ExecutionInterceptor] = []
        #: The Jupyter Server kernels start on, when not local (its backend).
        self.jupyter: Any = None
        #: By connection key, oldest first; bounded, since HTTP sessions end
        #: without telling the tools.
        self._connections: OrderedDict[str, ConnectionState] = OrderedDict()

    def use_jupyter_server(self, backend: Any, *, contents: bool = False) -> None:
        """Start later kernels on a Jupyter Server (``--jupyter-url``, ``connect_to_jupyter``);
        with `contents`, read and write notebooks through its contents API as well, and
        bind each notebook's kernel in its sessions (``/api/sessions``)."""
        if contents and hasattr(backend, "bind_sessions"):
            backend.bind_sessions()
        self.kernels.use_backend(backend)
        self.jupyter = backend
        if contents:
            from jupyter_mcp_server.store.contents import RemoteContents

            self.use_contents(RemoteContents(backend.url, backend.token))

    def use_contents(self, files: Any) -> None:
        """Keep notebooks in a Jupyter Server's contents (a ``store.contents.ContentsFiles``)
        rather than under the workspace root; subscriptions keep hearing about writes."""
        from jupyter_mcp_server.store.contents import ContentsNotebookStore

        store = ContentsNotebookStore(self.workspace, files)
        store.observers = self.store.observers
        self.store = store

    def locate(self, path: str) -> str:
        """The canonical relative path of a notebook or directory where notebooks are kept;
        ``invalid_path`` for one that is absolute, escapes, or is malformed."""
        locate = getattr(self.store, "locate", None)
        if locate is not None:
            return str(locate(path))
        return self.workspace.relative_of(self.workspace.resolve(path))

    async def run_in_turn(
        self,
        kernel: Any,
        code: str,
        timeout: float,
        notebook: str | None,
        on_output: Callable[[dict[str, Any]], None] | None = None,
        *,
        interrupt_on_cancel: bool = False,
    ) -> ExecutionOutcome:
        """Run code on a kernel in order with every other call on it, under this server's
        output limits and hooks; a kernel that dies under it is marked lost and reported."""
        from jupyter_mcp_server.kernels.manager import gone_message
        from jupyter_mcp_server.kernels.turns import run_in_turn

        return await run_in_turn(
            kernel,
            code,
            timeout=timeout,
            max_output_bytes=self.config.max_output_bytes,
            max_output_blocks=self.config.max_output_blocks,
            hooks=self.hooks,
            notebook=notebook,
            on_output=on_output,
            interrupt_on_cancel=interrupt_on_cancel,
            on_death=lambda: self.kernels.mark_lost(kernel),
            gone_message=lambda: gone_message(notebook or f"kernel {kernel.kernel_id}"),
        )

    async def list_files(self, path: str, max_depth: int, pattern: str) -> list[Any]:
        """What ``list_files`` lists: the workspace, or the Jupyter Server's contents."""
        listing = getattr(self.store, "list_files", None)
        if listing is not None:
            return list(await listing(path, max_depth, pattern))
        return list(self.workspace.list_files(path, max_depth, pattern))

    @classmethod
    def get_instance(cls) -> ServerContext:
        """The process's context, built from :func:`get_config` on first use."""
        if cls._instance is None:
            cls._instance = cls(get_config(), get_capabilities(), get_hooks())
        return cls._instance

    @classmethod
    def reset(cls) -> None:
        cls._instance = None

    def connection(self, key: str | None) -> ConnectionState:
        """The state of the connection identified by `key`; None remembers nothing."""
        if key is None:
            return ConnectionState()
        state = self._connections.get(key)
        if state is None:
            state = self._connections[key] = ConnectionState()
            while len(self._connections) > MAX_CONNECTIONS:
                self._connections.popitem(last=False)
        else:
            self._connections.move_to_end(key)
        return state

    def all_connections(self) -> list[ConnectionState]:
        return list(self._connections.values())
