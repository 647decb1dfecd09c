"""The harness every end-to-end test uses: the real server, the official client.

`serve(workspace, *args)` spawns `jupyter-mcp-server start` over stdio and
yields a connected `mcp.Client`; nothing is mocked. Helpers read the
contract's error shape off a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import settings
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from servers import (  # one place says how a server is started, and what it inherits
    ServerDidNotStart,
    ServerProcess,
    answers,
    free_port,
    server_command,
    server_environment,
    start,
    stopped_after,
)

# The property tests draw the same examples on every run, so that CI never
# turns red on an example nobody drew before; HYPOTHESIS_PROFILE=explore
# draws new ones (a failure found that way becomes a fix and a test).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ERROR_KEY = "io.jupyter-mcp/error"


@contextlib.asynccontextmanager
async def serve(
    workspace: Path,
    *args: str,
    mode: str = "legacy",
    env: dict[str, str] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """A running server over stdio, and the official client connected to it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=server_command(workspace, *args)[1:],
        env=server_environment(**(env or {})),
        cwd=str(workspace),
    )
    async with Client(params, mode=mode, **client_options) as client:
        yield client


def error_code(result: CallToolResult) -> str | None:
    """The contract's error code on a failed result (None on success)."""
    if not result.is_error:
        return None
    return ((result.meta or {}).get(ERROR_KEY) or {}).get("code")


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def ok(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; answer its structured content."""
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, f"{tool} failed: {text_of(result)} {result.meta}"
    assert result.structured_content is not None, f"{tool} has no structuredContent"
    return without_rendered(result, tool)


#: Tools whose structured part holds all their text says, so it carries no ``rendered``.
STRUCTURED_SAYS_ALL = frozenset({"outline"})


def without_rendered(result: CallToolResult, tool: str = "") -> dict[str, Any]:
    """A successful result's structured content without ``rendered``, once that is checked to say
    what the content says (every text in order, and no image's base64), for the clients that
    hand their model only the structured part."""
    structured = dict(result.structured_content or {})
    said = structured.pop("rendered", None)
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    if tool in STRUCTURED_SAYS_ALL:
        assert said is None, f"{tool} says its text again in rendered"
        fields = json.dumps(structured, ensure_ascii=False)
        for row in structured["cells"]:
            assert f"{row['index']} {row['cell_type'][0]} {row['cell_id']} " in texts[0]
        for heading in structured["headings"]:
            assert heading["text"] in texts[0]
        assert f"'{structured['notebook']}'" in texts[0] and structured["revision"] in fields
        return structured
    if said is None:
        # Only a result whose content is its structured part as JSON goes without.
        assert len(result.content) == 1 and json.loads(texts[0]) == structured, texts
        return structured
    at = 0
    for text in texts:
        found = said.find(text, at)
        assert found >= 0, f"rendered leaves out {text[:200]!r}"
        at = found + len(text)
    for block in result.content:
        if getattr(block, "type", None) == "image":
            assert block.data[:64] not in said
    return structured


async def refused(
    client: Client, tool: str, arguments: dict[str, Any], code: str
) -> CallToolResult:
    """Call a tool that must fail with `code`; answer the result."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded but should fail with {code}: {text_of(result)}"
    assert error_code(result) == code, (
        f"{tool}: expected {code}, got {error_code(result)}: {text_of(result)}"
    )
    assert text_of(result).strip(), "an error must say what went wrong"
    return result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this checkout")
    return SHARED


def install_packages(target: Path, *packages: Path) -> Path:
    """Install packages for real (pip, no deps) into `target`, for PYTHONPATH."""
    import subprocess

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(target),
            *map(str, packages),
        ],
        check=True,
        capture_output=True,
    )
    return target


@pytest.fixture(scope="session")
def my_extension_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """PYTHONPATH entry where examples/my-extension is installed as a package."""
    target = tmp_path_factory.mktemp("my-extension-site")
    return str(install_packages(target, REPO / "examples" / "my-extension"))


@contextlib.contextmanager
def jupyter_server_process(
    tmp_path: Path,
    token: str,
    *args: str,
    base_url: str = "/",
    env: dict[str, str] | None = None,
    started: list[Any] | None = None,
    port: int | None = None,
) -> Iterator[tuple[str, Path, Path]]:
    """A real `jupyter server` (from PyPI) on loopback with a token, up once
    ``/api/status`` answers: yields (url with base_url, root_dir, log file).
    Its process is appended to `started`, for a test that stops it itself;
    `port` (a free one by default) lets a test start it again where it was."""
    import importlib.util

    if importlib.util.find_spec("jupyter_server") is None:
        pytest.skip("jupyter_server is not installed (scripts/install test installs it)")
    root = tmp_path / "jupyter-root"
    root.mkdir(exist_ok=True)
    # A port chosen here may be taken by another process before the server binds it
    # (parallel tests): then another is chosen. A port the caller gave is kept.
    ours = port is None
    port = port or free_port()
    log = tmp_path / "jupyter.log"
    environment = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        # Extensions keep databases here (jupyter_server_fileid's): not in the real home.
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        # As for every server the tests start (servers.server_environment): nobody is there to approve.
        "JUPYTER_MCP_APPROVE": "",
        # Nor is a notebook's history the user's: it goes with the test.
        "JUPYTER_MCP_HISTORY_DIR": str(tmp_path / "history"),
        **(env or {}),
    }
    (tmp_path / "data").mkdir(exist_ok=True)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO / "src"), environment.get("PYTHONPATH", "")) if p
    )

    def launch(port: int) -> ServerProcess:
        return start(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                f"--port={port}",
                "--ip=127.0.0.1",
                "--no-browser",
                "--allow-root",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--ServerApp.port_retries=0",
                f"--ServerApp.base_url={base_url}",
                *args,
            ],
            env=environment,
            cwd=root,
            log=log,
            append=True,
            name="jupyter server",
            port=port,
        )

    status = answers(f"{base_url.rstrip('/')}/api/status", {"Authorization": f"token {token}"})
    retries = 3
    while True:
        server = launch(port)
        if started is not None:
            started.append(server.process)
        try:
            server.wait_until(status, 60)
            break
        except ServerDidNotStart:
            server.stop(15)
            if ours and retries and f"port {port} is not available" in server.log_text():
                retries -= 1
                port = free_port()
                continue
            raise
    with stopped_after(server, 15):
        yield f"http://127.0.0.1:{port}{base_url.rstrip('/')}", root, log


#: The notebooks toolset's tools, as README.md names them.
CORE_TOOLS = frozenset(
    {
        "list_files",
        "list_kernels",
        "use_notebook",
        "list_notebooks",
        "restart_notebook",
        "unuse_notebook",
        "outline",
        "search_notebooks",
        "read_notebook",
        "get_notebook_revision",
        "insert_cell",
        "overwrite_cell_source",
        "edit_cell_source",
        "move_cell",
        "delete_cell",
        "clear_cell_output",
        "read_cell",
        "read_output",
        "execute_cell",
        "insert_execute_code_cell",
        "execute_code",
        "interrupt_kernel",
        "interrupt_notebook_session",
        "connect_to_jupyter",
    }
)


@pytest.fixture
def history_toolset() -> tuple[str, ...]:
    """The server arguments that serve the opt-in history toolset over stdio."""
    return ("--toolsets", "history")


def write_notebook(path: Path, sources: list[str]) -> list[str]:
    """A notebook of code cells `sources` (ids cell-0, cell-1, ...) on the python3 kernelspec,
    written with nbformat as Jupyter writes one; answers the cells' ids."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, str(path))
    return [cell["id"] for cell in notebook.cells]
