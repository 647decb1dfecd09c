"""The import path for declaring a capability, kept as a stable public face.

``from jupyter_mcp_server.capabilities import Capability`` is how the
capabilities documentation has always shown an extension declaring what it
lets the server do. It hands out the same class as :mod:`jupyter_mcp_server.api`.
"""

from jupyter_mcp_server._policy.capabilities import Capability as Capability

__all__ = sorted(name for name in globals() if not name.startswith("_"))
