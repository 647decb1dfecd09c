"""Kernel backends are a public seam: a class behind an entry point, as provisioners are.

The server's own three (local, a Jupyter Server's, Jupyter Server's own kernel manager) are
published under ``jupyter_mcp_server.kernel_backends`` like anybody else's and chosen in one
place (``app.kernel_backend_name``). A backend another distribution publishes, written
against ``jupyter_mcp_server.api`` alone, is installed for real here and runs the kernels.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, install_packages, ok, serve, text_of
from rpc import environment

from jupyter_mcp_server._app import kernel_backend_name
from jupyter_mcp_server._config import read_config

FIXTURE = REPO / "tests" / "fixtures" / "fixture-backend"


@pytest.fixture(scope="module")
def backend_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(install_packages(tmp_path_factory.mktemp("fixture-backend-site"), FIXTURE))


def test_the_backend_is_chosen_in_one_place(tmp_path: Path) -> None:
    assert kernel_backend_name(read_config({"workspace_root": str(tmp_path)}, {})) == "local"
    remote = read_config({"workspace_root": str(tmp_path), "jupyter_url": "http://127.0.0.1:9"}, {})
    assert kernel_backend_name(remote) == "jupyter-server"
    chosen = read_config(
        {"workspace_root": str(tmp_path)}, {"JUPYTER_MCP_KERNEL_BACKEND": "fixture-wrapped"}
    )
    assert kernel_backend_name(chosen) == "fixture-wrapped"


def test_an_unknown_backend_stops_the_server_naming_the_known_ones(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter_mcp_server",
            "start",
            "--workspace-root",
            str(tmp_path),
            "--kernel-backend",
            "nowhere",
        ],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert (
        "'nowhere'" in done.stderr
        and "Known: jupyter-server, jupyter-server-extension, local " in done.stderr
    ), done.stderr


async def test_a_published_backend_starts_the_kernels(workspace: Path, backend_path: str) -> None:
    async with serve(
        workspace, "--kernel-backend", "fixture-wrapped", env={"PYTHONPATH": backend_path}
    ) as client:
        listed = await ok(client, "list_kernels")
        assert listed["kernelspecs"] == ["python3"], "the kernelspecs are the backend's"
        await ok(client, "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"})
        ran = await client.call_tool("execute_code", {"code": "print(6 * 7)"})
        assert not ran.is_error and "42" in text_of(ran)
    assert (workspace / "started-by-fixture-backend").read_text().splitlines()[0] == "python3"
