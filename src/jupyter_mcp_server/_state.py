"""The running server's state, and each connection's own.

One :class:`ServerState` holds what every tool works with: the frozen
configuration, the capabilities, the hooks, the workspace, the notebook
store, the kernels and the extensions. It is built by
:func:`jupyter_mcp_server._app.build_state` and handed to every MCP server
built from it as the SDK's lifespan context, so a tool reaches it through
its request (:func:`state_of`), never through a module global, and a test
can build as many as it likes.

What a client chose with ``use_notebook`` is not server state: it belongs to
the connection that chose it (:class:`ConnectionState`), or, on a stateless
request, to its agent handle or its identified caller
(``_calls/callers.remembered_by``), so two clients never share a "current
notebook".
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_mcp_server._calls.asking import UsedStates
from jupyter_mcp_server._calls.callers import (
    AGENT_META_KEY,
    caller_of,
    new_handle,
    remembered_connection,
    serving_as,
)
from jupyter_mcp_server._calls.connections import session_of
from jupyter_mcp_server._calls.detached import RunRegistry
from jupyter_mcp_server._calls.people import PersonFocus
from jupyter_mcp_server._calls.proposals import Proposals
from jupyter_mcp_server._calls.scratch import ScratchOutputs
from jupyter_mcp_server._calls.serving import Served, served, serving
from jupyter_mcp_server._policy.capabilities import CapabilityRegistry
from jupyter_mcp_server._policy.redaction import (
    REDACTION_CAPABILITY,
    STORED,
    Redactor,
)
from jupyter_mcp_server._workspace.history_dir import default_history_dir, inside

from ._config import ServerConfig
from ._hooks import Hooks
from ._kernels.backends import KernelBackend, LocalBackend
from ._kernels.environments import Environments
from ._kernels.execution import ExecutionRequest
from ._kernels.kernel import gone_message as kernel_gone_message
from ._kernels.manager import KernelManager
from ._kernels.runtime import ServerRuntime
from ._kernels.turns import run_in_turn
from ._store import NotebookStore
from ._store.contents import RemoteContents
from ._store.derived import DerivedValues
from ._store.histories import Histories
from ._store.recording import Recorder
from ._workspace import Workspace

if TYPE_CHECKING:
    from ._extensions import ExtensionManager
    from ._kernels.execution import ExecutionOutcome

logger = logging.getLogger(__name__)

#: How many connections' choices are remembered at once, at most: each is forgotten when its
#: connection ends (`ServerState.connection_ended`); this bounds those whose end cannot be heard.
MAX_CONNECTIONS = 1024

#: Runs `execute_code` somewhere else (a sandbox) or answers None to decline.
ExecutionInterceptor = Callable[[str, float], Awaitable[Any]]


@dataclass(frozen=True)
class WorkingCell:
    """The cell an agent is working on in one notebook: the last it edited or ran there."""

    cell_id: str
    #: ``edited`` or ``ran``.
    doing: str


@dataclass
class ConnectionState:
    """What one client connection has chosen (its named notebooks and its current one), and
    the cell it is working on in each notebook (``_tool_calls/working.py``)."""

    names: dict[str, str] = field(default_factory=dict)
    current: str | None = None
    #: By notebook path, oldest first.
    working: OrderedDict[str, WorkingCell] = field(default_factory=OrderedDict)


@dataclass(frozen=True)
class Hosted:
    """What the extensions and a hosting Jupyter Server hand a state beside its own parts."""

    #: Where an extension's kernels come from (a sandbox variant's), instead of a local one.
    kernel_source: Callable[[str], Any] | None = None
    #: Who may run ``execute_code`` somewhere else.
    interceptors: tuple[ExecutionInterceptor, ...] = ()
    #: Inside Jupyter Server: its contents (a ``_store.contents.ContentsFiles``) when
    #: notebooks are kept there.
    contents: Any = None
    #: What wraps the store: the live documents of JupyterLab's collaboration.
    wrap_store: Callable[[NotebookStore], Any] | None = None
    #: Who is in JupyterLab's rooms, and where; nobody elsewhere.
    people: Callable[[], list[PersonFocus]] = list


#: What the kept search texts may weigh (characters): a search reads at most as much.
SEARCH_TEXTS_WEIGHT = 256 * 1024 * 1024


@dataclass(frozen=True)
class Place:
    """Where notebooks are kept now: the one part of a state that changes while it serves.

    A client's roots choose another workspace, or ``connect_to_jupyter`` moves the notebooks
    to a Jupyter Server's contents: a new place replaces the old one whole
    (:meth:`ServerState.move_to`), never piece by piece."""

    workspace: Workspace
    #: The notebooks: under the workspace root, or in a Jupyter Server's contents.
    store: NotebookStore
    #: Who chose the workspace: ``cli`` (--workspace-root), ``cwd``, or ``client-roots``.
    source: str
    #: Notebooks kept in a Jupyter Server's contents, not under the workspace root.
    contents_elsewhere: bool = False
    #: The Jupyter Server kernels start on, when not local (its backend).
    jupyter: Any = None
    #: Each notebook's searchable texts, kept until the file changes (search_notebooks).
    search_texts: DerivedValues[Any] = field(
        default_factory=lambda: DerivedValues(SEARCH_TEXTS_WEIGHT)
    )


def recorder_for(histories: Histories, root: Path) -> Recorder:
    """What keeps the histories of the notebooks under `root`: never a directory given inside
    it (the platform's state directory may be: a workspace may be the home directory)."""
    history = histories.root
    if history is not None and history != default_history_dir() and inside(history, root):
        kept_out = Histories(
            None, off=f"the history directory {history} is inside the workspace {root}"
        )
        return Recorder(kept_out, f"workspace:{root}")
    return Recorder(histories, f"workspace:{root}")


def contents_store(workspace: Workspace, histories: Histories, files: Any) -> NotebookStore:
    """A store keeping notebooks in a Jupyter Server's contents (a ``ContentsFiles``)."""
    return NotebookStore(workspace, files, Recorder(histories, f"contents:{files.identity}"))


@dataclass(frozen=True, eq=False, repr=False)
class ServerState(Served):
    """Everything a tool needs, built once from the configuration (``_app.build_state``) and
    handed its parts. Nothing is assigned on a built state: what changes while it serves is
    one slot, its :class:`Place`, replaced whole by :meth:`move_to` alone."""

    config: ServerConfig
    capabilities: CapabilityRegistry
    hooks: Hooks
    extensions: ExtensionManager
    #: This server's private runtime directory (local kernels' connection files and
    #: sockets, kernelspecs made on the fly), removed when it stops.
    runtime: ServerRuntime
    environments: Environments
    #: The backend of this machine's kernels and environments (the environments tools
    #: use it whichever backend kernels start on).
    local_backend: LocalBackend
    #: Where notebooks are kept now: the one slot that changes, by :meth:`move_to` alone.
    place: Place
    #: Every notebook's history, in the server's state directory.
    histories: Histories
    kernels: KernelManager
    #: Masks secrets in what the server sends (the redaction capability says where).
    redactor: Redactor
    #: The input_required rounds already answered: none is answered twice.
    used_states: UsedStates
    #: Calls going on without their request: detached runs and tasks.
    runs: RunRegistry
    #: Recent outputs of execute_code, for what its results left out.
    scratch: ScratchOutputs
    #: Changes shown in the review app, until the person answers (``review_change``).
    reviews: Proposals
    #: Who may run ``execute_code`` somewhere else.
    interceptors: tuple[ExecutionInterceptor, ...] = ()
    #: The people beside the agent and where they are (inside JupyterLab: its rooms'
    #: awareness, `_jupyter/focus.py`); nobody elsewhere.
    people: Callable[[], list[PersonFocus]] = list
    #: Told `(key, what it had chosen or None)` when a connection ends (the HTTP router).
    connection_ends: list[Callable[[str, ConnectionState | None], None]] = field(
        default_factory=list, init=False
    )
    #: The kernels whose environment the redactor has read (by id).
    _env_read: set[str | None] = field(default_factory=set, init=False)
    #: By connection key, oldest first: each until its connection ends (`connection_ended`).
    _connections: OrderedDict[str, ConnectionState] = field(default_factory=OrderedDict, init=False)

    @property
    def workspace(self) -> Workspace:
        return self.place.workspace

    @property
    def store(self) -> NotebookStore:
        return self.place.store

    @property
    def search_texts(self) -> DerivedValues[Any]:
        return self.place.search_texts

    @property
    def workspace_source(self) -> str:
        """Who chose the workspace: ``cli`` (--workspace-root), ``cwd``, or ``client-roots``."""
        return self.place.source

    @property
    def contents_elsewhere(self) -> bool:
        """Notebooks kept in a Jupyter Server's contents, not under the workspace root."""
        return self.place.contents_elsewhere

    @property
    def jupyter(self) -> Any:
        """The Jupyter Server kernels start on, when not local (its backend)."""
        return self.place.jupyter

    def move_to(self, place: Place) -> None:
        """The one place the slot changes: `place` replaces where notebooks were kept, whole;
        subscriptions keep hearing about writes, and the kernels start in its workspace."""
        place.store.observers = self.place.store.observers
        self.kernels.workspace_root = place.workspace.root
        object.__setattr__(self, "place", place)

    def use_jupyter_server(self, backend: KernelBackend, *, contents: bool = False) -> None:
        """Start later kernels on a Jupyter Server (``--jupyter-url``, ``connect_to_jupyter``:
        a backend :meth:`~KernelBackend.reached_at` one); with `contents`, read and write
        notebooks through its contents API as well, and bind each notebook's kernel in its
        sessions (``/api/sessions``)."""
        server = backend.reached_at()
        if server is None:
            raise ValueError(f"{backend!r} is not reached at a Jupyter Server")
        if contents:
            backend.bind_sessions()
        self.kernels.use_backend(backend)
        place = self.place
        if contents:
            files = RemoteContents(server.url, server.token)
            self.move_to(
                replace(
                    place,
                    store=contents_store(place.workspace, self.histories, files),
                    contents_elsewhere=True,
                    jupyter=backend,
                    search_texts=DerivedValues(SEARCH_TEXTS_WEIGHT),  # kept for the other files
                )
            )
        else:
            self.move_to(replace(place, jupyter=backend))

    def use_workspace(self, root: Path, source: str) -> str | None:
        """Make `root` the workspace (a client's root); the reason when it cannot be now: kept
        notebooks in a Jupyter Server's contents, or kernels bound to the current one's notebooks."""
        if self.contents_elsewhere:
            return "notebooks are kept on a Jupyter Server"
        bound = self.kernels.bound_notebooks()
        if bound:
            return f"{len(bound)} notebook(s) of the current workspace have kernels ({', '.join(bound[:5])})"
        workspace = Workspace(root)
        store = NotebookStore(workspace, recorder=recorder_for(self.histories, workspace.root))
        self.move_to(
            replace(
                self.place,
                workspace=workspace,
                store=store,
                source=source,
                search_texts=DerivedValues(SEARCH_TEXTS_WEIGHT),
            )
        )
        return None

    def workspace_chosen_by(self, source: str) -> None:
        """The workspace stays, and `source` is who chose it (a client's root naming it)."""
        self.move_to(replace(self.place, source=source))

    def describe_workspace(self) -> dict[str, str]:
        """The workspace as ``capabilities://`` says it: its root and who chose it."""
        return {"root": str(self.workspace.root), "source": self.workspace_source}

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
        one of this server's kernels: marked lost, so the next call says so).

        With redaction on, the reply of a kernel's first execution, and of code that may change
        its environment, also says which secret-named variables the kernel has (a user
        expression, no extra round trip), and their values are masked from then on;
        with ``redaction=stored`` the outputs are masked before anything keeps them."""
        redaction = (
            self.capabilities.value(REDACTION_CAPABILITY)
            if self.capabilities.enabled(REDACTION_CAPABILITY)
            else None
        )
        # A user expression costs the kernel a few milliseconds: the environment is read on a
        # kernel's first execution, then after code that may change it.
        kernel_id = getattr(kernel, "kernel_id", None)
        read_env = bool(redaction) and (
            kernel_id not in self._env_read or bool(CHANGES_ENVIRONMENT.search(code))
        )
        if read_env:
            self._env_read.add(kernel_id)
        request = ExecutionRequest(
            code,
            timeout,
            max_output_bytes=self.config.max_output_bytes,
            max_output_blocks=self.config.max_output_blocks,
            notebook=notebook,
            user_expressions={SECRET_ENV_EXPRESSION: self.redactor.expression}
            if read_env
            else None,
            on_output=on_output,
            interrupt_on_cancel=interrupt_on_cancel,
        )
        outcome = await run_in_turn(
            kernel,
            request,
            hooks=self.hooks,
            on_death=on_death or (lambda: self.kernels.mark_lost(kernel)),
            gone_message=gone_message
            or (
                lambda: kernel_gone_message(
                    notebook or f"kernel {kernel.kernel_id}", getattr(kernel, "lost_because", None)
                )
            ),
            on_reply=lambda outcome: self._learned_secrets(outcome, stored=redaction == STORED),
        )
        return outcome

    def _learned_secrets(self, outcome: ExecutionOutcome, *, stored: bool) -> ExecutionOutcome:
        """The outcome without the server's own user expression, whose answer (the kernel's
        secret-named variables) the redactor learns; its outputs masked when `stored`."""
        expressions = outcome.user_expressions
        if expressions and SECRET_ENV_EXPRESSION in expressions:
            expressions = dict(expressions)
            answer = expressions.pop(SECRET_ENV_EXPRESSION)
            self.redactor.add_values(_secret_env_of(answer))
            outcome = replace(outcome, user_expressions=expressions or None)
        if stored:
            masked = self.redactor.value(outcome.outputs.outputs)
            if masked is not outcome.outputs.outputs:
                outcome = replace(outcome, outputs=replace(outcome.outputs, outputs=masked))
            # What an Output widget captured is saved in the widget state, not the cell.
            if outcome.widgets is not None:
                outcome = replace(outcome, widgets=self.redactor.value(outcome.widgets))
        return outcome

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

    def connection_ended(self, key: str) -> None:
        """The connection `key` is gone (an HTTP session deleted or expired): what it chose
        goes with it, and the observers hear of it."""
        state = self._connections.pop(key, None)
        for observer in list(self.connection_ends):
            try:
                observer(key, state)
            except Exception:  # one observer never keeps the others from hearing
                logger.exception("An observer of connection %s ending failed", key[:16])

    def connections_kept(self) -> int:
        """How many connections' choices are kept now."""
        return len(self._connections)


#: The user expression an execution's reply carries when redaction reads the kernel's environment.
SECRET_ENV_EXPRESSION = "__jupyter_mcp_secret_env__"
#: Code that may change a kernel's environment variables (after it, they are read again).
CHANGES_ENVIRONMENT = re.compile(
    r"environ|putenv|setenv|%env|%set_env|dotenv|load_env", re.IGNORECASE
)


def _secret_env_of(answer: Any) -> dict[str, str]:
    """{value: name} from the kernel's answer to the secret-variables expression."""
    import ast

    try:
        if answer.get("status") != "ok":
            return {}
        found = ast.literal_eval(answer["data"]["text/plain"])
        return {
            value: name
            for name, value in found.items()
            if isinstance(name, str) and isinstance(value, str)
        }
    except Exception:
        return {}


_serving_connection: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jupyter_mcp_serving_connection", default=None
)


class ServingState:
    """Middleware: the state serving a request, for the request's own code that is called
    without its context (an extension narrowing a tool calls it with only its arguments)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        session = session_of(ctx)
        connection = _serving_connection.set(remembered_connection(ctx))
        caller = caller_of(ctx)
        try:
            with serving(ctx.lifespan_context), serving_as(caller):
                result = await call_next(ctx)
        finally:
            _serving_connection.reset(connection)
        if session is None and getattr(ctx, "method", None) == "tools/call":
            # A stateless caller has no session: the handle that makes it one agent, to pass
            # back in its next requests' _meta (docs/authorization.md).
            _say_handle(result, caller.session or new_handle())
        return result


def _say_handle(result: Any, handle: str) -> None:
    """`handle` in a result's ``_meta`` (a ``CallToolResult`` or a task's wire dict)."""
    if isinstance(result, dict):
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), AGENT_META_KEY: handle}
    elif hasattr(result, "meta"):
        with contextlib.suppress(Exception):
            result.meta = {**(result.meta or {}), AGENT_META_KEY: handle}


def serving_connection() -> str | None:
    """The connection of the request being served, for code called without its context."""
    return _serving_connection.get()


def state_of(ctx: Any) -> ServerState:
    """The server state a request is served with (the SDK's lifespan context)."""
    state = served(ctx)
    assert isinstance(state, ServerState), "only a ServerState is served"
    return state
