"""The composition root: the running server assembled, in one place, from its parts.

Everything the server is gets built here and nowhere else:

- :func:`build_state` turns a frozen :class:`~.config.ServerConfig` into a
  :class:`~.state.ServerState`: the hooks, the extensions
  (:func:`~.extensions.load_extensions`, the core tools first), the
  capabilities in their layers (declared defaults, the environment, the
  command line, then each extension's own), and every part of the state
  (the first :class:`~._state.Place`, the kernels, the histories, the
  redactor, the runs...), handed in, with the extensions' two Jupyter hooks
  connected to them;
- :class:`Application` builds that state, its :meth:`~Application.new_server`
  the extension host's server factory from the start, and holds it with what the protocol features
  keep between requests (subscriptions, the client log), builds one
  MCP server per toolset selection, made with its protocol features listed in
  one ordered tuple (:meth:`Application.new_server`), and owns the one lifecycle every way of
  serving shares (:meth:`Application.running`): background work started,
  and on the way out every kernel and every extension stopped.

The command line and the Jupyter Server extension both call
:func:`build_application`; the transports are handed the application. No
module keeps a server, a configuration or a registry of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp.server.extension import Extension
from mcp.server.mcpserver import MCPServer

from jupyter_mcp_server._calls.asking import AnswersInputRequired
from jupyter_mcp_server._calls.callers import serving_record
from jupyter_mcp_server._policy.capabilities import (
    CapabilityRegistry,
    UnknownCapability,
    parse_assignment,
    parse_list,
)
from jupyter_mcp_server._protocol import (
    apps,
    client_logging,
    declared_schemas,
    profile_guard,
    prompts,
    resources,
    subscriptions,
    tasks,
    tool_listing,
)
from jupyter_mcp_server._protocol.argument_errors import ArgumentErrors
from jupyter_mcp_server._protocol.client_logging import ClientLogHandler
from jupyter_mcp_server._protocol.client_roots import FollowClientRoots
from jupyter_mcp_server._protocol.declared_schemas import DeclaredSchemas
from jupyter_mcp_server._protocol.features import Feature, FeaturedServer
from jupyter_mcp_server._protocol.masking import ResultMasking, masker, redaction_on
from jupyter_mcp_server._protocol.progress import ProgressReporting
from jupyter_mcp_server._protocol.resources import MalformedReadsCoded, described_capabilities
from jupyter_mcp_server._protocol.result_parts import ResultParts
from jupyter_mcp_server._protocol.subscriptions import NotebookEvents
from jupyter_mcp_server._protocol.tasks import TaskSupport

from ._calls.asking import UsedStates
from ._calls.detached import RunRegistry
from ._calls.proposals import Proposals
from ._calls.scratch import ScratchOutputs
from ._config import ConfigError, ServerConfig
from ._core_tools import STRUCTURED_SAYS_ALL, CoreToolsExtension
from ._errors import ToolFailure
from ._extensions import (
    ExtensionManager,
    JupyterMCPExtension,
    Selection,
    load_extensions,
    parse_selection,
)
from ._hooks import AuditLog, Hooks
from ._kernels.backends import BackendParts, LocalBackend, backend_class
from ._kernels.connection_files import remove_orphaned_connection_files
from ._kernels.environments import Environments, Sources
from ._kernels.interpreters import NotAnInterpreter, probe_interpreter
from ._kernels.manager import KernelManager
from ._kernels.runtime import ServerRuntime, remove_orphaned_runtime_dirs
from ._policy.redaction import DEFAULT_SECRET_NAMES, Redactor
from ._process.heap import return_free_memory
from ._protocol.handlers import ConnectionEnds
from ._state import Hosted, Place, ServerState, ServingState, contents_store, recorder_for
from ._store import NotebookStore, warm_up
from ._store.histories import Histories
from ._store.history import Limits
from ._version import __version__
from ._workspace import Workspace
from .api import ServerAccess

logger = logging.getLogger(__name__)

SERVER_NAME = "jupyter-mcp-server"
INSTRUCTIONS = (
    "Read, edit and run Jupyter notebooks in the workspace. Start with list_files to find "
    "notebooks and use_notebook to open or create one; then read_notebook, the cell tools and "
    "execute_cell / insert_execute_code_cell. Pass expected_revision (from get_notebook_revision "
    "or any result's revision) so an edit never overwrites a newer file."
)


class CapabilitiesAdvertisement(Extension):
    """``io.jupyter-mcp/capabilities`` in ``server/discover``: what ``capabilities://`` says."""

    identifier = "io.jupyter-mcp/capabilities"

    def __init__(self, state: ServerState) -> None:
        self.state = state

    def settings(self) -> dict[str, Any]:
        return described_capabilities(self.state)


def build_state(
    config: ServerConfig,
    serverapp: Any = None,
    *,
    contents: Any = None,
    wrap_store: Callable[[Any], Any] | None = None,
    people: Callable[[], list[Any]] | None = None,
    server_factory: Callable[[str, str | None], Any] | None = None,
) -> ServerState:
    """The server's state from its configuration, every part built here and handed in;
    ``ConfigError`` for a capability nobody declared or a kernel backend that cannot be used
    (nothing has started yet). Inside Jupyter Server: its ``ServerApp``, its `contents` (a
    ``_store.contents.ContentsFiles``) when notebooks are kept there, `wrap_store` (the live
    documents of JupyterLab's collaboration), and `people` (who is in JupyterLab's rooms, and
    where). `server_factory` makes each server the extension host builds (the
    :class:`Application`'s, with every protocol feature; a bare one otherwise)."""
    hooks = Hooks()
    extensions = ExtensionManager(
        hooks, server_factory, name=SERVER_NAME, instructions=INSTRUCTIONS
    )
    extensions.add_all(load_extensions(config.extensions, CoreToolsExtension()))
    capabilities = CapabilityRegistry()
    declared_by_extensions = extensions.collect_capabilities(capabilities)
    try:
        capabilities.apply(parse_list(config.capability_env), "env", "JUPYTER_MCP_CAPABILITIES")
        capabilities.apply(
            [parse_assignment(a) for a in config.capability_args], "cli", "--capability"
        )
    except (UnknownCapability, ValueError) as error:
        raise ConfigError(str(error)) from None
    for capability in declared_by_extensions:
        capabilities.declare(capability)
    runtime = ServerRuntime()
    environments = Environments(
        Sources(
            workspace_root=config.workspace_root,
            python=config.python,
            kernel=config.kernel,
            virtual_env=config.launcher_virtual_env,
            conda_prefix=config.launcher_conda_prefix,
            ipython_dir=config.ipython_dir,
        ),
        kernels_dir=lambda: runtime.kernels_dir,
    )
    parts = BackendParts(config, environments, runtime, capabilities.enabled, serverapp)
    local_backend = LocalBackend.build(parts)
    backend_name = kernel_backend_name(config)
    try:
        # This machine's, already built, unless another is named (finding one by name reads
        # every installed distribution's entry points: not done for the default).
        backend = (
            local_backend
            if backend_name == LocalBackend.name
            else backend_class(backend_name).build(parts)
        )
    except ToolFailure as error:
        raise ConfigError(error.message) from None
    hosted = Hosted(
        # The extensions' two Jupyter hooks: a kernel of a sandbox variant instead of a
        # local one, and `execute_code` somewhere else.
        kernel_source=lambda kernel_name: extensions.create_code_sandbox(
            config, logging.getLogger("jupyter_mcp_server.sandbox")
        ),
        interceptors=(extensions.intercept_execute_code,),
        contents=contents,
        wrap_store=wrap_store,
        people=people or list,
    )
    histories = Histories(
        config.history_dir,
        Limits(max_entries=config.history_max_entries, max_bytes=config.history_max_bytes),
        off=None if config.history_dir is not None else "--history-dir is off",
    )
    place = first_place(config, histories, hosted)
    kernels = KernelManager(
        workspace_root=place.workspace.root,
        max_kernels=config.max_kernels,
        idle_timeout=config.idle_timeout,
        unresponsive_grace=config.unresponsive_grace,
        capability=capabilities.enabled,
        kernel_source=hosted.kernel_source,
        backend=backend,
    )
    state = ServerState(
        config=config,
        capabilities=capabilities,
        hooks=hooks,
        extensions=extensions,
        runtime=runtime,
        environments=environments,
        local_backend=local_backend,
        place=place,
        histories=histories,
        kernels=kernels,
        redactor=Redactor((*DEFAULT_SECRET_NAMES, *config.secret_names), dict(config.secret_env)),
        used_states=UsedStates(),
        runs=RunRegistry(kernels, hooks, ttl_seconds=config.task_ttl_seconds),
        scratch=ScratchOutputs(),
        reviews=Proposals(),
        interceptors=hosted.interceptors,
        people=hosted.people,
    )
    jupyter_server = backend.reached_at()
    if jupyter_server is not None:
        # Its notebooks too with --jupyter-contents, each notebook's kernel bound in its sessions.
        state.use_jupyter_server(backend, contents=config.jupyter_contents)
        logger.info(
            "Kernels start on the Jupyter Server at %s (version %s)",
            jupyter_server.url,
            backend.describe().get("version"),
        )
    check_environment_settings(state)
    if config.audit_log is not None:

        def masked(record: dict[str, Any]) -> dict[str, Any]:
            return state.redactor.value(record) if redaction_on(state) else record

        AuditLog(config.audit_log, mask=masked, caller=serving_record).install(hooks)
    attach_extensions(state)
    return state


def first_place(config: ServerConfig, histories: Histories, hosted: Hosted) -> Place:
    """Where notebooks are kept when the server starts: under the workspace root, or in a
    hosting Jupyter Server's contents; wrapped by its live documents when it has them."""
    workspace = Workspace(config.workspace_root)
    contents = hosted.contents
    store = (
        NotebookStore(workspace, recorder=recorder_for(histories, workspace.root))
        if contents is None
        else contents_store(workspace, histories, contents)
    )
    return Place(
        workspace=workspace,
        store=hosted.wrap_store(store) if hosted.wrap_store is not None else store,
        source="cli" if config.workspace_root_given else "cwd",
        contents_elsewhere=contents is not None,
    )


class Application:
    """A server state, the protocol features' own state, and the servers built from them."""

    def __init__(
        self,
        config: ServerConfig,
        serverapp: Any = None,
        *,
        contents: Any = None,
        wrap_store: Callable[[Any], Any] | None = None,
        people: Callable[[], list[Any]] | None = None,
    ) -> None:
        """The state built (:func:`build_state`) with this application's :meth:`new_server`
        as the extension host's server factory, and the protocol features' own state."""
        self.state = state = build_state(
            config,
            serverapp,
            contents=contents,
            wrap_store=wrap_store,
            people=people,
            server_factory=self.new_server,
        )
        self.events = NotebookEvents(state, debounce_ms=config.watch_debounce_ms)
        self.task_support = TaskSupport(state)
        self.declared_schemas = DeclaredSchemas(state)
        self.client_log = ClientLogHandler()
        self.client_roots = FollowClientRoots(state)
        self.client_log.install(state.hooks)
        #: The pending warm-up of the notebook format (see `running`), until it has started.
        self._warming_up: asyncio.TimerHandle | None = None

    def handshake_done(self) -> None:
        """The client has completed the MCP handshake: the first kernel is prestarted, and
        the notebook format warmed up now rather than later. A client lists its tools and
        then often reads a notebook at once; the imports and the validator the read needs
        are then on their way while the client is still busy with the tool list."""
        self.state.kernels.handshake_done()
        if self._warming_up is not None:
            self._warming_up.cancel()
            self._warm_up_now(asyncio.get_running_loop())

    def _warm_up_now(self, loop: asyncio.AbstractEventLoop) -> None:
        self._warming_up = None
        loop.run_in_executor(None, _warm_up)

    @property
    def config(self) -> ServerConfig:
        return self.state.config

    def new_server(
        self, name: str = SERVER_NAME, instructions: str | None = INSTRUCTIONS
    ) -> MCPServer:
        """An MCP server on this state with every protocol feature and no tools yet (the
        extension host puts a selection's tools on it)."""
        state = self.state

        @contextlib.asynccontextmanager
        async def serving_this_state(_: Any) -> AsyncIterator[ServerState]:
            yield state

        # One tuple, outermost first. Each kind nests in its own layer (middleware outside the
        # low-level wraps, those outside the SDK extensions' tools/call interceptors, those
        # outside the tool), and within a layer the order here is the order a request meets them.
        features = (
            # Middleware. The serving state and the connection first: every feature below
            # reads them. Masking outside what builds a result's parts, so that what those
            # copy into the structured part is masked too; the client roots and each
            # request's log level innermost, next to the handler.
            Feature("serving state", middleware=(ServingState(),)),
            Feature("connection ends", middleware=(ConnectionEnds(state.connection_ended),)),
            Feature("result masking", middleware=(ResultMasking(state),)),
            Feature(
                "result parts",
                middleware=(ResultParts(STRUCTURED_SAYS_ALL),),
            ),
            Feature("malformed reads coded", middleware=(MalformedReadsCoded(),)),
            Feature("input required", middleware=(AnswersInputRequired(),)),
            Feature("client roots", middleware=(self.client_roots,)),
            client_logging.feature(self.client_log),
            # Low-level wraps. The profile outermost: a tool the caller may not use is
            # neither listed nor called, whatever the others add. A declared schema is
            # listed as written, so it wraps the compact listing, not the other way round.
            profile_guard.feature(state),
            resources.feature(state),
            prompts.feature(state),
            subscriptions.feature(self.events),
            # Extensions (and their listings). The capabilities say nothing of a call. Arguments
            # that break a declared schema never become a task; a task's call runs without
            # progress; argument errors are coded before anyone else sees the result.
            Feature("capabilities advertisement", extension=CapabilitiesAdvertisement(state)),
            declared_schemas.feature(self.declared_schemas),
            tasks.feature(state, self.config.task_grace_seconds, self.task_support),
            Feature(
                "progress",
                extension=ProgressReporting(self.config.heartbeat_seconds, mask=masker(state)),
            ),
            Feature("argument errors", extension_on=ArgumentErrors),
            tool_listing.feature(),
            # Innermost: the apps see the tool's own result, and what its executions showed.
            apps.feature(),
        )
        server: MCPServer = FeaturedServer(
            name=name,
            version=__version__,
            instructions=instructions or INSTRUCTIONS,
            features=features,
            warn_on_duplicate_tools=False,
            log_level="WARNING",
            lifespan=serving_this_state,
        )
        return server

    def build(self, selection: Selection | None = None) -> Any:
        """The server (and its toolsets) a selection asks for, built once and kept."""
        return self.state.extensions.build(selection or Selection())

    def build_configured(self) -> Any:
        """The server a stdio client gets: the toolsets ``--toolsets`` chose (the defaults
        unless it says otherwise), since such a client has no URL to choose them with."""
        built = self.build(parse_selection(self.config.toolsets))
        if built.unknown:
            logger.warning(
                "--toolsets names unknown toolsets: %s", ", ".join(sorted(built.unknown))
            )
        return built

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serving: background work started, and whatever ends it, kernels and extensions stopped."""
        state = self.state
        # A crash's leftovers (temporary files, kernel connection files) are
        # clutter, never read: the walk of what may be a home directory happens
        # beside serving, not before the handshake, in a daemon thread that never
        # holds up the exit.
        threading.Thread(target=_sweep, args=(state,), name="sweep", daemon=True).start()
        state.kernels.start_background()
        state.extensions.start()
        # Off the handshake: the imports the first notebook call would otherwise
        # pay happen while the client settles in (from the handshake's end where the
        # transport says when that is, see `handshake_done`; else a moment after start).
        loop = asyncio.get_running_loop()
        self._warming_up = loop.call_later(WARM_UP_AFTER, self._warm_up_now, loop)
        try:
            yield
        finally:
            # Shielded: a cancelled server must still stop what it started.
            await asyncio.shield(state.kernels.shutdown_all())
            state.local_backend.close()
            if state.kernels.backend is not state.local_backend:
                state.kernels.backend.close()
            state.runtime.remove()
            state.extensions.stop()
            try:
                await asyncio.shield(self.events.close())
            finally:
                self.client_log.uninstall()


#: Seconds after serving starts when the notebook format is warmed up, where the transport
#: does not say when the client has completed the handshake.
WARM_UP_AFTER = 0.3


def check_environment_settings(state: ServerState) -> None:
    """``--python`` must run as a Python interpreter and ``--kernel`` name a kernelspec or an
    environment; ``ConfigError`` (before anything serves) naming what is wrong."""
    config = state.config
    if config.python:
        try:
            facts = probe_interpreter(config.python)
        except NotAnInterpreter as error:
            raise ConfigError(f"--python {config.python}: {error}.") from None
        if not facts.has_ipykernel:
            logger.warning(
                "--python %s has no ipykernel: notebooks cannot run on it until it is installed",
                config.python,
            )
    if config.kernel and not config.jupyter_url:
        known = state.kernels.kernelspecs()
        if config.kernel not in known:
            raise ConfigError(
                f"--kernel {config.kernel!r} is neither an installed kernelspec nor an environment found here. "
                f"Known: {', '.join(known) or 'none'}."
            )


def kernel_backend_name(config: ServerConfig) -> str:
    """The one place the kernel backend is chosen: ``--kernel-backend``, else the Jupyter
    Server of ``--jupyter-url``, else this machine (the Jupyter Server extension sets
    ``jupyter-server-extension``)."""
    return config.kernel_backend or ("jupyter-server" if config.jupyter_url else LocalBackend.name)


def build_application(
    config: ServerConfig,
    serverapp: Any = None,
    *,
    contents: Any = None,
    wrap_store: Callable[[Any], Any] | None = None,
    people: Callable[[], list[Any]] | None = None,
) -> Application:
    """The whole server from its configuration: what the CLI and Jupyter Server (with its
    parts, see :func:`build_state`) both run."""
    return Application(config, serverapp, contents=contents, wrap_store=wrap_store, people=people)


def _sweep(state: ServerState) -> None:
    for what, sweep in (
        ("temporary files", state.workspace.remove_stale_temp_files),
        ("kernel connection files", remove_orphaned_connection_files),
        ("runtime directories", remove_orphaned_runtime_dirs),
    ):
        try:
            removed = sweep()
        except Exception:
            logger.warning("Looking for %s left by a crash failed", what, exc_info=True)
            continue
        if removed:
            logger.info("Removed %d %s left by an earlier crash", removed, what)


def _warm_up() -> None:
    try:
        warm_up()
    except Exception:
        logger.debug("Warming up the notebook format failed", exc_info=True)
    # Compiling the schema's validator peaks at 10 MiB, mostly freed when it is done.
    return_free_memory()


def attach_extensions(state: ServerState) -> None:
    """Give every extension of this server its :class:`ServerAccess`, before any starts; one
    whose ``attach`` raises costs only itself, like any other hook."""
    access = ServerAccess(state)
    for name, extension in state.extensions.host.registered.items():
        if not isinstance(extension, JupyterMCPExtension):
            continue
        try:
            extension.attach(access)
        except Exception:
            logger.exception(
                "Extension '%s' failed in attach; it runs without the server's access", name
            )
