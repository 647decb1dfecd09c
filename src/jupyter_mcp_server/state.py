"""The running server's state, and each connection's own.

One :class:`ServerState` holds what every tool works with: the frozen
configuration, the capabilities, the hooks, the workspace, the notebook
store, the kernels and the extensions. It is built by
:func:`jupyter_mcp_server.app.build_state` and handed to every MCP server
built from it as the SDK's lifespan context, so a tool reaches it through
its request (:func:`state_of`), never through a module global, and a test
can build as many as it likes.

What a client chose with ``use_notebook`` is not server state: it belongs to
the connection that chose it (:class:`ConnectionState`), so two clients
never share a "current notebook".
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .capabilities import CapabilityRegistry
from .config import ServerConfig
from .connections import session_of
from .hooks import Hooks
from .kernels.kernel import gone_message as kernel_gone_message
from .kernels.manager import KernelManager
from .kernels.turns import run_in_turn
from .scratch import ScratchOutputs
from .store import NotebookStore
from .store.contents import RemoteContents
from .store.derived import DerivedValues
from .store.history import Histories, Limits
from .store.recording import Recorder
from .workspace import Workspace

if TYPE_CHECKING:
    from .extensions import ExtensionManager
    from .kernels.execution import ExecutionOutcome

#: How many connections' choices are remembered at once.
MAX_CONNECTIONS = 1024

#: Runs `execute_code` somewhere else (a sandbox) or answers None to decline.
ExecutionInterceptor = Callable[[str, float], Awaitable[Any]]


@dataclass
class ConnectionState:
    """What one client connection has chosen: its named notebooks and its current one."""

    names: dict[str, str] = field(default_factory=dict)
    current: str | None = None


#: What the kept search texts may weigh (characters): a search reads at most as much.
SEARCH_TEXTS_WEIGHT = 256 * 1024 * 1024

class ServerState:
    """Everything a tool needs, built once from the configuration."""

    def __init__(
        self,
        config: ServerConfig,
        capabilities: CapabilityRegistry,
        hooks: Hooks,
        extensions: ExtensionManager,
    ) -> None:
        self.config = config
        self.capabilities = capabilities
        self.hooks = hooks
        self.extensions = extensions
        self.workspace = Workspace(config.workspace_root)
        #: Every notebook's history, in the server's state directory.
        self.histories = Histories(
            config.history_dir,
            Limits(max_entries=config.history_max_entries, max_bytes=config.history_max_bytes),
            off=None if config.history_dir is not None else "--history-dir is off",
        )
        self.store: NotebookStore = NotebookStore(
            self.workspace, recorder=Recorder(self.histories, f"workspace:{self.workspace.root}")
        )
        self.kernels = KernelManager(
            workspace_root=self.workspace.root,
            max_kernels=config.max_kernels,
            idle_timeout=config.idle_timeout,
            unresponsive_grace=config.unresponsive_grace,
            capability=capabilities.enabled,
        )
        self.interceptors: list[ExecutionInterceptor] = []
        #: Recent outputs of execute_code, for what its results left out.
        self.scratch = ScratchOutputs()
        #: Each notebook's searchable texts, kept until the file changes (search_notebooks).
        self.search_texts: DerivedValues[Any] = DerivedValues(SEARCH_TEXTS_WEIGHT)
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
            self.use_contents(RemoteContents(backend.url, backend.token))

    def use_contents(self, files: Any) -> None:
        """Keep notebooks in a Jupyter Server's contents (a ``store.contents.ContentsFiles``)
        rather than under the workspace root; subscriptions keep hearing about writes."""
        store = NotebookStore(self.workspace, files, Recorder(self.histories, f"contents:{files.identity}"))
        store.observers = self.store.observers
        self.store = store
        self.search_texts = DerivedValues(SEARCH_TEXTS_WEIGHT)  # kept for the other files

    def locate(self, path: str) -> str:
        """The canonical relative path of a notebook or directory where notebooks are kept;
        ``invalid_path`` for one that is absolute, escapes, or is malformed."""
        return self.store.locate(path)

    async def run_in_turn(
        self,
        kernel: Any,
        code: str,
        timeout: float,
        notebook: str | None,
        on_output: Callable[[dict[str, Any]], None] | None = None,
        *,
        interrupt_on_cancel: bool = False,
        on_death: Callable[[], Awaitable[None]] | None = None,
        gone_message: Callable[[], str] | None = None,
    ) -> ExecutionOutcome:
        """Run code on a kernel in order with every other call on it, under this server's
        output limits and hooks; a kernel that dies under it is reported (by default, as
        one of this server's kernels: marked lost, so the next call says so)."""
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
            on_death=on_death or (lambda: self.kernels.mark_lost(kernel)),
            gone_message=gone_message or (lambda: kernel_gone_message(notebook or f"kernel {kernel.kernel_id}")),
        )

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


_serving: contextvars.ContextVar[ServerState | None] = contextvars.ContextVar("jupyter_mcp_serving", default=None)
_serving_connection: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jupyter_mcp_serving_connection", default=None
)


class ServingState:
    """Middleware: the state serving a request, for the request's own code that is called
    without its context (an extension narrowing a tool calls it with only its arguments)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        token = _serving.set(ctx.lifespan_context)
        connection = _serving_connection.set(session_of(ctx))
        try:
            return await call_next(ctx)
        finally:
            _serving_connection.reset(connection)
            _serving.reset(token)


def serving_connection() -> str | None:
    """The connection of the request being served, for code called without its context."""
    return _serving_connection.get()


def state_of(ctx: Any) -> ServerState:
    """The server state a request is served with (the SDK's lifespan context)."""
    request_context = getattr(ctx, "request_context", ctx) if ctx is not None else None
    state = getattr(request_context, "lifespan_context", None)
    if not isinstance(state, ServerState):
        state = _serving.get()
    if state is None:
        raise RuntimeError("this code runs outside a request served by a server built from a ServerState")
    return state
