"""Streamable HTTP: toolsets chosen by URL, sessions that survive, and the walls.

`jupyter-mcp-server start --transport streamable-http` runs as a real process
with examples/my-extension and the fixture extensions installed beside it;
the official client connects over both protocol generations, and plain HTTP
requests check the headers. One server serves every test that does not need
its own flags; the token, the refused bind and the shutdown each start theirs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from conftest import ok, server_command, server_environment, text_of
from fixtures import ONLY_OURS, extensions_site, python_path, read_lines
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from rpc import alive, descendants
from servers import ServerProcess, free_port, our_http_server

__all__ = ["extensions_site"]  # the session fixture, used by name

from conftest import CORE_TOOLS

#: fx-gateway's on_server takes this core tool off every server it is part of.
TAKEN_OFF = "interrupt_notebook_session"
#: What `/mcp` serves: the default toolsets (notebooks, my-extension, gateway).
DEFAULT_TOOLS = (CORE_TOOLS - {TAKEN_OFF}) | {"my_tool", "gateway_tool"}
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
STARTED_FIXTURES = (
    "fx-broken-capabilities",
    "fx-broken-start",
    "fx-gateway",
    "fx-hooks",
    "fx-optin",
    "fx-orphan",
    "fx-tag-a",
    "fx-tag-b",
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "walls", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


#: What the HTTP tests' starters yield: the process, its port, URLs and log.
HttpServer = ServerProcess


def markers(server: HttpServer) -> Path:
    """Where the fixture extensions write what they started and stopped."""
    assert server.workspace is not None
    return server.workspace.parent / "markers"


@contextlib.contextmanager
def http_server(root: Path, site: Path, *args: str, **env: str) -> Iterator[HttpServer]:
    """`jupyter-mcp-server start --transport streamable-http` in `root`, with the fixture
    extensions of `site` installed beside it, up once /healthz answers."""
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    with our_http_server(
        workspace,
        *args,
        env={
            "PYTHONPATH": python_path(site),
            "FIXTURE_MARKERS": str(root / "markers"),
            "JUPYTER_MCP_EXTENSIONS": ONLY_OURS,
            **env,
        },
        cwd=root,
        log=root / "server.log",
    ) as running:
        yield running


@pytest.fixture(scope="module")
def server(extensions_site, tmp_path_factory) -> Iterator[HttpServer]:
    """The server most tests share: every fixture installed, gateway taking a tool off."""
    root = tmp_path_factory.mktemp("http")
    with http_server(
        root, extensions_site, "--capability", "kernel.prestart=off", FIXTURE_TAKE_OFF=TAKEN_OFF
    ) as running:
        yield running


@contextlib.asynccontextmanager
async def connect(
    url: str,
    mode: str = "auto",
    headers: dict[str, str] | None = None,
    sessions: list[str] | None = None,
) -> AsyncIterator[Client]:
    """The official client on `url`; `sessions` collects the session id of every response."""

    async def remember(response: Any) -> None:
        if sessions is not None and response.headers.get("mcp-session-id"):
            sessions.append(response.headers["mcp-session-id"])

    async with (
        httpx2.AsyncClient(
            headers=headers or {},
            timeout=httpx2.Timeout(30, read=120),
            event_hooks={"response": [remember]},
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def names(client: Client) -> set[str]:
    listed = [tool.name for tool in (await client.list_tools()).tools]
    assert len(listed) == len(set(listed)), f"a tool is served twice: {sorted(listed)}"
    return set(listed)


async def served_at(url: str, mode: str = "auto") -> set[str]:
    async with connect(url, mode) as client:
        return await names(client)


# --- Plain routes ---------------------------------------------------------------


async def test_healthz_and_toolsets_say_what_is_served(server):
    health = httpx.get(f"{server.base}/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}

    described = httpx.get(f"{server.base}/toolsets")
    assert described.status_code == 200
    toolsets = {entry["name"]: entry for entry in described.json()["toolsets"]}
    for entry in toolsets.values():
        assert {"name", "title", "description", "default", "tools"} <= set(entry)
    assert {name: entry["default"] for name, entry in toolsets.items()} == {
        "notebooks": True,
        "introspection": False,
        "environments": False,
        "runs": False,
        "history": False,
        "my-extension": True,
        "gateway": True,
        "extras": False,
        "lazy": False,
    }
    assert toolsets["notebooks"]["title"] == "Notebooks" and toolsets["notebooks"]["description"]
    # "tools" is what the default selection actually serves: fx-gateway's
    # on_server took one core tool off it, and the opt-in toolsets serve nothing.
    # The notebook view's own tools are offered, served only to clients that show apps.
    assert set(toolsets["notebooks"]["tools"]) == CORE_TOOLS - {TAKEN_OFF}
    assert {"view_notebook", "run_cell_from_view"} <= set(toolsets["notebooks"]["offered"])
    assert toolsets["my-extension"]["tools"] == ["my_tool"]
    assert toolsets["extras"]["tools"] == [] and toolsets["lazy"]["tools"] == []
    assert (
        toolsets["introspection"]["tools"] == []
        and "list_variables" in toolsets["introspection"]["offered"]
    )
    assert toolsets["runs"]["tools"] == [] and "run_cells" in toolsets["runs"]["offered"]
    assert toolsets["history"]["tools"] == [] and "apply_edits" in toolsets["history"]["offered"]
    reported = {tool for entry in toolsets.values() for tool in entry["tools"]}
    assert reported == await served_at(server.url()) == DEFAULT_TOOLS


# --- Selection by URL -------------------------------------------------------------


async def test_the_url_selects_the_toolsets(server):
    default, extras, by_key, only_core, without, only_extras = await asyncio.gather(
        served_at(server.url()),
        served_at(server.url("extras")),
        served_at(server.url("toolsets=extras")),
        served_at(server.url("only=notebooks"), mode="legacy"),
        served_at(server.url("without=my-extension,gateway")),
        served_at(server.url("only=extras")),
    )
    assert default == DEFAULT_TOOLS
    assert extras == by_key == DEFAULT_TOOLS | {"extra_tool"}
    # Exactly the core tools: fx-gateway is not part of this server, so it took nothing off.
    assert only_core == CORE_TOOLS
    assert without == CORE_TOOLS
    assert only_extras == {"extra_tool"}


async def test_a_built_server_is_furnished(server):
    # A server built for one fixture toolset still has the resources the module-level one has.
    async with connect(server.url("only=extras")) as client:
        assert await names(client) == {"extra_tool"}
        assert text_of(await client.call_tool("extra_tool", {})) == "extra"
        advertised = json.loads((await client.read_resource("capabilities://")).contents[0].text)
        assert "myext.snapshots" in advertised["capabilities"]
        described = json.loads(
            (await client.read_resource("jupymcp://capabilities")).contents[0].text
        )
        assert described["schema_version"] == "1.0"
        templates = (await client.list_resource_templates()).resource_templates
        assert any(t.uri_template.startswith("notebook:///") for t in templates)
        # And fx-optin, which is part of this selection, added its own resource.
        assert (await client.read_resource("fixture://extras")).contents[
            0
        ].text == "extras resource"


async def test_both_protocol_generations(server):
    for mode, version in (("legacy", LEGACY), ("auto", MODERN)):
        async with connect(server.url(), mode) as client:
            assert client.protocol_version == version
            assert await names(client) == DEFAULT_TOOLS
            answered = await client.call_tool("my_tool", {"argument": mode})
            assert text_of(answered) == f"{mode} @ {server.workspace.resolve()}"
            kernels = await ok(client, "list_kernels")
            assert "kernels" in kernels


async def test_two_clients_with_different_selections_at_once(server):
    async with (
        connect(server.url("only=notebooks"), "legacy") as core,
        connect(server.url("extras"), "legacy") as wide,
    ):
        core_tools, wide_tools = await asyncio.gather(names(core), names(wide))
        assert core_tools == CORE_TOOLS
        assert wide_tools == DEFAULT_TOOLS | {"extra_tool"}
        listed, extra = await asyncio.gather(
            ok(core, "list_files"), wide.call_tool("extra_tool", {})
        )
        assert "files" in listed and text_of(extra) == "extra"
        assert await names(core) == CORE_TOOLS
        assert (
            await wide.call_tool("interrupt_notebook_session", {"notebook_name": "x.ipynb"})
        ).is_error
        # An extension's resources go where its toolsets do.
        core_resources, wide_resources = await asyncio.gather(
            core.list_resources(), wide.list_resources()
        )
        assert "fixture://extras" not in {str(r.uri) for r in core_resources.resources}
        assert "fixture://extras" in {str(r.uri) for r in wide_resources.resources}


async def test_a_session_survives_other_selections_and_an_extension_waking(server):
    def started() -> list[str]:
        return [line for line in read_lines(markers(server)) if line.startswith("start:")]

    assert "start:fx-lazy" not in started(), "fx-lazy woke before anybody asked for it"
    sessions: list[str] = []
    async with connect(server.url(), "legacy", sessions=sessions) as early:
        before = await names(early)
        assert "lazy_tool" not in before
        assert text_of(await early.call_tool("my_tool", {"argument": "before"})).startswith(
            "before @"
        )

        # Another client selects something else: the early session is untouched.
        assert await served_at(server.url("only=extras"), "legacy") == {"extra_tool"}
        assert text_of(await early.call_tool("my_tool", {"argument": "between"})).startswith(
            "between @"
        )

        # Another client wakes fx-lazy, which changes what the host offers.
        async with connect(server.url("lazy"), "legacy") as waker:
            assert "lazy_tool" in await names(waker)
            assert text_of(await waker.call_tool("lazy_tool", {})) == "awake"
        assert "start:fx-lazy" in started()

        # The early client goes on in the same session, with the tools it had.
        assert text_of(await early.call_tool("my_tool", {"argument": "after"})).startswith(
            "after @"
        )
        assert await names(early) == before
        assert (await ok(early, "list_kernels"))["kernels"] == []
    assert sessions and len(set(sessions)) == 1, (
        f"the early client changed sessions: {set(sessions)}"
    )

    # Clients arriving afterwards get servers built with fx-lazy awake.
    assert "lazy_tool" in await served_at(server.url("only=lazy"))
    assert "lazy_tool" not in await served_at(server.url())


# --- The walls --------------------------------------------------------------------


def raw_request(port: int, head: str) -> int:
    """Send only a request head (no body) and answer the status the server replied with."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head.encode("latin-1"))
        reply = connection.recv(4096).decode("latin-1")
    return int(reply.split(" ", 2)[1])


def test_host_origin_and_size_are_checked(server):
    port = server.port
    toolsets = f"{server.base}/toolsets"

    # Host: another site's name, and names that resolve here but are not ours (DNS rebinding).
    for host in (
        "evil.example",
        f"evil.example:{port}",
        f"127.0.0.1.nip.io:{port}",
        f"localhost.evil.example:{port}",
    ):
        assert httpx.get(toolsets, headers={"Host": host}).status_code == 421, host
        refused = httpx.post(server.url(), headers={**MCP_HEADERS, "Host": host}, json=INITIALIZE)
        assert refused.status_code == 421, host
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert httpx.get(toolsets, headers={"Host": host}).status_code == 200, host

    # Origin: a foreign page is refused, and so is an opaque origin; this server's own is fine.
    for origin in ("http://evil.example", f"http://evil.example:{port}", "null"):
        assert httpx.get(toolsets, headers={"Origin": origin}).status_code == 403, origin
        assert (
            httpx.post(
                server.url(), headers={**MCP_HEADERS, "Origin": origin}, json=INITIALIZE
            ).status_code
            == 403
        )
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}"):
        assert httpx.get(toolsets, headers={"Origin": origin}).status_code == 200, origin
        allowed = httpx.post(
            server.url(), headers={**MCP_HEADERS, "Origin": origin}, json=INITIALIZE
        )
        assert allowed.status_code == 200, (origin, allowed.text)
        session = allowed.headers.get("mcp-session-id")
        if session:
            httpx.delete(server.url(), headers={"mcp-session-id": session, "Origin": origin})

    # A body past 8 MiB is refused on its Content-Length, before it is read.
    too_big = 8 * 1024 * 1024 + 1
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {too_big}\r\n\r\n"
    )
    assert raw_request(port, head) == 413


async def test_bearer_token(extensions_site, tmp_path):
    with http_server(
        tmp_path, extensions_site, "--mcp-token", "s3cret", "--capability", "kernel.prestart=off"
    ) as running:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "Basic s3cret"},
            {"Authorization": "s3cret"},
        ):
            assert httpx.get(f"{running.base}/toolsets", headers=headers).status_code == 401, (
                headers
            )
            assert (
                httpx.post(
                    running.url(), headers={**MCP_HEADERS, **headers}, json=INITIALIZE
                ).status_code
                == 401
            )
        health = httpx.get(f"{running.base}/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        assert (
            httpx.get(
                f"{running.base}/toolsets", headers={"Authorization": "Bearer s3cret"}
            ).status_code
            == 200
        )

        for mode in ("legacy", "auto"):
            async with connect(
                running.url(), mode, headers={"Authorization": "Bearer s3cret"}
            ) as client:
                assert await names(client) == CORE_TOOLS | {"my_tool", "gateway_tool"}
                answered = await client.call_tool("my_tool", {"argument": "authorized"})
                assert text_of(answered).startswith("authorized @")
        with pytest.raises(Exception):  # noqa: B017 - whatever the SDK raises for a 401
            async with connect(
                running.url(), "legacy", headers={"Authorization": "Bearer wrong"}
            ) as client:
                await client.list_tools()


def test_binding_beyond_loopback_needs_a_token(tmp_path):
    refused = subprocess.run(
        server_command(
            tmp_path,
            "--transport",
            "streamable-http",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ),
        env=server_environment(JUPYTER_MCP_TOKEN=""),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "0.0.0.0" in refused.stderr and "--mcp-token" in refused.stderr


# --- Shutting down ----------------------------------------------------------------


async def test_sigterm_stops_kernels_and_extensions(extensions_site, tmp_path):
    with http_server(tmp_path, extensions_site) as running:
        async with connect(running.url("lazy"), "legacy") as client:
            await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            ran = await client.call_tool("execute_code", {"code": "import os; os.getpid()"})
            assert not ran.is_error and ran.structured_content["status"] == "ok", text_of(ran)
            kernel_pid = int(text_of(ran).strip())
        children = descendants(running.process.pid)
        assert kernel_pid in children, "the kernel is not a process this server started"
        running.send_signal(signal.SIGTERM)
        running.process.wait(30)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in children) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert not [pid for pid in children if alive(pid)], running.log_text()
        stopped = sorted(line for line in read_lines(markers(running)) if line.startswith("stop:"))
        assert stopped == sorted(f"stop:{name}" for name in (*STARTED_FIXTURES, "fx-lazy"))


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_sessions_subscriptions_end_with_it_and_sigterm_exits_promptly(
    extensions_site, tmp_path
):
    """A client that subscribed and left without unsubscribing keeps nothing watched, and
    SIGTERM stops the server within seconds with a subscriber still connected."""
    with http_server(tmp_path, extensions_site, JUPYTER_MCP_LOG_LEVEL="DEBUG") as running:
        (running.workspace / "watched.ipynb").write_text(
            json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
        async with connect(running.url(), "legacy") as client:
            await client.subscribe_resource("notebook:///watched.ipynb")
        deadline = time.monotonic() + 10
        while "releasing its subscriptions" not in running.log_text():
            assert time.monotonic() < deadline, running.log_text()[-3000:]
            await asyncio.sleep(0.1)
        async with connect(running.url(), "legacy") as client:
            await client.subscribe_resource("notebook:///watched.ipynb")
            stopping = time.monotonic()
            running.send_signal(signal.SIGTERM)
            while running.process.poll() is None and time.monotonic() - stopping < 15:
                await asyncio.sleep(0.1)
            took = time.monotonic() - stopping
        assert running.process.poll() is not None, f"still running {took:.1f} s after SIGTERM"
        assert took < 5, (took, running.log_text()[-3000:])
