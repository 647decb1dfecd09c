"""The resources every built server serves.

``capabilities://`` (seeds/003) and ``jupymcp://capabilities`` (seeds/004)
say what this server can do; ``notebook:///{path}`` is a notebook, addressed
by an RFC 3986 path decoded strictly before any file is touched.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context

from jupyter_mcp_server import __version__
from jupyter_mcp_server.capabilities import get_capabilities
from jupyter_mcp_server.core_tools import furnishing

CAPABILITIES_URI = "capabilities://"
SELF_DESCRIPTION_URI = "jupymcp://capabilities"
NOTEBOOK_TEMPLATE = "notebook:///{+path}"
NOTEBOOK_MIME = "application/x-ipynb+json"
SERVER_NAME = "jupyter-mcp-server"


def self_description() -> dict[str, Any]:
    """seeds/004's schema 1.0 self-description, with values true of this process."""
    from jupyter_mcp_server.context import ServerContext

    context = ServerContext.get_instance()
    config = context.config
    return {
        "schema_version": "1.0",
        "output_schema_version": "1.0",
        "server": {"name": SERVER_NAME, "version": __version__},
        "limits": config.limits,
        "notebook_formats": ["ipynb", "py:percent"],
        "transports": {
            "active": config.transport,
            "supported": ["stdio", "streamable-http"],
        },
        "sessions": {
            "kernel_per_notebook": True,
            "shared_kernels": "pass the same kernel_id to use_notebook",
            "idle_timeout_seconds": config.idle_timeout,
            "auto_restart": get_capabilities().enabled("kernel.auto-restart"),
        },
        "cancellation": {
            "mcp_request": True,
            "interrupts_kernel": get_capabilities().enabled("execution.cancel-interrupts"),
            "explicit_interrupt_tools": ["interrupt_kernel", "interrupt_notebook_session"],
        },
        "kernelspecs": context.kernels.kernelspecs(),
    }


@furnishing
def register_resources(server: Any) -> None:
    @server.resource(
        CAPABILITIES_URI,
        name="capabilities",
        title="Server capabilities",
        description="Which switchable behaviours this server has on, and every one it knows (seeds/003).",
        mime_type="application/json",
    )
    def capabilities() -> str:
        return json.dumps(get_capabilities().describe(), indent=2)

    @server.resource(
        SELF_DESCRIPTION_URI,
        name="jupymcp-capabilities",
        title="Server self-description",
        description="Output schema version, limits, notebook formats, transports, sessions, cancellation and kernelspecs.",
        mime_type="application/json",
    )
    def described() -> str:
        return json.dumps(self_description(), indent=2)

    @server.resource(
        NOTEBOOK_TEMPLATE,
        name="notebook",
        title="Notebook",
        description="A notebook in the workspace, as nbformat JSON. The path is RFC 3986 percent-encoded.",
        mime_type=NOTEBOOK_MIME,
        security=_no_sdk_path_policy(),
    )
    async def notebook(path: str, ctx: Context) -> str:
        return await read_notebook_resource(ctx)


def _no_sdk_path_policy() -> Any:
    """The SDK's decoded-value checks are replaced by the workspace's strict ones."""
    from mcp.server.mcpserver.resources.templates import ResourceSecurity

    return ResourceSecurity(exempt_params=frozenset({"path"}))


async def read_notebook_resource(ctx: Any) -> str:
    """Read a notebook by the URI exactly as the client sent it."""
    from mcp.server.mcpserver.exceptions import ResourceError

    from jupyter_mcp_server.context import ServerContext
    from jupyter_mcp_server.errors import ToolFailure
    from jupyter_mcp_server.workspace import path_of_uri

    uri = str((ctx.request_context.params or {}).get("uri", ""))
    context = ServerContext.get_instance()
    try:
        relative = path_of_uri(uri)
        view = await context.store.read(context.workspace.relative_of(context.workspace.resolve(relative)))
    except ToolFailure as error:
        raise ResourceError(f"{error.code}: {error.message}") from None
    return json.dumps(view.notebook, ensure_ascii=False, indent=1)
