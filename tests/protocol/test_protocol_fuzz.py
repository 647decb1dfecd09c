"""Protocol fuzzing over stdio and streamable HTTP: no crash, no hang, every malformed request refused.

Two fuzzers, both bounded. A hypothesis one of our own writes malformed
JSON-RPC straight onto the wire: lines that are not JSON, JSON that is not a
message, wrong versions and id types, methods that are not strings or do not
exist, params of the wrong shape for every method the server serves,
strings with lone surrogates, deep nesting, huge values. Every message that
carries a usable id must be answered with a JSON-RPC error (or, for a tool
call, an error result), and after each one the server must still answer a
ping promptly. PyPI's `mcp-fuzzer` then runs its aggressive protocol phase
against both transports; its findings are heuristics (an error result that
echoes the input counts as "accepted"), so what is asserted is that the
server lives through it and still serves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import server_command, server_environment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rpc import RawServer
from test_http import HttpServer, http_server

SERVER_ARGS = ("--capability", "kernel.prestart=off")
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/cancel",
    "tasks/result",
    "server/discover",
    "subscriptions/listen",
    "notifications/cancelled",
    "no/such/method",
    "",
    "tools/call/",
    "TOOLS/LIST",
]
TOOLS = [
    "list_files",
    "read_notebook",
    "insert_cell",
    "use_notebook",
    "execute_cell",
    "delete_cell",
    "move_cell",
    "nope",
]

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
surrogate_text = st.sampled_from(
    ["\ud800", "a\udfffb", "\udc80.ipynb", "x" * 100_000, "\x00", "../../etc/passwd"]
)


@st.composite
def bad_params(draw: Any, method: str) -> Any:
    """Params for `method` that are wrong in shape or in content."""
    if method == "tools/call":
        return draw(
            st.one_of(
                st.fixed_dictionaries(
                    {
                        "name": st.one_of(
                            st.integers(), st.none(), surrogate_text, st.sampled_from(TOOLS)
                        )
                    }
                ),
                st.fixed_dictionaries(
                    {
                        "name": st.sampled_from(TOOLS),
                        "arguments": st.one_of(junk, st.lists(junk), surrogate_text),
                    }
                ),
                st.fixed_dictionaries(
                    {
                        "name": st.sampled_from(TOOLS),
                        "arguments": st.dictionaries(
                            st.sampled_from(
                                [
                                    "notebook_name",
                                    "cell_index",
                                    "cell_id",
                                    "path",
                                    "max_depth",
                                    "cell_source",
                                    "mode",
                                    "timeout",
                                ]
                            ),
                            st.one_of(junk, surrogate_text),
                            max_size=4,
                        ),
                    }
                ),
            )
        )
    if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        return {
            "uri": draw(
                st.one_of(
                    junk,
                    surrogate_text,
                    st.sampled_from(["notebook:///%ZZ", "notebook:///../x.ipynb", "", "x"]),
                )
            )
        }
    if method == "prompts/get":
        return {
            "name": draw(st.one_of(junk, st.sampled_from(["jupyter_cite", "nope"]))),
            "arguments": draw(junk),
        }
    if method == "logging/setLevel":
        return {"level": draw(st.one_of(junk, st.sampled_from(["loud", "", "DEBUG"])))}
    if method == "completion/complete":
        return {"ref": draw(junk), "argument": draw(junk)}
    return draw(st.one_of(junk, st.lists(junk), surrogate_text))


@st.composite
def malformed(draw: Any) -> tuple[bytes, Any]:
    """(a line for the wire, the id an answer must carry or None when it has none)."""
    kind = draw(
        st.sampled_from(
            [
                "bytes",
                "json",
                "version",
                "id",
                "method",
                "params",
                "params",
                "params",
                "deep",
                "batch",
            ]
        )
    )
    request_id = draw(st.integers(min_value=10_000, max_value=10**9))
    method = draw(st.sampled_from(METHODS))
    if kind == "bytes":
        line = draw(st.binary(min_size=1, max_size=60)).replace(b"\n", b" ")
        return line + b"\n", None
    if kind == "json":
        return json.dumps(draw(junk)).encode() + b"\n", None
    if kind == "version":
        message = {
            "jsonrpc": draw(st.sampled_from(["1.0", "2", 2.0, None, ""])),
            "id": request_id,
            "method": "ping",
        }
        return json.dumps(message).encode() + b"\n", request_id
    if kind == "id":
        message = {
            "jsonrpc": "2.0",
            "id": draw(
                st.one_of(
                    st.lists(st.integers()),
                    st.dictionaries(st.text(), st.integers()),
                    st.booleans(),
                    st.floats(allow_nan=False),
                )
            ),
            "method": "ping",
        }
        return json.dumps(message).encode() + b"\n", None
    if kind == "method":
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": draw(st.one_of(st.integers(), st.none(), st.lists(st.text()))),
        }
        return json.dumps(message).encode() + b"\n", request_id
    if kind == "deep":
        depth = draw(st.sampled_from([100, 1000, 100_000]))
        return (
            b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "list_files", "arguments": {"path": '
            % request_id
            + b"[" * depth
            + b"]" * depth
            + b"}}}\n"
        ), request_id
    if kind == "batch":
        return json.dumps(
            [{"jsonrpc": "2.0", "id": request_id, "method": "ping"}] * draw(st.integers(0, 3))
        ).encode() + b"\n", None
    params = draw(bad_params(method))
    if method.startswith("notifications/"):
        return json.dumps(
            {"jsonrpc": "2.0", "method": method, "params": params}
        ).encode() + b"\n", None
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode() + b"\n", request_id


def must_be_refused(message: Any) -> bool:
    """Whether a parsed message is surely wrong. A tool call whose arguments
    are a dictionary may happen to be valid (``list_files`` with ``{}``, or
    ``{"path": ""}``), and then answering it is right: only a wrong shape is
    sure to be refused. Hypothesis found both leniencies in CI."""
    if not isinstance(message, dict):
        return True
    method = message.get("method")
    params = message.get("params")
    # A null params is read as none at all, as by the SDK (a ping takes none).
    if not (
        message.get("jsonrpc") == "2.0"
        and isinstance(method, str)
        and (params is None or isinstance(params, dict))
    ):
        return True
    params = params or {}
    if method == "tools/call":
        known = params.get("name") in TOOLS and params.get("name") != "nope"
        return not known or ("arguments" in params and not isinstance(params["arguments"], dict))
    return method in ("resources/read", "prompts/get", "resources/subscribe")


def refused(answer: dict[str, Any]) -> bool:
    """A JSON-RPC error, or a tool result that is an error."""
    if "error" in answer:
        return True
    result = answer.get("result")
    return isinstance(result, dict) and bool(result.get("isError"))


class Tally:
    def __init__(self) -> None:
        self.sent = 0
        self.outcomes: Counter[str] = Counter()


@pytest.fixture(scope="module")
def stdio_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RawServer, Tally]]:
    workspace = tmp_path_factory.mktemp("fuzz-stdio")
    tally = Tally()
    with RawServer(workspace, *SERVER_ARGS, stderr=workspace.parent / "fuzz-stdio.log") as server:
        yield server, tally
        assert server.process.poll() is None, "the server died"
    print(f"\nstdio fuzz: {tally.sent} malformed messages, outcomes {dict(tally.outcomes)}")


ping_ids = iter(range(2_000_000_000, 3_000_000_000))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(message=malformed())
def test_stdio_refuses_malformed_messages_and_keeps_serving(stdio_target, message) -> None:
    server, tally = stdio_target
    line, request_id = message
    server.send_raw(line)
    tally.sent += 1
    if request_id is not None:
        answer = server.wait(request_id, timeout=10)
        state = "refused" if refused(answer) else "answered"
        # A ping or a list given junk params may be answered (they take none),
        # and so may a tool call whose arguments happen to be valid; anything
        # else must_be_refused names must be refused.
        try:
            message = json.loads(line)
        except RecursionError:
            message = {}  # too deep for Python's parser too: not a well-formed request
        if must_be_refused(message):
            assert state == "refused", f"{line[:300]!r} was answered: {str(answer)[:300]}"
        tally.outcomes[state] += 1
    else:
        tally.outcomes["no id"] += 1
    started = time.monotonic()
    ping = next(ping_ids)
    server.send({"jsonrpc": "2.0", "id": ping, "method": "ping"})
    assert "result" in server.wait(ping, timeout=10), "the server stopped answering"
    assert time.monotonic() - started < 10


@pytest.fixture(scope="module")
def http_target(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[HttpServer, str, Tally]]:
    root = tmp_path_factory.mktemp("fuzz-http")
    with http_server(root, None, "--capability", "kernel.prestart=off") as server:
        answered = httpx.post(
            server.url(),
            headers=HEADERS,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "0"},
                },
            },
        )
        session = answered.headers["mcp-session-id"]
        tally = Tally()
        yield server, session, tally
        assert server.process.poll() is None, "the server died"
        print(f"\nhttp fuzz: {tally.sent} malformed bodies, statuses {dict(tally.outcomes)}")


HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}


def answers_in(response: httpx.Response) -> list[dict[str, Any]]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    try:
        body = response.json()
    except ValueError:
        return []
    return body if isinstance(body, list) else [body]


@settings(
    max_examples=EXAMPLES // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(message=malformed())
def test_http_refuses_malformed_bodies_and_keeps_serving(http_target, message) -> None:
    server, session, tally = http_target
    line, request_id = message
    response = httpx.post(
        server.url(), headers={**HEADERS, "mcp-session-id": session}, content=line, timeout=30
    )
    tally.sent += 1
    tally.outcomes[str(response.status_code)] += 1
    assert response.status_code < 500, (
        f"{line[:300]!r} -> {response.status_code}: {response.text[:300]}"
    )
    if request_id is not None and response.status_code == 200:
        ours = [a for a in answers_in(response) if a.get("id") == request_id]
        try:
            message = json.loads(line)
        except RecursionError:
            message = None
        # Over HTTP the SDK reads the envelope itself (it answers a ping whose
        # params are null): only what the tools, reads and prompts are given is ours.
        method = message.get("method") if isinstance(message, dict) else None
        if (
            ours
            and method in ("tools/call", "resources/read", "prompts/get", "resources/subscribe")
            and must_be_refused(message)
        ):
            assert refused(ours[0]), f"{line[:300]!r} was answered: {str(ours[0])[:300]}"
    health = httpx.post(
        server.url(),
        headers={**HEADERS, "mcp-session-id": session},
        json={"jsonrpc": "2.0", "id": 7, "method": "ping"},
        timeout=10,
    )
    assert health.status_code == 200 and any("result" in a for a in answers_in(health))


def mcp_fuzzer(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        import mcp_fuzzer  # noqa: F401
    except ImportError:
        pytest.skip("mcp-fuzzer is not installed (it is in the test extra)")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_fuzzer",
            "--mode",
            "protocol",
            "--protocol-phase",
            "aggressive",
            "--runs-per-type",
            "2",
            "--timeout",
            "5",
            "--seed",
            "7",
            "--no-network",
            "--output-dir",
            str(cwd / "out"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=server_environment(),
    )


def summary_of(done: subprocess.CompletedProcess[str]) -> str:
    out = done.stdout
    return out[out.find("=== MCP Fuzzer Summary ===") :][:3000]


def test_mcp_fuzzer_over_stdio(workspace: Path, tmp_path: Path) -> None:
    command = " ".join(server_command(workspace, *SERVER_ARGS))
    done = mcp_fuzzer("--protocol", "stdio", "--endpoint", command, cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Protocol Results" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    print("\nmcp-fuzzer stdio:\n" + summary_of(done))
    # The server it fuzzed still starts and serves on the same workspace.
    with RawServer(workspace, *SERVER_ARGS) as server:
        assert "result" in server.wait(server.start("ping"), 10)


def test_mcp_fuzzer_over_http(tmp_path: Path) -> None:
    with http_server(tmp_path / "server", None, "--capability", "kernel.prestart=off") as server:
        done = mcp_fuzzer(
            "--protocol",
            "streamablehttp",
            "--endpoint",
            server.url(),
            "--allow-host",
            "127.0.0.1",
            cwd=tmp_path,
        )
        assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Protocol Results" in done.stdout
        assert server.process.poll() is None, "the server died under the fuzzer"
        assert httpx.get(f"{server.base}/healthz").status_code == 200
        assert "Traceback" not in server.log_text(), server.log_text()[-3000:]
        print("\nmcp-fuzzer http:\n" + summary_of(done))
