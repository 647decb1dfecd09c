"""The module-level server: what the CLI (and a Jupyter Server extension) runs.

It is built from contributions like every other server: `new_server()` makes
a furnished `MCPServer` (resources, the capabilities advertisement), and
:func:`register_extension_tools` puts every extension's tools on it, the core
notebooks tools included, once the command line has been read.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.extension import Extension
from mcp.server.mcpserver import MCPServer

from jupyter_mcp_server import __version__
from jupyter_mcp_server.argument_errors import ArgumentErrors
from jupyter_mcp_server.capabilities import get_capabilities
from jupyter_mcp_server.core_tools import furnish
from jupyter_mcp_server.extensions import get_extension_manager

logger = logging.getLogger(__name__)

SERVER_NAME = "jupyter-mcp-server"
INSTRUCTIONS = (
    "Read, edit and run Jupyter notebooks in the workspace. Start with list_files to find "
    "notebooks and use_notebook to open or create one; then read_notebook, the cell tools and "
    "execute_cell / insert_execute_code_cell. Pass expected_revision (from get_notebook_revision "
    "or any result's revision) so an edit never overwrites a newer file."
)

#: What `server/discover` shows under the capabilities extension. One dict,
#: refreshed in place, because the SDK reads an extension's settings once.
ADVERTISED_CAPABILITIES: dict[str, Any] = {}


class CapabilitiesAdvertisement(Extension):
    """`io.jupyter-mcp/capabilities` in `server/discover` (seeds/003)."""

    identifier = "io.jupyter-mcp/capabilities"

    def settings(self) -> dict[str, Any]:
        return ADVERTISED_CAPABILITIES


def refresh_advertised_capabilities() -> None:
    ADVERTISED_CAPABILITIES.clear()
    ADVERTISED_CAPABILITIES.update(get_capabilities().describe())


def new_server(name: str = SERVER_NAME, instructions: str | None = INSTRUCTIONS) -> MCPServer:
    """A furnished server with no tools yet: the module-level one, or one per selection."""
    import jupyter_mcp_server.client_logging
    import jupyter_mcp_server.progress
    import jupyter_mcp_server.prompts
    import jupyter_mcp_server.resources
    import jupyter_mcp_server.subscriptions
    import jupyter_mcp_server.tasks  # noqa: F401  (each declares its furnishing; tasks wraps progress)

    argument_errors = ArgumentErrors()
    server: MCPServer = MCPServer(
        name=name,
        version=__version__,
        instructions=instructions or INSTRUCTIONS,
        extensions=[CapabilitiesAdvertisement(), argument_errors],
        warn_on_duplicate_tools=False,
        log_level="WARNING",
    )
    argument_errors.server = server
    return furnish(server)


mcp = new_server()
extension_manager = get_extension_manager()
extension_manager.host.server_factory = lambda name, instructions: new_server(SERVER_NAME, instructions)


def register_extension_tools() -> list[str]:
    """Discover extensions, put their tools on `mcp`, collect their capabilities."""
    if not extension_manager.extensions:
        extension_manager.discover()
    names = extension_manager.register_tools(mcp, once=True)
    connect_extension_hooks()
    extension_manager.collect_capabilities(get_capabilities())
    refresh_advertised_capabilities()
    return names


def connect_extension_hooks() -> None:
    """Give the kernel layer and `execute_code` the extensions' two Jupyter hooks."""
    from jupyter_mcp_server.config import get_config
    from jupyter_mcp_server.context import ServerContext

    context = ServerContext.get_instance()
    if extension_manager.intercept_execute_code not in context.interceptors:
        context.interceptors.append(extension_manager.intercept_execute_code)
    context.kernels.kernel_source = lambda kernel_name: extension_manager.create_code_sandbox(
        get_config(), logging.getLogger("jupyter_mcp_server.sandbox")
    )
