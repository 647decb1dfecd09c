"""A user's server behind JupyterHub, as ``--jupyter-url`` and as the extension's host.

A real ``jupyterhub`` (from PyPI) on loopback: its dummy authenticator, its
simple local-process spawner, and the Python implementation of its proxy
(``configurable-http-proxy`` from PyPI, so no Node.js is needed). An admin
service creates the user ``alice``, starts her server, and makes her two
tokens: one with ``access:servers!user=alice`` (what reaching her server
takes), one without. Then:

- ``--jupyter-url HUB/user/alice --jupyter-contents`` with her token runs
  code on kernels of her server and keeps the notebooks in her home, through
  the hub's proxy (REST and the kernel websocket); a timeout interrupts, and
  a kernel deleted there is ``kernel_gone``;
- the token without the scope stops the server at start, saying which scope
  a hub token needs, never repeating it;
- her server, with this package's extension enabled, serves
  ``/user/alice/mcp`` behind the hub to her token, and refuses the other;
- JupyterHub's custom scopes ``custom:jupyter_server:ACTION:RESOURCE`` on a token choose
  its profile there (read only: ``read-only``; write too: ``edit``; execute too: ``full``).
"""

from __future__ import annotations

import contextlib
import importlib.util
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
from conftest import (
    error_code,
    free_port,
    ok,
    refused,
    serve,
    server_command,
    server_environment,
    text_of,
)
from test_jupyter_server import NO_PRESTART, connect

ADMIN_TOKEN = "hub-admin-service-token-3e8a1f"
#: Jupyter Server's permissions as JupyterHub custom scopes, in the shape its docs recommend.
JUPYTER_SERVER_SCOPES = (
    "custom:jupyter_server:read:contents",
    "custom:jupyter_server:write:contents",
    "custom:jupyter_server:execute:kernels",
)


def _hub_api(url: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    response = httpx.request(
        method,
        f"{url}/hub/api{path}",
        headers={"Authorization": f"token {ADMIN_TOKEN}"},
        timeout=30,
        **kwargs,
    )  # type: ignore[arg-type]
    response.raise_for_status()
    return response


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, str, str]]:
    """The hub, alice's server running: (alice's server URL, her home, her token with
    access:servers, her token without)."""
    if importlib.util.find_spec("jupyterhub") is None:
        pytest.skip("jupyterhub is not installed (scripts/install test installs it)")
    bin_dir = Path(sys.executable).parent
    proxy = shutil.which(
        "configurable-http-proxy", path=os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
    )
    if proxy is None:
        pytest.skip(
            "configurable-http-proxy (its Python implementation from PyPI, or the npm one) is not installed"
        )
    tmp = tmp_path_factory.mktemp("hub")
    homes = tmp / "home"
    homes.mkdir()
    port, hub_port, proxy_port = free_port(), free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    extra = ["--allow-root"] if hasattr(os, "getuid") and os.getuid() == 0 else []
    spawner_args = [*extra, "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True}"]
    config = tmp / "jupyterhub_config.py"
    config.write_text(
        "c = get_config()  # noqa\n"
        f"JUPYTER_SERVER_SCOPES = {list(JUPYTER_SERVER_SCOPES)!r}\n"
        f"c.JupyterHub.bind_url = {url!r}\n"
        f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{hub_port}'\n"
        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{proxy_port}'\n"
        f"c.ConfigurableHTTPProxy.command = [{proxy!r}]\n"
        "c.JupyterHub.authenticator_class = 'dummy'\n"
        "c.Authenticator.allow_all = True\n"
        "c.JupyterHub.spawner_class = 'simple'\n"
        f"c.SimpleLocalProcessSpawner.home_dir_template = {str(homes / '{username}')!r}\n"
        f"c.JupyterHub.db_url = 'sqlite:///{tmp / 'jupyterhub.sqlite'}'\n"
        f"c.JupyterHub.cookie_secret_file = {str(tmp / 'cookie_secret')!r}\n"
        f"c.JupyterHub.pid_file = {str(tmp / 'jupyterhub.pid')!r}\n"
        f"c.JupyterHub.services = [{{'name': 'admin', 'api_token': {ADMIN_TOKEN!r}}}]\n"
        "c.JupyterHub.load_roles = [{'name': 'admin-service', 'scopes': ['admin:users', 'admin:servers', 'tokens'], 'services': ['admin']},"
        " {'name': 'user', 'scopes': ['self', *(s + '!user' for s in JUPYTER_SERVER_SCOPES)]}]\n"
        "c.JupyterHub.custom_scopes = {s: {'description': s} for s in JUPYTER_SERVER_SCOPES}\n"
        f"c.Spawner.args = {spawner_args!r}\n"
        "c.Spawner.http_timeout = 60\n"
        "c.Spawner.start_timeout = 120\n"
    )
    log = tmp / "jupyterhub.log"
    environment = {
        **server_environment(),
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=tmp,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"jupyterhub exited with {process.returncode}:\n{log.read_text()[-4000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/hub/api/", timeout=1).status_code == 200:
                    break
            assert time.monotonic() < deadline, (
                f"jupyterhub did not start:\n{log.read_text()[-4000:]}"
            )
            time.sleep(0.2)
        _hub_api(url, "POST", "/users/alice")
        with contextlib.suppress(
            httpx.HTTPStatusError
        ):  # 202 while it spawns (a 500 if slow, on some versions)
            _hub_api(url, "POST", "/users/alice/server")
        while not (_hub_api(url, "GET", "/users/alice").json()["servers"].get("") or {}).get(
            "ready"
        ):
            assert time.monotonic() < deadline + 60, (
                f"alice's server never became ready:\n{log.read_text()[-4000:]}"
            )
            time.sleep(0.3)
        tokens = [
            _hub_api(
                url, "POST", "/users/alice/tokens", json={"scopes": scopes, "note": note}
            ).json()["token"]
            for scopes, note in (
                (["access:servers!user=alice"], "the agent"),
                (["read:users!user=alice"], "no access"),
            )
        ]
        yield f"{url}/user/alice", homes / "alice", tokens[0], tokens[1]
    finally:
        process.terminate()  # the hub stops the servers it spawned (cleanup_servers)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_a_users_server_behind_the_hub_runs_the_agents_kernels_and_keeps_its_notebooks(
    workspace, hub
):
    url, home, token, _ = hub
    async with serve(
        workspace,
        "--jupyter-url",
        url,
        "--jupyter-contents",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": token},
    ) as client:
        used = await ok(
            client, "use_notebook", {"notebook_name": "from-the-agent.ipynb", "mode": "create"}
        )
        ran = await ok(
            client,
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "import os\nprint(os.getcwd())\nkept = 6 * 7"},
        )
        assert (
            ran["status"] == "ok"
            and text_of(await client.call_tool("execute_code", {"code": "kept"})) == "42"
        )
        # The notebook is hers, in her home on the hub's machine, not in the workspace.
        cells = json.loads((home / "from-the-agent.ipynb").read_text())["cells"]
        assert cells[0]["outputs"][0]["text"] == [f"{home}\n"]
        assert not (workspace / "from-the-agent.ipynb").exists()
        # Through the hub's proxy, a timeout interrupts and the kernel goes on.
        timed = await client.call_tool(
            "execute_code", {"code": "import time\ntime.sleep(30)", "timeout": 2}
        )
        assert error_code(timed) == "timeout", text_of(timed)
        assert text_of(await client.call_tool("execute_code", {"code": "kept"})) == "42"
        # Deleted on her server (by her, from JupyterLab): kernel_gone.
        deleted = httpx.delete(
            f"{url}/api/kernels/{used['kernel_id']}", headers={"Authorization": f"token {token}"}
        )
        assert deleted.status_code == 204
        gone = await refused(client, "execute_code", {"code": "kept"}, "kernel_gone")
        assert token not in text_of(gone)


def test_a_hub_token_without_access_to_the_server_is_refused_naming_the_scope(workspace, hub):
    url, _, _, weak = hub
    started = subprocess.run(
        server_command(workspace, "--jupyter-url", url),
        env=server_environment(JUPYTER_TOKEN=weak),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 2, started.stderr
    assert "refused the token" in started.stderr and "access:servers" in started.stderr, (
        started.stderr
    )
    assert weak not in started.stderr + started.stdout


async def test_the_extension_in_the_users_server_serves_mcp_behind_the_hub(hub):
    url, home, token, weak = hub
    async with connect(f"{url}/mcp", token, "legacy") as client:
        await ok(client, "use_notebook", {"notebook_name": "inside.ipynb", "mode": "create"})
        assert text_of(await client.call_tool("execute_code", {"code": "6 * 7"})) == "42"
        await ok(client, "unuse_notebook", {"notebook_name": "inside.ipynb"})
    assert (home / "inside.ipynb").is_file()
    answer = httpx.post(
        f"{url}/mcp",
        headers={
            "Authorization": f"token {weak}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    assert answer.status_code in (302, 401, 403), answer.status_code


def _token(url: str, scopes: list[str]) -> str:
    return _hub_api(
        url, "POST", "/users/alice/tokens", json={"scopes": scopes, "note": " ".join(scopes)}
    ).json()["token"]


async def test_hub_scopes_choose_the_callers_profile_in_the_users_server(hub):
    """JupyterHub's single-user authorizer ignores Jupyter Server's action and resource (any
    token reaching the server may do everything: the agent's token above runs code). Its
    custom scopes ``custom:jupyter_server:ACTION:RESOURCE`` say more, and /mcp holds a token
    carrying them to them; a token that cannot reach the server at all (only
    ``read:servers``, the hub API's scope) is refused before anything is served."""
    from test_profiles import check_profile, notebook

    base, home, _, _ = hub
    url = base.removesuffix("/user/alice")
    access = "access:servers!user=alice"
    notebook(home)
    read = _token(url, [access, "custom:jupyter_server:read:contents!user=alice"])
    async with connect(f"{base}/mcp", read, "legacy") as client:
        await check_profile(client, "read-only")
    # JupyterHub's own authorizer lets the same token write through Jupyter Server's REST API:
    # the custom scopes bind /mcp only, as said in docs/jupyter-server.md.
    written = httpx.put(
        f"{base}/api/contents/by-rest.txt",
        headers={"Authorization": f"token {read}"},
        json={"type": "file", "format": "text", "content": "the hub allowed it"},
    )
    assert written.status_code in (200, 201), written.text
    write = _token(
        url,
        [
            access,
            "custom:jupyter_server:read:contents!user=alice",
            "custom:jupyter_server:write:contents!user=alice",
        ],
    )
    async with connect(f"{base}/mcp", write, "legacy") as client:
        await check_profile(client, "edit")
    everything = _token(url, [access, *(f"{scope}!user=alice" for scope in JUPYTER_SERVER_SCOPES)])
    async with connect(f"{base}/mcp", everything, "legacy") as client:
        await ok(client, "use_notebook", {"notebook_name": "a.ipynb"})
        assert (await ok(client, "execute_cell", {"cell_index": 0}))["status"] == "ok"
        await ok(client, "unuse_notebook", {"notebook_name": "a.ipynb"})
    reader = _token(url, ["read:servers!user=alice"])
    answer = httpx.post(
        f"{base}/mcp",
        headers={
            "Authorization": f"token {reader}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    assert answer.status_code == 403, answer.status_code
