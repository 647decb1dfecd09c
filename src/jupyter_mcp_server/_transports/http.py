"""Serving over streamable HTTP, with the URL choosing the toolsets.

`/mcp?only=notebooks` is a server built for exactly that selection,
`/mcp?sandboxes` the defaults plus sandboxes. The server for a selection is
built once and kept. `?profile=read-only` (or `edit`) narrows what the
connection may do (jupyter_mcp_server._policy.profiles): kept for its session, put in
each request's scope for the profile guard, and refused with 403 when it is
wider than the server's own. The reactor router forgets its applications whenever the
host changes (another client's URL waking an extension), which drops every
live session with them; here a session is routed by its id to the application
that issued it, for as long as it lives, whatever other clients select.

A session whose client went away without ``DELETE`` (a closed laptop, a killed
client) expires after ``--session-timeout`` seconds without a request: the SDK
ends it, and its end is handled as a DELETE's (``ServerState.connection_ended``:
its choices, subscriptions and log level go, its notebooks' kernels are left to
``--idle-timeout``) and logged. A client that comes back gets the protocol's
404 and initializes a new session.

A client whose connection drops mid-call resumes the call's stream with
``Last-Event-ID`` (a GET): each session's streams are kept, bounded, in
:mod:`jupyter_mcp_server._transports.resumable`'s event store, which this router
binds each request to its session's share of; an id this session cannot resume
from is ``410``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route, Router

from jupyter_mcp_server._extensions import parse_selection
from jupyter_mcp_server._policy.profiles import PROFILES, QUERY_KEY, narrowest, rank
from jupyter_mcp_server._protocol.apps import APP_ONLY_TOOLS
from jupyter_mcp_server._protocol.handlers import tool_annotations
from jupyter_mcp_server._protocol.profile_guard import SCOPE_KEY, server_profile
from jupyter_mcp_server._transports.access_checks import AccessChecks, Receive, Scope, Send, refuse
from jupyter_mcp_server._transports.resumable import EventStore, Namespace, serving_session

if TYPE_CHECKING:
    from jupyter_mcp_server._app import Application
    from jupyter_mcp_server._state import ConnectionState

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SESSION_HEADER = b"mcp-session-id"
LAST_EVENT_ID_HEADER = b"last-event-id"
#: Milliseconds a client waits before reconnecting to a stream that closed without its response
#: (the ``retry`` of each stream's priming event).
RETRY_MS = 1000


class SelectionRouter:
    """Routes each MCP request to the server its selection, or its session, belongs to."""

    def __init__(self, application: Application) -> None:
        self.application = application
        self._apps: dict[tuple[int, str], Any] = {}
        #: Each live session's application and the profile it connected with.
        self._sessions: dict[str, tuple[Any, str | None]] = {}
        #: Each application's MCP server (by the application's id), whose tools it serves.
        self._servers: dict[int, Any] = {}
        self._lock = asyncio.Lock()
        self._tasks: Any = None
        self._closing: asyncio.Event | None = None
        #: When each live session's last request ended (monotonic), to say how long it idled.
        self._last_request: dict[str, float] = {}
        #: The sessions a DELETE is ending right now.
        self._deleting: set[str] = set()
        config = application.config
        #: Every session's streams, kept for resuming (Last-Event-ID), and each session's share.
        self.events = EventStore(per_stream=config.resume_events, total_bytes=config.resume_bytes)
        self._namespaces: dict[str, Namespace] = {}
        application.state.connection_ends.append(self._session_ended)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The scope every application's lifespan runs in, entered and left in one task."""
        import anyio

        self._closing = asyncio.Event()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._closing.set()
                self._apps.clear()
                self._servers.clear()
                self._sessions.clear()
                self._last_request.clear()
                for namespace in self._namespaces.values():
                    self.events.forget(namespace)
                self._namespaces.clear()

    async def _serve(self, app: Any, *, task_status: Any) -> None:
        assert self._closing is not None
        async with app.router.lifespan_context(app):
            task_status.started()
            await self._closing.wait()

    async def app_for(self, scope: Scope) -> Any:
        raw = scope.get("query_string", b"").decode("utf-8", "replace")
        built = self.application.build(parse_selection(raw, ignore=(QUERY_KEY,)))
        if built.unknown:
            logger.warning(
                "A client asked for unknown toolsets: %s", ", ".join(sorted(built.unknown))
            )
        key = (id(built.server), ",".join(sorted(built.toolsets)))
        app = self._apps.get(key)
        if app is not None:
            return app
        async with self._lock:
            app = self._apps.get(key)
            if app is None:
                app = built.server.streamable_http_app(
                    streamable_http_path=MCP_PATH,
                    transport_security=_checks_are_ours(),
                    session_idle_timeout=self.application.config.session_timeout,
                    event_store=self.events,
                    retry_interval=RETRY_MS,
                )
                await self._tasks.start(self._serve, app)
                self._apps[key] = app
                self._servers[id(app)] = built.server
        return app

    async def tool_rule(self, scope: Scope, name: str) -> tuple[bool, Any, str | None]:
        """Tool `name` as the request would meet it: (whether the server its session, or else
        its URL's selection, reaches has it, its annotations there, the profile its
        connection's URL chose), an authorization.ToolRule's fields."""
        session_id = _header(scope, SESSION_HEADER)
        remembered = self._sessions.get(session_id) if session_id else None
        if remembered is not None:
            app, profile = remembered
            server = self._servers.get(id(app))
        else:
            profile, _ = self.asked_profile(scope)
            raw = scope.get("query_string", b"").decode("utf-8", "replace")
            server = self.application.build(parse_selection(raw, ignore=(QUERY_KEY,))).server
        if server is None:
            return False, None, profile
        found, annotations = await tool_annotations(server, name)
        return found, annotations, profile

    def asked_profile(self, scope: Scope) -> tuple[str | None, str | None]:
        """(the profile the URL asks for or None, a refusal's message or None)."""
        raw = scope.get("query_string", b"").decode("utf-8", "replace")
        asked = [
            value.strip().lower()
            for key, value in parse_qsl(raw, keep_blank_values=True)
            if key.strip() == QUERY_KEY
        ]
        if not asked:
            return None, None
        profile = asked[-1]
        if profile not in PROFILES:
            return None, f"Unknown profile {profile!r}: one of {', '.join(PROFILES)}."
        own = server_profile(self.application.state)
        if rank(profile) > rank(own):
            return None, f"Forbidden: profile {profile!r} is wider than this server's {own!r}."
        return profile, None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = _header(scope, SESSION_HEADER)
        remembered = self._sessions.get(session_id) if session_id else None
        if remembered is not None:
            app, profile = remembered
        else:
            profile, problem = self.asked_profile(scope)
            if problem is not None:
                await refuse(send, 400 if problem.startswith("Unknown") else 403, problem)
                return
            app = await self.app_for(scope)
        if profile is not None:
            # Narrowed by what Jupyter's authorizer put there (_jupyter/server_extension.py).
            scope[SCOPE_KEY] = narrowest(profile, scope.get(SCOPE_KEY))
        method = scope.get("method")
        namespace = self._namespaces.get(session_id) if remembered and session_id else None
        last_event_id = _header(scope, LAST_EVENT_ID_HEADER)
        if (
            namespace is not None
            and method == "GET"
            and last_event_id
            and not self.events.resumable(last_event_id, namespace)
        ):
            # An empty stream would have the client reconnect for ever: say it is gone.
            await refuse(
                send,
                410,
                "Gone: this session keeps no stream to resume after that Last-Event-ID (its "
                "events were dropped, or it is not this session's); send the request again.",
            )
            return
        # A request the SDK opens a session with starts that session's share of the store.
        namespace = namespace or Namespace()
        if method == "DELETE" and remembered is not None and session_id:
            self._deleting.add(session_id)  # before the session can end, and be heard ending

        async def remembering(message: Any) -> None:
            if message["type"] == "http.response.start":
                issued = _header(message, SESSION_HEADER)
                status = message.get("status", 500)
                if issued and status < 400 and method != "DELETE":
                    self._sessions[issued] = (app, profile)
                    self._namespaces.setdefault(issued, namespace)
                    self._last_request[issued] = time.monotonic()
                elif session_id and status == 404:
                    self._forget(session_id)
                elif session_id and method == "DELETE":
                    # The rest goes when the session's end is heard (`_session_ended`), which
                    # then knows that a DELETE ended it.
                    self._sessions.pop(session_id, None)
            await send(message)

        try:
            # The SDK's tasks for the session (its message router) inherit this binding.
            with serving_session(namespace):
                await app(scope, receive, remembering)
        finally:
            if session_id and session_id in self._sessions:
                self._last_request[session_id] = time.monotonic()

    def _forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        namespace = self._namespaces.pop(session_id, None)
        if namespace is not None:
            self.events.forget(namespace)
        self._last_request.pop(session_id, None)
        self._deleting.discard(session_id)

    def _session_ended(self, session_id: str, chosen: ConnectionState | None) -> None:
        """A session's connection closed: nothing of it is kept, and the log says how it ended."""
        deleted = session_id in self._deleting
        last = self._last_request.get(session_id)
        self._forget(session_id)
        if self._closing is None or self._closing.is_set():
            return  # the server is stopping: every session ends with it
        config = self.application.config
        notebooks = sorted(
            {
                *(chosen.names.values() if chosen else ()),
                *([chosen.current] if chosen and chosen.current else []),
            }
        )
        kernels = (
            f"the kernels of {', '.join(notebooks[:5])}{' …' if len(notebooks) > 5 else ''} keep running for "
            f"any client until --idle-timeout ({config.idle_timeout:g} s unused) stops them"
            if notebooks
            else "it had chosen no notebook"
        )
        shown = session_id[:8]
        if deleted:
            logger.info("HTTP session %s… ended by its client (DELETE); %s", shown, kernels)
            return
        if last is None:
            # Already forgotten (answered 404 once the SDK dropped it) or never told its id:
            # it ended without a DELETE, and nothing says it idled.
            logger.info("HTTP session %s… ended without a DELETE; %s", shown, kernels)
            return
        idle = time.monotonic() - last
        if idle < config.session_timeout * 0.9:
            logger.info(
                "HTTP session %s… ended without a DELETE after %.0f s (its connection closed); %s",
                shown,
                idle,
                kernels,
            )
            return
        logger.warning(
            "HTTP session %s… expired: no request for %s s (--session-timeout %g s), its client gone without "
            "a DELETE. Released as on DELETE (its notebook choices, subscriptions and log level); %s. "
            "A client that comes back gets 404 and initializes a new session.",
            shown,
            f"{idle:.0f}",
            config.session_timeout,
            kernels,
        )


def _header(holder: Any, name: bytes) -> str | None:
    for key, value in holder.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _checks_are_ours() -> Any:
    """Host and Origin are checked by `AccessChecks` for every route; the SDK's copy is off."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def create_app(application: Application) -> Any:
    """The whole HTTP application: `/mcp`, `/toolsets`, `/healthz`, behind the access checks."""
    router = SelectionRouter(application)
    config = application.config

    async def toolsets(request: Request) -> JSONResponse:
        return JSONResponse(
            await application.state.extensions.describe_toolsets(hidden=APP_ONLY_TOOLS)
        )

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    protected: list[Route | Mount] = [
        Route("/toolsets", toolsets, methods=["GET"]),
        Mount("", app=router),
    ]
    public: list[Route | Mount] = [Route("/healthz", health, methods=["GET"])]
    authorization = None
    if config.auth_issuer:
        # Imported only with --auth-issuer: PyJWT and the SDK's auth middlewares.
        from jupyter_mcp_server._transports.authorization import Authorization

        authorization = Authorization(
            config,
            lambda: server_profile(application.state),
            tool_rules=router.tool_rule,
            hooks=application.state.hooks,
        )
        public.extend(authorization.public_routes())
        routes = [*public, Mount("", app=authorization.protect(Router(routes=protected)))]
    else:
        routes = [*public, *protected]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with application.running(), router.running():
            try:
                yield
            finally:
                if authorization is not None:
                    await authorization.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    return AccessChecks(
        app, bound_host=config.host, token=config.mcp_token, body_timeout=config.http_body_timeout
    )


_TOO_SLOW_BODY = b'{"error": "Request timeout: the request head came too slowly."}'
_TOO_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_TOO_SLOW_BODY), _TOO_SLOW_BODY)
)
_TOO_LARGE_BODY = (
    b'{"error": "Request header fields too large: the request head (a token included) is past '
    b'16 KiB, the most this server reads."}'
)
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TOO_LARGE_BODY), _TOO_LARGE_BODY)
)
#: Bytes of a refused oversized head read and dropped after the 431, so that the client, still
#: sending, reads the answer instead of a reset connection; and seconds that may take.
_DROPPED_AFTER_431 = 4 * 1024 * 1024
_DROPPING_SECONDS = 5.0


def _protocol_with_head_timeout(head_timeout: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose request head is late.

    uvicorn times out only idle keep-alive connections, so without this a
    client trickling its headers (slowloris) holds a connection for ever. A head
    past h11's limit (a megabyte-long token) is answered 431 with its reason
    rather than uvicorn's bare 400.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadTimeoutProtocol(H11Protocol):  # type: ignore[misc]
        _head_deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._head_deadline = self.loop.call_later(head_timeout, self._head_too_slow)

        def _disarm(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:
                self._disarm()  # the head has arrived: the body has its own deadline

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()  # waiting for the next request's head

        _dropping: int | None = None

        def send_400_response(self, msg: str) -> None:
            # h11 names no reason for its refusal; what it holds unparsed past its limit (uvicorn's
            # --h11-max-incomplete-event-size, else h11's 16 KiB) is the head too large.
            limit = self.config.h11_max_incomplete_event_size
            if len(self.conn.trailing_data[0]) <= (16 * 1024 if limit is None else limit):
                super().send_400_response(msg)
                return
            self.transport.write(_TOO_LARGE)
            if not self.transport.can_write_eof():
                self.transport.close()
                return
            self.transport.write_eof()
            self._dropping = _DROPPED_AFTER_431
            self.loop.call_later(_DROPPING_SECONDS, self.transport.close)

        def data_received(self, data: bytes) -> None:
            if self._dropping is None:
                super().data_received(data)
                return
            self._dropping -= len(data)
            if self._dropping <= 0:
                self.transport.close()

        def _head_too_slow(self) -> None:
            self._head_deadline = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            # Bytes of a head have arrived: say why; an idle connection just closes.
            if self.conn.trailing_data[0]:
                self.transport.write(_TOO_SLOW)
            self.transport.close()

    return HeadTimeoutProtocol


def serve(application: Application) -> None:
    import uvicorn

    config = application.config
    uvicorn.run(
        create_app(application),
        host=config.host,
        port=config.port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=10,
        http=_protocol_with_head_timeout(config.http_head_timeout),
    )
