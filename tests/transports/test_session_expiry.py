"""HTTP sessions whose clients go away without DELETE expire, and take their state with them.

A real `jupyter-mcp-server start --transport streamable-http` with a short
``--session-timeout``; the official `mcp` client, in a process of its own that
is SIGKILLed (a killed client, a closed laptop) or in this one leaving without
DELETE. The session expires, the log says so and what became of its kernels
(as on DELETE: kept for any client until ``--idle-timeout``), the client that
comes back gets the protocol's 404 and initializes again, and what the session
had chosen is not kept (``connections_kept`` in ``jupymcp://capabilities``).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import nbformat
from conftest import ok, server_environment
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from servers import our_http_server

LEGACY = "2025-11-25"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SESSION_TIMEOUT = 2.0

#: The official client in a process of its own: it opens a notebook, runs code, prints its
#: session id and waits to be killed.
KILLED_CLIENT = """
import asyncio, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def main(url):
    sessions = []
    async def remember(response):
        if response.headers.get("mcp-session-id"):
            sessions.append(response.headers["mcp-session-id"])
    async with httpx2.AsyncClient(timeout=60, event_hooks={"response": [remember]}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            await client.call_tool("use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            await client.call_tool("execute_code", {"code": "x = 41"})
            print(sessions[-1], flush=True)
            await asyncio.sleep(3600)

asyncio.run(main(sys.argv[1]))
"""


@contextlib.contextmanager
def http_server(root: Path, *args: str) -> Iterator[tuple[str, Path, Path]]:
    """The server on loopback, up once /healthz answers: (its /mcp URL, its workspace, its log)."""
    workspace = root / "workspace"
    workspace.mkdir()
    log = root / "server.log"
    with our_http_server(workspace, *args, cwd=root, log=log) as server:
        yield server.url(), workspace, log


@contextlib.asynccontextmanager
async def connect(
    url: str, statuses: list[int] | None = None, *, delete: bool = True
) -> AsyncIterator[Client]:
    """The official client; `statuses` collects every response's HTTP status."""

    async def remember(response: Any) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async with (
        httpx2.AsyncClient(
            timeout=httpx2.Timeout(30, read=120), event_hooks={"response": [remember]}
        ) as http,
        Client(
            streamable_http_client(url, http_client=http, terminate_on_close=delete), mode="legacy"
        ) as client,
    ):
        yield client


def wait_for_line(log: Path, needle: str, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if needle in line:
                return line
        time.sleep(0.1)
    raise AssertionError(
        f"no {needle!r} in the server's log within {seconds} s:\n{log.read_text(errors='replace')}"
    )


async def self_description(client: Client) -> dict[str, Any]:
    read = await client.read_resource("jupymcp://capabilities")
    return json.loads(read.contents[0].text)


def post(url: str, session: str, message: dict[str, Any]) -> httpx.Response:
    headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
    return httpx.post(url, headers=headers, json={"jsonrpc": "2.0", **message}, timeout=30)


async def test_a_killed_clients_session_expires_as_if_deleted_and_the_client_initializes_again(
    tmp_path,
):
    with http_server(
        tmp_path, "--session-timeout", str(SESSION_TIMEOUT), "--capability", "kernel.prestart=off"
    ) as (url, _workspace, log):
        client = subprocess.Popen(
            [sys.executable, "-c", KILLED_CLIENT, url],
            stdout=subprocess.PIPE,
            env=server_environment(),
        )
        try:
            assert client.stdout is not None
            session = client.stdout.readline().decode().strip()
            assert session, "the client printed no session id"
        finally:
            client.kill()
            client.wait()

        said = wait_for_line(log, f"HTTP session {session[:8]}… expired")
        assert "--session-timeout 2 s" in said and "n.ipynb" in said and "--idle-timeout" in said, (
            said
        )
        assert "404" in said, said

        # The client comes back on its old session: the protocol's 404, nothing served.
        back = post(url, session, {"id": 2, "method": "tools/list", "params": {}})
        assert back.status_code == 404, (back.status_code, back.text)

        # It initializes again: the kernel of the notebook is still there, as after a DELETE,
        # and the dead session's choices are not kept (only this session's are).
        async with connect(url) as again:
            await ok(again, "use_notebook", {"notebook_name": "n.ipynb", "mode": "connect"})
            ran = await ok(again, "execute_code", {"code": "print(x + 1)"})
            assert ran["status"] == "ok"
            sessions = (await self_description(again))["sessions"]
            assert sessions["http_session_timeout_seconds"] == SESSION_TIMEOUT
            assert sessions["connections_kept"] == 1, sessions


async def test_sessions_left_without_delete_expire_while_a_quiet_client_keeps_its_own(tmp_path):
    with http_server(
        tmp_path, "--session-timeout", str(SESSION_TIMEOUT), "--capability", "kernel.prestart=off"
    ) as (url, workspace, log):
        nbformat.write(nbformat.v4.new_notebook(), workspace / "n.ipynb")
        async with connect(url) as quiet:
            await ok(quiet, "read_notebook", {"notebook_name": "n.ipynb"})
            # Three clients read the notebook (which a connection keeps) and leave without DELETE.
            for _ in range(3):
                async with connect(url, delete=False) as client:
                    await ok(client, "read_notebook", {"notebook_name": "n.ipynb"})
            assert (await self_description(quiet))["sessions"]["connections_kept"] == 4
            deadline = time.monotonic() + 20
            while (
                log.read_text(errors="replace").count("expired") < 3 and time.monotonic() < deadline
            ):
                time.sleep(0.1)
            time.sleep(SESSION_TIMEOUT)
            # The quiet client said nothing for longer than the timeout, but it is still
            # connected (its stream open): its session lives, and only its choices are kept.
            assert (await self_description(quiet))["sessions"]["connections_kept"] == 1
            await ok(quiet, "read_notebook", {"notebook_name": "n.ipynb"})
        logged = log.read_text(errors="replace")
        assert logged.count("expired") == 3, logged
