"""The checks every HTTP request passes before anything is served.

Whoever reaches this server runs code with its owner's rights, so every
request passes three checks before anything is served: the Host header must
name the bound address (a loopback name when bound to loopback), or a page
on another site could reach it through DNS rebinding (421); a browser Origin
must be this server's (403); and with ``--mcp-token``, a bearer token must be
presented (401), and a request that presented it is marked so (its caller is
identified, ``_calls/callers.py``). Bodies past a limit are refused before they are read whole
(413), and a body that takes too long to arrive is refused too (408); the
transport closes connections whose request head does not arrive in time.
``/healthz`` needs no token and says nothing but its status.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from jupyter_mcp_server._calls.callers import TOKEN_CHECKED_KEY

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
#: Larger bodies are refused: no tool argument needs more.
MAX_BODY_BYTES = 8 * 1024 * 1024
UNAUTHENTICATED_PATHS = frozenset({"/healthz"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Seconds a request body may take to arrive (408 after that), unless configured.
BODY_TIMEOUT = 30.0


#: A Host header or URL netloc: a name or [IPv6 address], then an optional port, nothing else.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9._~-]+))(?::[0-9]{0,5})?")


def host_name(value: str) -> str:
    """The host part of a Host header or URL netloc, without port or brackets.

    Anything that is not exactly a host and an optional port (userinfo, a
    second host after a comma, text after the port) answers "", which no
    wall allows: 'localhost:80@evil.example' is not localhost.
    """
    value = value.strip().lower()
    if value.count(":") > 1 and not value.startswith("["):
        return value  # a bare IPv6 address, as some clients send it
    matched = _HOST.fullmatch(value)
    if matched is None:
        return ""
    return matched.group("v6") or matched.group("name")


class AccessChecks:
    """ASGI middleware: Host, Origin, token and body size, in that order."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bound_host: str,
        token: str | None,
        max_body: int = MAX_BODY_BYTES,
        body_timeout: float = BODY_TIMEOUT,
    ) -> None:
        self.app = app
        self.bound_host = bound_host.lower()
        self.token = token
        self.max_body = max_body
        self.body_timeout = body_timeout

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
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        host = headers.get("host")
        if host is None or not self.allowed_host(host_name(host)):
            await refuse(
                send, 421, "Misdirected request: this server answers only to its own address."
            )
            return
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            origin_host = host_name(urlsplit(origin).netloc)
            if not self.allowed_host(origin_host) or (
                self.bound_host in WILDCARDS and origin_host != host_name(host)
            ):
                await refuse(send, 403, "Forbidden: requests from another origin are refused.")
                return
        elif origin == "null":
            await refuse(send, 403, "Forbidden: requests from an opaque origin are refused.")
            return
        if self.token is not None and scope.get("path") not in UNAUTHENTICATED_PATHS:
            presented = headers.get("authorization", "")
            scheme, _, value = presented.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), self.token.encode()
            ):
                await refuse(
                    send,
                    401,
                    "Unauthorized: send 'Authorization: Bearer <token>' with the --mcp-token value.",
                    extra=[(b"www-authenticate", b'Bearer realm="jupyter-mcp-server"')],
                )
                return
            # Its holder is identified: the person the server runs for (_calls/callers.py).
            scope[TOKEN_CHECKED_KEY] = True
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await refuse(send, 413, f"Request body too large: at most {self.max_body} bytes.")
            return
        if scope.get("method") in BODY_METHODS:
            # The whole body is read here, bounded in size and in time, before
            # anything behind these checks sees it: a body sent in chunks without
            # a length gets its 413 as soon as it passes the limit, and a body
            # trickled byte by byte its 408, instead of holding a request open.
            try:
                body = await asyncio.wait_for(self._read_body(receive), self.body_timeout)
            except asyncio.TimeoutError:
                await refuse(
                    send,
                    408,
                    f"Request timeout: the body did not arrive within {self.body_timeout:g} s.",
                    extra=[(b"connection", b"close")],
                )
                return
            if body is None:
                await refuse(
                    send,
                    413,
                    f"Request body too large: at most {self.max_body} bytes.",
                    extra=[(b"connection", b"close")],
                )
                return
            receive = _replaying(body, receive)
        await self.app(scope, receive, send)

    async def _read_body(self, receive: Receive) -> MutableMapping[str, Any] | None:
        """The body as one message (a disconnect as itself), or None past the limit."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                return message
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}


def _replaying(first: MutableMapping[str, Any], receive: Receive) -> Receive:
    """`receive` that answers `first` once, then whatever the connection says next."""
    pending: list[MutableMapping[str, Any]] = [first]

    async def replay() -> MutableMapping[str, Any]:
        if pending:
            return pending.pop()
        return await receive()

    return replay


async def refuse(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
