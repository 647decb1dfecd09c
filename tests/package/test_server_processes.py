"""Every test starts a server process one way: through ``tests/servers.py``.

A start, wait and kill written by hand in each module drifted: some waited for
``/healthz`` and some for a port, some never reported the log of a server that
died, some left it running when a test failed. The shared module does it once;
this file holds that, by reading every module of the suite for a process
started by hand, and checks the shared module does what the others rely on.
"""

from __future__ import annotations

import ast
import signal
import sys
import time
from pathlib import Path

import pytest
from servers import (
    ServerDidNotStart,
    free_port,
    listening,
    our_http_server,
    says,
    start,
    started,
    stopped_after,
)

TESTS = Path(__file__).resolve().parents[1]
SHARED = TESTS / "servers.py"
STARTS = frozenset({"Popen", "create_subprocess_exec", "create_subprocess_shell"})

#: The processes a test module may start itself, each none of our servers: (module, function).
NOT_SERVERS: dict[tuple[str, str], str] = {
    (
        "transports/test_session_expiry.py",
        "test_a_killed_clients_session_expires_as_if_deleted_and_the_client_initializes_again",
    ): "the official client in a process of its own, to be SIGKILLed",
    (
        "notebooks/test_workspace.py",
        "test_a_writer_holding_others_back_makes_other_processes_wait",
    ): ("another process writing the same notebook through the workspace, no server"),
    ("notebooks/test_writes_off_the_loop.py", "directory_lock_held"): (
        "a process that holds a directory's lock"
    ),
    ("agent_clients/session.py", "run"): "the agent CLI under test, a client",
    ("agent_clients/tap.py", "main"): (
        "the command a stdio client runs: it starts the server the client asked for and passes "
        "its pipes through, living and dying with the client"
    ),
    ("kernels/test_gateway.py", "kernel_gateway"): (
        "a Jupyter Kernel Gateway, a backend the server is pointed at"
    ),
}


def processes_started_by_hand(root: Path) -> dict[tuple[str, str], int]:
    """Each (module, function) under `root` that starts a process itself, and how many times."""
    found: dict[tuple[str, str], int] = {}

    def visit(node: ast.AST, module: str, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and function == "":
                inner = child.name
            if isinstance(child, ast.Call):
                called = child.func
                name = called.attr if isinstance(called, ast.Attribute) else None
                name = called.id if isinstance(called, ast.Name) else name
                if name in STARTS:
                    key = (module, inner or "<module>")
                    found[key] = found.get(key, 0) + 1
            visit(child, module, inner)

    for path in sorted(root.rglob("*.py")):
        if path == SHARED or "fixtures" in path.relative_to(root).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        visit(tree, path.relative_to(root).as_posix(), "")
    return found


def test_no_test_starts_a_server_process_by_hand() -> None:
    found = processes_started_by_hand(TESTS)
    by_hand = sorted(set(found) - set(NOT_SERVERS))
    assert not by_hand, (
        f"these start a process themselves: {by_hand}. Start a server through tests/servers.py "
        "(our_http_server, our_stdio_server, our_stdio_server_async, or started() with a "
        "readiness check); a process that is no server goes in NOT_SERVERS, saying what it is"
    )
    gone = sorted(set(NOT_SERVERS) - set(found))
    assert not gone, f"NOT_SERVERS names what no longer starts a process: {gone}"


def test_the_reading_finds_a_planted_start(tmp_path: Path) -> None:
    (tmp_path / "area").mkdir()
    (tmp_path / "area" / "test_planted.py").write_text(
        "import asyncio, subprocess\n"
        "def test_it():\n"
        "    def inner():\n"
        "        return subprocess.Popen(['jupyter-mcp-server'])\n"
        "async def helper():\n"
        "    await asyncio.create_subprocess_exec('x')\n"
        "code = \"subprocess.Popen(['sleep', '1'])\"  # kernel code in a string starts nothing\n"
    )
    assert processes_started_by_hand(tmp_path) == {
        ("area/test_planted.py", "test_it"): 1,
        ("area/test_planted.py", "helper"): 1,
    }


# --- What the shared module promises --------------------------------------------------


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_process_that_exits_before_it_is_ready_fails_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "early.log"
    with (
        pytest.raises(ServerDidNotStart) as failed,
        started(
            python("import sys; print('no such setting', file=sys.stderr); sys.exit(2)"),
            env={},
            cwd=tmp_path,
            log=log,
            ready=says("listening"),
            name="the early one",
        ),
    ):
        pytest.fail("a process that exited was taken as ready")
    assert "the early one exited with 2" in str(failed.value)
    assert "no such setting" in str(failed.value)


def test_a_process_never_ready_fails_with_its_log_and_is_stopped(tmp_path: Path) -> None:
    server = start(
        python("import time; print('starting', flush=True); time.sleep(600)"),
        env={},
        cwd=tmp_path,
        log=tmp_path / "slow.log",
        name="the slow one",
    )
    with pytest.raises(ServerDidNotStart) as failed, stopped_after(server):
        server.wait_until(says("listening"), seconds=1)
    assert "was not ready within 1 s" in str(failed.value) and "starting" in str(failed.value)
    assert server.process.returncode == -signal.SIGTERM


def test_a_process_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    port = free_port()
    stubborn = (
        "import signal, socket, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"listener = socket.create_server(('127.0.0.1', {port}))\n"
        "time.sleep(600)\n"
    )
    with started(
        python(stubborn),
        env={},
        cwd=tmp_path,
        log=tmp_path / "stubborn.log",
        ready=listening,
        port=port,
        stop_seconds=1,
    ) as server:
        began = time.monotonic()
    assert server.process.returncode == -signal.SIGKILL
    assert time.monotonic() - began < 10


def test_a_failing_test_is_told_the_servers_log(tmp_path: Path) -> None:
    with (
        pytest.raises(AssertionError) as failed,
        started(
            python("import time; print('kernel died: out of memory', flush=True); time.sleep(600)"),
            env={},
            cwd=tmp_path,
            log=tmp_path / "told.log",
            ready=says("kernel died"),
            name="the told one",
        ) as server,
    ):
        raise AssertionError("the test's own failure")
    assert any("kernel died: out of memory" in note for note in failed.value.__notes__)
    assert not server.running()


def test_our_http_server_answers_and_stops(workspace: Path) -> None:
    import httpx

    with our_http_server(workspace, "--capability", "kernel.prestart=off") as server:
        assert httpx.get(f"{server.base}/healthz", timeout=10).json() == {"status": "ok"}
        assert server.url("only=notebooks") == f"{server.base}/mcp?only=notebooks"
    assert not server.running()
