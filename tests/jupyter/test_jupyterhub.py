"""A user's server behind JupyterHub, as ``--jupyter-url`` and as the extension's host.

A real ``jupyterhub`` (from PyPI) on loopback: its dummy authenticator, its
simple local-process spawner, and the Python implementation of its proxy
(``configurable-http-proxy`` from PyPI, so no Node.js is needed). An admin
service creates the user ``alice``, starts her server, and makes her two
tokens: one with ``access:servers!user=alice`` (what reaching her server
takes), one without; and starts bob's server. Then:

- ``--jupyter-url HUB/user/alice --jupyter-contents`` with her token runs
  code on kernels of her server and keeps the notebooks in her home, through
  the hub's proxy (REST and the kernel websocket); a timeout interrupts, and
  a kernel deleted there is ``kernel_gone``;
- the token without the scope stops the server at start, saying which scope
  a hub token needs, never repeating it;
- her server, with this package's extension enabled, serves
  ``/user/alice/mcp`` behind the hub to her token, and refuses the other;
- JupyterHub's custom scopes ``custom:jupyter_server:ACTION:RESOURCE`` on a token choose
  its profile there (read only: ``read-only``; write too: ``edit``; execute too: ``full``);
- the official MCP client, registered with the hub in advance as a service, signs in through
  the hub's OAuth from a 401 at ``/mcp`` (the metadata the user's server publishes, the hub's
  login and authorize pages, PKCE, the client's secret) and runs code; bob, whose roles let
  him only read, gets a ``read-only`` token for his own server and none for alice's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import httpx2
import pytest
from conftest import (
    error_code,
    ok,
    refused,
    serve,
    server_command,
    server_environment,
    text_of,
)
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
from servers import answers, free_port, started
from test_authorization import Memory
from test_jupyter_server import NO_PRESTART, connect

ADMIN_TOKEN = "hub-admin-service-token-3e8a1f"
#: The dummy authenticator's password, for every user (a person logging in to the hub).
PASSWORD = "the-hubs-password-5d1c"
#: The MCP client, registered with the hub in advance as a service (the hub has no DCR).
CLIENT_ID = "service-mcp-agent"
CLIENT_SECRET = "mcp-agent-client-secret-92b7e4"
REDIRECT = "http://127.0.0.1:9/callback"
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
    spawner_args = [
        *extra,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True}",
        "--JupyterMCPServerApp.hub_custom_scopes=True",
    ]
    config = tmp / "jupyterhub_config.py"
    config.write_text(
        "c = get_config()  # noqa\n"
        f"JUPYTER_SERVER_SCOPES = {list(JUPYTER_SERVER_SCOPES)!r}\n"
        f"c.JupyterHub.bind_url = {url!r}\n"
        f"c.JupyterHub.hub_bind_url = 'http://127.0.0.1:{hub_port}'\n"
        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{proxy_port}'\n"
        f"c.ConfigurableHTTPProxy.command = [{proxy!r}]\n"
        f"c.JupyterHub.public_url = {url + '/'!r}\n"
        "c.JupyterHub.oauth_require_pkce = True\n"
        "c.JupyterHub.authenticator_class = 'dummy'\n"
        f"c.DummyAuthenticator.password = {PASSWORD!r}\n"
        "c.Authenticator.allow_all = True\n"
        "c.JupyterHub.spawner_class = 'simple'\n"
        f"c.SimpleLocalProcessSpawner.home_dir_template = {str(homes / '{username}')!r}\n"
        f"c.JupyterHub.db_url = 'sqlite:///{tmp / 'jupyterhub.sqlite'}'\n"
        f"c.JupyterHub.cookie_secret_file = {str(tmp / 'cookie_secret')!r}\n"
        f"c.JupyterHub.pid_file = {str(tmp / 'jupyterhub.pid')!r}\n"
        f"c.JupyterHub.services = [{{'name': 'admin', 'api_token': {ADMIN_TOKEN!r}}},"
        # The MCP client as docs/authorization.md registers it: its secret, its redirect URI,
        # and the scopes it may ask for, each for the signing-in user's own servers only.
        f" {{'name': 'mcp-agent', 'oauth_client_id': {CLIENT_ID!r}, 'api_token': {CLIENT_SECRET!r},"
        f" 'oauth_redirect_uri': {REDIRECT!r}, 'display': False,"
        " 'oauth_client_allowed_scopes': ['access:servers!user', *(s + '!user' for s in JUPYTER_SERVER_SCOPES)]}]\n"
        "c.JupyterHub.load_roles = [{'name': 'admin-service', 'scopes': ['admin:users', 'admin:servers', 'tokens'], 'services': ['admin']},"
        # Everyone may read their own notebooks through /mcp; alice may also edit and run code.
        " {'name': 'user', 'scopes': ['self', 'access:services!service=mcp-agent', JUPYTER_SERVER_SCOPES[0] + '!user']},"
        " {'name': 'writer', 'scopes': [s + '!user' for s in JUPYTER_SERVER_SCOPES[1:]], 'users': ['alice']}]\n"
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
    began = time.monotonic()
    with started(
        [sys.executable, "-m", "jupyterhub", "-f", str(config)],
        env=environment,
        cwd=tmp,
        log=log,
        ready=answers(f"{url}/hub/api/"),
        seconds=90,
        name="jupyterhub",
        port=port,
        # The hub stops the servers it spawned (cleanup_servers) when it is stopped.
        stop_seconds=30,
    ) as hub_process:
        # alice exists already (the 'writer' role made her); bob may only read, and has no
        # access to alice's server.
        _hub_api(url, "POST", "/users/bob")
        for name in ("alice", "bob"):
            with contextlib.suppress(
                httpx.HTTPStatusError
            ):  # 202 while it spawns (a 500 if slow, on some versions)
                _hub_api(url, "POST", f"/users/{name}/server")
        for name in ("alice", "bob"):
            while not (_hub_api(url, "GET", f"/users/{name}").json()["servers"].get("") or {}).get(
                "ready"
            ):
                assert time.monotonic() < began + 150, (
                    f"{name}'s server never became ready:\n{hub_process.log_text()[-4000:]}"
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


# --- An MCP client signing in through the hub -------------------------------------------


def _ping(endpoint: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """A JSON-RPC ping to `endpoint`, with `headers` besides MCP's."""
    return httpx.post(
        endpoint,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )


async def person_logs_in_to_the_hub(
    authorization_url: str, username: str, refusals: list[dict[str, str]] | None = None
) -> AuthorizationCodeResult:
    """What the person does in the browser: the hub's login form with their password, the hub's
    "Authorize access" page, then the redirect to the client, carrying the code."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        response = await browser.get(authorization_url)
        for _ in range(12):
            if response.is_redirect:
                location = urljoin(str(response.url), response.headers["location"])
                if location.startswith(REDIRECT):
                    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
                    if "code" not in query:  # the hub refused: the client gets an error
                        if refusals is not None:
                            refusals.append(query)
                        raise AssertionError(f"the hub refused the sign-in: {query}")
                    return AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                response = await browser.get(location)
                continue
            assert response.status_code == 200, (response.status_code, response.text[:500])
            page = response.text
            xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page)
            assert xsrf, f"no form on the page: {page[:500]}"
            form: dict[str, object]
            if 'name="password"' in page:  # the login page: it posts to itself
                form = {"username": username, "password": PASSWORD, "_xsrf": xsrf.group(1)}
            else:  # "Authorize access": the scopes as hidden inputs
                assert "Authorize access" in page, page[:500]
                form = {
                    "_xsrf": xsrf.group(1),
                    "scopes": re.findall(r'name="scopes" value="([^"]+)"', page),
                }
            response = await browser.post(str(response.url), data=form)
    raise AssertionError("the sign-in did not come back to the client")


@contextlib.asynccontextmanager
async def signed_in_through_the_hub(
    endpoint: str, username: str, refusals: list[dict[str, str]] | None = None
) -> AsyncIterator[tuple[Client, Memory]]:
    """The official client, registered with the hub in advance, signed in as `username`."""
    storage = Memory()
    storage.client = OAuthClientInformationFull(
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        token_endpoint_auth_method="client_secret_post",
        redirect_uris=[REDIRECT],  # type: ignore[list-item]
        grant_types=["authorization_code"],
        response_types=["code"],
    )
    pending: list[str] = []

    async def redirect(url: str) -> None:
        pending.append(url)

    async def callback() -> AuthorizationCodeResult:
        return await person_logs_in_to_the_hub(pending.pop(), username, refusals)

    oauth = OAuthClientProvider(
        server_url=endpoint,
        client_metadata=OAuthClientMetadata(
            client_name="hub-tests",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="client_secret_post",
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with (
        httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(endpoint, http_client=http), mode="legacy") as client,
    ):
        yield client, storage


async def test_an_mcp_client_signs_in_through_the_hub_and_calls_tools(hub):
    base, home, _, _ = hub
    hub_url = base.removesuffix("/user/alice")
    endpoint = f"{base}/mcp"
    # Without a token: 401, pointing at the protected resource metadata.
    answer = _ping(endpoint)
    assert answer.status_code == 401, (answer.status_code, answer.text)
    challenge = answer.headers["www-authenticate"]
    metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    resource = httpx.get(metadata_url).json()
    assert resource["resource"] == endpoint and resource["authorization_servers"] == [base]
    assert resource["scopes_supported"] == [
        "access:servers!server=alice/",
        *(f"{scope}!server=alice/" for scope in JUPYTER_SERVER_SCOPES),
    ]
    # The issuer's metadata where MCP clients look for it, naming the hub's own endpoints.
    server = httpx.get(f"{base}/.well-known/openid-configuration").json()
    assert server["issuer"] == base
    assert server["authorization_endpoint"] == f"{hub_url}/hub/api/oauth2/authorize"
    assert server["token_endpoint"] == f"{hub_url}/hub/api/oauth2/token"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert "registration_endpoint" not in server

    # The official client: discovery from the 401, the person at the hub's login and
    # authorize pages, the code exchanged with PKCE and the client's secret, then tools.
    async with signed_in_through_the_hub(endpoint, "alice") as (client, storage):
        await ok(client, "use_notebook", {"notebook_name": "signed-in.ipynb", "mode": "create"})
        assert text_of(await client.call_tool("execute_code", {"code": "6 * 7"})) == "42"
        await ok(client, "unuse_notebook", {"notebook_name": "signed-in.ipynb"})
    assert (home / "signed-in.ipynb").is_file()
    tokens = storage.tokens
    assert tokens is not None and tokens.token_type.lower() == "bearer"
    assert tokens.refresh_token is None and tokens.expires_in  # the hub issues no refresh token
    granted = set((tokens.scope or "").split())
    assert {f"{scope}!server=alice/" for scope in JUPYTER_SERVER_SCOPES} <= granted, granted
    # The token is a hub token: the hub knows whose it is and what it grants.
    me = httpx.get(
        f"{hub_url}/hub/api/user", headers={"Authorization": f"Bearer {tokens.access_token}"}
    ).json()
    assert me["name"] == "alice" and "access:servers!server=alice/" in me["scopes"]


def _urls(document: dict[str, object]) -> list[str]:
    values = [
        v for value in document.values() for v in (value if isinstance(value, list) else [value])
    ]
    return [v for v in values if isinstance(v, str) and "://" in v]


async def test_the_sign_in_names_only_the_hub_and_refuses_other_tokens(hub):
    base, _, _, weak = hub
    hub_url = base.removesuffix("/user/alice")
    endpoint = f"{base}/mcp"
    documents = [
        f"{base}/.well-known/oauth-protected-resource/mcp",
        f"{base}/.well-known/openid-configuration",
    ]
    # Served to anyone, with what a client needs and nothing else; every URL the hub's (its
    # public_url), whatever Host the request claims.
    for headers in ({}, {"Host": "evil.example"}, {"X-Forwarded-Host": "evil.example"}):
        resource, server = (httpx.get(url, headers=headers).json() for url in documents)
        assert set(resource) == {
            "resource",
            "authorization_servers",
            "scopes_supported",
            "bearer_methods_supported",
            "resource_name",
        }
        assert set(server) == {
            "issuer",
            "authorization_endpoint",
            "token_endpoint",
            "response_types_supported",
            "grant_types_supported",
            "code_challenge_methods_supported",
            "token_endpoint_auth_methods_supported",
            "scopes_supported",
            "service_documentation",
        }
        assert all(url.startswith(f"{hub_url}/") for url in _urls(resource) + _urls(server)[:-1]), (
            resource,
            server,
        )
        assert _urls(server)[-1].startswith("https://jupyterhub.readthedocs.io/")
        text = json.dumps([resource, server])
        assert CLIENT_SECRET not in text and ADMIN_TOKEN not in text and CLIENT_ID not in text
        challenge = _ping(endpoint, headers)
        assert challenge.status_code == 401
        assert f'resource_metadata="{documents[0]}"' in challenge.headers["www-authenticate"]

    # A token the hub never issued: 401 invalid_token (sign in again), never repeated.
    forged = "0123456789abcdef0123456789abcdef"
    for scheme in ("Bearer", "token"):
        answer = _ping(endpoint, {"Authorization": f"{scheme} {forged}"})
        assert answer.status_code == 401, answer.status_code
        assert 'error="invalid_token"' in answer.headers["www-authenticate"]
        assert forged not in answer.text + answer.headers["www-authenticate"]
    # Tokens the hub knows, of someone who may not reach alice's server: 403, no sign-in offered
    # (signing in again as the same person changes nothing): bob's, and alice's without access.
    bobs = _hub_api(
        hub_url, "POST", "/users/bob/tokens", json={"scopes": ["access:servers!user=bob"]}
    ).json()["token"]
    for token in (bobs, weak):
        answer = _ping(endpoint, {"Authorization": f"Bearer {token}"})
        assert answer.status_code == 403, answer.status_code
        assert "www-authenticate" not in answer.headers
    # Bob signing in through the hub for alice's server: the hub refuses the scope (the client
    # may ask only for the signing-in user's own servers), so no token is ever issued.
    refusals: list[dict[str, str]] = []
    with pytest.raises(BaseException):  # noqa: B017 - whatever the client raises, it has no token
        async with signed_in_through_the_hub(endpoint, "bob", refusals) as (client, _):
            await client.list_tools()
    assert refusals and refusals[0].get("error") == "invalid_scope", refusals


def test_without_the_hubs_public_url_the_sign_in_names_the_origin_the_request_came_to():
    """A hub without ``c.JupyterHub.public_url`` tells its servers no public URL: the documents
    name the origin the client reached ``/mcp`` at (where its token already goes), under the
    hub's base URL; a named server is named by its own filter; no hub, no sign-in."""
    from jupyter_mcp_server._jupyter.hub_sign_in import HubSignIn

    spawned = {
        "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/base/hub/api",
        "JUPYTERHUB_SERVICE_PREFIX": "/base/user/bob/lab/",
        "JUPYTERHUB_BASE_URL": "/base/",
        "JUPYTERHUB_USER": "bob",
        "JUPYTERHUB_SERVER_NAME": "lab",
        "JUPYTERHUB_PUBLIC_URL": "/base/user/bob/lab/",  # a path only, as the hub writes it
        "JUPYTERHUB_PUBLIC_HUB_URL": "",
    }
    sign_in = HubSignIn.from_environment(spawned, "https://hub.example.org")
    assert sign_in is not None
    assert sign_in.resource == "https://hub.example.org/base/user/bob/lab/mcp"
    assert sign_in.issuer == "https://hub.example.org/base/user/bob/lab"
    assert sign_in.scopes == ("access:servers!server=bob/lab",)
    server = sign_in.authorization_server()
    assert server["token_endpoint"] == "https://hub.example.org/base/hub/api/oauth2/token"
    public = HubSignIn.from_environment(
        {
            **spawned,
            "JUPYTERHUB_PUBLIC_URL": "https://hub.example.org/base/user/bob/lab/",
            "JUPYTERHUB_PUBLIC_HUB_URL": "https://hub.example.org/base/hub/",
        },
        "http://evil.example",
    )
    assert public is not None and "evil" not in json.dumps(
        [public.protected_resource(), public.authorization_server(), public.challenge()]
    )
    assert HubSignIn.from_environment({"JUPYTER_TOKEN": "x"}, "https://hub.example.org") is None
    # A Host that is no host name (it would end up quoted in the 401's header): no sign-in.
    assert HubSignIn.from_environment(spawned, 'http://a", error="x') is None
    assert HubSignIn.from_environment(spawned, "http://[::1]:8000") is not None


async def test_a_token_the_hub_issues_gets_the_profile_its_scopes_give(hub):
    """bob's roles let him only read: the client asks for every scope the metadata lists, the
    hub grants those he holds, and /mcp holds the token to ``read-only``."""
    from test_profiles import check_profile, notebook

    base, home, _, _ = hub
    bobs_server = base.removesuffix("/alice") + "/bob"
    notebook(home.parent / "bob")
    async with signed_in_through_the_hub(f"{bobs_server}/mcp", "bob") as (client, storage):
        await check_profile(client, "read-only")
    assert storage.tokens is not None
    granted = set((storage.tokens.scope or "").split())
    assert "custom:jupyter_server:read:contents!server=bob/" in granted, granted
    assert not any("write:contents" in scope or "execute:kernels" in scope for scope in granted), (
        granted
    )
