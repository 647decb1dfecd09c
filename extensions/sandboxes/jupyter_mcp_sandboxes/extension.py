"""`SandboxesExtension`: the worked example of every hook the server offers.

It offers four tools in the opt-in ``sandboxes`` toolset, declares what each
variant can do here as capabilities, lends its registry to downstream
extensions (the public `sandboxes` property), answers both Jupyter hooks, and
stops every sandbox it launched when the server stops.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from jupyter_mcp_sandboxes import __version__
from jupyter_mcp_sandboxes.registry import CodeSandboxManager
from jupyter_mcp_sandboxes.running import execute_in, with_sandbox_meta
from jupyter_mcp_sandboxes.settings import VARIANT_ENV
from jupyter_mcp_sandboxes.tools import SANDBOXES_TOOLSET, build_tools
from jupyter_mcp_server.api import (
    KERNEL_GONE,
    Capability,
    JupyterMCPExtension,
    PluginCompatibility,
    PluginManifest,
    ToolFailure,
    Toolset,
    ToolSpec,
    failure,
)

logger = logging.getLogger(__name__)

EXTENSION_NAME = "jupyter-mcp-sandboxes"


class SandboxesExtension(JupyterMCPExtension):
    """Launch, use and terminate code sandboxes."""

    #: Each tool fires the hook pair itself (`tools.results.tool_handler`).
    fires_hooks = True

    def __init__(self, manager: CodeSandboxManager | None = None) -> None:
        self._manager = manager if manager is not None else CodeSandboxManager()

    def manifest(self) -> PluginManifest:
        return PluginManifest(
            name=EXTENSION_NAME,
            version=__version__,
            description="Code sandboxes: separate kernels, confined kernels and kernels on a Jupyter Server.",
            author="jupyter-mcp-server",
            compatibility=PluginCompatibility(api_version="v1"),
        )

    def toolsets(self) -> Sequence[Toolset]:
        return (SANDBOXES_TOOLSET,)

    def tools(self) -> Sequence[ToolSpec]:
        return build_tools(self._manager)

    def capabilities(self) -> Sequence[Capability]:
        declared = []
        for variant in self._manager.variants:
            missing = variant.unavailable()
            description = variant.description
            if missing is not None:
                description += f" Not available here: {missing}."
            declared.append(
                Capability(
                    name=f"sandboxes.{variant.name}",
                    description=description,
                    enabled=missing is None,
                    source=EXTENSION_NAME,
                )
            )
        return declared

    # --- What it lends downstream ---------------------------------------------

    @property
    def sandboxes(self) -> CodeSandboxManager:
        """The sandboxes this extension launched, for extensions built on it."""
        return self._manager

    def attach(self, server: Any) -> None:
        super().attach(server)
        self._manager.use_server(server)

    # --- The two Jupyter hooks ----------------------------------------------------

    def create_code_sandbox(self, config: Any, logger: logging.Logger) -> Any:
        """A notebook needs a kernel: None unless a variant is configured for notebooks
        (``JUPYTER_MCP_SANDBOX_VARIANT``); then the selected live sandbox, or a fresh one."""
        if self._manager.settings.notebook_variant is None:
            return None
        return self._manager.for_notebook()

    async def intercept_execute_code(self, code: str, timeout: float) -> Any:
        """None when no sandbox is selected; otherwise run the code in it and say so."""
        sandbox = self._manager.active
        if sandbox is None:
            return None
        try:
            return await execute_in(self.server, sandbox, code, timeout)
        except ToolFailure as error:
            return with_sandbox_meta(failure(error), sandbox)
        except Exception as error:
            # Never fall back to the notebook's kernel: the caller chose this sandbox.
            logger.exception("Running code in sandbox '%s' failed", sandbox.name)
            return with_sandbox_meta(
                failure(
                    ToolFailure(
                        KERNEL_GONE,
                        f"Could not run the code in sandbox '{sandbox.name}' ({type(error).__name__}: {error}). "
                        "Terminate it with terminate_sandbox and launch a new one.",
                        sandbox_name=sandbox.name,
                    )
                ),
                sandbox,
            )

    # --- Lifecycle ---------------------------------------------------------------

    def on_start(self) -> None:
        """Say now, in the log, what is wrong with the operator's configuration."""
        settings = self._manager.settings
        if settings.problem:
            logger.error("%s", settings.problem)
        variant = settings.notebook_variant
        if variant is not None and variant not in self._manager.variants.names:
            logger.error(
                "%s names '%s', which is not a sandbox variant (variants: %s); notebooks will fail to get a kernel",
                VARIANT_ENV,
                variant,
                ", ".join(self._manager.variants.names),
            )

    def on_stop(self) -> None:
        stopped = self._manager.terminate_all()
        if stopped:
            logger.info("Stopped sandboxes: %s", ", ".join(stopped))
