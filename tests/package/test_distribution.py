"""The package as users get it: built as a release is, installed into a fresh virtualenv, started.

``python -m build`` makes the sdist from a copy of this checkout (caches and all, as a
developer's tree has them) and the wheel from that sdist. What they ship is checked (the
wheel: the package, its Jupyter config file, no tests, no caches; the sdist: no caches, the
config file, no half of the test suite). The wheel is installed into a new virtualenv whose
only copy of ``jupyter_mcp_server`` is the wheel's; the dependencies are the test
environment's, seen through a ``.pth`` file, since installing them from an index would take
minutes and need the network. JupyterLab is installed beside it the way pip leaves it (its
Jupyter config file in the environment's ``etc/jupyter``). Then, from that virtualenv: the
``jupyter-mcp-server`` script answers over stdio, ``jupyter server`` serves ``/mcp`` with no
configuration behind Jupyter's token, and ``jupyter server extension disable`` turns it off.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from conftest import CORE_TOOLS, REPO
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from servers import answers, free_port, started

VERSION_FILE = REPO / "src" / "jupyter_mcp_server" / "_version.py"
CONFIG_FILE = "etc/jupyter/jupyter_server_config.d/jupyter_mcp_server.json"
TOKEN = "distribution-test-token-5b7e"
#: What a developer's tree holds besides the sources, copied so that a build that shipped it shows.
NEVER_COPIED = shutil.ignore_patterns(".git", ".venv", "node_modules", "dist", "build")


def declared_version() -> str:
    namespace: dict[str, str] = {}
    exec(VERSION_FILE.read_text(), namespace)
    return namespace["__version__"]


@pytest.fixture(scope="module")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel ``python -m build`` makes (the wheel built from the sdist)."""
    tree = tmp_path_factory.mktemp("build")
    source = tree / "source"
    shutil.copytree(REPO, source, ignore=NEVER_COPIED, symlinks=True)
    # No isolated build environment: it would download setuptools; the test environment has it.
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--outdir",
            str(tree / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (sdist,) = (tree / "dist").glob("*.tar.gz")
    (wheel,) = (tree / "dist").glob("*.whl")
    return sdist, wheel


def test_the_version_is_declared_once(distributions: tuple[Path, Path]) -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    sdist, wheel = distributions
    version = declared_version()
    assert (
        wheel.name.startswith(f"jupyter_mcp_server-{version}-")
        and sdist.name == f"jupyter_mcp_server-{version}.tar.gz"
    )


#: The apps' page files in the source tree: what the wheel and the sdist must each ship.
APP_PAGES = sorted(
    path.name for path in (REPO / "src" / "jupyter_mcp_server" / "_apps" / "pages").iterdir()
)


def is_cache(name: str) -> bool:
    parts = name.split("/")
    return name.endswith((".pyc", ".pyo")) or any(
        part in ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis")
        for part in parts
    )


def test_the_wheel_ships_the_package_and_its_jupyter_config_only(
    distributions: tuple[Path, Path],
) -> None:
    _sdist, wheel = distributions
    names = zipfile.ZipFile(wheel).namelist()
    version = declared_version()
    data = f"jupyter_mcp_server-{version}.data/data/"
    assert [name for name in names if is_cache(name)] == []
    tops = {name.split("/")[0] for name in names}
    assert tops == {
        "jupyter_mcp_server",
        f"jupyter_mcp_server-{version}.dist-info",
        f"jupyter_mcp_server-{version}.data",
    }
    assert [name for name in names if name.startswith(data)] == [data + CONFIG_FILE]
    shipped = json.loads(zipfile.ZipFile(wheel).read(data + CONFIG_FILE))
    assert shipped == {"ServerApp": {"jpserver_extensions": {"jupyter_mcp_server": True}}}
    # The scripts the server runs by their path are files in the package.
    for script in ("_kernels/keeper.py", "_kernels/inkernel.py", "_store/regex_worker.py"):
        assert f"jupyter_mcp_server/{script}" in names
    # The output app's chart libraries, each with its licence text.
    charts = "jupyter_mcp_server/_apps/chart_libraries/"
    assert sorted(name[len(charts) :] for name in names if name.startswith(charts)) == [
        "LICENSE-plotly.js.txt",
        "LICENSE-vega-embed.txt",
        "LICENSE-vega-lite.txt",
        "LICENSE-vega.txt",
        "plotly-basic.min.js",
        "vega-embed.min.js",
        "vega-lite.min.js",
        "vega.min.js",
    ]
    # The apps' pages: their HTML, CSS and JavaScript are files of the package, every one shipped.
    pages = "jupyter_mcp_server/_apps/pages/"
    assert sorted(name[len(pages) :] for name in names if name.startswith(pages)) == APP_PAGES


def test_the_sdist_builds_the_wheel_and_ships_no_cache_and_no_part_of_the_tests(
    distributions: tuple[Path, Path],
) -> None:
    sdist, _wheel = distributions
    with tarfile.open(sdist) as archive:
        names = ["/".join(name.split("/")[1:]) for name in archive.getnames()]
    assert [name for name in names if is_cache(name)] == []
    assert [name for name in names if name.startswith("tests")] == []
    assert {
        "pyproject.toml",
        "README.md",
        "jupyter-config/jupyter_server_config.d/jupyter_mcp_server.json",
    } <= set(names)
    pages = "src/jupyter_mcp_server/_apps/pages/"
    assert sorted(name[len(pages) :] for name in names if name.startswith(pages)) == APP_PAGES


@pytest.fixture(scope="module")
def fresh(distributions: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the wheel installed (its bin directory)."""
    _sdist, wheel = distributions
    environment = tmp_path_factory.mktemp("venv") / "env"
    venv.create(environment, with_pip=False)
    python = environment / "bin" / "python"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True,
        ).strip()
    )
    # A plain path: the test environment's .pth files (its editable install of this checkout)
    # are not run, so the wheel's package is the only one found.
    (site / "test-environment-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    lab = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "jupyterlab.json"
    if lab.is_file():
        shutil.copy(lab, environment / "etc" / "jupyter" / "jupyter_server_config.d" / lab.name)
    return environment / "bin"


def user_environment(home: Path) -> dict[str, str]:
    """What a user's shell would hand on: nothing of this checkout, a Jupyter config of its own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "JUPYTER", "VIRTUAL_ENV"))
    }
    for name in ("config", "data", "runtime"):
        (home / name).mkdir(parents=True, exist_ok=True)
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_MCP_HISTORY_DIR=str(home / "history"),
        JUPYTER_MCP_APPROVE="",
        # The test environment's other extensions (published by its entry points) are not the wheel's.
        JUPYTER_MCP_EXTENSIONS="",
    )
    return env


def test_the_installed_package_is_the_wheels(fresh: Path, tmp_path: Path) -> None:
    found = subprocess.run(
        [
            str(fresh / "python"),
            "-c",
            "import jupyter_mcp_server, importlib.metadata as m; "
            "print(jupyter_mcp_server.__file__); print(jupyter_mcp_server.__version__); print(m.version('jupyter-mcp-server'))",
        ],
        capture_output=True,
        text=True,
        env=user_environment(tmp_path),
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    location, version, metadata = found.stdout.split()
    assert Path(location).is_relative_to(fresh.parent), location
    assert version == metadata == declared_version()
    said = subprocess.run(
        [str(fresh / "jupyter-mcp-server"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert said.stdout.strip() == f"jupyter-mcp-server {declared_version()}"


async def test_the_installed_script_serves_over_stdio(fresh: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    params = StdioServerParameters(
        command=str(fresh / "jupyter-mcp-server"),
        args=["start", "--workspace-root", str(workspace)],
        env=user_environment(tmp_path / "home"),
        cwd=str(workspace),
    )
    async with Client(params, mode="legacy") as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == CORE_TOOLS
        listed = await client.call_tool("list_files", {})
        assert not listed.is_error


@contextlib.contextmanager
def jupyter_server(fresh: Path, home: Path) -> Iterator[str]:
    """``jupyter server`` from the fresh environment, with a token; its URL once it answers."""
    root = home / "root"
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with started(
        [
            str(fresh / "python"),
            "-m",
            "jupyter_server",
            f"--port={port}",
            "--ip=127.0.0.1",
            "--no-browser",
            "--allow-root",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.port_retries=0",
        ],
        env=user_environment(home),
        cwd=root,
        log=home / "jupyter.log",
        ready=answers("/api/status", {"Authorization": f"token {TOKEN}"}),
        seconds=90,
        name="jupyter server",
        port=port,
    ) as server:
        yield server.base


async def test_jupyter_server_beside_it_serves_mcp_with_no_configuration_until_it_is_disabled(
    fresh: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    with jupyter_server(fresh, home) as url:
        assert (
            httpx.get(
                f"{url}/lab", headers={"Authorization": f"token {TOKEN}"}, timeout=30
            ).status_code
            == 200
        ), "JupyterLab is beside it"
        refused = httpx.post(f"{url}/mcp", json={}, timeout=30)
        assert refused.status_code == 403, "Jupyter's own authentication guards /mcp"
        async with (
            httpx2.AsyncClient(
                headers={"Authorization": f"token {TOKEN}"}, timeout=httpx2.Timeout(30, read=120)
            ) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client,
        ):
            assert {tool.name for tool in (await client.list_tools()).tools} == CORE_TOOLS
    disabled = subprocess.run(
        [
            str(fresh / "python"),
            "-m",
            "jupyter_server",
            "extension",
            "disable",
            "jupyter_mcp_server",
        ],
        capture_output=True,
        text=True,
        env=user_environment(home),
        timeout=120,
    )
    assert disabled.returncode == 0, disabled.stdout + disabled.stderr
    with jupyter_server(fresh, home) as url:
        assert (
            httpx.post(
                f"{url}/mcp", json={}, headers={"Authorization": f"token {TOKEN}"}, timeout=30
            ).status_code
            == 404
        )
