"""Streams a client can resume: each SSE stream's events kept a while, so a client that lost its
connection mid-call reconnects with ``Last-Event-ID`` and hears the rest, each event once.

The SDK's streamable HTTP transport takes an ``EventStore`` (``store_event``,
``replay_events_after``) and, given one, gives every 2025-11-25 POST stream a priming event
with an id and a ``retry``, stores every message it sends, and on a ``GET`` with
``Last-Event-ID`` asks the store to replay. This is that store, with three things the SDK
leaves to it:

- *Sessions never see each other's streams.* The SDK hands every session's transport the one
  store and names a stream by its request id (``"1"``, ``"2"``...), which every session reuses.
  So a stream here belongs to the session it was written for: the HTTP transport binds each
  request to its session's :class:`Namespace` (:func:`serving_session`) before the SDK sees
  it, and the store reads it from the context the SDK's tasks inherit (a session's message
  router runs in the task its opening request started). Event ids are random per stream and
  are honoured only in their own session. An event stored with no namespace bound is never
  replayed: the store fails closed rather than guess whose it is.
- *Nothing lost between the replay and the live stream.* The SDK replays what the store has,
  then starts forwarding new messages; what is stored between the two would reach nobody. So
  the replay here does not hand over: it follows its stream, sending each new event as it is
  stored, until the stream's response (a request's stream ends there) or the client goes.
  It answers the SDK "no stream", which then forwards nothing itself, and every event reaches
  the resumed connection exactly once, in order.
- *Bounded.* At most ``per_stream`` events of one stream and ``total_bytes`` of all (each
  event counted as its JSON plus :data:`EVENT_OVERHEAD`), the oldest dropped first. A client
  resuming after events were dropped hears those still kept (the response is the newest, so
  it is the last to go); one resuming a stream whose response is gone, or an id this session
  never had, is answered ``410`` by the HTTP transport (:meth:`EventStore.resumable`), since
  an empty stream would have it reconnect for ever. A session's streams go when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import secrets
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, StreamId
from mcp.server.streamable_http import EventStore as SDKEventStore
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter

logger = logging.getLogger(__name__)

#: The SDK's name for a session's standalone GET stream, which has no response to end it.
STANDALONE_STREAM = "_GET_stream"
#: Bytes an event is counted beyond its JSON: the record and its place in the indexes.
EVENT_OVERHEAD = 256
#: Defaults: events of one stream, and bytes of all of them.
PER_STREAM = 1000
TOTAL_BYTES = 32 * 1024 * 1024


class Namespace:
    """One HTTP session's streams, by the SDK's stream ids (its request ids)."""

    def __init__(self) -> None:
        self.streams: dict[StreamId, _Stream] = {}
        self.ended = False


_serving: contextvars.ContextVar[Namespace | None] = contextvars.ContextVar(
    "jupyter_mcp_event_namespace", default=None
)


@contextlib.contextmanager
def serving_session(namespace: Namespace) -> Iterator[None]:
    """While a request of `namespace`'s session is served (and in every task it starts)."""
    token = _serving.set(namespace)
    try:
        yield
    finally:
        _serving.reset(token)


@dataclass
class _Stream:
    namespace: Namespace
    stream_id: StreamId
    token: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    #: (sequence number, the message as JSON, its counted size), oldest first.
    events: deque[tuple[int, str, int]] = field(default_factory=deque)
    next_seq: int = 0
    #: The request's response is stored: nothing follows it.
    done: bool = False
    #: The response's sequence number, once stored.
    final_seq: int | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def event_id(self, seq: int) -> EventId:
        return f"{self.token}.{seq}"

    def wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    @property
    def final_kept(self) -> bool:
        return self.final_seq is not None and any(s == self.final_seq for s, _, _ in self.events)


class EventStore(SDKEventStore):
    """The SDK's event store, per session, bounded, replaying each event once (module docstring)."""

    def __init__(self, per_stream: int = PER_STREAM, total_bytes: int = TOTAL_BYTES) -> None:
        self.per_stream = per_stream
        self.total_bytes = total_bytes
        self._by_token: dict[str, _Stream] = {}
        #: Every kept event, oldest first: (stream token, seq) -> counted size.
        self._order: OrderedDict[tuple[str, int], int] = OrderedDict()
        self._bytes = 0
        self._warned = False

    # --- the SDK's interface ----------------------------------------------------------------

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        namespace = _serving.get()
        if namespace is None or namespace.ended:
            # Whose it is cannot be told: an id that resumes nothing.
            if namespace is None and not self._warned:
                self._warned = True
                logger.warning(
                    "An SSE event was sent outside any session's binding: streams cannot be "
                    "resumed with Last-Event-ID (the SDK's tasks no longer inherit the request's "
                    "context?)"
                )
            return f"unkept.{secrets.token_urlsafe(8)}"
        stream = namespace.streams.get(stream_id)
        if stream is None or stream.done:
            # A new request's stream (an id reused after its response starts afresh).
            stream = _Stream(namespace, stream_id)
            namespace.streams[stream_id] = stream
            self._by_token[stream.token] = stream
        seq = stream.next_seq
        stream.next_seq += 1
        if message is None:
            return stream.event_id(seq)  # a priming event: a place to resume from, no message
        data = message.model_dump_json(by_alias=True, exclude_unset=True)
        size = len(data) + EVENT_OVERHEAD
        stream.events.append((seq, data, size))
        self._order[(stream.token, seq)] = size
        self._bytes += size
        if stream_id != STANDALONE_STREAM and isinstance(message, JSONRPCResponse | JSONRPCError):
            stream.done, stream.final_seq = True, seq
        while len(stream.events) > self.per_stream:
            self._drop_oldest_of(stream)
        while self._bytes > self.total_bytes and self._order:
            self._drop_oldest()
        stream.wake()
        return stream.event_id(seq)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send what followed `last_event_id` on its stream, then follow the stream until its
        response or the client's going. Always None: the SDK then forwards nothing itself,
        so no event is sent twice or slips between the replay and the live stream."""
        stream, after = self._find(last_event_id)
        if stream is None:
            return None
        if stream.events and stream.events[0][0] > after + 1:
            logger.warning(
                "A client resumed a stream past events no longer kept (%d dropped); it hears "
                "the %d still kept",
                stream.events[0][0] - after - 1,
                len(stream.events),
            )
        cursor = after
        while True:
            changed = stream.changed
            pending = [(seq, data) for seq, data, _ in stream.events if seq > cursor]
            if not pending:
                if stream.done or stream.namespace.ended:
                    return None  # its response sent (or dropped): nothing follows
                await changed.wait()
                continue
            for seq, data in pending:
                message = jsonrpc_message_adapter.validate_json(data)
                await send_callback(EventMessage(message, stream.event_id(seq)))
                cursor = seq

    # --- this server's ----------------------------------------------------------------------

    def resumable(self, last_event_id: str, namespace: Namespace) -> bool:
        """Whether `namespace`'s session can resume from `last_event_id`: its own stream, still
        going or with its response still kept."""
        stream, _ = self._find(last_event_id, namespace)
        return stream is not None and (not stream.done or stream.final_kept)

    def forget(self, namespace: Namespace) -> None:
        """A session ended: its streams go, and a replay following one of them ends."""
        namespace.ended = True
        for stream in list(namespace.streams.values()):
            self._discard(stream)
        namespace.streams.clear()

    @property
    def kept(self) -> tuple[int, int]:
        """(events kept, their counted bytes)."""
        return len(self._order), self._bytes

    def _find(
        self, event_id: str, namespace: Namespace | None = None
    ) -> tuple[_Stream | None, int]:
        namespace = namespace if namespace is not None else _serving.get()
        token, _, seq = event_id.rpartition(".")
        stream = self._by_token.get(token)
        if stream is None or namespace is None or stream.namespace is not namespace:
            return None, -1
        if not seq.isdigit() or int(seq) >= stream.next_seq:
            return None, -1
        return stream, int(seq)

    def _drop_oldest_of(self, stream: _Stream) -> None:
        seq, _, size = stream.events.popleft()
        self._order.pop((stream.token, seq), None)
        self._bytes -= size

    def _drop_oldest(self) -> None:
        (token, seq), size = self._order.popitem(last=False)
        self._bytes -= size
        stream = self._by_token.get(token)
        if stream is None:
            return
        if stream.events and stream.events[0][0] == seq:
            stream.events.popleft()
        if stream.done and not stream.events:
            # Nothing left to resume: the stream's record goes too.
            self._by_token.pop(token, None)
            if stream.namespace.streams.get(stream.stream_id) is stream:
                del stream.namespace.streams[stream.stream_id]

    def _discard(self, stream: _Stream) -> None:
        for seq, _, size in stream.events:
            self._order.pop((stream.token, seq), None)
            self._bytes -= size
        stream.events.clear()
        self._by_token.pop(stream.token, None)
        stream.wake()
