"""A transparent tap on a stdio MCP server: what protocol version a client negotiated.

Run as ``python tap.py LOG -- COMMAND...``: starts COMMAND and copies the
client's stdin to it and its stdout back, byte for byte, writing to LOG (JSON
lines) each request's method and the protocol version it carries, and the
version the server answered `initialize` with. The
stand-in sees only what reaches the model; this sees what the client and the
server agreed on, which is what decides the shape of each result.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from typing import IO


def _pump(
    source: IO[bytes], sink: IO[bytes], log: IO[str], side: str, lock: threading.Lock
) -> None:
    for line in iter(source.readline, b""):
        sink.write(line)
        sink.flush()
        seen = _seen(line, side)
        if seen:
            with lock:
                log.write(json.dumps(seen) + "\n")
                log.flush()
    sink.close()


def _seen(line: bytes, side: str) -> dict | None:
    """What a message says of the protocol: a client's request with the version it asked for
    (in `initialize`, or on every request of the 2026-07-28 generation), a server's answer
    naming the version it chose. Nothing else is written down."""
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
        version = version or meta.get("io.modelcontextprotocol/protocolVersion")
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


def main() -> int:
    log_path, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: tap.py LOG -- COMMAND..."
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    # A client that stops the tap stops the server with it (it would see its stdin close
    # anyway, but a signal is quicker and leaves no kernel behind).
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda signum, frame: server.send_signal(signum))
    lock = threading.Lock()
    with open(log_path, "a", encoding="utf-8") as log:
        inbound = threading.Thread(
            target=_pump, args=(sys.stdin.buffer, server.stdin, log, "client", lock), daemon=True
        )
        inbound.start()
        _pump(server.stdout, sys.stdout.buffer, log, "server", lock)
        return server.wait()


if __name__ == "__main__":
    sys.exit(main())
