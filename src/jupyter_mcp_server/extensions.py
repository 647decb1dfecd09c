"""The import path extension authors were first told to use, kept as a stable public face.

``from jupyter_mcp_server.extensions import JupyterMCPExtension`` was how the
extension documentation began before the package gathered its public names
into :mod:`jupyter_mcp_server.api`. Extensions written that way must keep
loading, so this module hands out the same objects as ``api`` (not copies:
``extensions.JupyterMCPExtension is api.JupyterMCPExtension``), each imported
when first used, like ``api``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jupyter_mcp_server import api

if TYPE_CHECKING:
    from jupyter_mcp_server.api import (
        JupyterMCPExtension,
        PluginCompatibility,
        PluginManifest,
        ToolExtension,
        Toolset,
        ToolSpec,
        on_toolset,
        tool,
    )

__all__ = [
    "JupyterMCPExtension",
    "PluginCompatibility",
    "PluginManifest",
    "ToolExtension",
    "ToolSpec",
    "Toolset",
    "on_toolset",
    "tool",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(api, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
