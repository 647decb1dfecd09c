"""The floor for spawn-to-initialize: the SDK's own minimal `MCPServer` with one tool.

Spawned by `benchmarks/run.py` exactly the way our server is (same interpreter,
same environment, stdio), so the difference between the two is what our
server does on top of the SDK. Extra command-line arguments are ignored: the
harness passes a unique marker so it can find this process in /proc.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="minimal", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
