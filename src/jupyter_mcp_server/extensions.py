"""The import path extension authors were first told to use, kept as a stable public face.

``from jupyter_mcp_server.extensions import JupyterMCPExtension`` was how the
extension documentation began before the package gathered its public names
into :mod:`jupyter_mcp_server.api`. Extensions written that way must keep
loading, so this module hands out the same objects as ``api`` (not copies:
``extensions.JupyterMCPExtension is api.JupyterMCPExtension``), each written
once, in its import.
"""

from jupyter_mcp_server.api import (
    JupyterMCPExtension as JupyterMCPExtension,
    PluginCompatibility as PluginCompatibility,
    PluginManifest as PluginManifest,
    ToolExtension as ToolExtension,
    Toolset as Toolset,
    ToolSpec as ToolSpec,
    on_toolset as on_toolset,
    tool as tool,
)

__all__ = sorted(name for name in globals() if not name.startswith("_"))
