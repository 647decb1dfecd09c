"""Which client connection a request came on: one definition for every feature.

A stdio server has exactly one peer. Over HTTP a 2025-11-25 client has a
session (the ``mcp-session-id`` header); a stateless 2026-07-28 request has
none. The log levels clients set and subscriptions key on this; who the
caller is, what it owns, and what the tools' "current notebook" is kept
under when there is no session (its agent handle, or its identified caller),
is :mod:`.callers`'.
"""

from __future__ import annotations

from typing import Any

#: The one peer of a stdio server.
STDIO_CONNECTION = "stdio"


def client_name_of(ctx: Any) -> str | None:
    """The name the client gave in its ``clientInfo`` (None when it gave none)."""
    request_context = getattr(ctx, "request_context", ctx)
    params = getattr(getattr(request_context, "session", None), "client_params", None)
    name = getattr(getattr(params, "client_info", None), "name", None)
    if not isinstance(name, str):
        return None
    return name.strip()[:80] or None


def _headers(ctx: Any) -> Any:
    """The HTTP headers of a request (an MCP server's ``Context`` or a low-level request
    context), or None on stdio."""
    request_context = getattr(ctx, "request_context", ctx)
    return getattr(getattr(request_context, "request", None), "headers", None)


def header_of(ctx: Any, name: str) -> str | None:
    """One HTTP header of a request (lowercase `name`), or None (absent, or not HTTP)."""
    headers = _headers(ctx)
    return headers.get(name) if headers is not None else None


def session_of(ctx: Any) -> str | None:
    """The connection a request came on: the HTTP session, the stdio peer, or None for a
    stateless HTTP request."""
    headers = _headers(ctx)
    if headers is None:
        return STDIO_CONNECTION
    return headers.get("mcp-session-id") or None


def connection_key(ctx: Any) -> str:
    """Like :func:`session_of`, but a stateless request is its own connection while it lasts."""
    request_context = getattr(ctx, "request_context", ctx)
    return session_of(ctx) or f"stateless-{id(request_context.session)}"
