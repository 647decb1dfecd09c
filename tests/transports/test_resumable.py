"""Resumable streams: a client that loses its connection mid-call resumes with Last-Event-ID.

A real server over streamable HTTP runs `execute_code` of a cell that prints while it sleeps,
with a progress token, spoken as plain HTTP (httpx) so that the connection can be dropped
where the test wants: mid-run on the call's POST stream, again on the resumed stream, and
resumed once more. Every progress notification and the result arrive exactly once, in order,
across the three connections (`progress` counts the notifications, so a lost one is a gap).
Also: another session cannot resume a session's stream, an id nobody issued is 410, and the
store's bounds (per stream, in total) drop the oldest and keep what a resume needs last.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from mcp_types import JSONRPCNotification, JSONRPCResponse
from test_http import MCP_HEADERS, HttpServer, http_server

from jupyter_mcp_server._transports.resumable import EventStore, Namespace, serving_session

EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
STEPS = 8
#: Prints a line every 0.3 s: each is a progress notification of its own (coalesced per 0.25 s).
CODE = (
    "import time\n"
    f"for i in range({STEPS}):\n"
    "    print(f'step {i}', flush=True)\n"
    "    time.sleep(0.3)\n"
    "'all done'"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("resumable")
    with http_server(
        root,
        None,  # type: ignore[arg-type] - no extension site: the core tools alone
        "--capability",
        "kernel.prestart=off",
        JUPYTER_MCP_EXTENSIONS="",
    ) as running:
        (running.workspace / "a.ipynb").write_text(json.dumps(EMPTY_NOTEBOOK))
        yield running


@dataclass
class Event:
    id: str | None
    message: dict[str, Any] | None
    retry: int | None = None


def events_of(response: httpx.Response) -> Iterator[Event]:
    """The server-sent events of a streaming response, as they come."""
    fields: dict[str, str] = {}
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data or fields:
                text = "\n".join(data)
                retry = fields.get("retry")
                yield Event(
                    fields.get("id"),
                    json.loads(text) if text.strip() else None,
                    int(retry) if retry and retry.isdigit() else None,
                )
            fields, data = {}, []
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name:
            fields[name] = value


@dataclass
class Session:
    """An MCP session spoken as plain HTTP."""

    http: httpx.Client
    url: str
    headers: dict[str, str]
    seen: list[Event] = field(default_factory=list)

    @classmethod
    def open(cls, http: httpx.Client, url: str, headers: dict[str, str]) -> Session:
        opened = http.post(
            url,
            headers={**MCP_HEADERS, **headers},
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "resume-tests", "version": "0"},
                },
            },
        )
        assert opened.status_code == 200, opened.text
        headers = {
            **MCP_HEADERS,
            **headers,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        session = cls(http, url, headers)
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(url, headers=headers, json=initialized).status_code == 202
        return session

    def call(self, request_id: int, tool: str, arguments: dict[str, Any], **meta: Any) -> Any:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        return self.http.stream("POST", self.url, headers=self.headers, json=body)

    def resume(self, last_event_id: str) -> Any:
        headers = {**self.headers, "Accept": "text/event-stream", "last-event-id": last_event_id}
        return self.http.stream("GET", self.url, headers=headers)

    def read(self, response: httpx.Response, *, until_progress: int | None = None) -> bool:
        """Events into `seen` until the response (True), `until_progress` more progress
        notifications (False: the caller then drops the connection), or the stream's end."""
        assert response.status_code == 200, response.read()
        counted = 0
        for event in events_of(response):
            self.seen.append(event)
            message = event.message or {}
            if "result" in message or "error" in message:
                return True
            if message.get("method") == "notifications/progress":
                counted += 1
                if until_progress is not None and counted >= until_progress:
                    return False
        return False

    @property
    def last_id(self) -> str:
        ids = [event.id for event in self.seen if event.id]
        assert ids, "no event carried an id"
        return ids[-1]


def run_dropped_twice(url: str, headers: dict[str, str], notebook: str) -> None:
    """`execute_code` with progress; the POST stream dropped mid-run, the resumed stream
    dropped too, resumed again: every progress notification and the result exactly once."""
    with httpx.Client(timeout=httpx.Timeout(30, read=60)) as http:
        session = Session.open(http, url, headers)
        arguments = {"code": CODE, "notebook_name": notebook}
        with session.call(7, "execute_code", arguments, progressToken="resume-1") as posted:
            assert session.read(posted, until_progress=2) is False
            first = list(session.seen)
        assert first[0].id and first[0].message is None and first[0].retry == 1000  # priming
        time.sleep(0.8)  # the run goes on while nobody listens
        with session.resume(session.last_id) as resumed:
            assert session.read(resumed, until_progress=2) is False
        time.sleep(0.5)
        with session.resume(session.last_id) as resumed_again:
            assert session.read(resumed_again) is True
        messages = [event.message for event in session.seen if event.message is not None]
        progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
        results = [m for m in messages if m.get("id") == 7]
        ids = [event.id for event in session.seen if event.id]
        assert len(ids) == len(set(ids)), ids  # no event twice
        counts = [int(p["progress"]) for p in progress]
        assert counts == list(range(counts[0], counts[0] + len(counts))), counts  # no gap
        dropped_at = len([e for e in first if e.message])
        assert 2 <= dropped_at < len(progress), (dropped_at, len(progress))  # truly mid-run
        said = "\n".join(p.get("message", "") for p in progress)
        for step in range(STEPS):
            assert said.count(f"step {step}\n") + said.endswith(f"step {step}") == 1, said
        assert len(results) == 1 and not results[0]["result"].get("isError"), results
        text = json.dumps(results[0]["result"])
        assert "step 7" in text and "all done" in text
        assert {p["progressToken"] for p in progress} == {"resume-1"}
        http.delete(url, headers=session.headers)


def test_a_dropped_call_resumes_with_every_progress_notification_and_its_result_once(server):
    started = time.monotonic()
    run_dropped_twice(server.url(), {}, "a.ipynb")
    print(f"\nexecute_code, dropped twice and resumed: {time.monotonic() - started:.1f} s")
    assert "Traceback" not in server.log_text()


def test_a_stream_resumes_only_in_its_own_session_and_a_gone_one_is_410(server):
    with httpx.Client(timeout=30) as http:
        alice = Session.open(http, server.url(), {})
        bob = Session.open(http, server.url(), {})
        with alice.call(1, "list_files", {}) as answered:
            assert alice.read(answered) is True
        priming = alice.seen[0].id
        assert priming and alice.seen[0].message is None
        # Alice's own: the whole stream again, from its priming event.
        with alice.resume(priming) as again:
            replayed: list[Event] = []
            for event in events_of(again):
                replayed.append(event)
            assert [e.message for e in replayed] == [alice.seen[-1].message]
        # Bob's request ids are Alice's too (both say 1), but never her stream.
        with bob.call(1, "list_files", {}) as answered:
            assert bob.read(answered) is True
        for stranger in (priming, alice.last_id, "made-up.3", "", "x" * 300):
            if not stranger:
                continue
            with bob.resume(stranger) as refused:
                assert refused.status_code == 410, (stranger, refused.read())
                assert "Last-Event-ID" in refused.read().decode()
        for session in (alice, bob):
            http.delete(server.url(), headers=session.headers)


# --- The store's bounds, on the store itself ----------------------------------------------


def notification(n: int, padding: int = 0) -> JSONRPCNotification:
    return JSONRPCNotification(
        jsonrpc="2.0",
        method="notifications/progress",
        params={"progressToken": "t", "progress": n, "message": "x" * padding},
    )


def response(request_id: int) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"content": []})


async def replayed_after(store: EventStore, event_id: str) -> list[Any]:
    sent: list[Any] = []

    async def send(event: Any) -> None:
        sent.append(event.message)

    assert await asyncio.wait_for(store.replay_events_after(event_id, send), 5) is None
    return sent


async def test_the_store_keeps_each_stream_and_all_within_bounds_oldest_dropped():
    store = EventStore(per_stream=5, total_bytes=4000)
    session = Namespace()
    with serving_session(session):
        priming = await store.store_event("1", None)
        for n in range(1, 9):
            await store.store_event("1", notification(n))
        last = await store.store_event("1", response(1))
        # At most 5 of the stream's events: the 4 newest notifications and the response.
        sent = await replayed_after(store, priming)
        assert [m.params["progress"] for m in sent[:-1]] == [5, 6, 7, 8] and sent[-1].id == 1
        assert await replayed_after(store, last) == []  # after the response, nothing
        assert store.resumable(priming, session)

        # In total: every stream's oldest go first, a stream's response the last of its own.
        other = await store.store_event("2", None)
        for n in range(1, 5):
            await store.store_event("2", notification(n, padding=600))
        events, kept_bytes = store.kept
        assert kept_bytes <= 4000 and events < 9
        assert not store.resumable(priming, session)  # stream 1's response is gone: 410
        assert store.resumable(other, session)  # stream 2 still runs
        assert [m.params["progress"] for m in await replayed_after_live(store, other, "2")][-1] == 4

    # Another session's namespace cannot resume it, nor can a request bound to none.
    assert not store.resumable(other, Namespace())
    assert store.resumable(other, session)
    store.forget(session)
    assert not store.resumable(other, session) and store.kept == (0, 0)


async def replayed_after_live(store: EventStore, event_id: str, stream: str) -> list[Any]:
    """A replay that follows its stream: it ends when the stream's response is stored."""
    sent: list[Any] = []

    async def send(event: Any) -> None:
        sent.append(event.message)

    replay = asyncio.ensure_future(store.replay_events_after(event_id, send))
    await asyncio.sleep(0.05)
    assert not replay.done()  # still following: the stream has no response yet
    await store.store_event(stream, response(2))
    assert await asyncio.wait_for(replay, 5) is None
    assert sent[-1].id == 2
    return [m for m in sent if getattr(m, "method", None)]


def test_a_namespace_is_needed_to_store_what_can_be_resumed():
    async def unbound() -> str:
        return await EventStore().store_event("1", notification(1))

    event_id = asyncio.run(unbound())
    assert not EventStore().resumable(event_id, Namespace())
