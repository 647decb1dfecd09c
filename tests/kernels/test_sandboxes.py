"""The sandboxes extension (extensions/sandboxes) through the real server process.

`jupyter-mcp-sandboxes` and its examples are installed with pip into a
directory of their own, once per session, and put on the spawned server's
PYTHONPATH, so these tests exercise the distribution as a user installs it,
whether or not it is also installed editable in the virtualenv (the copy on
PYTHONPATH wins). ``JUPYTER_MCP_EXTENSIONS`` picks which of its entry points
a server loads. Nothing is mocked: sandboxes are real kernel processes,
bubblewrap, and a real Jupyter Server on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import (
    REPO,
    error_code,
    install_packages,
    jupyter_server_process,
    ok,
    refused,
    serve,
    text_of,
)
from mcp import Client
from servers import our_http_server

SANDBOXES = REPO / "extensions" / "sandboxes"
EXAMPLES = SANDBOXES / "examples"
SANDBOX_TOOLS = {"launch_sandbox", "list_sandboxes", "use_sandbox", "terminate_sandbox"}
SANDBOX_META = "io.jupyter-mcp/sandbox"
#: A variable the server has and no sandbox may see.
SECRET = "JUPYTER_MCP_TEST_SECRET"
NO_PRESTART = ("--capability", "kernel.prestart=off")
MIB = 1024 * 1024

_site: dict[str, Path] = {}


@pytest.fixture(scope="session")
def sandboxes_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jupyter-mcp-sandboxes and its examples, installed by pip into one directory."""
    if "site" not in _site:
        sources = tmp_path_factory.mktemp("sandboxes-sources")
        copies = []
        for package in (SANDBOXES, EXAMPLES):
            copy = sources / package.name
            shutil.copytree(
                package,
                copy,
                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "examples"),
            )
            copies.append(copy)
        _site["site"] = install_packages(tmp_path_factory.mktemp("sandboxes-site"), *copies)
    return _site["site"]


def environment(site: Path, extensions: str = "sandboxes", **extra: str) -> dict[str, str]:
    """What the spawned server gets: the checkout's sources, then the installed distribution."""
    return {
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(site)]),
        "JUPYTER_MCP_EXTENSIONS": extensions,
        SECRET: "do-not-leak",
        **extra,
    }


@contextlib.asynccontextmanager
async def sandboxed(
    workspace: Path, site: Path, *args: str, extensions: str = "sandboxes", **env: str
) -> AsyncIterator[Client]:
    async with serve(
        workspace,
        *NO_PRESTART,
        "--toolsets",
        "sandboxes",
        *args,
        env=environment(site, extensions, **env),
    ) as client:
        yield client


async def run(client: Client, code: str, **arguments: Any) -> Any:
    """execute_code that must succeed; answers its last text block (the value)."""
    result = await client.call_tool("execute_code", {"code": code, **arguments})
    assert not result.is_error, text_of(result)
    return result


def last_value(result: Any) -> str:
    return [block.text for block in result.content if getattr(block, "text", None)][-1]


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


async def capabilities(client: Client) -> dict[str, dict[str, Any]]:
    document = json.loads((await client.read_resource("capabilities://")).contents[0].text)
    return {entry["name"]: entry for entry in document["declared"]}


# --- The tools as a client reads them ----------------------------------------------


async def test_the_four_tools_say_what_they_do(workspace, sandboxes_site):
    async with sandboxed(workspace, sandboxes_site) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) >= SANDBOX_TOOLS
        expected = {
            # read_only, destructive, idempotent, open_world (as the README's table says)
            "launch_sandbox": (False, True, False, True),
            "list_sandboxes": (True, False, True, False),
            "use_sandbox": (False, True, True, False),
            "terminate_sandbox": (False, True, True, False),
        }
        for name, hints in expected.items():
            tool = tools[name]
            annotations = tool.annotations
            assert (
                annotations.read_only_hint,
                annotations.destructive_hint,
                annotations.idempotent_hint,
                annotations.open_world_hint,
            ) == hints, name
            assert tool.title and tool.description and len(tool.description) > 40, name
            assert tool.output_schema and tool.output_schema.get("properties"), name
        launch = tools["launch_sandbox"].input_schema["properties"]
        assert {
            "sandbox_name",
            "variant",
            "timeout",
            "memory_mb",
            "cpu_seconds",
            "open_files",
            "processes",
            "server_url",
            "token",
        } <= set(launch)
        assert tools["launch_sandbox"].input_schema["required"] == ["sandbox_name"]
        assert "sandbox_name" not in tools["use_sandbox"].input_schema.get("required", [])

        declared = await capabilities(client)
        assert declared["sandboxes.local"]["enabled"] is True
        assert declared["sandboxes.jupyter-server"]["enabled"] is True
        assert declared["sandboxes.local"]["source"] == "jupyter-mcp-sandboxes"
        confined = declared["sandboxes.confined"]
        assert confined["enabled"] or "Not available here" in confined["description"]

        listed = await ok(client, "list_sandboxes")
        assert listed == {
            "sandboxes": [],
            "active": None,
            "variants": ["local", "confined", "jupyter-server"],
        }
        # Nothing selected: execute_code is the server's own business.
        assert error_code(await client.call_tool("execute_code", {"code": "1"})) == "no_notebook"


# --- local: launch, list, use, run, limits, terminate ----------------------------


async def test_local_sandbox_from_launch_to_terminate(workspace, sandboxes_site):
    async with sandboxed(workspace, sandboxes_site) as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "nb", "notebook_path": "nb.ipynb", "mode": "create"},
        )
        notebook_pid = int(last_value(await run(client, "import os; os.getpid()")))

        launched = await ok(
            client,
            "launch_sandbox",
            {"sandbox_name": "alpha", "memory_mb": 512, "cpu_seconds": 300, "open_files": 128},
        )
        assert launched["sandbox_name"] == "alpha" and launched["variant"] == "local"
        assert (
            launched["state"] == "running"
            and launched["active"] is False
            and launched["ephemeral"] is False
        )
        directory = Path(launched["directory"])
        assert directory.is_dir()
        assert workspace.resolve() not in directory.resolve().parents, (
            "a sandbox's directory is outside the workspace"
        )
        assert launched["limits"]["memory_mb"] == 512 and launched["limits"]["open_files"] == 128
        pid = launched["pid"]
        assert alive(pid) and pid != notebook_pid

        # The errors a caller can act on, with the contract's codes.
        await refused(client, "launch_sandbox", {"sandbox_name": "alpha"}, "already_exists")
        unknown = await refused(
            client, "launch_sandbox", {"sandbox_name": "b", "variant": "cloud"}, "invalid_argument"
        )
        assert "local" in text_of(unknown) and "confined" in text_of(unknown)
        await refused(
            client,
            "launch_sandbox",
            {"sandbox_name": "b", "server_url": "http://x"},
            "invalid_argument",
        )
        await refused(
            client, "launch_sandbox", {"sandbox_name": "b", "memory_mb": 4}, "invalid_argument"
        )
        await refused(client, "launch_sandbox", {"sandbox_name": "../etc"}, "invalid_argument")
        await refused(client, "use_sandbox", {"sandbox_name": "nope"}, "not_found")
        await refused(client, "terminate_sandbox", {"sandbox_name": "nope"}, "not_found")

        listed = await ok(client, "list_sandboxes")
        assert [entry["sandbox_name"] for entry in listed["sandboxes"]] == ["alpha"] and listed[
            "active"
        ] is None

        selected = await ok(client, "use_sandbox", {"sandbox_name": "alpha"})
        assert (
            selected["active"] == "alpha"
            and selected["previous"] is None
            and selected["sandbox"]["active"] is True
        )
        assert (await ok(client, "use_sandbox", {"sandbox_name": "alpha"}))[
            "active"
        ] == "alpha"  # idempotent

        # execute_code runs in the sandbox, and the result says so.
        probe = (
            "import os, json, resource\n"
            "print(json.dumps({'pid': os.getpid(), 'cwd': os.getcwd(), 'home': os.environ.get('HOME'),\n"
            f"  'secret': os.environ.get({SECRET!r}), 'env': sorted(os.environ),\n"
            "  'as': resource.getrlimit(resource.RLIMIT_AS), 'cpu': resource.getrlimit(resource.RLIMIT_CPU),\n"
            "  'nofile': resource.getrlimit(resource.RLIMIT_NOFILE), 'nproc': resource.getrlimit(resource.RLIMIT_NPROC)}))\n"
            "_ = open('made-here.txt', 'w').write('x')"
        )
        result = await run(client, probe)
        assert text_of(result).startswith("Ran in sandbox 'alpha' (local")
        assert (
            result.meta[SANDBOX_META]["sandbox_name"] == "alpha"
            and result.meta[SANDBOX_META]["pid"] == pid
        )
        seen = json.loads(last_value(result))
        assert seen["pid"] == pid != notebook_pid
        assert Path(seen["cwd"]) == directory and seen["home"] == str(directory)
        assert (directory / "made-here.txt").exists() and not (workspace / "made-here.txt").exists()
        assert (
            seen["secret"] is None and SECRET not in seen["env"] and "PYTHONPATH" not in seen["env"]
        )
        assert seen["as"] == [512 * MIB, 512 * MIB]
        assert seen["cpu"][0] == 300 and seen["nofile"] == [128, 128]
        assert seen["nproc"][0] == launched["limits"]["processes"]

        # The memory limit holds, and the session survives hitting it.
        await run(client, "kept = 41")
        over = await client.call_tool(
            "execute_code", {"code": "block = bytearray(700 * 1024 * 1024)"}
        )
        assert error_code(over) == "execution_error"
        assert over.structured_content["error"]["ename"] == "MemoryError"
        assert last_value(await run(client, "kept + 1")) == "42"

        # A timeout interrupts the sandbox's kernel, not the notebook's.
        slow = await client.call_tool(
            "execute_code", {"code": "import time; time.sleep(30)", "timeout": 1}
        )
        assert error_code(slow) == "timeout" and slow.structured_content["status"] == "timeout"
        assert last_value(await run(client, "kept")) == "41"

        # Clearing the selection goes back to the notebook's kernel.
        cleared = await ok(client, "use_sandbox", {})
        assert cleared == {"active": None, "previous": "alpha", "sandbox": None}
        back = await run(client, "import os; os.getpid()")
        assert int(last_value(back)) == notebook_pid and SANDBOX_META not in (back.meta or {})

        await ok(client, "use_sandbox", {"sandbox_name": "alpha"})
        ended = await ok(client, "terminate_sandbox", {"sandbox_name": "alpha"})
        assert ended == {
            "sandbox_name": "alpha",
            "terminated": True,
            "already_gone": False,
            "was_active": True,
            "active": None,
        }
        assert wait_gone(pid) and not directory.exists()
        again = await ok(client, "terminate_sandbox", {"sandbox_name": "alpha"})
        assert again["terminated"] is False and again["already_gone"] is True
        await refused(client, "use_sandbox", {"sandbox_name": "alpha"}, "not_found")
        assert (await ok(client, "list_sandboxes"))["sandboxes"] == []
        # The name is free again.
        relaunched = await ok(client, "launch_sandbox", {"sandbox_name": "alpha"})
        assert relaunched["limits"]["memory_mb"] == 1024


# --- A dead sandbox is never reused; nothing outlives the server ------------------


async def test_a_dead_sandbox_is_not_reused_and_nothing_outlives_the_server(
    workspace, sandboxes_site
):
    async with sandboxed(workspace, sandboxes_site) as client:
        kept = await ok(client, "launch_sandbox", {"sandbox_name": "kept"})
        doomed = await ok(client, "launch_sandbox", {"sandbox_name": "doomed"})
        await ok(client, "use_sandbox", {"sandbox_name": "doomed"})
        assert int(last_value(await run(client, "import os; os.getpid()"))) == doomed["pid"]

        os.kill(doomed["pid"], signal.SIGKILL)
        assert wait_gone(doomed["pid"])
        gone = await refused(client, "execute_code", {"code": "1"}, "kernel_gone")
        assert "doomed" in text_of(gone) and "SIGKILL" in text_of(gone)
        assert gone.meta[SANDBOX_META]["sandbox_name"] == "doomed"
        # Still selected, so the next call says so again rather than running elsewhere.
        await refused(client, "execute_code", {"code": "1"}, "kernel_gone")
        await refused(client, "use_sandbox", {"sandbox_name": "doomed"}, "kernel_gone")
        listed = {
            entry["sandbox_name"]: entry
            for entry in (await ok(client, "list_sandboxes"))["sandboxes"]
        }
        assert listed["doomed"]["state"] == "gone" and listed["kept"]["state"] == "running"
        await refused(client, "launch_sandbox", {"sandbox_name": "doomed"}, "already_exists")

        await ok(client, "use_sandbox", {"sandbox_name": "kept"})
        assert int(last_value(await run(client, "import os; os.getpid()"))) == kept["pid"]
        ended = await ok(client, "terminate_sandbox", {"sandbox_name": "doomed"})
        assert (
            ended["terminated"] is False
            and ended["already_gone"] is True
            and ended["was_active"] is False
        )
        assert not Path(doomed["directory"]).exists()
        assert alive(kept["pid"])
    # The server has exited: its on_stop terminated what was left.
    assert wait_gone(kept["pid"]), "a sandbox outlived the server"
    assert not Path(kept["directory"]).exists()


# --- confined: bubblewrap ---------------------------------------------------------


def confined_unavailable() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the confined variant needs Linux"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    # The variant's own probe: the test skips exactly where the variant refuses.
    from jupyter_mcp_sandboxes.variants.confined import probe

    return probe(bwrap)


async def test_confined_sandbox_has_no_network_and_a_read_only_world(workspace, sandboxes_site):
    reason = confined_unavailable()
    if reason is not None:
        pytest.skip(reason)
    (workspace / "private.txt").write_text("the workspace's own\n")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        async with sandboxed(workspace, sandboxes_site) as client:
            assert (await capabilities(client))["sandboxes.confined"]["enabled"] is True
            launched = await ok(
                client,
                "launch_sandbox",
                {"sandbox_name": "jail", "variant": "confined", "memory_mb": 512},
            )
            assert launched["variant"] == "confined" and "bubblewrap" in launched["where"]
            await ok(client, "use_sandbox", {"sandbox_name": "jail"})
            probe = (
                "import os, json, socket, resource\n"
                "def attempt(action):\n"
                "    try:\n"
                "        action(); return 'ok'\n"
                "    except Exception as error:\n"
                "        return type(error).__name__\n"
                "def write(path):\n"
                "    return lambda: open(path, 'w').write('x')\n"
                f"print(json.dumps({{'connect': attempt(lambda: socket.create_connection(('127.0.0.1', {port}), timeout=2)),\n"
                f"  'workspace_listed': os.path.isdir({str(workspace)!r}) and os.listdir({str(workspace)!r}),\n"
                f"  'workspace_file': os.path.exists({str(workspace / 'private.txt')!r}),\n"
                f"  'write_workspace': attempt(write({str(workspace / 'planted.txt')!r})),\n"
                "  'write_usr': attempt(write('/usr/planted.txt')),\n"
                "  'write_here': attempt(write('planted.txt')),\n"
                "  'root_listed': os.listdir('/root') if os.path.isdir('/root') else None,\n"
                "  'cwd': os.getcwd(), 'as': resource.getrlimit(resource.RLIMIT_AS)}))"
            )
            result = await run(client, probe)
            assert text_of(result).startswith("Ran in sandbox 'jail' (confined")
            seen = json.loads(last_value(result))
            assert seen["connect"] != "ok", "the confined sandbox reached the host's network"
            assert not seen["workspace_listed"] and seen["workspace_file"] is False
            assert seen["write_workspace"] != "ok" and not (workspace / "planted.txt").exists()
            assert seen["write_usr"] != "ok"
            assert (
                seen["write_here"] == "ok"
                and (Path(launched["directory"]) / "planted.txt").exists()
            )
            assert Path(seen["cwd"]) == Path(launched["directory"])
            # /root is hidden, except where the kernel's own interpreter lives.
            interpreter = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.executable)}
            needed = {
                p.relative_to("/root").parts[0] for p in interpreter if Path("/root") in p.parents
            }
            assert set(seen["root_listed"] or []) <= needed
            assert seen["as"] == [512 * MIB, 512 * MIB]
            # Interrupting goes through the kernel's control channel: the sandbox survives it.
            slow = await client.call_tool(
                "execute_code", {"code": "import time; time.sleep(30)", "timeout": 1}
            )
            assert error_code(slow) == "timeout"
            assert last_value(await run(client, "6 * 7")) == "42"
        assert wait_gone(launched["pid"]), "bubblewrap outlived the server"
        assert not Path(launched["directory"]).exists()
    finally:
        listener.close()


# --- Notebooks' kernels from sandboxes (create_code_sandbox) ----------------------


async def test_notebook_kernels_come_from_the_configured_variant(workspace, sandboxes_site):
    env = {
        "JUPYTER_MCP_SANDBOX_VARIANT": "local",
        "JUPYTER_MCP_SANDBOX_OPTIONS": '{"memory_mb": 640}',
    }
    async with sandboxed(workspace, sandboxes_site, **env) as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "nb", "notebook_path": "nb.ipynb", "mode": "create"},
        )
        cell = await ok(
            client,
            "insert_execute_code_cell",
            {
                "cell_index": -1,
                "cell_source": "import os, resource; print(os.getpid(), os.getcwd(), resource.getrlimit(resource.RLIMIT_AS)[0])",
            },
        )
        assert cell["status"] == "ok"
        listed = (await ok(client, "list_sandboxes"))["sandboxes"]
        assert len(listed) == 1 and listed[0]["ephemeral"] is True and listed[0]["active"] is False
        fresh = listed[0]
        output = last_value(
            await run(
                client, "print(os.getpid(), os.getcwd(), resource.getrlimit(resource.RLIMIT_AS)[0])"
            )
        )
        assert output.split() == [str(fresh["pid"]), fresh["directory"], str(640 * MIB)]

        # A selected sandbox is what the notebook gets when it next needs a kernel,
        # and the one started for it ends when the notebook lets go of it.
        chosen = await ok(client, "launch_sandbox", {"sandbox_name": "chosen"})
        await ok(client, "use_sandbox", {"sandbox_name": "chosen"})
        await ok(client, "restart_notebook", {"notebook_name": "nb"})
        assert wait_gone(fresh["pid"])
        names = [
            entry["sandbox_name"] for entry in (await ok(client, "list_sandboxes"))["sandboxes"]
        ]
        assert names == ["chosen"]
        ran = await ok(client, "execute_cell", {"cell_index": 0})
        assert ran["status"] == "ok"
        read = await ok(client, "read_cell", {"cell_index": 0})
        assert read["outputs"][0]["text"].split()[:2] == [str(chosen["pid"]), chosen["directory"]]


# --- Over HTTP: an opt-in toolset --------------------------------------------------


@contextlib.contextmanager
def http_server(root: Path, site: Path, **env: str) -> Iterator[str]:
    workspace = root / "workspace"
    workspace.mkdir()
    with our_http_server(
        workspace, *NO_PRESTART, env=environment(site, **env), cwd=root, log=root / "server.log"
    ) as server:
        yield server.base


@contextlib.asynccontextmanager
async def connected(url: str) -> AsyncIterator[Client]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


async def served(url: str) -> set[str]:
    async with connected(url) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def test_sandboxes_is_opt_in_over_http(tmp_path, sandboxes_site):
    # No bwrap on this server's PATH: the confined variant must say what is missing.
    with http_server(tmp_path, sandboxes_site, PATH="/nonexistent") as base:
        described = {
            entry["name"]: entry for entry in httpx.get(f"{base}/toolsets").json()["toolsets"]
        }
        assert described["sandboxes"]["default"] is False and described["sandboxes"]["tools"] == []
        only, default, added = await asyncio.gather(
            served(f"{base}/mcp?only=sandboxes"),
            served(f"{base}/mcp"),
            served(f"{base}/mcp?sandboxes"),
        )
        assert only == SANDBOX_TOOLS
        assert not default & SANDBOX_TOOLS and "execute_code" in default
        assert added == default | SANDBOX_TOOLS

        async with connected(f"{base}/mcp?only=sandboxes") as client:
            confined = (await capabilities(client))["sandboxes.confined"]
            assert confined["enabled"] is False and "bubblewrap" in confined["description"]
            missing = await refused(
                client,
                "launch_sandbox",
                {"sandbox_name": "jail", "variant": "confined"},
                "unsupported",
            )
            assert "bubblewrap" in text_of(missing) and "apt-get install bubblewrap" in text_of(
                missing
            )


# --- The downstream examples --------------------------------------------------------


async def test_an_extension_narrows_launch_sandbox_by_name(workspace, sandboxes_site):
    async with sandboxed(
        workspace, sandboxes_site, extensions="sandboxes,sandboxes-local-only"
    ) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        launch = tools["launch_sandbox"]
        assert set(launch.input_schema["properties"]) == {"sandbox_name", "memory_mb"}
        assert launch.description.startswith("Launch a local sandbox")
        assert launch.output_schema and "sandbox_name" in launch.output_schema["properties"]
        assert (
            launch.annotations.destructive_hint is True
            and launch.annotations.idempotent_hint is False
        )
        assert "list_sandboxes" in tools

        launched = await ok(client, "launch_sandbox", {"sandbox_name": "narrow"})
        assert launched["variant"] == "local" and launched["limits"]["memory_mb"] == 512
        # The wrapper counts the registry the sandboxes extension lends.
        for name in ("two", "three"):
            await ok(client, "launch_sandbox", {"sandbox_name": name, "memory_mb": 256})
        await refused(client, "launch_sandbox", {"sandbox_name": "four"}, "kernel_limit")


async def test_an_extension_takes_a_tool_off_the_built_server(workspace, sandboxes_site):
    async with sandboxed(
        workspace, sandboxes_site, extensions="sandboxes,sandboxes-no-listing"
    ) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names & SANDBOX_TOOLS == SANDBOX_TOOLS - {"list_sandboxes"}
        assert (await client.call_tool("list_sandboxes", {})).is_error


# --- jupyter-server: a kernel on a real Jupyter Server ----------------------------


@pytest.fixture
def jupyter_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real `jupyter server` on loopback with a token: (url, token)."""
    token = "sandbox-test-token-0123456789"
    with jupyter_server_process(tmp_path, token) as (url, _root, _log):
        yield url, token


async def test_jupyter_server_variant_runs_on_a_real_server(
    workspace, sandboxes_site, jupyter_server
):
    url, token = jupyter_server
    headers = {"Authorization": f"token {token}"}
    async with sandboxed(workspace, sandboxes_site) as client:
        wrong = await refused(
            client,
            "launch_sandbox",
            {
                "sandbox_name": "far",
                "variant": "jupyter-server",
                "server_url": url,
                "token": "not-the-token-xyz",
            },
            "invalid_argument",
        )
        assert "refused the token" in text_of(wrong) and "not-the-token-xyz" not in text_of(wrong)
        assert "not-the-token-xyz" not in json.dumps(wrong.meta)
        far = {"sandbox_name": "far", "variant": "jupyter-server"}
        reached = {**far, "server_url": url, "token": token}
        for arguments, code in (
            (far, "invalid_argument"),  # no server_url
            ({**reached, "memory_mb": 512}, "invalid_argument"),  # limits are the server's
            ({**reached, "kernel_name": "cobol"}, "not_found"),
        ):
            await refused(client, "launch_sandbox", arguments, code)

        launched = await ok(
            client,
            "launch_sandbox",
            {"sandbox_name": "far", "variant": "jupyter-server", "server_url": url, "token": token},
        )
        assert launched["server_url"] == url and launched["pid"] is None
        assert token not in json.dumps(launched)
        kernels = httpx.get(f"{url}/api/kernels", headers=headers).json()
        assert [kernel["id"] for kernel in kernels] == [launched["kernel_id"]]

        await ok(client, "use_sandbox", {"sandbox_name": "far"})
        result = await run(client, "import os\nos.getcwd()")
        assert "Ran in sandbox 'far' (jupyter-server" in text_of(result) and url in text_of(result)
        assert result.meta[SANDBOX_META]["server_url"] == url
        assert "jupyter-root" in last_value(result)
        await run(client, "value = 20")
        slow = await client.call_tool(
            "execute_code", {"code": "import time; time.sleep(30)", "timeout": 1}
        )
        assert error_code(slow) == "timeout"
        assert last_value(await run(client, "value * 2 + 2")) == "42"

        ended = await ok(client, "terminate_sandbox", {"sandbox_name": "far"})
        assert ended["terminated"] is True
        assert httpx.get(f"{url}/api/kernels", headers=headers).json() == []
        assert (await ok(client, "terminate_sandbox", {"sandbox_name": "far"}))[
            "already_gone"
        ] is True

        # One left running is deleted from the server when this server stops.
        await ok(
            client,
            "launch_sandbox",
            {
                "sandbox_name": "left",
                "variant": "jupyter-server",
                "server_url": url,
                "token": token,
            },
        )
        assert len(httpx.get(f"{url}/api/kernels", headers=headers).json()) == 1
    deadline = time.monotonic() + 10
    while httpx.get(f"{url}/api/kernels", headers=headers).json() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert httpx.get(f"{url}/api/kernels", headers=headers).json() == [], (
        "a remote kernel outlived the server"
    )
