"""A Jupyter Server's URL, as an operator or a tool gives it, checked once for everyone.

The command line (``--jupyter-url``), the ``connect_to_jupyter`` tool and a
sandbox on a Jupyter Server all take a URL and a token; each names them
differently, and an error says the name the caller used. Nothing here talks
to a server, so the configuration can check a URL without importing an
HTTP client.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ._errors import INVALID_ARGUMENT, ToolFailure


@dataclass(frozen=True)
class ArgumentNames:
    """What the caller called the URL and the token, so errors name the arguments they passed."""

    url: str = "jupyter_url"
    token: str = "jupyter_token"


TOOL_ARGUMENTS = ArgumentNames()


def normalize_url(server_url: str, names: ArgumentNames = TOOL_ARGUMENTS) -> str:
    """``http(s)://host[:port][/base]`` without a query or trailing slash; anything else is refused."""
    parts = urlsplit(str(server_url).strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{names.url} must be an http:// or https:// URL of a Jupyter Server, like http://127.0.0.1:8888; "
            f"got {urlunsplit((parts.scheme, parts.netloc.rpartition('@')[2], parts.path, '', ''))!r}.",
            argument=names.url,
        )
    if parts.query or "@" in parts.netloc:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{names.url} must not carry credentials or a query (pass the token as `{names.token}`).",
            argument=names.url,
        )
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
