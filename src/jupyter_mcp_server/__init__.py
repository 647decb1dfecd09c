"""jupyter-mcp-server: read, edit and run Jupyter notebooks over MCP.

Local-first: the server starts and manages its kernels itself, so no Jupyter
Server, URL or token is needed. Everything it serves arrives as an extension.
"""

from jupyter_mcp_server._version import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    """The Jupyter Server extension (enabled by the Jupyter config file the package ships;
    ``jupyter server extension disable jupyter_mcp_server`` turns it off); importing this
    package never imports Jupyter Server."""
    from jupyter_mcp_server._jupyter.server_extension import JupyterMCPServerApp

    return [{"module": "jupyter_mcp_server._jupyter.server_extension", "app": JupyterMCPServerApp}]
