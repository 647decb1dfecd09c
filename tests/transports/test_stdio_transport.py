"""The stdio transport: pipes served on the event loop, anything else (files, sockets) by the SDK.

Whatever carries stdin and stdout, only protocol messages reach stdout, a
message of any size crosses whole in both directions, and the server stops
when its input ends.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from rpc import LEGACY, RawServer, environment
from servers import our_stdio_server, server_command, stopped_after


def initialize_line(request_id: int = 1) -> bytes:
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    return (
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params})
        + "\n"
    ).encode()


def line(message: dict) -> bytes:
    return (json.dumps(message) + "\n").encode()


def test_output_of_kernels_and_their_children_never_reaches_the_protocol_stream(
    tmp_path: Path,
) -> None:
    server = RawServer(tmp_path, stderr=tmp_path.parent / "stray.log")
    try:
        server.ok("use_notebook", {"notebook_name": "s.ipynb", "mode": "create"})
        code = (
            "import os, subprocess, sys\n"
            "os.write(1, b'STRAY fd 1\\n')\n"
            "os.write(2, b'STRAY fd 2\\n')\n"
            "subprocess.run(['echo', 'STRAY child'])\n"
            "print('printed')\n"
        )
        result = server.call("execute_code", {"code": code})
        assert not result.get("isError"), result
        assert "printed" in json.dumps(result["content"])
        # Every line on stdout so far, and after, parsed as a JSON-RPC message.
        assert server.ok("get_notebook_revision")["revision"]
        assert server.unsolicited == []
    finally:
        assert server.close() == 0


def test_megabytes_cross_whole_in_both_directions(tmp_path: Path) -> None:
    server = RawServer(tmp_path)
    try:
        server.ok("use_notebook", {"notebook_name": "big.ipynb", "mode": "create"})
        source = "# " + "é✓x" * 1_000_000  # about 6 MB of UTF-8 in one request line
        server.ok("insert_cell", {"cell_index": 0, "cell_type": "code", "cell_source": source})
        cell = server.ok("read_cell", {"cell_index": 0})
        assert cell["source"] == source
    finally:
        assert server.close() == 0
    stored = json.loads((tmp_path / "big.ipynb").read_text(encoding="utf-8"))
    assert "".join(stored["cells"][0]["source"]) == source


def test_a_regular_file_as_stdin_is_served_until_it_ends(tmp_path: Path) -> None:
    requests = tmp_path.parent / "requests.jsonl"
    # Requests still running when the input ends are abandoned, as a client
    # closing stdin asks; the handshake is answered before anything else.
    requests.write_bytes(
        initialize_line(1) + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    with open(requests, "rb") as stdin:
        done = subprocess.run(
            server_command(tmp_path),
            stdin=stdin,
            capture_output=True,
            env=environment(),
            cwd=tmp_path,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "jupyter-mcp-server"


def test_a_socket_as_stdin_and_stdout_is_served(tmp_path: Path) -> None:
    """One socket both ways, as inetd-style launchers give it: several requests, several answers."""
    ours, theirs = socket.socketpair()
    with ours, stopped_after(our_stdio_server(tmp_path, stdin=theirs, stdout=theirs)) as server:
        theirs.close()
        ours.settimeout(120)
        received = b""

        def answer(request_id: int) -> dict:
            nonlocal received
            while True:
                while b"\n" not in received:
                    chunk = ours.recv(65536)
                    assert chunk, "the server closed the socket before answering"
                    received += chunk
                line, received = received.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == request_id:
                    return message

        ours.sendall(initialize_line(7))
        assert answer(7)["result"]["serverInfo"]["name"] == "jupyter-mcp-server"
        ours.sendall(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for request_id in (8, 9, 10):
            ours.sendall(
                line({"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": {}})
            )
            assert "use_notebook" in {
                tool["name"] for tool in answer(request_id)["result"]["tools"]
            }
        ours.shutdown(socket.SHUT_WR)
        assert server.process.wait(60) == 0


def test_a_client_that_closes_stdout_stops_the_server_cleanly(tmp_path: Path) -> None:
    log = tmp_path.parent / f"{tmp_path.name}.log"  # beside the workspace, not in it
    with stopped_after(
        our_stdio_server(tmp_path, env={"JUPYTER_MCP_LOG_LEVEL": "INFO"}, log=log)
    ) as server:
        process = server.process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(initialize_line(1))
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        process.stdout.close()  # the client goes away without closing stdin
        status = process.wait(60)
    errors = server.log_text()
    assert status == 0, errors[-2000:]
    assert "Traceback" not in errors, errors[-2000:]
