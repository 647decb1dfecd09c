"""jupyter-mcp-server: read, edit and run Jupyter notebooks over MCP.

Local-first: the server starts and manages its kernels itself, so no Jupyter
Server, URL or token is needed. Everything it serves arrives as an extension.
"""

__version__ = "0.1.0"
