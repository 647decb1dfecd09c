"""Two extensions a deployment might ship beside jupyter-mcp-sandboxes.

`LocalOnlySandboxes` narrows `launch_sandbox` by name with
``tool_extensions()``: the tool keeps its name, its hook pair and its output
schema, but takes only a name and a memory limit, always launches the
``local`` variant, and refuses a fourth sandbox, counting them in the
registry the sandboxes extension lends (its public ``sandboxes`` property).

`NoListingSandboxes` acts on the built server with ``on_server``: it takes
`list_sandboxes` off, the way a gateway takes off tools its deployment has
nothing behind (as a deployment that hides `list_files` would).

Both declare the ``sandboxes`` toolset rather than one of their own: they
belong to that subject, and a server built for ``?only=sandboxes`` includes
them (and runs their ``on_server``).
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from jupyter_mcp_sandboxes.models import SandboxModel
from jupyter_mcp_sandboxes.tools import SANDBOXES_TOOLSET
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server.api import (
    KERNEL_LIMIT,
    JupyterMCPExtension,
    PluginCompatibility,
    PluginManifest,
    ToolExtension,
    ToolFailure,
    failure,
)

#: How many sandboxes LocalOnlySandboxes lets run at once.
MAX_SANDBOXES = 3


def _manifest(name: str, description: str) -> PluginManifest:
    return PluginManifest(
        name=name,
        version="0.1.0",
        description=description,
        author="jupyter-mcp-server examples",
        compatibility=PluginCompatibility(api_version="v1"),
    )


def sandbox_registry(server: Any) -> Any:
    """The registry launch_sandbox writes to, reached by the extension's name, then its property."""
    extension = server.extension("jupyter-mcp-sandboxes") if server is not None else None
    return getattr(extension, "sandboxes", None)


class LocalOnlySandboxes(JupyterMCPExtension):
    """launch_sandbox, narrowed: local only, a smaller signature, and a quota."""

    def manifest(self) -> PluginManifest:
        return _manifest("sandboxes-local-only", "Only local sandboxes, at most three at once.")

    def toolsets(self):
        return (SANDBOXES_TOOLSET,)

    def tool_extensions(self):
        def local_only(handler):
            async def launch_sandbox(
                sandbox_name: Annotated[str, Field(description="The sandbox's name.")],
                memory_mb: Annotated[int, Field(description="Memory limit in MiB.")] = 512,
            ) -> Annotated[CallToolResult, SandboxModel]:
                registry = sandbox_registry(self.server)
                if registry is not None and len(registry.sandboxes) >= MAX_SANDBOXES:
                    return failure(
                        ToolFailure(
                            KERNEL_LIMIT,
                            f"This deployment runs at most {MAX_SANDBOXES} sandboxes at once. "
                            "Terminate one with terminate_sandbox first.",
                        )
                    )
                return await handler(
                    sandbox_name=sandbox_name, variant="local", memory_mb=memory_mb
                )

            return launch_sandbox

        return (
            (
                "launch_sandbox",
                ToolExtension(
                    wrap=local_only,
                    description=(
                        "Launch a local sandbox (a separate kernel process with its own directory and "
                        f"limits; 512 MiB unless you ask for more). At most {MAX_SANDBOXES} at once. "
                        "Then call use_sandbox with its name to run execute_code in it."
                    ),
                ),
            ),
        )


class NoListingSandboxes(JupyterMCPExtension):
    """Takes list_sandboxes off every server it is part of."""

    def manifest(self) -> PluginManifest:
        return _manifest("sandboxes-no-listing", "This deployment lists sandboxes elsewhere.")

    def toolsets(self):
        return (SANDBOXES_TOOLSET,)

    def on_server(self, server: Any) -> None:
        with contextlib.suppress(Exception):  # not there: nothing to take off
            server.remove_tool("list_sandboxes")
