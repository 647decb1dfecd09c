"""The HTTP walls under attack: each refused with the right status, nothing served.

test_http.py checks that each wall exists; this file throws at them what an
attacker would: Host headers that resolve to loopback but are not ours (DNS
rebinding), Origins dressed up as ours, tokens that are almost right, bodies
past the limit with and without a length, and clients that send their
request a byte at a time (slowloris) or never finish their body. A refusal
must carry no session id and none of what the server would have served, and
slow clients must not keep anybody else waiting.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_http import INITIALIZE, MCP_HEADERS, HttpServer, http_server

TOKEN = "s3cret-token-value"
HEAD_TIMEOUT = 2.0
BODY_TIMEOUT = 3.0
SECRET_MARKERS = ("mcp-session-id", "list_files", "use_notebook", "serverInfo", "toolsets")


@pytest.fixture(scope="module")
def walled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("walls")
    with http_server(
        root,
        None,
        "--mcp-token",
        TOKEN,
        "--capability",
        "kernel.prestart=off",
        JUPYTER_MCP_HTTP_HEAD_TIMEOUT=str(HEAD_TIMEOUT),
        JUPYTER_MCP_HTTP_BODY_TIMEOUT=str(BODY_TIMEOUT),
    ) as server:
        yield server


def raw(port: int, data: bytes, read_timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are, answer (status, headers, body) of the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as connection:
        connection.sendall(data)
        reply = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := connection.recv(65536):
                reply += chunk
                if b"\r\n\r\n" in reply:
                    head, _, body = reply.partition(b"\r\n\r\n")
                    length = next(
                        (
                            int(line.split(b":", 1)[1])
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length:")
                        ),
                        None,
                    )
                    if length is not None and len(body) >= length:
                        break
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {
        k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
    }
    return int(lines[0].split(" ", 2)[1]), headers, body


def request_head(method: str, path: str, headers: dict[str, str]) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        + "\r\n"
    ).encode("latin-1")


def assert_nothing_served(status: int, headers: dict[str, str], body: bytes, expected: int) -> None:
    assert status == expected, (status, body[:300])
    assert "mcp-session-id" not in headers
    text = body.decode("utf-8", "replace")
    assert "error" in json.loads(text)
    for marker in SECRET_MARKERS:
        assert marker not in text, f"a refusal said {marker!r}: {text}"


def authorized(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}", **(extra or {})}


ROUTES = [
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/toolsets"),
    ("GET", "/mcp?only=notebooks"),
]


def test_dns_rebinding_hosts_are_refused(walled):
    port = walled.port
    hosts = [
        "evil.example",
        f"evil.example:{port}",
        f"127.0.0.1.nip.io:{port}",
        f"localhost.evil.example:{port}",
        f"127.0.0.2:{port}",
        f"127.1:{port}",
        f"2130706433:{port}",
        f"0x7f000001:{port}",
        f"0.0.0.0:{port}",
        f"[::ffff:127.0.0.1]:{port}",
        f"localhost@evil.example:{port}",
        f"evil.example#@localhost:{port}",
        f"localhost:{port}@evil.example",
        f"evil.example\\@localhost:{port}",
        f"localhost%2eevil.example:{port}",
        f"xn--localhost-.example:{port}",
        f"LOCALHOST.evil.example:{port}",
        "",
        " ",
        f"localhost:{port}, evil.example",
    ]
    tried = 0
    for host in hosts:
        for method, path in ROUTES:
            body = json.dumps(INITIALIZE).encode() if method == "POST" else b""
            head = request_head(
                method, path, {**authorized(), "Host": host, "Content-Length": str(len(body))}
            )
            assert_nothing_served(*raw(port, head + body), expected=421)
            tried += 1
        # /healthz is behind the Host wall too.
        assert raw(port, request_head("GET", "/healthz", {"Host": host}))[0] == 421
    # No Host at all (HTTP/1.0), and two of them.
    assert raw(port, b"GET /toolsets HTTP/1.0\r\n\r\n")[0] in (400, 421)
    two = (
        request_head("GET", "/toolsets", authorized({"Host": f"localhost:{port}"}))[:-2]
        + b"Host: evil.example\r\n\r\n"
    )
    assert raw(port, two)[0] in (400, 421)
    # The real names still work.
    for host in (
        f"localhost:{port}",
        f"127.0.0.1:{port}",
        f"[::1]:{port}",
        "localhost",
        f"LocalHost:{port}",
    ):
        status, _, body = raw(
            port, request_head("GET", "/toolsets", {**authorized(), "Host": host})
        )
        assert status == 200, (host, body[:200])
    print(f"\nwalls: {tried} rebinding requests refused with 421")


def test_foreign_origins_are_refused(walled):
    port = walled.port
    origins = [
        "http://evil.example",
        f"http://evil.example:{port}",
        "null",
        "file://",
        f"http://127.0.0.1.nip.io:{port}",
        f"http://localhost.evil.example:{port}",
        f"http://localhost@evil.example:{port}",
        "chrome-extension://abcdef",
        f"https://evil.example/http://localhost:{port}",
        "http://[::ffff:7f00:1]",
        f"http://127.0.0.2:{port}",
        "http://0.0.0.0",
        f"http://evil.example#@localhost:{port}",
    ]
    for origin in origins:
        for method, path in ROUTES:
            body = json.dumps(INITIALIZE).encode() if method == "POST" else b""
            head = request_head(
                method,
                path,
                {
                    **authorized(),
                    "Host": f"127.0.0.1:{port}",
                    "Origin": origin,
                    "Content-Length": str(len(body)),
                },
            )
            assert_nothing_served(*raw(port, head + body), expected=403)
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}", f"http://[::1]:{port}"):
        assert (
            httpx.get(
                f"{walled.base}/toolsets", headers={**authorized(), "Origin": origin}
            ).status_code
            == 200
        )


def test_missing_and_wrong_tokens_are_refused(walled):
    port = walled.port
    wrong = [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN.upper()}"},
        {"Authorization": f"Bearer{TOKEN}"},
        {"Authorization": f"Token {TOKEN}"},
        {"Cookie": f"token={TOKEN}"},
        {"X-MCP-Token": TOKEN},
        {"Authorization": f"Bearer {TOKEN} {TOKEN}"},
    ]
    for headers in wrong:
        for method, path in [*ROUTES, ("POST", f"/mcp?token={TOKEN}")]:
            body = json.dumps(INITIALIZE).encode() if method == "POST" else b""
            head = request_head(
                method,
                path,
                {
                    **MCP_HEADERS,
                    "Host": f"127.0.0.1:{port}",
                    **headers,
                    "Content-Length": str(len(body)),
                },
            )
            status, answered, text = raw(port, head + body)
            assert_nothing_served(status, answered, text, expected=401)
            assert answered.get("www-authenticate", "").startswith("Bearer")
    # /healthz needs no token and says nothing but its status.
    health = httpx.get(f"{walled.base}/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    # The right token, with the scheme in any case, gets in.
    for scheme in ("Bearer", "bearer", "BEARER"):
        answered = httpx.post(
            walled.url(),
            headers={**MCP_HEADERS, "Authorization": f"{scheme} {TOKEN}"},
            json=INITIALIZE,
        )
        assert answered.status_code == 200, answered.text
        session = answered.headers.get("mcp-session-id")
        if session:
            httpx.delete(
                walled.url(),
                headers={"mcp-session-id": session, "Authorization": f"Bearer {TOKEN}"},
            )


def test_oversized_bodies_are_refused_with_and_without_a_length(walled):
    port = walled.port
    limit = 8 * 1024 * 1024
    host = {"Host": f"127.0.0.1:{port}"}
    for length in (str(limit + 1), "99999999999999999999", "-1", "1e9", "0x10", "12 34", "+5"):
        head = request_head("POST", "/mcp", {**authorized(), **host, "Content-Length": length})
        status, headers, body = raw(port, head)
        assert status in (400, 413), (length, status, body)
        assert "mcp-session-id" not in headers

    def chunked(total: int, chunk: int = 1 << 20) -> bytes:
        head = request_head(
            "POST", "/mcp", {**authorized(), **host, "Transfer-Encoding": "chunked"}
        )
        piece = b"x" * chunk
        body = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(total // chunk))
        return head + body + b"0\r\n\r\n"

    # Past the limit in chunks, no Content-Length: a 413, not a dropped connection.
    started = time.monotonic()
    status, headers, body = raw(port, chunked(limit + (1 << 20)), read_timeout=30)
    assert_nothing_served(status, headers, body, expected=413)
    assert time.monotonic() - started < 20
    # Sent in chunks and under the limit: read whole and handled (here: not JSON-RPC, 400).
    small = request_head("POST", "/mcp", {**authorized(), **host, "Transfer-Encoding": "chunked"})
    payload = json.dumps(INITIALIZE).encode()
    pieces = [payload[i : i + 7] for i in range(0, len(payload), 7)]
    status, headers, body = raw(
        port, small + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    )
    assert status == 200, body[:300]
    if headers.get("mcp-session-id"):
        httpx.delete(
            walled.url(),
            headers={
                "mcp-session-id": headers["mcp-session-id"],
                "Authorization": f"Bearer {TOKEN}",
            },
        )
    # A huge head without the token is refused like any other.
    status, headers, body = raw(
        port,
        request_head("POST", "/mcp", {**host, "X-Big": "y" * (1 << 20), "Content-Length": "0"}),
    )
    assert status in (400, 401, 413, 431) and "mcp-session-id" not in headers, (status, body[:200])
    # And the server still serves.
    assert httpx.get(f"{walled.base}/healthz").status_code == 200


def test_slow_clients_do_not_block_others_and_are_dropped(walled):
    port = walled.port
    slow_heads: list[socket.socket] = []
    stop = threading.Event()
    dropped: list[float] = []
    opened = time.monotonic()
    head = request_head(
        "POST", "/mcp", {**authorized(), "Host": f"127.0.0.1:{port}", "Content-Length": "100000"}
    )

    def trickle(connection: socket.socket, data: bytes) -> None:
        """One byte every 0.2 s until the server hangs up."""
        try:
            for byte in data:
                if stop.is_set():
                    return
                connection.sendall(bytes([byte]))
                time.sleep(0.2)
        except OSError:
            pass

    def watch(connection: socket.socket) -> None:
        connection.settimeout(30)
        try:
            while connection.recv(4096):
                pass
        except TimeoutError:
            return  # still open: not dropped
        except OSError:
            pass  # reset: the server closed it with trickled bytes unread, which is a drop too
        dropped.append(time.monotonic() - opened)

    threads = []
    for index in range(60):
        connection = socket.create_connection(("127.0.0.1", port))
        slow_heads.append(connection)
        if index % 3 == 0:
            data = b""  # connects and says nothing
        elif index % 3 == 1:
            data = head  # a head, a byte at a time
        else:
            connection.sendall(head)  # a whole head, then a body a byte at a time
            data = b"{" * 100000
        threads += [
            threading.Thread(target=trickle, args=(connection, data), daemon=True),
            threading.Thread(target=watch, args=(connection,), daemon=True),
        ]
    for thread in threads:
        thread.start()
    try:
        # Everybody else is served promptly meanwhile.
        for _ in range(10):
            started = time.monotonic()
            assert httpx.get(f"{walled.base}/healthz", timeout=5).status_code == 200
            answered = httpx.post(
                walled.url("only=notebooks"), headers=authorized(), json=INITIALIZE, timeout=5
            )
            assert answered.status_code == 200
            assert time.monotonic() - started < 2
            time.sleep(0.1)
        # Each slow connection is dropped once its deadline passes.
        deadline = time.monotonic() + BODY_TIMEOUT + HEAD_TIMEOUT + 10
        while len(dropped) < len(slow_heads) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(dropped) == len(slow_heads), (
            f"{len(slow_heads) - len(dropped)} slow connections still open"
        )
        assert max(dropped) < HEAD_TIMEOUT + BODY_TIMEOUT + 5
    finally:
        stop.set()
        for connection in slow_heads:
            connection.close()
    # A slow head gets a 408 saying why; so does a slow body.
    with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
        connection.sendall(head[:20])
        reply = connection.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
    with socket.create_connection(("127.0.0.1", port), timeout=15) as connection:
        connection.sendall(head + b"{")
        reply = connection.recv(4096)
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert b"mcp-session-id" not in reply.lower()
    print(f"\nwalls: {len(slow_heads)} slow connections dropped after at most {max(dropped):.1f} s")


def test_a_keep_alive_connection_is_timed_out_between_requests(walled, tmp_path: Path):
    # After a response, waiting for the next head is bounded too (uvicorn's keep-alive timeout).
    with socket.create_connection(("127.0.0.1", walled.port), timeout=20) as connection:
        connection.sendall(request_head("GET", "/healthz", {"Host": f"127.0.0.1:{walled.port}"}))
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            chunk = connection.recv(4096)
            assert chunk, first
            first += chunk
        assert first.startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        connection.sendall(b"GET /heal")  # and then nothing
        rest = connection.recv(4096)
        while rest and not rest.endswith(b"}"):
            more = connection.recv(4096)
            if not more:
                break
            rest += more
        assert time.monotonic() - started < HEAD_TIMEOUT + 5
        assert rest == b"" or rest.startswith(b"HTTP/1.1 408"), rest
