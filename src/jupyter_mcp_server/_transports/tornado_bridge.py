"""An ASGI application answered from a tornado request handler.

Jupyter Server is tornado; the MCP streamable-HTTP transport is an ASGI
application (the SDK's). :func:`serve_asgi` runs the application for one
tornado request, on the same event loop: the request becomes an ASGI scope
and one ``http.request`` message, each ``http.response.body`` chunk is
written and flushed as it comes (so server-sent events stream, the long
``GET`` stream included), and a client that goes away is an
``http.disconnect``. Nothing is buffered whole and nothing runs in a thread.
What tornado's side decided about the request (the caller's profile, from
Jupyter's authorizer) goes into the scope as extra keys.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from jupyter_mcp_server._calls.callers import SIGNED_IN_USER_KEY

logger = logging.getLogger(__name__)

#: Response headers tornado computes itself for a streamed body.
_HOP_BY_HOP = frozenset({"content-length", "transfer-encoding", "connection"})


class Disconnect:
    """Set when tornado notices the client went away."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def __call__(self) -> None:
        self.event.set()


#: The username Jupyter Server makes up for a request that only showed the shared token: a new
#: one each time (``IdentityProvider.generate_anonymous_user``), which names nobody.
_ANONYMOUS = re.compile(r"[0-9a-f]{32}")


def _identified(user: Any) -> str | None:
    """The username of a person Jupyter Server identified, or None (no user, or the anonymous
    one a shared token gets, different on every request)."""
    username = getattr(user, "username", None)
    if not isinstance(username, str) or not username:
        return None
    if _ANONYMOUS.fullmatch(username) and str(getattr(user, "name", "")).startswith("Anonymous "):
        return None
    return username


async def serve_asgi(
    handler: Any,
    app: Any,
    path: str,
    disconnected: Disconnect,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Answer tornado `handler`'s request with ASGI `app`, as if it had asked for `path`, with
    `extra`'s keys in the scope."""
    request = handler.request
    host, _, port = (request.host or "").rpartition(":")
    scope: MutableMapping[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": request.version.removeprefix("HTTP/") if request.version else "1.1",
        "method": request.method,
        "scheme": request.protocol,
        "path": path,
        "raw_path": path.encode("utf-8"),
        "query_string": (request.query or "").encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.get_all()
        ],
        "client": (request.remote_ip or "", 0),
        "server": (host or request.host or "", int(port) if port.isdigit() else 0),
        **(extra or {}),
    }
    # The person Jupyter Server authenticated (a Hub user's server: the Hub user): the
    # caller's user (_calls/callers.py), rather than the OS user the server runs as.
    username = _identified(getattr(handler, "current_user", None))
    if username is not None:
        scope[SIGNED_IN_USER_KEY] = username
    body_sent = False
    finished = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": request.body or b"", "more_body": False}
        await disconnected.event.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal finished
        if finished or disconnected.event.is_set():
            return
        kind = message["type"]
        if kind == "http.response.start":
            handler.clear_header("Content-Type")
            handler.set_status(int(message["status"]))
            content_type = ""
            for name, value in message.get("headers", []):
                text = name.decode("latin-1")
                if text.lower() in _HOP_BY_HOP:
                    continue
                handler.add_header(text, value.decode("latin-1"))
                if text.lower() == "content-type" and not content_type:
                    content_type = value.decode("latin-1")
            # An event stream's head goes out now, not with its first event: the long GET
            # stream may carry none for minutes, and a client that waits for the head before
            # its next request (the SDK's OAuth support holds a lock across each request's
            # head) would stall until then.
            if content_type.startswith("text/event-stream"):
                try:
                    await handler.flush()
                except Exception:  # the client went away (StreamClosedError)
                    disconnected()
        elif kind == "http.response.body":
            chunk = message.get("body", b"")
            if chunk:
                handler.write(chunk)
            try:
                if message.get("more_body", False):
                    await handler.flush()
                else:
                    finished = True
                    await handler.finish()
            except Exception:  # the client went away mid-stream (StreamClosedError)
                disconnected()

    try:
        await app(scope, receive, send)
    finally:
        if not finished and not disconnected.event.is_set() and not handler._finished:
            try:
                await handler.finish()
            except Exception:
                logger.debug("Finishing a bridged response failed", exc_info=True)
