"""What an extension of jupyter-mcp-server may use: its whole public face.

An extension is a distribution with an entry point in the
``reactor.mcp.extensions`` group whose object is a
:class:`JupyterMCPExtension`. It offers tools (:class:`ToolSpec`, grouped in
:class:`Toolset`\\ s), may extend other extensions' tools
(:class:`ToolExtension`), declares :class:`Capability`\\ s, and answers with
the same results and coded errors as the server's own tools. Before
``on_start`` the server gives it a :class:`ServerAccess`, the narrow interface
to the server it runs in: the configuration, the capabilities read-only,
observing calls and executions, running code on a kernel with the server's
output limits and hooks, and opening a kernel on a Jupyter Server. A
distribution may also publish a kernel backend (:class:`KernelBackend`,
entry-point group ``jupyter_mcp_server.kernel_backends``), chosen with
``--kernel-backend``.

Each name is written once, in the import or the definition that makes it;
``__all__`` is every name here without a leading underscore. Each comes from a
module that loads nothing of the running server (its state, store, kernel
manager, tools or transports), so importing this module to subclass, to name an
error code or to answer builds no part of a server; the functions that need the
server's own parts (:func:`tool_handler`, :func:`execution_result`,
:meth:`ServerAccess.run_code`, :meth:`ServerAccess.open_remote_kernel`) import
them when called. Nothing else of the package is promised. A name once handed
out and now superseded still works, with a ``DeprecationWarning`` naming what to
use instead (``docs/extensions.md``).
"""

import importlib as _importlib
import typing as _typing
import warnings as _warnings
from collections.abc import Awaitable as _Awaitable
from collections.abc import Callable as _Callable
from pathlib import Path as _Path

from jupyter_mcp_server._calls.approvals import (
    DEFAULT_ACTIONS as DEFAULT_ACTIONS,
    DELETE_CELLS as DELETE_CELLS,
    INSTALL_PACKAGES as INSTALL_PACKAGES,
    RELEASE_KERNEL as RELEASE_KERNEL,
    RESTART_KERNEL as RESTART_KERNEL,
    RESTORE_REVISION as RESTORE_REVISION,
    SHELL_CODE as SHELL_CODE,
    approve as approve,
)
from jupyter_mcp_server._calls.asking import (
    Answer as Answer,
    Elicitation as Elicitation,
    MissingClientCapability as MissingClientCapability,
    Question as Question,
    RootsRequest as RootsRequest,
    Sampling as Sampling,
    ask_the_client as ask,  # noqa: F401 (handed out: __all__ is every public name)
    client_can as client_can,
)
from jupyter_mcp_server._calls.detached import (
    request_input as request_input,
    task_support as task_support,
)
from jupyter_mcp_server._config import ServerConfig as ServerConfig
from jupyter_mcp_server._errors import (
    ALREADY_EXISTS as ALREADY_EXISTS,
    APPROVAL_REQUIRED as APPROVAL_REQUIRED,
    DECLINED as DECLINED,
    ERROR_CODES as ERROR_CODES,
    ERROR_META_KEY as ERROR_META_KEY,
    EXECUTION_ERROR as EXECUTION_ERROR,
    INTERRUPTED as INTERRUPTED,
    INVALID_ARGUMENT as INVALID_ARGUMENT,
    INVALID_PATH as INVALID_PATH,
    KERNEL_GONE as KERNEL_GONE,
    KERNEL_LIMIT as KERNEL_LIMIT,
    NO_NOTEBOOK as NO_NOTEBOOK,
    NOT_FOUND as NOT_FOUND,
    NOT_PERMITTED as NOT_PERMITTED,
    REVISION_CONFLICT as REVISION_CONFLICT,
    TIMEOUT as TIMEOUT,
    UNSUPPORTED as UNSUPPORTED,
    InputRequired as InputRequired,
    ToolFailure as ToolFailure,
)
from jupyter_mcp_server._extensions import (
    JupyterMCPExtension as JupyterMCPExtension,
    PluginCompatibility as PluginCompatibility,
    PluginManifest as PluginManifest,
    ToolExtension as ToolExtension,
    Toolset as Toolset,
    ToolSpec as ToolSpec,
    on_toolset as on_toolset,
    tool as tool,
)
from jupyter_mcp_server._hooks import (
    Execution as Execution,
    ExecutionEnded as ExecutionEnded,
    ToolCall as ToolCall,
    ToolCallEnded as ToolCallEnded,
)
from jupyter_mcp_server._jupyter_urls import ArgumentNames as _ArgumentNames
from jupyter_mcp_server._jupyter_urls import normalize_url as _normalize_url
from jupyter_mcp_server._kernels.backends import (
    BackendParts as BackendParts,
    KernelBackend as KernelBackend,
    StartedKernel as StartedKernel,
    backend_class as backend_class,
)
from jupyter_mcp_server._kernels.execution import ExecutionOutcome as ExecutionOutcome
from jupyter_mcp_server._policy.capabilities import Capability as Capability
from jupyter_mcp_server._policy.capabilities import CapabilitiesView as _CapabilitiesView
from jupyter_mcp_server._schemas.declared_inputs import input_schema as input_schema
from jupyter_mcp_server._schemas.answers import answer as answer
from jupyter_mcp_server._schemas.answers import failure as failure
from jupyter_mcp_server._schemas.models import ExecutionResult as ExecutionResult
from jupyter_mcp_server._schemas.models import Result as Result

if _typing.TYPE_CHECKING:
    from mcp.types import CallToolResult as _CallToolResult

    from jupyter_mcp_server._state import ServerState as _ServerState

_F = _typing.TypeVar("_F", bound=_Callable[..., _Awaitable["_CallToolResult"]])
_E = _typing.TypeVar("_E")
#: The four kinds of event an observer may hear, and the list of observers each goes to.
_OBSERVED = {
    ToolCall: "before_tool",
    ToolCallEnded: "after_tool",
    Execution: "before_execution",
    ExecutionEnded: "after_execution",
}


def tool_handler(name: str) -> _Callable[[_F], _F]:
    """``@tool_handler("name")``: a raised ``ToolFailure`` becomes ``failure(...)`` (a
    ``ValueError`` or ``TypeError``, ``invalid_argument``), and the tool-call hook pair fires
    around the call, as around the server's own tools."""
    # The server's tool machinery, imported when a tool is decorated: not by importing the API.
    from jupyter_mcp_server._tool_calls.results import tool_handler as handled

    return handled(name)


def execution_result(
    outcome: ExecutionOutcome,
    *,
    cell_id: str | None = None,
    revision: str | None = None,
    note: str | None = None,
    path: str | None = None,
    **more: _typing.Any,
) -> "_CallToolResult":
    """An :class:`ExecutionOutcome` as ``execute_code`` answers it (its output schema, the
    outputs within the inline budget); `note` is said beside it, `path` names the notebook."""
    return _run_engine().execution_result(
        outcome, cell_id=cell_id, revision=revision, note=note, path=path, **more
    )


def _run_engine() -> _typing.Any:
    """The server's run engine (how an execution is answered, who follows its outputs)."""
    # Imported when an extension first uses it: importing the API loads nothing of the server.
    from jupyter_mcp_server._runs import executions

    return executions


class ServerAccess:
    """The server an extension runs in, as far as an extension may reach into it: a narrow
    interface, handing out no live part of the server to change."""

    def __init__(self, state: "_ServerState") -> None:
        self._state = state

    @property
    def config(self) -> ServerConfig:
        """The server's configuration (frozen): limits, workspace root, transport."""
        return self._state.config

    @property
    def capabilities(self) -> _CapabilitiesView:
        """Every capability and whether it is on (``capabilities.enabled(name)``), read-only."""
        return _CapabilitiesView(self._state.capabilities)

    @property
    def workspace_root(self) -> _Path:
        return self._state.workspace.root

    def observe(self, event: type[_E], observer: _Callable[[_E], None]) -> None:
        """Call `observer` with every event of the type `event` (:class:`ToolCall`,
        :class:`ToolCallEnded`, :class:`Execution`, :class:`ExecutionEnded`), from now on.
        Observers are called synchronously in the order registered; one that raises is logged
        and skipped, never breaking the call it watches. Register in ``on_start``."""
        observers = _OBSERVED.get(event)
        if observers is None:
            raise TypeError(
                f"Nothing is observed as {getattr(event, '__name__', event)!r}: observe ToolCall, "
                "ToolCallEnded, Execution or ExecutionEnded."
            )
        getattr(self._state.hooks, observers).append(observer)

    @property
    def hooks(self) -> _typing.Any:
        """Deprecated: the server's live observer lists. Use :meth:`observe`."""
        _warnings.warn(
            "ServerAccess.hooks is deprecated: register an observer with "
            "self.server.observe(ToolCallEnded, observer) (or ToolCall, Execution, ExecutionEnded).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._state.hooks

    def extension(self, name: str) -> _typing.Any:
        """Another extension of this server by its manifest name (to use what it lends), or None."""
        return self._state.extensions.get(name)

    async def run_code(
        self,
        kernel: _typing.Any,
        code: str,
        *,
        timeout: float,
        on_death: _Callable[[], _Awaitable[None]],
        gone_message: _Callable[[], str],
        notebook: str | None = None,
    ) -> ExecutionOutcome:
        """Run `code` on `kernel` (an object with the server's kernel shape: ``kernel_id``,
        ``client`` (a ``jupyter_client`` kernel client), ``async is_alive()``,
        ``async interrupt()``, ``lock`` (an ``asyncio.Lock``) and ``interrupted`` (an
        ``asyncio.Event``); the server sets ``busy`` and ``last_used`` on it), in turn with everything else
        running there, under the server's output limits and hooks, its outputs streamed to
        whoever follows the call. A kernel that dies under it calls `on_death` and is
        reported as ``kernel_gone`` with `gone_message()`."""
        engine = _run_engine()
        return await self._state.run_in_turn(
            kernel,
            code,
            timeout,
            notebook,
            engine.output_listener(),
            interrupt_on_cancel=self._state.capabilities.enabled(engine.CANCEL_INTERRUPTS),
            on_death=on_death,
            gone_message=gone_message,
        )

    async def open_remote_kernel(
        self,
        server_url: str,
        token: str | None,
        kernel_name: str,
        *,
        timeout: float,
        url_argument: str = "server_url",
        token_argument: str = "token",
    ) -> _typing.Any:
        """A new kernel of `kernel_name` on the Jupyter Server at `server_url`, its websocket
        open and the kernel ready, as the server's own remote kernels are reached (the token
        only in a header, a dropped websocket reconnected). It answers an object with
        ``kernel_id``, ``server_url``, ``channels`` (a kernel client ``run_code`` drives:
        ``closed``, ``ended_because``, ``stop_channels()``), ``async is_alive()``,
        ``async interrupt_kernel()``, ``async shutdown()`` and ``shutdown_now()``.

        Every failure is a ``ToolFailure`` naming your caller's arguments (`url_argument`,
        `token_argument`), never the token; nothing is left on the server when it fails."""
        names = _ArgumentNames(url=url_argument, token=token_argument)
        url = _normalize_url(server_url, names)
        # httpx and the websocket client, imported when a remote kernel is first opened.
        from jupyter_mcp_server._kernels.remote import open_remote_kernel

        kernel, _channels = await open_remote_kernel(url, token, kernel_name, timeout, names)
        return kernel


#: Names the API once handed out, where they are, and what to use instead: each still works,
#: with a DeprecationWarning, for at least one release.
_SUPERSEDED = {
    "Hooks": (
        "jupyter_mcp_server._hooks",
        "self.server.observe(ToolCallEnded, observer) (or ToolCall, Execution, ExecutionEnded)",
    ),
    "open_remote_kernel": (
        "jupyter_mcp_server._kernels.remote",
        "await self.server.open_remote_kernel(server_url, token, kernel_name, timeout=...)",
    ),
    "RemoteKernel": (
        "jupyter_mcp_server._kernels.remote",
        "the kernel self.server.open_remote_kernel(...) answers",
    ),
    "KernelWebSocket": (
        "jupyter_mcp_server._kernels.remote",
        "the .channels of the kernel self.server.open_remote_kernel(...) answers",
    ),
    "normalize_url": (
        "jupyter_mcp_server._jupyter_urls",
        "self.server.open_remote_kernel(...), which checks the URL",
    ),
    "ArgumentNames": (
        "jupyter_mcp_server._jupyter_urls",
        "the url_argument and token_argument of self.server.open_remote_kernel(...)",
    ),
}


def __getattr__(name: str) -> _typing.Any:
    superseded = _SUPERSEDED.get(name)
    if superseded is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, instead = superseded
    _warnings.warn(
        f"jupyter_mcp_server.api.{name} is deprecated and will be removed: use {instead}.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_importlib.import_module(module), name)


__all__ = sorted(name for name in globals() if not name.startswith("_"))
