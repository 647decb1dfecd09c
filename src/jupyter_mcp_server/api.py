"""What an extension of jupyter-mcp-server may use: its whole public face.

An extension is a distribution with an entry point in the
``reactor.mcp.extensions`` group whose object is a
:class:`JupyterMCPExtension`. It offers tools (:class:`ToolSpec`, grouped in
:class:`Toolset`\\ s), may extend other extensions' tools
(:class:`ToolExtension`), declares :class:`Capability`\\ s, and answers with
the same results and coded errors as the server's own tools. Before
``on_start`` the server gives it a :class:`ServerAccess`: the configuration,
the capabilities, the hooks, and running code on a kernel with the server's
output limits and hooks. A distribution may also publish a kernel backend
(:class:`KernelBackend`, entry-point group ``jupyter_mcp_server.kernel_backends``),
chosen with ``--kernel-backend``.

Everything an extension needs is exported here, and nothing else of the
package is promised: other modules may change in any release.
(``docs/extensions.md`` documents this module.)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_mcp_server.calls.approvals import (
    DEFAULT_ACTIONS,
    DELETE_CELLS,
    INSTALL_PACKAGES,
    RELEASE_KERNEL,
    RESTART_KERNEL,
    RESTORE_REVISION,
    SHELL_CODE,
    approve,
)
from jupyter_mcp_server.calls.asking import (
    Answer,
    Elicitation,
    InputRequired,
    MissingClientCapability,
    Question,
    RootsRequest,
    Sampling,
    client_can,
)
from jupyter_mcp_server.calls.asking import ask as ask_with
from jupyter_mcp_server.calls.detached import request_input, task_support
from jupyter_mcp_server.policy.capabilities import Capability, CapabilityRegistry
from jupyter_mcp_server.tools.helpers.listening import output_listener
from jupyter_mcp_server.tools.helpers.models import ExecutionResult, Result
from jupyter_mcp_server.tools.helpers.results import answer, failure, tool_handler

from .config import ServerConfig
from .errors import (
    ALREADY_EXISTS,
    APPROVAL_REQUIRED,
    DECLINED,
    ERROR_CODES,
    ERROR_META_KEY,
    EXECUTION_ERROR,
    INTERRUPTED,
    INVALID_ARGUMENT,
    INVALID_PATH,
    KERNEL_GONE,
    KERNEL_LIMIT,
    NO_NOTEBOOK,
    NOT_FOUND,
    NOT_PERMITTED,
    REVISION_CONFLICT,
    TIMEOUT,
    UNSUPPORTED,
    ToolFailure,
)
from .extensions import (
    JupyterMCPExtension,
    PluginCompatibility,
    PluginManifest,
    ToolExtension,
    Toolset,
    ToolSpec,
    on_toolset,
    tool,
)
from .hooks import Execution, ExecutionEnded, Hooks, ToolCall, ToolCallEnded
from .jupyter_urls import ArgumentNames, normalize_url
from .kernels.backends import BackendParts, KernelBackend, StartedKernel, backend_class
from .kernels.execution import ExecutionOutcome
from .state import state_of as _state_of
from .tools.running import CANCEL_INTERRUPTS, execution_result

if TYPE_CHECKING:
    from .kernels.remote import KernelWebSocket, RemoteKernel, open_remote_kernel
    from .state import ServerState

#: Kernels on a Jupyter Server, imported when first asked for: their HTTP and
#: websocket clients cost a tenth of a second at start-up.
_REMOTE_KERNELS = frozenset({"KernelWebSocket", "RemoteKernel", "open_remote_kernel"})


def __getattr__(name: str) -> Any:
    if name in _REMOTE_KERNELS:
        from .kernels import remote  # lazy: httpx and tornado only for remote kernels

        return getattr(remote, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


logger = logging.getLogger(__name__)

__all__ = [
    "ALREADY_EXISTS",
    "APPROVAL_REQUIRED",
    "DECLINED",
    "DEFAULT_ACTIONS",
    "DELETE_CELLS",
    "ERROR_CODES",
    "ERROR_META_KEY",
    "EXECUTION_ERROR",
    "INSTALL_PACKAGES",
    "INTERRUPTED",
    "INVALID_ARGUMENT",
    "INVALID_PATH",
    "KERNEL_GONE",
    "KERNEL_LIMIT",
    "NOT_FOUND",
    "NOT_PERMITTED",
    "NO_NOTEBOOK",
    "RELEASE_KERNEL",
    "RESTART_KERNEL",
    "RESTORE_REVISION",
    "REVISION_CONFLICT",
    "SHELL_CODE",
    "TIMEOUT",
    "UNSUPPORTED",
    "Answer",
    "ArgumentNames",
    "BackendParts",
    "Capability",
    "Elicitation",
    "Execution",
    "ExecutionEnded",
    "ExecutionOutcome",
    "ExecutionResult",
    "Hooks",
    "InputRequired",
    "JupyterMCPExtension",
    "KernelBackend",
    "KernelWebSocket",
    "MissingClientCapability",
    "PluginCompatibility",
    "PluginManifest",
    "Question",
    "RemoteKernel",
    "Result",
    "RootsRequest",
    "Sampling",
    "ServerAccess",
    "ServerConfig",
    "StartedKernel",
    "ToolCall",
    "ToolCallEnded",
    "ToolExtension",
    "ToolFailure",
    "ToolSpec",
    "Toolset",
    "answer",
    "approve",
    "ask",
    "backend_class",
    "client_can",
    "execution_result",
    "failure",
    "normalize_url",
    "on_toolset",
    "open_remote_kernel",
    "request_input",
    "task_support",
    "tool",
    "tool_handler",
]


async def ask(
    ctx: Any, questions: dict[str, Question], *, timeout: float | None = None
) -> dict[str, Answer]:
    """Ask the client of this request (elicitation, sampling, roots) in the middle of a tool
    call, the same way on both protocol generations (``docs/approvals.md``): every question
    answered by key. On 2026-07-28 a round still waiting for answers raises
    :class:`InputRequired`, which the server answers for you; let it pass."""
    return await ask_with(ctx, questions, used=_state_of(ctx).used_states, timeout=timeout)


class ServerAccess:
    """The server an extension runs in, as far as an extension may reach into it."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    @property
    def config(self) -> ServerConfig:
        """The server's configuration (frozen): limits, workspace root, transport."""
        return self._state.config

    @property
    def capabilities(self) -> CapabilityRegistry:
        """Every capability and whether it is on (``capabilities.enabled(name)``)."""
        return self._state.capabilities

    @property
    def hooks(self) -> Hooks:
        """Observers of tool calls and executions: append to register one (in ``on_start``)."""
        return self._state.hooks

    @property
    def workspace_root(self) -> Path:
        return self._state.workspace.root

    def extension(self, name: str) -> Any:
        """Another extension of this server by its manifest name (to use what it lends), or None."""
        return self._state.extensions.get(name)

    async def run_code(
        self,
        kernel: Any,
        code: str,
        *,
        timeout: float,
        on_death: Callable[[], Awaitable[None]],
        gone_message: Callable[[], str],
        notebook: str | None = None,
    ) -> ExecutionOutcome:
        """Run `code` on `kernel` (an object with the server's kernel shape: ``kernel_id``,
        ``client`` (a ``jupyter_client`` kernel client), ``async is_alive()``,
        ``async interrupt()``, ``lock`` (an ``asyncio.Lock``) and ``interrupted`` (an
        ``asyncio.Event``); the server sets ``busy`` and ``last_used`` on it), in turn with everything else
        running there, under the server's output limits and hooks, its outputs streamed to
        whoever follows the call. A kernel that dies under it calls `on_death` and is
        reported as ``kernel_gone`` with `gone_message()`."""
        return await self._state.run_in_turn(
            kernel,
            code,
            timeout,
            notebook,
            output_listener(),
            interrupt_on_cancel=self._state.capabilities.enabled(CANCEL_INTERRUPTS),
            on_death=on_death,
            gone_message=gone_message,
        )


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
