"""How the server is reached: stdio, streamable HTTP, JSON lines.

Each transport's module imports only what it serves with (uvicorn and starlette for HTTP),
so a server imports the one it uses, by name, when it starts (:func:`serve_over`)."""

from importlib import import_module
from typing import Any

#: Each transport's module here, by the name ``--transport`` takes.
TRANSPORT_MODULES = {"stdio": "stdio", "streamable-http": "http", "json-lines": "jsonlines"}


def serve_over(transport: str, application: Any) -> None:
    """Serve `application` over `transport` until it ends."""
    import_module(f"{__name__}.{TRANSPORT_MODULES[transport]}").serve(application)
