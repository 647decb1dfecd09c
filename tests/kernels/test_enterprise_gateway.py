"""Kernels through Jupyter Enterprise Gateway (from PyPI), run here as the remote backend.

Enterprise Gateway is the gateway teams run on Kubernetes (and YARN, Docker): it serves
Jupyter Server's kernel API, like Kernel Gateway, and starts each kernel through a process
proxy that may put it in a pod. It pins old releases of jupyter_client and jupyter_server, so
it runs from an environment of its own, built once and cached
(``JUPYTER_MCP_EG_CACHE``, default ``~/.cache/jupyter-mcp-server/enterprise-gateway``).
Its kernel here is a local process (its default process proxy) on this environment's ipykernel.
Against it, on loopback with a token, ``--jupyter-url GATEWAY`` runs the execution suite's
essentials (ok, error, output limits, timeout, interrupt, restart, ``kernel_gone``); the
server stops its kernels there when it stops, and their processes end; a kernel start it
refuses (Enterprise Gateway refuses ``root`` unless ``KERNEL_USERNAME`` names someone else)
is said in its words; and, slow, a SIGKILLed server's kernel is left to the gateway, which
culls it when told to (``--RemoteMappingKernelManager.cull_idle_timeout``), as the docs advise.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import error_code, free_port, text_of
from rpc import RawServer
from servers import ServerProcess, answers, started
from test_jupyter_server import NO_PRESTART, serve_logged, the_execution_essentials

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the gateway's kernels are watched in /proc"
)

TOKEN = "enterprise-gateway-token-3a8f51"
#: Pinned: its own environment is built once per version.
RELEASE = "jupyter_enterprise_gateway==3.3.0"
CACHE = Path(
    os.environ.get(
        "JUPYTER_MCP_EG_CACHE",
        Path.home() / ".cache" / "jupyter-mcp-server" / "enterprise-gateway",
    )
)
#: Whom the kernels are for: Enterprise Gateway refuses root unless told otherwise.
KERNEL_USER = "jupyter-mcp-tester"


def gateway_environment() -> Path:
    """The cached environment with Enterprise Gateway in it, built on first use; skips, saying
    why, where it cannot be."""
    target = CACHE / RELEASE.replace("==", "-")
    program = target / "bin" / "jupyter-enterprisegateway"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test workers build it once
        if program.exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(target)],
            [str(target / "bin" / "python"), "-m", "pip", "install", "-q", RELEASE],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                pytest.skip(f"Enterprise Gateway could not be installed: {done.stderr[-500:]}")
    return target


def headers() -> dict[str, str]:
    return {"Authorization": f"token {TOKEN}"}


def kernels_on(url: str) -> set[str]:
    return {kernel["id"] for kernel in httpx.get(f"{url}/api/kernels", headers=headers()).json()}


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (the gateway's kernels), by /proc."""
    parent_of: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if entry.isdigit():
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z":
                    parent_of[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parent_of.items() if parent in frontier}
        found |= frontier
    return found


@contextlib.contextmanager
def enterprise_gateway(tmp_path: Path, *args: str) -> Iterator[tuple[str, Path, ServerProcess]]:
    """Enterprise Gateway on loopback with a token: (url, its kernels' directory, its process).
    Its one kernelspec, python3, runs this environment's ipykernel."""
    environment_dir = gateway_environment()
    root = tmp_path / "gateway-root"
    kernels = tmp_path / "gateway-share" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    root.mkdir()
    (kernels / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3",
                "language": "python",
            }
        )
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    environment = {
        **os.environ,
        "JUPYTER_PATH": str(tmp_path / "gateway-share"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "gateway-runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "gateway-data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "gateway-config"),
    }
    environment.pop("PYTHONPATH", None)  # its own environment's packages, not this checkout's
    with started(
        [
            str(environment_dir / "bin" / "jupyter-enterprisegateway"),
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port_retries=0",
            f"--EnterpriseGatewayApp.auth_token={TOKEN}",
            "--EnterpriseGatewayApp.list_kernels=True",
            *args,
        ],
        env=environment,
        cwd=root,
        log=tmp_path / "gateway.log",
        ready=answers(f"{url}/api/kernelspecs", headers()),
        seconds=120,
        name="Enterprise Gateway",
        port=port,
        stdin=subprocess.DEVNULL,
    ) as gateway:
        yield url, root, gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, ServerProcess]]:
    with enterprise_gateway(tmp_path_factory.mktemp("enterprise-gateway")) as running:
        yield running


async def test_execution_runs_through_enterprise_gateway_and_its_kernels_end(
    workspace, tmp_path, gateway
):
    url, root, process = gateway
    before = descendants(process.pid)
    async with serve_logged(
        workspace,
        tmp_path / "server.log",
        "--jupyter-url",
        url,
        "--max-output-blocks",
        "3",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": TOKEN, "KERNEL_USERNAME": KERNEL_USER},
    ) as client:
        said, kernel_ids = await the_execution_essentials(client, url, root, workspace, TOKEN)
        assert descendants(process.pid) - before, "the kernel is not the gateway's process"
    assert not set(kernel_ids) & kernels_on(url), "the server stops its kernels on the gateway"
    deadline = time.monotonic() + 15
    while descendants(process.pid) - before:
        assert time.monotonic() < deadline, (
            f"kernel processes left under the gateway: {descendants(process.pid) - before}"
        )
        time.sleep(0.1)
    assert all(TOKEN not in answer for answer in said)
    assert TOKEN not in (tmp_path / "server.log").read_text()


async def test_a_kernel_start_the_gateway_refuses_is_said_in_its_words(workspace, gateway):
    url, _, _ = gateway
    async with serve_logged(
        workspace,
        workspace.parent / "refused.log",
        "--jupyter-url",
        url,
        *NO_PRESTART,
        # Enterprise Gateway's default: root may not start kernels.
        env={"JUPYTER_TOKEN": TOKEN, "KERNEL_USERNAME": "root"},
    ) as client:
        result = await client.call_tool(
            "use_notebook", {"notebook_name": "refused.ipynb", "mode": "create"}
        )
    assert result.is_error, text_of(result)
    assert "KERNEL_USERNAME" in text_of(result) and "'root'" in text_of(result), text_of(result)
    # The token was fine: the message is about the user, not the token.
    assert "token" not in text_of(result) and "authorized_users" in text_of(result), text_of(result)
    assert error_code(result) == "invalid_argument", text_of(result)
    assert TOKEN not in text_of(result)


@pytest.mark.slow
def test_a_sigkilled_servers_kernel_is_culled_by_the_gateway(tmp_path, workspace):
    """The server cannot stop what it started once SIGKILLed; Enterprise Gateway's culling
    (``--RemoteMappingKernelManager.cull_idle_timeout``) ends the kernel it left."""
    with enterprise_gateway(
        tmp_path,
        "--RemoteMappingKernelManager.cull_idle_timeout=4",
        "--RemoteMappingKernelManager.cull_interval=1",
        "--RemoteMappingKernelManager.cull_connected=True",
    ) as (url, _, process):
        server = RawServer(
            workspace,
            "--jupyter-url",
            url,
            *NO_PRESTART,
            env={"JUPYTER_TOKEN": TOKEN, "KERNEL_USERNAME": KERNEL_USER},
            stderr=tmp_path / "server.log",
        )
        try:
            used = server.ok("use_notebook", {"notebook_name": "left.ipynb", "mode": "create"})
            assert used["kernel_id"] in kernels_on(url)
            server.kill()
            deadline = time.monotonic() + 60
            while used["kernel_id"] in kernels_on(url) or descendants(process.pid):
                assert time.monotonic() < deadline, "the gateway never culled the left kernel"
                time.sleep(0.5)
        finally:
            with contextlib.suppress(Exception):
                server.kill()
