"""Kernels through a kernel gateway: Jupyter Kernel Gateway (from PyPI), started here.

A gateway serves Jupyter Server's kernel API (``/api/kernelspecs``,
``/api/kernels``, the kernel websocket) and nothing else: no contents, no
sessions. Enterprise Gateway serves the same API for kernels on a cluster.
Against a real ``jupyter-kernel-gateway`` on loopback with a token:

- ``--jupyter-url GATEWAY`` runs the execution suite's essentials (ok, error,
  truncation, timeout and interrupt, ``kernel_gone`` when the kernel is
  deleted there, idle or running), and the ``KERNEL_*`` variables of the
  server's environment reach the kernel, as Jupyter Server's own gateway
  client sends them;
- a gateway at its kernel limit (``403 Resource Limit``) is ``kernel_limit``
  saying so, not a refused token;
- a kernel the gateway culls while the agent works is ``kernel_gone``, and a
  replacement only with ``kernel.auto-restart``;
- ``--jupyter-contents`` against a gateway stops at start, saying it has no
  contents API;
- Jupyter Server with the gateway as its kernels (``--GatewayClient.url``)
  and this package's extension serves ``/mcp`` with kernels on the gateway.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    error_code,
    free_port,
    jupyter_server_process,
    ok,
    refused,
    serve,
    server_command,
    server_environment,
    text_of,
)
from test_jupyter_server import NO_PRESTART, connect, serve_logged, the_execution_essentials

TOKEN = "gateway-test-token-7c1d9e"


@contextlib.contextmanager
def kernel_gateway(
    tmp_path: Path, *args: str, port: int | None = None, started: list[Any] | None = None
) -> Iterator[tuple[str, Path, Path]]:
    """A real Jupyter Kernel Gateway on loopback with a token: (url, its directory, its log).
    Its process is appended to `started`, for a test that stops it itself; `port` (a free
    one by default) lets a test start it again where it was."""
    if importlib.util.find_spec("kernel_gateway") is None:
        pytest.skip("jupyter-kernel-gateway is not installed (scripts/install test installs it)")
    root = tmp_path / "gateway-root"
    root.mkdir(exist_ok=True)
    port = port or free_port()
    log = tmp_path / "gateway.log"
    environment = {
        **os.environ,
        # Its kernelspec runs `python`: this environment's, with ipykernel in it.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "gateway-runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "gateway-data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "gateway-config"),
    }
    with log.open("ab") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernel_gateway",
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={port}",
                "--KernelGatewayApp.port_retries=0",
                f"--KernelGatewayApp.auth_token={TOKEN}",
                "--JupyterWebsocketPersonality.list_kernels=True",
                *args,
            ],
            cwd=root,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    if started is not None:
        started.append(process)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # its start alone took over 60 s on a loaded machine
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"the kernel gateway exited with {process.returncode}:\n{log.read_text()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if (
                    httpx.get(f"{url}/api/kernelspecs", headers=headers(), timeout=1).status_code
                    == 200
                ):
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"the kernel gateway did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield url, root, log
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def headers() -> dict[str, str]:
    return {"Authorization": f"token {TOKEN}"}


def kernels_on(url: str) -> set[str]:
    return {kernel["id"] for kernel in httpx.get(f"{url}/api/kernels", headers=headers()).json()}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The module's gateway, at most two kernels at a time: (url, the kernels' directory)."""
    with kernel_gateway(tmp_path_factory.mktemp("gateway"), "--KernelGatewayApp.max_kernels=2") as (
        url,
        root,
        _,
    ):
        yield url, root


async def test_execution_runs_through_a_kernel_gateway(workspace, tmp_path, gateway):
    url, root = gateway
    log = tmp_path / "server.log"
    async with serve_logged(
        workspace,
        log,
        "--jupyter-url",
        url,
        "--max-output-blocks",
        "3",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": TOKEN, "KERNEL_TEAM": "gateway-testers"},
    ) as client:
        said, kernel_ids = await the_execution_essentials(client, url, root, workspace, TOKEN)
        # The server's KERNEL_* variables reach the kernel, as a gateway expects them.
        shown = await ok(
            client, "execute_code", {"code": "import os\nprint(os.environ.get('KERNEL_TEAM'))"}
        )
        assert (
            shown["status"] == "ok"
            and text_of(
                await client.call_tool("execute_code", {"code": "os.environ['KERNEL_TEAM']"})
            )
            == "'gateway-testers'"
        )
    assert not set(kernel_ids) & kernels_on(url), (
        "the server stops the kernels it started on the gateway"
    )
    assert TOKEN not in log.read_text() and all(TOKEN not in answer for answer in said)


async def test_a_gateway_at_its_kernel_limit_is_kernel_limit_not_a_refused_token(
    workspace, gateway
):
    url, _ = gateway
    async with serve(
        workspace, "--jupyter-url", url, *NO_PRESTART, env={"JUPYTER_TOKEN": TOKEN}
    ) as client:
        await ok(client, "use_notebook", {"notebook_name": "one.ipynb", "mode": "create"})
        await ok(client, "use_notebook", {"notebook_name": "two.ipynb", "mode": "create"})
        result = await refused(
            client,
            "use_notebook",
            {"notebook_name": "three.ipynb", "mode": "create"},
            "kernel_limit",
        )
        text = text_of(result)
        assert "Resource Limit" in text and "token" not in text, text
        assert "unuse_notebook" in text and "max_kernels" in text and 'mode="connect"' in text, text
        # Freed here, the next start goes through.
        await ok(client, "unuse_notebook", {"notebook_name": "one.ipynb"})
        await ok(client, "use_notebook", {"notebook_name": "three.ipynb"})
        assert text_of(await client.call_tool("execute_code", {"code": "6 * 7"})) == "42"
        assert TOKEN not in text


def test_jupyter_contents_against_a_gateway_stops_saying_it_keeps_no_notebooks(workspace, gateway):
    url, _ = gateway
    started = subprocess.run(
        server_command(workspace, "--jupyter-url", url, "--jupyter-contents"),
        env=server_environment(JUPYTER_TOKEN=TOKEN),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 2, started.stderr
    assert "no contents API" in started.stderr and "without --jupyter-contents" in started.stderr, (
        started.stderr
    )
    assert TOKEN not in started.stderr + started.stdout


@pytest.mark.parametrize("auto_restart", [False, True], ids=["reported", "auto-restart"])
async def test_a_kernel_the_gateway_culls_is_kernel_gone(workspace, tmp_path, auto_restart):
    """The gateway culls kernels idle for a few seconds: the agent's next call is told, never
    silently handed a new kernel unless kernel.auto-restart is on."""
    with kernel_gateway(
        tmp_path,
        # Long enough that a loaded machine's first call comes before the cull.
        "--MappingKernelManager.cull_idle_timeout=4",
        "--MappingKernelManager.cull_interval=1",
        # The agent keeps the kernel's websocket open: culled all the same.
        "--MappingKernelManager.cull_connected=True",
    ) as (url, _, _):
        capability = ("--capability", "kernel.auto-restart") if auto_restart else ()
        async with serve(
            workspace, "--jupyter-url", url, *NO_PRESTART, *capability, env={"JUPYTER_TOKEN": TOKEN}
        ) as client:
            used = await ok(
                client, "use_notebook", {"notebook_name": "culled.ipynb", "mode": "create"}
            )
            await ok(client, "execute_code", {"code": "kept = 1"})
            deadline = time.monotonic() + 30
            while used["kernel_id"] in kernels_on(url):
                assert time.monotonic() < deadline, "the gateway never culled the idle kernel"
                time.sleep(0.2)
            result = await client.call_tool("execute_code", {"code": "'after'"})
            if auto_restart:
                assert not result.is_error, text_of(result)
                assert "replacement" in text_of(result) and "'after'" in text_of(result), text_of(
                    result
                )
            else:
                assert error_code(result) == "kernel_gone", text_of(result)
                assert "restart_notebook" in text_of(result)


async def test_jupyter_server_with_the_gateway_as_its_kernels_serves_mcp(tmp_path, gateway):
    """The usual deployment of a gateway: a Jupyter Server (notebooks here) whose kernels are
    the gateway's (``--GatewayClient.url``), with this package's extension serving /mcp."""
    url, gateway_root = gateway
    with jupyter_server_process(
        tmp_path,
        "server-token-5b2e",
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True}",
        f"--GatewayClient.url={url}",
        f"--GatewayClient.auth_token={TOKEN}",
    ) as (server_url, root, log):
        before = kernels_on(url)
        async with connect(f"{server_url}/mcp", "server-token-5b2e", "legacy") as client:
            used = await ok(
                client, "use_notebook", {"notebook_name": "via-gateway.ipynb", "mode": "create"}
            )
            assert used["kernel_id"] in kernels_on(url) - before, "the kernel is not the gateway's"
            ran = await ok(
                client,
                "insert_execute_code_cell",
                {"cell_index": -1, "cell_source": "import os\nprint(os.getcwd())\n6 * 7"},
            )
            assert ran["status"] == "ok" and text_of(
                await client.call_tool("read_cell", {"cell_index": 0})
            ), ran
            assert (root / "via-gateway.ipynb").is_file(), "the notebook is the Jupyter Server's"
            stored = await ok(client, "read_notebook", {"response_format": "detailed"})
            outputs: list[Any] = stored["cells"][0]["outputs"]
            assert any(str(gateway_root) in str(output) for output in outputs), outputs
            timed = await client.call_tool(
                "execute_code", {"code": "import time\ntime.sleep(30)", "timeout": 2}
            )
            assert error_code(timed) == "timeout", text_of(timed)
            assert (
                text_of(await client.call_tool("execute_code", {"code": "'still here'"}))
                == "'still here'"
            )
            await ok(client, "unuse_notebook", {"notebook_name": "via-gateway.ipynb"})
        assert used["kernel_id"] not in kernels_on(url)
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text, text[-4000:]
