"""jupyter-mcp-sandboxes: code sandboxes for jupyter-mcp-server.

Imports are lazy so that the resource-limit launcher (`limited`) and the
variants can be used without loading the server, and so that installing
this package costs a server nothing until it discovers the extension.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "SandboxesExtension": "jupyter_mcp_sandboxes.extension",
    "CodeSandboxManager": "jupyter_mcp_sandboxes.registry",
    "Sandbox": "jupyter_mcp_sandboxes.sandbox",
    "SandboxInfo": "jupyter_mcp_sandboxes.sandbox",
    "SandboxSpec": "jupyter_mcp_sandboxes.spec",
    "SandboxVariant": "jupyter_mcp_sandboxes.variant",
    "LaunchContext": "jupyter_mcp_sandboxes.variant",
    "VariantRegistry": "jupyter_mcp_sandboxes.variants",
    "Limits": "jupyter_mcp_sandboxes.limits",
    "Settings": "jupyter_mcp_sandboxes.settings",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_mcp_sandboxes' has no attribute {name!r}")
    return getattr(import_module(module), name)
