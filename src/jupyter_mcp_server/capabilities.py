"""The import path for declaring a capability, kept as a stable public face.

``from jupyter_mcp_server.capabilities import Capability`` is how the
capabilities documentation has always shown an extension declaring what it
lets the server do. It hands out the same class as :mod:`jupyter_mcp_server.api`.
"""

from __future__ import annotations

from jupyter_mcp_server._policy.capabilities import Capability

__all__ = ["Capability"]
