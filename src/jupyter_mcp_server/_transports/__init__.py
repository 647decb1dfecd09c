"""How the server is reached: stdio, streamable HTTP, JSON lines."""
