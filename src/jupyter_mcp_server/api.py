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

import importlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_mcp_server._policy.capabilities import CapabilitiesView  # light: no server

if TYPE_CHECKING:
    from jupyter_mcp_server._calls.approvals import (
        DEFAULT_ACTIONS,
        DELETE_CELLS,
        INSTALL_PACKAGES,
        RELEASE_KERNEL,
        RESTART_KERNEL,
        RESTORE_REVISION,
        SHELL_CODE,
        approve,
    )
    from jupyter_mcp_server._calls.asking import (
        Answer,
        Elicitation,
        InputRequired,
        MissingClientCapability,
        Question,
        RootsRequest,
        Sampling,
        client_can,
    )
    from jupyter_mcp_server._calls.detached import request_input, task_support
    from jupyter_mcp_server._config import ServerConfig
    from jupyter_mcp_server._errors import (
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
    from jupyter_mcp_server._extensions import (
        JupyterMCPExtension,
        PluginCompatibility,
        PluginManifest,
        ToolExtension,
        Toolset,
        ToolSpec,
        on_toolset,
        tool,
    )
    from jupyter_mcp_server._hooks import Execution, ExecutionEnded, Hooks, ToolCall, ToolCallEnded
    from jupyter_mcp_server._jupyter_urls import ArgumentNames, normalize_url
    from jupyter_mcp_server._kernels.backends import (
        BackendParts,
        KernelBackend,
        StartedKernel,
        backend_class,
    )
    from jupyter_mcp_server._kernels.execution import ExecutionOutcome
    from jupyter_mcp_server._kernels.remote import KernelWebSocket, RemoteKernel, open_remote_kernel
    from jupyter_mcp_server._policy.capabilities import Capability
    from jupyter_mcp_server._protocol.declared_schemas import input_schema
    from jupyter_mcp_server._runs.executions import execution_result
    from jupyter_mcp_server._schemas.models import ExecutionResult, Result
    from jupyter_mcp_server._state import ServerState, ask
    from jupyter_mcp_server._tool_calls.results import answer, failure, tool_handler

#: Where each exported name is defined. Each is imported when first used, so that importing
#: this module (to subclass JupyterMCPExtension, or to name an error code) imports only what
#: that name needs, never the server, its store, its kernels or its tools.
_DEFINED_IN: dict[str, str] = {
    "ALREADY_EXISTS": "jupyter_mcp_server._errors",
    "Answer": "jupyter_mcp_server._calls.asking",
    "answer": "jupyter_mcp_server._tool_calls.results",
    "APPROVAL_REQUIRED": "jupyter_mcp_server._errors",
    "approve": "jupyter_mcp_server._calls.approvals",
    "ask": "jupyter_mcp_server._state",
    "ArgumentNames": "jupyter_mcp_server._jupyter_urls",
    "backend_class": "jupyter_mcp_server._kernels.backends",
    "BackendParts": "jupyter_mcp_server._kernels.backends",
    "Capability": "jupyter_mcp_server._policy.capabilities",
    "client_can": "jupyter_mcp_server._calls.asking",
    "DECLINED": "jupyter_mcp_server._errors",
    "DEFAULT_ACTIONS": "jupyter_mcp_server._calls.approvals",
    "DELETE_CELLS": "jupyter_mcp_server._calls.approvals",
    "Elicitation": "jupyter_mcp_server._calls.asking",
    "ERROR_CODES": "jupyter_mcp_server._errors",
    "ERROR_META_KEY": "jupyter_mcp_server._errors",
    "Execution": "jupyter_mcp_server._hooks",
    "EXECUTION_ERROR": "jupyter_mcp_server._errors",
    "execution_result": "jupyter_mcp_server._runs.executions",
    "ExecutionEnded": "jupyter_mcp_server._hooks",
    "ExecutionOutcome": "jupyter_mcp_server._kernels.execution",
    "ExecutionResult": "jupyter_mcp_server._schemas.models",
    "failure": "jupyter_mcp_server._tool_calls.results",
    "Hooks": "jupyter_mcp_server._hooks",
    "InputRequired": "jupyter_mcp_server._calls.asking",
    "INSTALL_PACKAGES": "jupyter_mcp_server._calls.approvals",
    "input_schema": "jupyter_mcp_server._protocol.declared_schemas",
    "INTERRUPTED": "jupyter_mcp_server._errors",
    "INVALID_ARGUMENT": "jupyter_mcp_server._errors",
    "INVALID_PATH": "jupyter_mcp_server._errors",
    "JupyterMCPExtension": "jupyter_mcp_server._extensions",
    "KERNEL_GONE": "jupyter_mcp_server._errors",
    "KERNEL_LIMIT": "jupyter_mcp_server._errors",
    "KernelBackend": "jupyter_mcp_server._kernels.backends",
    "MissingClientCapability": "jupyter_mcp_server._calls.asking",
    "NO_NOTEBOOK": "jupyter_mcp_server._errors",
    "normalize_url": "jupyter_mcp_server._jupyter_urls",
    "NOT_FOUND": "jupyter_mcp_server._errors",
    "NOT_PERMITTED": "jupyter_mcp_server._errors",
    "on_toolset": "jupyter_mcp_server._extensions",
    "PluginCompatibility": "jupyter_mcp_server._extensions",
    "PluginManifest": "jupyter_mcp_server._extensions",
    "Question": "jupyter_mcp_server._calls.asking",
    "RELEASE_KERNEL": "jupyter_mcp_server._calls.approvals",
    "request_input": "jupyter_mcp_server._calls.detached",
    "RESTART_KERNEL": "jupyter_mcp_server._calls.approvals",
    "RESTORE_REVISION": "jupyter_mcp_server._calls.approvals",
    "Result": "jupyter_mcp_server._schemas.models",
    "REVISION_CONFLICT": "jupyter_mcp_server._errors",
    "RootsRequest": "jupyter_mcp_server._calls.asking",
    "Sampling": "jupyter_mcp_server._calls.asking",
    "ServerConfig": "jupyter_mcp_server._config",
    "SHELL_CODE": "jupyter_mcp_server._calls.approvals",
    "StartedKernel": "jupyter_mcp_server._kernels.backends",
    "task_support": "jupyter_mcp_server._calls.detached",
    "TIMEOUT": "jupyter_mcp_server._errors",
    "tool": "jupyter_mcp_server._extensions",
    "tool_handler": "jupyter_mcp_server._tool_calls.results",
    "ToolCall": "jupyter_mcp_server._hooks",
    "ToolCallEnded": "jupyter_mcp_server._hooks",
    "ToolExtension": "jupyter_mcp_server._extensions",
    "ToolFailure": "jupyter_mcp_server._errors",
    "Toolset": "jupyter_mcp_server._extensions",
    "ToolSpec": "jupyter_mcp_server._extensions",
    "UNSUPPORTED": "jupyter_mcp_server._errors",
    "KernelWebSocket": "jupyter_mcp_server._kernels.remote",
    "RemoteKernel": "jupyter_mcp_server._kernels.remote",
    "open_remote_kernel": "jupyter_mcp_server._kernels.remote",
}


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next use is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "input_schema",
    "normalize_url",
    "on_toolset",
    "open_remote_kernel",
    "request_input",
    "task_support",
    "tool",
    "tool_handler",
]


class ServerAccess:
    """The server an extension runs in, as far as an extension may reach into it."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    @property
    def config(self) -> ServerConfig:
        """The server's configuration (frozen): limits, workspace root, transport."""
        return self._state.config

    @property
    def capabilities(self) -> CapabilitiesView:
        """Every capability and whether it is on (``capabilities.enabled(name)``), read-only."""
        return CapabilitiesView(self._state.capabilities)

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
        # Imported at the call: the tools' modules are the server's, not an extension's import.
        from jupyter_mcp_server._runs.executions import CANCEL_INTERRUPTS
        from jupyter_mcp_server._tool_calls.listening import output_listener

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
