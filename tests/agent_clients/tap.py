"""Transparent taps on the server's transports: what protocol version a client negotiated.

The stand-in sees only what reaches the model; a tap sees what the client and
the server agreed on, which decides the shape of each result. Over stdio, run
as ``python tap.py LOG -- COMMAND...``: it starts COMMAND and copies the
client's stdin to it and its stdout back, byte for byte. Over HTTP, `HttpTap`
is a loopback reverse proxy in front of the server, passing every request and
response (SSE streams as they come). Both write to LOG (JSON lines) each
request's method and the protocol version it carries, and the version the
server answered `initialize` with; and to `results_log(LOG)` each `tools/call`
made (its id, tool and arguments) and the server's raw result for it, so a
test can compare what a client handed its model with what the server said.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any


def results_log(log: Path) -> Path:
    """Where a tap writes the tool calls and the server's raw results, beside its LOG."""
    return log.with_name(f"{log.stem}.results.jsonl")


def _call_or_result(message: Any, side: str) -> dict | None:
    """A client's `tools/call` (id, tool, arguments) or the server's result for one."""
    if not isinstance(message, dict):
        return None
    if side == "client" and message.get("method") == "tools/call":
        params = message.get("params") or {}
        return {
            "call": message.get("id"),
            "tool": params.get("name"),
            "arguments": params.get("arguments"),
        }
    result = message.get("result")
    if side == "server" and isinstance(result, dict) and "content" in result:
        return {"result_of": message.get("id"), "result": result}
    return None


def _pump(
    source: IO[bytes],
    sink: IO[bytes],
    logs: tuple[IO[str], IO[str]],
    side: str,
    lock: threading.Lock,
) -> None:
    log, results = logs
    for line in iter(source.readline, b""):
        # Logged before it is passed on: a client may stop the server (and this tap) the moment
        # it has the last result, and the log must still hold that result.
        seen = _seen(line, side)
        with contextlib.suppress(ValueError):
            called = _call_or_result(json.loads(line), side)
            if called:
                with lock:
                    results.write(json.dumps(called) + "\n")
                    results.flush()
        if seen:
            with lock:
                log.write(json.dumps(seen) + "\n")
                log.flush()
        sink.write(line)
        sink.flush()
    sink.close()


def _seen(line: bytes, side: str, header: str | None = None) -> dict | None:
    """What a message says of the protocol: a client's request with the version it asked for
    (in `initialize`, in the HTTP header, or on every request of the 2026-07-28 generation),
    a server's answer naming the version it chose. Nothing else is written down."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    if side == "client" and "method" in message:
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        version = params.get("protocolVersion") if message["method"] == "initialize" else None
        version = version or meta.get("io.modelcontextprotocol/protocolVersion") or header
        seen = {"from": side, "method": message["method"], "version": version}
        if message["method"] in ("initialize", "server/discover"):
            seen["client_info"] = params.get("clientInfo") or meta.get(
                "io.modelcontextprotocol/clientInfo"
            )
        return seen
    result = message.get("result")
    if side == "server" and isinstance(result, dict) and "protocolVersion" in result:
        return {"from": side, "version": result["protocolVersion"]}
    return None


#: Headers a proxy does not pass on as they came (hop by hop, or that it sets itself).
HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "accept-encoding"}


class HttpTap:
    """A loopback reverse proxy in front of the server at `port`, logging to `log`."""

    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.log = log
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def write(self, seen: dict[str, Any], log: Path | None = None) -> None:
        with self._lock, (log or self.log).open("a", encoding="utf-8") as out:
            out.write(json.dumps(seen) + "\n")

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        """Yields the tap's base URL (use it where the server's would go)."""
        tap = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                tap._forward(self)

            do_POST = do_DELETE = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{self._server.server_address[1]}"
        finally:
            self._server.shutdown()
            self._server.server_close()

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        header = handler.headers.get("MCP-Protocol-Version")
        messages = []
        with contextlib.suppress(ValueError):
            parsed = json.loads(body) if body else None
            messages = parsed if isinstance(parsed, list) else [parsed] if parsed else []
        initializing = calling = False
        for message in messages:
            seen = _seen(json.dumps(message).encode(), "client", header)
            if seen:
                self.write(seen)
                initializing |= seen["method"] == "initialize"
            called = _call_or_result(message, "client")
            if called:
                self.write(called, results_log(self.log))
                calling = True
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP}
        upstream = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            upstream.request(handler.command, handler.path, body or None, headers)
            response = upstream.getresponse()
        except OSError:
            handler.send_error(502)
            return
        handler.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP:
                handler.send_header(key, value)
        length = response.getheader("Content-Length")
        if length is not None:  # a whole answer: as it came
            data = response.read()
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            # Logged before it is passed on: the client may end the moment it has the answer.
            self._answered(data, initializing)
            if calling:
                self._results(data)
            handler.wfile.write(data)
        else:  # a stream (SSE): passed on chunk by chunk as it comes
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            kept = b""
            with contextlib.suppress(OSError):
                while chunk := response.read1(65536):
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    handler.wfile.flush()
                    if calling or (initializing and len(kept) < 65536):
                        kept += chunk
                self._answered(kept, initializing)
                if calling:
                    self._results(kept)
                handler.wfile.write(b"0\r\n\r\n")
        upstream.close()

    def _results(self, data: bytes) -> None:
        """The results of tool calls in an answer: a JSON message (or batch), or SSE events."""
        texts = [data]
        if not data.lstrip().startswith((b"{", b"[")):
            texts = [line[5:] for line in data.splitlines() if line.startswith(b"data:")]
        for text in texts:
            with contextlib.suppress(ValueError):
                parsed = json.loads(text)
                for message in parsed if isinstance(parsed, list) else [parsed]:
                    called = _call_or_result(message, "server")
                    if called:
                        self.write(called, results_log(self.log))

    def _answered(self, data: bytes, initializing: bool) -> None:
        found = re.search(rb'"protocolVersion"\s*:\s*"([^"]+)"', data) if initializing else None
        if found:
            self.write({"from": "server", "version": found.group(1).decode()})


def main() -> int:
    log_path, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: tap.py LOG -- COMMAND..."
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    # A client that stops the tap stops the server with it (it would see its stdin close
    # anyway, but a signal is quicker and leaves no kernel behind).
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda signum, frame: server.send_signal(signum))
    lock = threading.Lock()
    results_path = results_log(Path(log_path))
    with (
        open(log_path, "a", encoding="utf-8") as log,
        open(results_path, "a", encoding="utf-8") as results,
    ):
        inbound = threading.Thread(
            target=_pump,
            args=(sys.stdin.buffer, server.stdin, (log, results), "client", lock),
            daemon=True,
        )
        inbound.start()
        _pump(server.stdout, sys.stdout.buffer, (log, results), "server", lock)
        return server.wait()


if __name__ == "__main__":
    sys.exit(main())
