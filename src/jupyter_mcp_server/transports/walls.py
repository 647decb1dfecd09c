"""The walls in front of the HTTP transport.

Whoever reaches this server runs code with its owner's rights, so every
request passes three checks before anything is served: the Host header must
name the bound address (a loopback name when bound to loopback), or a page
on another site could reach it through DNS rebinding (421); a browser Origin
must be this server's (403); and with ``--mcp-token``, a bearer token must be
presented (401). Bodies past a limit are refused before they are read whole
(413). ``/healthz`` needs no token and says nothing but its status.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
#: Larger bodies are refused: no tool argument needs more.
MAX_BODY_BYTES = 8 * 1024 * 1024
UNAUTHENTICATED_PATHS = frozenset({"/healthz"})


def host_name(value: str) -> str:
    """The host part of a Host header or URL netloc, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


class Walls:
    """ASGI middleware: Host, Origin, token and body size, in that order."""

    def __init__(self, app: ASGIApp, *, bound_host: str, token: str | None, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.bound_host = bound_host.lower()
        self.token = token
        self.max_body = max_body

    def allowed_host(self, name: str) -> bool:
        if self.bound_host in WILDCARDS:
            return True
        if self.bound_host in LOOPBACK_NAMES:
            return name in LOOPBACK_NAMES
        return name == host_name(self.bound_host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host")
        if host is None or not self.allowed_host(host_name(host)):
            await refuse(send, 421, "Misdirected request: this server answers only to its own address.")
            return
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            origin_host = host_name(urlsplit(origin).netloc)
            if not self.allowed_host(origin_host) or (self.bound_host in WILDCARDS and origin_host != host_name(host)):
                await refuse(send, 403, "Forbidden: requests from another origin are refused.")
                return
        elif origin == "null":
            await refuse(send, 403, "Forbidden: requests from an opaque origin are refused.")
            return
        if self.token is not None and scope.get("path") not in UNAUTHENTICATED_PATHS:
            presented = headers.get("authorization", "")
            scheme, _, value = presented.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token.encode()):
                await refuse(
                    send, 401, "Unauthorized: send 'Authorization: Bearer <token>' with the --mcp-token value.",
                    extra=[(b"www-authenticate", b'Bearer realm="jupyter-mcp-server"')],
                )
                return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await refuse(send, 413, f"Request body too large: at most {self.max_body} bytes.")
            return
        await self.app(scope, self._bounded(receive), send)

    def _bounded(self, receive: Receive) -> Receive:
        """A body sent in chunks without a length is bounded as it arrives."""
        seen = 0

        async def bounded() -> MutableMapping[str, Any]:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    return {"type": "http.disconnect"}
            return message

        return bounded


async def refuse(send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])],
        }
    )
    await send({"type": "http.response.body", "body": body})
