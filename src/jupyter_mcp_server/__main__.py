"""`python -m jupyter_mcp_server` is the command line."""

from jupyter_mcp_server._cli import main

main()
