"""Kernel faults: every call comes back in time, with the right status and code.

One server, one notebook, and a kernel that misbehaves in every way a
kernel can: it ignores SIGINT and spins, prints without end, allocates until
it is refused memory, is killed by an OOM-killer-like SIGKILL in the middle
of a call, and forks children. Each call returns within its timeout (plus
the interrupt grace) with the status and error code the contract names; the
server's memory stays bounded through it all; and once the server exits, no
process it started (kernels and their children) and no connection file is
left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest
from rpc import RawServer, descendants, error_code, rss_bytes, text_of, wait_until_gone

NOTEBOOK = "faults.ipynb"
#: execution.INTERRUPT_GRACE: how long an interrupted kernel gets to go idle.
GRACE = 3.0
MAX_OUTPUT_BYTES = 65536


def timed(server: RawServer, tool: str, arguments: dict, limit: float) -> tuple[dict, float]:
    started = time.monotonic()
    result = server.call(tool, arguments, timeout=limit + 30)
    elapsed = time.monotonic() - started
    assert elapsed < limit, (
        f"{tool} took {elapsed:.1f} s, more than {limit} s: {text_of(result)[:300]}"
    )
    return result, elapsed


def kernel_pid(server: RawServer) -> int:
    ran = server.ok(
        "execute_code", {"notebook_name": NOTEBOOK, "code": "import os; print(os.getpid())"}
    )
    assert ran["status"] == "ok"
    return int(
        text_of(
            server.call("execute_code", {"notebook_name": NOTEBOOK, "code": "print(os.getpid())"})
        )
    )


@pytest.fixture
def short_runtime():
    """A runtime directory short enough for the server's Unix sockets: under a long test path
    (pytest-xdist's, say) the server rightly makes its own in the temporary directory instead."""
    path = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def faulty(tmp_path: Path, short_runtime: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    runtime = short_runtime
    server = RawServer(
        workspace,
        "--capability",
        "kernel.prestart=off",
        "--max-output-bytes",
        str(MAX_OUTPUT_BYTES),
        env={"JUPYTER_RUNTIME_DIR": str(runtime)},
        stderr=tmp_path / "server.log",
    )
    seen: set[int] = set()
    yield server, seen, runtime
    if server.process.poll() is None:
        seen |= descendants(server.pid)
        assert server.close(60) == 0
    left = wait_until_gone(seen, 15)
    assert not left, f"processes outlived the server: {sorted(left)}"
    assert sorted(p.name for p in runtime.glob("kernel-*.json")) == [], (
        "connection files outlived the server"
    )
    assert sorted(p.name for p in runtime.glob("jmcp-*")) == [], (
        "the runtime directory outlived the server"
    )


def test_hung_flooding_allocating_killed_and_forking_kernels(faulty):
    server, seen, runtime = faulty
    server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
    pid = kernel_pid(server)
    seen |= descendants(server.pid)
    warm = rss_bytes(server.pid)
    figures: dict[str, object] = {}

    # Hung, ignoring SIGINT: a timeout, in time, with what it printed; the next call refused at once.
    hung = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('spinning', flush=True)\nwhile True:\n    pass"
    result, elapsed = timed(
        server,
        "insert_execute_code_cell",
        {"notebook_name": NOTEBOOK, "cell_index": -1, "cell_source": hung, "timeout": 2},
        2 + GRACE + 4,
    )
    assert error_code(result) == "timeout" and result["structuredContent"]["status"] == "timeout", (
        result
    )
    assert "spinning" in text_of(result)
    figures["hung_first_call_s"] = round(elapsed, 1)
    assert result["_meta"]["io.jupyter-mcp/error"]["kernel_state"] == "busy_after_interrupt", result
    # The next call is refused at once: nothing is queued behind the spinning cell.
    result, elapsed = timed(
        server, "execute_code", {"notebook_name": NOTEBOOK, "code": "1", "timeout": 2}, 1
    )
    assert error_code(result) == "kernel_unresponsive", result
    assert result["_meta"]["io.jupyter-mcp/error"]["kernel_state"] == "busy_after_interrupt", result
    figures["hung_second_call_s"] = round(elapsed, 1)
    # The way out is a restart: in time, and the spinning process is gone.
    restarted, elapsed = timed(server, "restart_notebook", {"notebook_name": NOTEBOOK}, 30)
    assert not restarted.get("isError"), restarted
    figures["restart_s"] = round(elapsed, 1)
    assert not wait_until_gone({pid}, 10), "the hung kernel outlived its restart"
    pid = kernel_pid(server)
    seen |= descendants(server.pid)

    # Printing without end: a timeout, outputs cut to --max-output-bytes, the answer bounded.
    flood = "import sys\nwhile True:\n    print('x' * 1000)"
    sizes = []
    for _ in range(3):
        result, elapsed = timed(
            server,
            "execute_code",
            {"notebook_name": NOTEBOOK, "code": flood, "timeout": 2},
            2 + GRACE + 4,
        )
        assert error_code(result) == "timeout", text_of(result)[:300]
        truncation = result["structuredContent"]["truncation"]
        assert truncation["truncated"] and truncation["omitted_bytes"] > 0
        sizes.append(len(json.dumps(result)))
        assert sizes[-1] < 4 * MAX_OUTPUT_BYTES, f"a flood came back as {sizes[-1]} bytes"
        assert (
            server.ok("execute_code", {"notebook_name": NOTEBOOK, "code": "print('after')"})[
                "status"
            ]
            == "ok"
        )
    figures["flood_answer_bytes"] = max(sizes)
    after_flood = rss_bytes(server.pid)

    # Allocating until refused: RLIMIT_AS inside the kernel, a MemoryError, the kernel lives on.
    allocate = (
        "import resource\n"
        "used = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
        "resource.setrlimit(resource.RLIMIT_AS, (used + 512 * 2**20, resource.RLIM_INFINITY))\n"
        "hoard = []\n"
        "while True:\n"
        "    hoard.append(bytearray(32 * 2**20))"
    )
    result, elapsed = timed(
        server, "execute_code", {"notebook_name": NOTEBOOK, "code": allocate, "timeout": 60}, 30
    )
    assert error_code(result) == "execution_error", text_of(result)[:300]
    assert result["structuredContent"]["error"]["ename"] == "MemoryError"
    figures["allocation_refused_s"] = round(elapsed, 1)
    assert (
        server.ok("execute_code", {"notebook_name": NOTEBOOK, "code": "del hoard; print('alive')"})[
            "status"
        ]
        == "ok"
    )

    # Killed mid-call, as the OOM killer does: kernel_gone, long before the timeout.
    assert pid == kernel_pid(server)
    done: dict = {}

    def run() -> None:
        done["result"] = server.call(
            "execute_code",
            {
                "notebook_name": NOTEBOOK,
                "code": "import time\nprint('working', flush=True)\ntime.sleep(60)",
                "timeout": 120,
            },
            timeout=150,
        )

    started = time.monotonic()
    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    caller.join(30)
    assert not caller.is_alive(), "a call on a killed kernel did not return"
    elapsed = time.monotonic() - started
    assert elapsed < 10 and error_code(done["result"]) == "kernel_gone", done["result"]
    figures["killed_mid_call_s"] = round(elapsed, 1)
    restarted = server.ok("restart_notebook", {"notebook_name": NOTEBOOK})
    assert restarted["kernel_id"]

    # A self-inflicted SIGKILL after a big allocation: the same.
    result, elapsed = timed(
        server,
        "execute_code",
        {
            "notebook_name": NOTEBOOK,
            "code": "import os, signal\nx = bytearray(256 * 2**20)\nos.kill(os.getpid(), signal.SIGKILL)",
            "timeout": 60,
        },
        15,
    )
    assert error_code(result) == "kernel_gone", result
    server.ok("restart_notebook", {"notebook_name": NOTEBOOK})

    # Forking children: the call returns promptly, and they die with the server.
    fork = (
        "import os, subprocess, time\n"
        "children = []\n"
        "for _ in range(3):\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        time.sleep(3600)\n"
        "        os._exit(0)\n"
        "    children.append(child)\n"
        "children.append(subprocess.Popen(['sleep', '3600']).pid)\n"
        "print(' '.join(map(str, children)))"
    )
    result, elapsed = timed(
        server, "execute_code", {"notebook_name": NOTEBOOK, "code": fork, "timeout": 30}, 10
    )
    assert not result.get("isError"), text_of(result)
    children = {int(child) for child in text_of(result).split()}
    assert len(children) == 4 and all(Path(f"/proc/{child}").exists() for child in children)
    seen |= descendants(server.pid) | children
    assert (
        server.ok("execute_code", {"notebook_name": NOTEBOOK, "code": "print('still answering')"})[
            "status"
        ]
        == "ok"
    )

    # The server's memory through all this.
    final = rss_bytes(server.pid)
    figures.update(
        rss_warm_mib=round(warm / 2**20),
        rss_after_floods_mib=round(after_flood / 2**20),
        rss_final_mib=round(final / 2**20),
    )
    assert final - warm < 150 * 2**20, figures
    assert len(list(runtime.glob("jmcp-*/kernel-*.json"))) >= 1
    print(f"\nkernel faults: {figures}")


def test_sigterm_over_stdio_stops_busy_kernels_and_their_children(faulty):
    """SIGTERM while a kernel is busy and the client keeps stdin open (as MCP
    clients do before they escalate to SIGKILL): the server exits promptly and
    stops the kernel and what the kernel started. It used to wait for ever on
    the SDK's blocked stdin read."""
    server, seen, _runtime = faulty
    server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
    server.start(
        "tools/call",
        {
            "name": "execute_code",
            "arguments": {
                "notebook_name": NOTEBOOK,
                "code": "import subprocess, time\nsubprocess.Popen(['sleep', '3600'])\ntime.sleep(3600)",
                "timeout": 3600,
            },
        },
    )
    time.sleep(2)
    seen |= descendants(server.pid)
    assert len(seen) >= 2, "the kernel and its child should be running"
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0
    assert time.monotonic() - started < 15


def test_many_clients_opening_one_notebook_start_one_kernel(faulty):
    """Ten use_notebook calls at once on a notebook without a kernel: one kernel,
    shared; it used to start ten, bind the last and leak nine until shutdown."""
    server, seen, _runtime = faulty
    server.ok(
        "use_notebook", {"notebook_name": NOTEBOOK, "mode": "create", "kernel_name": "python3"}
    )
    server.ok("unuse_notebook", {"notebook_name": NOTEBOOK})
    ids = [
        server.start(
            "tools/call", {"name": "use_notebook", "arguments": {"notebook_name": NOTEBOOK}}
        )
        for _ in range(10)
    ]
    answers = [server.wait(request_id, timeout=120)["result"] for request_id in ids]
    assert all(not answer.get("isError") for answer in answers), [
        text_of(a) for a in answers if a.get("isError")
    ]
    assert len({answer["structuredContent"]["kernel_id"] for answer in answers}) == 1
    listed = server.ok("list_kernels")
    assert len(listed["kernels"]) == 1, listed
    seen |= descendants(server.pid)
    server.ok("unuse_notebook", {"notebook_name": NOTEBOOK})
    assert server.ok("list_kernels")["kernels"] == []


def test_executions_queued_on_a_released_kernel_are_interrupted_not_crashed(faulty):
    """Executions waiting for their turn when the kernel is released or restarted
    come back `interrupted`, coded; they used to fail as an uncoded
    'Error executing tool' (the closed channel's AssertionError)."""
    server, seen, _runtime = faulty
    server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
    outcomes: dict[str, int] = {}
    for round_ in range(6):
        server.ok("use_notebook", {"notebook_name": NOTEBOOK})
        seen |= descendants(server.pid)
        queued = [
            server.start(
                "tools/call",
                {
                    "name": "execute_code",
                    "arguments": {"notebook_name": NOTEBOOK, "code": f"print({round_})"},
                },
            )
            for _ in range(4)
        ]
        time.sleep(0.01 * round_)
        tool = "unuse_notebook" if round_ % 2 else "restart_notebook"
        releasing = server.start(
            "tools/call", {"name": tool, "arguments": {"notebook_name": NOTEBOOK}}
        )
        for request_id in queued:
            result = server.wait(request_id, timeout=60)["result"]
            code = error_code(result) or (
                "ok" if not result.get("isError") else "uncoded: " + text_of(result)[:80]
            )
            outcomes[code] = outcomes.get(code, 0) + 1
            if code == "interrupted":
                assert result["structuredContent"]["status"] == "interrupted"
        assert not server.wait(releasing, timeout=60)["result"].get("isError")
    assert set(outcomes) <= {"ok", "interrupted"}, outcomes
    seen |= descendants(server.pid)


def test_a_killed_servers_connection_files_are_removed_by_the_next_server(
    tmp_path: Path, short_runtime: Path
) -> None:
    """SIGKILL shuts nothing down: the kernel exits by itself, its connection file is the next start's to remove.
    Other programs' files, and a live server's, stay."""
    runtime = short_runtime
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {"JUPYTER_RUNTIME_DIR": str(runtime)}
    theirs = runtime / "kernel-0b1c2d3e-aaaa-bbbb-cccc-0123456789ab.json"
    theirs.write_text("{}")

    # An older server's file, left in the runtime directory itself by a server long gone.
    older = runtime / "kernel-jmcp-999999999-0b1c2d3e-aaaa-bbbb-cccc-0123456789ab.json"
    older.write_text("{}")

    killed = RawServer(workspace, "--capability", "kernel.prestart=off", env=env)
    killed.ok("use_notebook", {"notebook_name": "k.ipynb", "mode": "create"})
    kernels = descendants(killed.pid)
    # Its private directory (mode 0700) holds the connection file and the kernel's Unix sockets.
    (private,) = runtime.glob(f"jmcp-{killed.pid}-*")
    assert private.stat().st_mode & 0o777 == 0o700
    left = sorted(p.name for p in private.glob(f"kernel-jmcp-{killed.pid}-*.json"))
    assert len(left) == 1, sorted(p.name for p in private.iterdir())
    sockets = [p for p in private.iterdir() if p.is_socket()]
    assert len(sockets) == 5, sorted(p.name for p in private.iterdir())
    killed.kill()
    assert not wait_until_gone(kernels, 30), "the killed server's kernel outlived it"

    live = RawServer(workspace, "--capability", "kernel.prestart=off", env=env)
    try:
        live.ok("use_notebook", {"notebook_name": "l.ipynb", "mode": "create"})
        deadline = time.monotonic() + 30
        while (private.exists() or older.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not private.exists(), "the killed server's runtime directory survived the next start"
        assert not older.exists(), "an older server's connection file survived the next start"
        assert theirs.exists(), "another program's connection file was removed"
        assert len(list(runtime.glob(f"jmcp-{live.pid}-*/kernel-jmcp-{live.pid}-*.json"))) == 1
    finally:
        assert live.close() == 0
    assert list(runtime.glob("jmcp-*")) == [], "a clean stop leaves no runtime directory"
