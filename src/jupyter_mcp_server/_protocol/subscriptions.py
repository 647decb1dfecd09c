"""Resource subscriptions: a client hears when a notebook it watches changes.

Both protocol generations:

- 2025-11-25: ``resources/subscribe`` and ``resources/unsubscribe`` per
  connection; ``notifications/resources/updated`` arrives on the connection.
- 2026-07-28: ``subscriptions/listen`` with ``resourceSubscriptions``; the
  notifications ride that request's stream (the SDK's ``ListenHandler`` over
  one bus shared by every built server).

A subscribed URI is ``notebook:///{path}`` or a cell or output URI of the same
notebook; each subscribed URI whose notebook changed is announced, exactly as
the client spelled it. A change is announced when the server's store writes
the file (any tool, the JSON-lines transport) and when the file changes on
disk through anyone else: the workspace is watched with ``watchfiles``,
debounced (``JUPYTER_MCP_WATCH_DEBOUNCE_MS``, default 200 ms), from the first
subscription to the last. A connection's subscriptions end with it: an
HTTP session deleted or expired without unsubscribing keeps nothing watched,
and the server waits for the watcher to end when it stops (see `close`). A
change is announced once, whoever saw it first: announcements are keyed on
the file's revision, so the watcher stays quiet
about the server's own writes and about a save that left the bytes as they
were. Nothing is announced for a notebook nobody subscribed to, and a URI
outside the workspace is refused (2025-11-25) or never fires (2026-07-28).
A URI of another scheme (an extension's resource) is accepted and never
fired from here, but for ``presence://`` (the people in JupyterLab and where they
are): while anyone subscribes to it, the people are looked at every half second
(:data:`PRESENCE_POLL`), and a change (a person arrives, leaves, selects another
cell or other text) is announced.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ResourceUpdated

from jupyter_mcp_server._calls.connections import connection_key
from jupyter_mcp_server._errors import INVALID_PATH, ToolFailure
from jupyter_mcp_server._protocol.features import Feature, Served
from jupyter_mcp_server._protocol.handlers import when_connection_closes
from jupyter_mcp_server._protocol.resources import (
    CELL_SCHEME,
    OUTPUT_SCHEME,
    PRESENCE_URI,
    parse_part_uri,
)
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._store.files import revision_of
from jupyter_mcp_server._workspace.notebook_uris import path_of_uri

logger = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_MS = 200
#: Seconds between two looks at where the people are, while presence:// is subscribed to.
PRESENCE_POLL = 0.5
#: RFC 3986 scheme.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


@dataclass
class _Connection:
    """A 2025-11-25 connection's subscriptions, and the session to notify it through."""

    session: Any
    uris: set[str] = field(default_factory=set)


class NotebookEvents:
    """Who watches which notebook, and telling them when it changes."""

    def __init__(self, state: ServerState, debounce_ms: int = DEFAULT_DEBOUNCE_MS) -> None:
        self.state = state
        self.debounce_ms = debounce_ms
        self.bus = InMemorySubscriptionBus()
        self.connections: dict[str, _Connection] = {}
        #: URIs held by open listen streams, counted.
        self.listened: Counter[str] = Counter()
        #: Subscribed URI -> the workspace path of its notebook.
        self._paths: dict[str, str] = {}
        #: Path -> the revision last announced (None: the file is gone).
        self._announced: dict[str, str | None] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        #: Watchers told to stop that have not ended yet.
        self._ending: set[asyncio.Task[None]] = set()
        self._store_observed = False
        #: Looks at the people while presence:// is held.
        self._presence: asyncio.Task[None] | None = None

    # -- who watches what ----------------------------------------------------

    def path_of(self, uri: str) -> str:
        """The workspace path a notebook, cell or output URI names; ToolFailure if none."""
        scheme = uri.partition(":")[0].lower()
        if scheme in (CELL_SCHEME, OUTPUT_SCHEME):
            try:
                path, _ = parse_part_uri(uri, scheme)
            except Exception as error:
                raise ToolFailure(INVALID_PATH, str(error)) from None
        else:
            path = path_of_uri(uri)
        return self.state.locate(path)

    def subscribed_paths(self) -> set[str]:
        return set(self._paths.values())

    async def _hold(self, uri: str, path: str) -> None:
        if path not in self.subscribed_paths():
            self._announced[path] = await self._revision_now(path)
        self._paths[uri] = path
        self._ensure_watching()

    def _release_unused(self) -> None:
        held = set(self.listened) | {uri for c in self.connections.values() for uri in c.uris}
        for uri in list(self._paths):
            if uri not in held:
                del self._paths[uri]
        for path in list(self._announced):
            if path not in self.subscribed_paths():
                del self._announced[path]
        if not self._paths:
            self._stop_watching()
        if PRESENCE_URI not in held and self._presence is not None:
            self._presence.cancel()
            self._presence = None

    def _hold_presence(self) -> None:
        if self._presence is None or self._presence.done():
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
                self._presence = contextvars.Context().run(loop.create_task, self._watch_people())

    async def _watch_people(self) -> None:
        """Announce presence:// each time the people, or where they are, change."""
        seen = self.state.people()
        while True:
            await asyncio.sleep(PRESENCE_POLL)
            try:
                now = self.state.people()
            except Exception:
                logger.debug("Could not look at the people", exc_info=True)
                continue
            if now != seen:
                seen = now
                await self.announce_uri(PRESENCE_URI)

    async def subscribe(self, key: str, session: Any, uri: str) -> None:
        # Another scheme is an extension's resource (or capabilities://): the
        # subscription is accepted and kept, and this module never fires it.
        # Something that is not a URI at all is refused like a bad notebook URI.
        scheme, colon, _ = uri.partition(":")
        foreign = bool(colon) and _SCHEME.fullmatch(scheme) is not None
        scheme = scheme.lower()
        path = (
            None
            if foreign and scheme not in ("notebook", CELL_SCHEME, OUTPUT_SCHEME)
            else self.path_of(uri)
        )
        connection = self.connections.setdefault(key, _Connection(session))
        connection.session = session
        connection.uris.add(uri)
        if path is not None:
            await self._hold(uri, path)
        elif uri == PRESENCE_URI:
            self._hold_presence()

    def forget_connection(self, key: str) -> None:
        """The connection is gone (its HTTP session deleted or expired): release what it held."""
        if self.connections.pop(key, None) is not None:
            logger.debug("Connection %s closed; releasing its subscriptions", key)
            self._release_unused()

    def unsubscribe(self, key: str, uri: str) -> None:
        connection = self.connections.get(key)
        if connection is not None:
            connection.uris.discard(uri)
            if not connection.uris:
                del self.connections[key]
        self._release_unused()

    async def listen(self, uris: list[str]) -> list[str]:
        """Hold the URIs a listen stream asked for; those outside the workspace are left out."""
        held = []
        for uri in uris:
            if uri == PRESENCE_URI:
                self.listened[uri] += 1
                self._hold_presence()
                held.append(uri)
                continue
            try:
                path = self.path_of(uri)
            except Exception:
                logger.info(
                    "A listen stream asked for %r, which names no notebook; it never fires", uri
                )
                continue
            self.listened[uri] += 1
            await self._hold(uri, path)
            held.append(uri)
        return held

    def unlisten(self, uris: list[str]) -> None:
        for uri in uris:
            self.listened[uri] -= 1
            if self.listened[uri] <= 0:
                del self.listened[uri]
        self._release_unused()

    # -- telling them ----------------------------------------------------------

    async def announce(self, path: str, revision: str | None) -> None:
        """`path` is now at `revision`: tell every subscriber of it, once per revision."""
        if path not in self.subscribed_paths() or self._announced.get(path, "") == revision:
            return
        self._announced[path] = revision
        uris = [uri for uri, watched in self._paths.items() if watched == path]
        logger.debug("%s changed (revision %s); announcing %d URI(s)", path, revision, len(uris))
        await self._tell(uris)

    async def announce_uri(self, uri: str) -> None:
        """Tell every subscriber of `uri` (one that names no notebook) that it changed."""
        await self._tell([uri])

    async def _tell(self, uris: list[str]) -> None:
        for uri in uris:
            await self.bus.publish(ResourceUpdated(uri=uri))
        for key, connection in list(self.connections.items()):
            for uri in sorted(connection.uris & set(uris)):
                try:
                    await connection.session.send_resource_updated(uri)
                except Exception:
                    logger.debug("Connection %s is gone; dropping its subscriptions", key)
                    self.connections.pop(key, None)
                    self._release_unused()
                    break

    def observe_store(self) -> None:
        """Hear the server's own writes from the store, as they happen."""
        if self._store_observed:
            return
        self._store_observed = True

        def written(path: str, revision: str) -> None:
            if path in self.subscribed_paths():
                with contextlib.suppress(RuntimeError):
                    asyncio.get_running_loop().create_task(self.announce(path, revision))

        self.state.store.observers.append(written)

    # -- the watcher -----------------------------------------------------------

    async def _revision_now(self, path: str) -> str | None:
        """The revision of the file where notebooks are kept, None when it is gone."""
        try:
            return revision_of(await self.state.store.files.read_bytes(path))
        except Exception:
            return None

    def _ensure_watching(self) -> None:
        self.observe_store()
        if self._watcher is not None and not self._watcher.done():
            return
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            # A context of its own: it outlives the request that started it.
            self._watcher = contextvars.Context().run(loop.create_task, self._watch(self._stop))

    async def close(self, timeout: float = 5.0) -> None:
        """Forget every subscription and stop watching (the server is stopping).

        Waits for every watcher told to stop to end: its blocking wait runs in
        an AnyIO worker thread, which is told to stop only when the task that
        started it is done. Inside Jupyter Server the event loop stops right
        after the extensions do, so a watcher task still pending then would
        never finish, and its non-daemon worker thread would keep the process
        alive for ever.
        """
        self.connections.clear()
        self.listened.clear()
        self._paths.clear()
        self._announced.clear()
        self._stop_watching()
        if self._presence is not None:
            self._presence.cancel()
            self._presence = None
        ending = [task for task in self._ending if not task.done()]
        if not ending:
            return
        _, late = await asyncio.wait(ending, timeout=timeout)
        for task in late:
            logger.warning("The workspace watcher did not stop within %s s; cancelling it", timeout)
            task.cancel()

    def _stop_watching(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._watcher is not None and not self._watcher.done():
            self._ending.add(self._watcher)
            self._watcher.add_done_callback(self._ending.discard)
        self._watcher = None
        self._stop = None

    async def _watch(self, stop: asyncio.Event) -> None:
        files = self.state.store.files
        try:
            async for changed in files.changes(self.subscribed_paths, stop, self.debounce_ms):
                for path in sorted(changed):
                    await self.announce(path, await self._revision_now(path))
        except Exception:
            logger.warning(
                "Watching %s for outside changes failed", files.missing_where, exc_info=True
            )


def feature(events: NotebookEvents) -> Feature:
    """``resources/subscribe``, ``resources/unsubscribe`` and ``subscriptions/listen`` served."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import (
        INVALID_PARAMS,
        EmptyResult,
        SubscribeRequestParams,
        SubscriptionsListenRequestParams,
        UnsubscribeRequestParams,
    )

    async def subscribe(ctx: Any, params: Any) -> Any:
        """``resources/subscribe`` (2025-11-25)."""
        key = connection_key(ctx)
        try:
            await events.subscribe(key, ctx.session, str(params.uri))
            # The session may end without unsubscribing (DELETE, expiry, a client
            # killed): its subscriptions, and the watcher they keep, end with it.
            when_connection_closes(
                ctx,
                "jupyter_mcp_server._protocol.subscriptions",
                lambda: events.forget_connection(key),
            )
        except ToolFailure as error:
            raise MCPError(
                INVALID_PARAMS, f"{error.code}: {error.message}", data={"code": error.code}
            ) from None
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> Any:
        """``resources/unsubscribe`` (2025-11-25)."""
        events.unsubscribe(connection_key(ctx), str(params.uri))
        return EmptyResult()

    streams = ListenHandler(events.bus)

    async def listen(ctx: Any, params: Any) -> Any:
        held = await events.listen(list(params.notifications.resource_subscriptions or ()))
        try:
            return await streams(ctx, params)
        finally:
            events.unlisten(held)

    return Feature(
        "subscriptions",
        serves=(
            Served("resources/subscribe", SubscribeRequestParams, subscribe),
            Served("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe),
            Served("subscriptions/listen", SubscriptionsListenRequestParams, listen),
        ),
    )
