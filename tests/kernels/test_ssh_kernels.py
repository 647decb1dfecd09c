"""Kernels on another host, started over SSH by a kernel provisioner, as another user.

A kernelspec may name a kernel provisioner (``metadata.kernel_provisioner``); jupyter_client
then leaves the kernel's launch to it, and the local backend starts such a kernel as any other.
gateway-provisioners' DistributedProvisioner (from PyPI) starts one over SSH on a host of its
list, through a launcher that sends the kernel's ports back and relays signals. Here the host
is Debian's sshd on 127.0.0.2 with a user of its own and Debian's Python (tests/ssh_host.py);
the kernelspec is the one ``jupyter-ssh-spec install`` writes. Through the real server:

- the kernel runs there, as that user, on that Python; a notebook whose metadata names the
  kernelspec runs there whole (``run_cells``); ``list_kernels`` shows the kernelspec ready
  without taking its ``python`` for one of this machine's interpreters;
- an error, the output limits, a timeout, ``interrupt_kernel`` (SIGINT reaches the kernel
  through the launcher's listener: there is no process group here to signal) and
  ``restart_notebook`` (the old kernel ends on the host) hold;
- the kernel ends on the host when its notebook is released and when the server stops;
- a SIGKILLed server's kernel outlives it on the host (slow): nothing of this machine reaches
  another host's processes (the process-tree keeper holds local kernels only), so ending it
  is the host's business. docs/jupyter-server.md ("Kernel provisioners") says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import error_code, free_port, ok, refused, serve, text_of, write_notebook
from rpc import RawServer
from rpc import text_of as raw_text
from ssh_host import HOST_PYTHON, SshHost, processes_of, ssh_host

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the SSH host is Debian's sshd on loopback"
)

KERNEL = "ssh_python"
NO_PRESTART = ("--capability", "kernel.prestart=off")
#: How long a kernel on the host may take to end once it is stopped.
GONE_WITHIN = 15.0


@pytest.fixture(scope="module")
def ssh() -> Iterator[tuple[SshHost, dict[str, str]]]:
    """The module's SSH host, and the environment a server needs to start kernels there:
    the provisioner's settings (``GP_*``) and a Jupyter path with the host's kernelspec."""
    with contextlib.suppress(ImportError):
        import gateway_provisioners  # noqa: F401
    if "gateway_provisioners" not in sys.modules:
        pytest.skip("gateway-provisioners is not installed (scripts/install test installs it)")
    with ssh_host() as host:
        prefix = host.directory / "prefix"
        installed = subprocess.run(
            [
                sys.executable,
                "-m",
                "gateway_provisioners.cli.ssh_specapp",
                "install",
                f"--prefix={prefix}",
                f"--kernel-name={KERNEL}",
                "--display-name=Python on the SSH host",
                f"--remote-hosts={host.address}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert installed.returncode == 0, installed.stderr
        # The launcher is read by the host's user from the path the kernelspec names.
        subprocess.run(["chmod", "-R", "a+rX", str(prefix)], check=True)
        yield (
            host,
            {
                # paramiko's key and known hosts.
                "HOME": str(host.client_home),
                "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
                "GP_SSH_PORT": str(host.port),
                "GP_REMOTE_USER": host.user,
                # Whom the kernel is for (gateway-provisioners refuses root by default).
                "KERNEL_USERNAME": host.user,
                "GP_KERNEL_LOG_DIR": str(host.logs),
                # The launcher sends the kernel's ports back here: loopback, a port of its own.
                "GP_RESPONSE_IP": "127.0.0.1",
                "GP_RESPONSE_PORT": str(free_port()),
            },
        )


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def gone_within(pids: set[int], uid: int, seconds: float = GONE_WITHIN) -> set[int]:
    """Which of `pids` are still the host user's processes after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        left = pids & set(processes_of(uid))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


async def kernel_pid(client) -> int:
    shown = text_of(await client.call_tool("execute_code", {"code": "import os\nos.getpid()"}))
    return int(shown)


async def test_a_kernel_over_ssh_runs_the_essentials_and_ends_on_the_host(workspace, ssh):
    host, environment = ssh
    before = set(processes_of(host.uid))
    async with serve(
        workspace, "--kernel", KERNEL, "--max-output-blocks", "3", *NO_PRESTART, env=environment
    ) as client:
        listed = await ok(client, "list_kernels")
        assert KERNEL in listed["kernelspecs"], listed
        used = await ok(client, "use_notebook", {"notebook_name": "far.ipynb", "mode": "create"})
        assert used["kernel_name"] == KERNEL, used

        # It runs on the host, as the host's user, on the host's Python.
        where = await ok(
            client,
            "insert_execute_code_cell",
            {
                "cell_index": -1,
                "cell_source": "import getpass, os, sys\nprint(getpass.getuser(), os.path.realpath(sys.executable))\nkept = 21\nkept * 2",
            },
        )
        assert where["status"] == "ok", where
        shown = text_of(await client.call_tool("read_cell", {"cell_index": 0}))
        assert f"{host.user} {os.path.realpath(HOST_PYTHON)}" in shown and "42" in shown, shown
        first = await kernel_pid(client)
        assert first in processes_of(host.uid), "the kernel is not the host user's process"

        # An error is the kernel's, with its code.
        failed = await client.call_tool("execute_code", {"code": "1/0"})
        assert (
            error_code(failed) == "execution_error"
            and failed.structured_content["error"]["ename"] == "ZeroDivisionError"
        ), text_of(failed)

        # The output limits hold, counted exactly.
        many = await client.call_tool("execute_code", {"code": "for i in range(6): display(i)"})
        assert not many.is_error, text_of(many)
        assert many.structured_content["truncation"]["omitted_blocks"] == 3, text_of(many)

        # A timeout interrupts the kernel on the host; what it printed comes back, and it lives on.
        started = time.monotonic()
        timed = await client.call_tool(
            "execute_code",
            {"code": "import time\nprint('before', flush=True)\ntime.sleep(60)", "timeout": 3},
        )
        assert error_code(timed) == "timeout" and "before" in text_of(timed), text_of(timed)
        assert time.monotonic() - started < 20
        assert text_of(await client.call_tool("execute_code", {"code": "kept"})) == "21"

        # interrupt_kernel under a running call.
        go = host.logs / "go-interrupt"
        running = asyncio.create_task(
            client.call_tool(
                "execute_code",
                {"code": f"open({str(go)!r}, 'w').close()\ntime.sleep(60)", "timeout": 90},
            )
        )
        await asyncio.to_thread(wait_for, go)
        await ok(client, "interrupt_kernel", {"kernel_id": used["kernel_id"]})
        interrupted = await asyncio.wait_for(running, 20)
        assert error_code(interrupted) == "interrupted", text_of(interrupted)
        assert text_of(await client.call_tool("execute_code", {"code": "kept"})) == "21"

        # restart_notebook: a new kernel on the host, the old one ended there.
        await ok(client, "restart_notebook", {})
        refused_name = await refused(client, "execute_code", {"code": "kept"}, "execution_error")
        assert "NameError" in text_of(refused_name)
        second = await kernel_pid(client)
        assert second != first
        assert not await asyncio.to_thread(gone_within, {first}, host.uid), (
            "restart_notebook left the old kernel running on the host"
        )

        # Released, a notebook's kernel ends on the host; another notebook's runs on.
        await ok(client, "use_notebook", {"notebook_name": "other.ipynb", "mode": "create"})
        third = await kernel_pid(client)
        await ok(client, "unuse_notebook", {"notebook_name": "far.ipynb"})
        assert not await asyncio.to_thread(gone_within, {second}, host.uid), (
            "unuse_notebook left the kernel running on the host"
        )
        assert third in processes_of(host.uid)
    # The server stopped: so did its kernel on the host, and nothing it started there is left.
    ours = set(processes_of(host.uid)) - before
    left = await asyncio.to_thread(gone_within, ours | {third}, host.uid)
    assert not left, f"left running on the host: {processes_of(host.uid)}"


async def test_a_notebook_naming_the_hosts_kernelspec_runs_there_whole(workspace, ssh):
    """A notebook whose metadata names the provisioned kernelspec runs on the host (run_cells,
    every cell, the outputs stored); list_kernels shows that kernelspec ready, and not as one
    of this machine's interpreters; a notebook that names no kernel runs here."""
    host, environment = ssh
    path = workspace / "remote.ipynb"
    write_notebook(path, ["import getpass\nuser = getpass.getuser()", "print(user)", "6 * 7"])
    notebook = json.loads(path.read_text())
    notebook["metadata"]["kernelspec"] = {
        "name": KERNEL,
        "display_name": "Python on the SSH host",
        "language": "python",
    }
    path.write_text(json.dumps(notebook))
    async with serve(workspace, "--toolsets", "runs", *NO_PRESTART, env=environment) as client:
        listed = await ok(client, "list_kernels")
        used = await ok(client, "use_notebook", {"notebook_name": "remote.ipynb"})
        assert used["kernel_name"] == KERNEL, used
        run = await ok(client, "run_cells", {"cells": "all"})
        assert run["status"] == "ok" and run["not_run"] == [], run
    cells = json.loads(path.read_text())["cells"]
    assert cells[1]["outputs"][0]["text"] == [f"{host.user}\n"], cells[1]
    assert cells[2]["outputs"][0]["data"]["text/plain"] in ("42", ["42"]), cells[2]
    mine = next(env for env in listed["environments"] if env["name"] == KERNEL)
    assert mine["ready"] and mine["provisioner"] == "distributed-provisioner", mine
    # "python" in its argv is the host's: not this server's interpreter, nor its environment.
    assert mine["interpreter"] is None and not mine["server_environment"], mine
    assert listed["default_kernel"]["kernel_name"] != KERNEL, listed["default_kernel"]


@pytest.mark.slow
def test_a_sigkilled_servers_kernel_outlives_it_on_the_host(tmp_path, ssh):
    """What the docs say cannot hold: no keeper of this machine reaches the host's processes."""
    host, environment = ssh
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    before = set(processes_of(host.uid))
    server = RawServer(
        workspace, "--kernel", KERNEL, *NO_PRESTART, env=environment, stderr=tmp_path / "log"
    )
    try:
        server.ok("use_notebook", {"notebook_name": "killed.ipynb", "mode": "create"})
        kernel = int(raw_text(server.call("execute_code", {"code": "import os\nos.getpid()"})))
        server.kill()
        time.sleep(3)
        assert kernel in processes_of(host.uid), "the host's kernel ended with the SIGKILLed server"
    finally:
        with contextlib.suppress(Exception):
            server.kill()
        # What this test started on the host (the kernel, its launcher's listener), by pid.
        for pid in set(processes_of(host.uid)) - before:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
