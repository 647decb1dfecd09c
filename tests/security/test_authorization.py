"""Signing in with a real OpenID provider: this server as an OAuth resource server.

`oidc-provider` (npm, a certified OpenID provider; tests/oidc/provider.mjs) runs on
loopback with a signing key these tests made, and `jupyter-mcp-server start --transport
streamable-http --auth-issuer` trusts it. The official `mcp` client's OAuth support signs
in the whole way (protected resource metadata, the provider's metadata, dynamic
registration, PKCE, RFC 8707's resource), the test playing the person at the login and
consent pages over plain HTTP, then calls tools. Tokens the provider's key signs are also
minted here, to be refused for what they are (another audience, expired, too few scopes,
another issuer) beside tokens no provider would sign (forged, ``alg=none``, an unknown key,
duplicated or nested claims). The JWKS is then made to fail (down, garbage, slow): keys
already fetched keep working, a new one is a 503 with a reason, never a 500 or a hang.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import httpx2
import jwt
import pytest
from conftest import text_of
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.types import Implementation
from node_tools import library
from servers import started
from test_http import MCP_HEADERS, HttpServer, http_server

OIDC_PROVIDER = "oidc-provider@9.13.3"
SCRIPT = Path(__file__).parents[1] / "oidc" / "provider.mjs"
INTROSPECTOR = {"client_id": "jupyter-mcp", "client_secret": "introspection-secret"}
ALL_SCOPES = "notebooks:read notebooks:write code:execute"
#: Tools each profile keeps and loses (read-only reads, edit edits, full runs code).
READS, EDITS, RUNS = "read_notebook", "insert_cell", "execute_code"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "auth-tests", "version": "0"},
    },
}


def new_key(kid: str) -> tuple[Any, dict[str, Any]]:
    """(an RSA private key, its private JWK with `kid`)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key))
    return key, {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


@dataclass
class Provider:
    issuer: str
    key: Any
    kid: str
    process: subprocess.Popen[bytes]

    def control(self, what: str, **params: str) -> None:
        httpx.post(f"{self.issuer}/test/{what}", params=params).raise_for_status()


def issuer_said(log: str) -> str | None:
    """The issuer the provider writes, as {"issuer": ...} on a line of its own, once it listens."""
    for line in log.splitlines(keepends=True):
        if line.startswith('{"issuer"') and line.endswith("\n"):
            return json.loads(line)["issuer"]
    return None


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    node, folder, env = library(OIDC_PROVIDER)
    key, jwk = new_key("provider-key-1")
    settings = tmp_path_factory.mktemp("oidc") / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "signing_key": jwk,
                "introspection_client": {
                    **INTROSPECTOR,
                    "grant_types": [],
                    "response_types": [],
                    "redirect_uris": [],
                },
            }
        )
    )
    log = settings.parent / "provider.log"
    with started(
        [node, str(SCRIPT), str(folder), str(settings)],
        env=env,
        cwd=Path.cwd(),
        log=log,
        ready=lambda running: issuer_said(running.log_text()) is not None,
        name="oidc-provider",
        stop_seconds=10,
    ) as running:
        yield Provider(issuer_said(running.log_text()) or "", key, jwk["kid"], running.process)


@pytest.fixture(scope="module")
def server(provider: Provider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("auth-server")
    with http_server(
        root,
        None,  # type: ignore[arg-type] - no extension site: the core tools alone
        "--capability",
        "kernel.prestart=off",
        "--auth-issuer",
        provider.issuer,
        "--auth-client-id",
        INTROSPECTOR["client_id"],
        "--audit-log",
        str(root / "auth-audit.jsonl"),
        JUPYTER_MCP_EXTENSIONS="",
        JUPYTER_MCP_AUTH_CLIENT_SECRET=INTROSPECTOR["client_secret"],
        JUPYTER_MCP_AUTH_TIMEOUT="2",
        JUPYTER_MCP_AUTH_KEYS_COOLDOWN="0.2",
        JUPYTER_MCP_LOG_LEVEL="INFO",
    ) as running:
        (running.workspace / "a.ipynb").write_text(
            json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
        yield running


# --- The official client's sign-in ------------------------------------------------------


class Memory:
    """Token storage in memory, as the SDK's TokenStorage."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


REDIRECT = "http://127.0.0.1:9/callback"


async def person_signs_in(authorization_url: str, login: str) -> AuthorizationCodeResult:
    """What a person does in the browser: the login form, the consent form, then the redirect."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        response = await browser.get(authorization_url)
        for _ in range(12):
            if response.is_redirect:
                location = urljoin(str(response.url), response.headers["location"])
                if location.startswith(REDIRECT):
                    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
                    assert "code" in query, f"the provider refused the sign-in: {query}"
                    return AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                response = await browser.get(location)
                continue
            page = response.text
            action = re.search(r'<form[^>]*action="([^"]+)"', page)
            prompt = re.search(r'name="prompt" value="(\w+)"', page)
            assert action and prompt, (
                f"not a login or consent page ({response.status_code}): {page[:500]}"
            )
            form = {"prompt": prompt.group(1)}
            if prompt.group(1) == "login":
                form |= {"login": login, "password": "whatever"}
            response = await browser.post(urljoin(str(response.url), action.group(1)), data=form)
    raise AssertionError("the sign-in did not come back to the client")


@contextlib.asynccontextmanager
async def signed_in(
    server: HttpServer, login: str = "alice"
) -> AsyncIterator[tuple[Client, Memory]]:
    """The official client, signed in through the provider as `login`."""
    storage = Memory()
    pending: list[str] = []

    async def redirect(url: str) -> None:
        pending.append(url)

    async def callback() -> AuthorizationCodeResult:
        return await person_signs_in(pending.pop(), login)

    oauth = OAuthClientProvider(
        server_url=server.url(),
        client_metadata=OAuthClientMetadata(
            client_name="auth-tests",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with (
        httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(server.url(), http_client=http), mode="legacy") as client,
    ):
        yield client, storage


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_the_official_client_signs_in_and_calls_tools(server, provider):
    async with signed_in(server, "alice") as (client, storage):
        names = await tool_names(client)
        assert {READS, EDITS, RUNS} <= names
        listed = await client.call_tool("list_files", {})
        assert not listed.is_error and "a.ipynb" in text_of(listed)
        assert storage.tokens is not None and storage.client is not None
        claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
        # The token the provider issued is for this server (RFC 8707), with the scopes it advertised.
        assert claims["aud"] == server.url() and claims["iss"] == provider.issuer
        assert claims["sub"] == "alice" and set(claims["scope"].split()) == set(ALL_SCOPES.split())
        # The caller is the token's: its subject and its client, in the audit log.
        (record,) = [r for r in audit_records(server) if r.get("tool") == "list_files"][-1:]
        assert record["caller"]["user"] == "alice"
        assert record["caller"]["client"] == claims.get("client_id", claims.get("azp"))
        assert record["caller"]["client"] == storage.client.client_id


def audit_records(server: HttpServer) -> list[dict[str, Any]]:
    """The server's audit log so far."""
    path = server.workspace.parent / "auth-audit.jsonl"  # beside the workspace, in the root
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_minted_tokens_subject_and_client_are_the_caller(server, provider):
    token = mint(provider, sub="dana", client_id="notebook-bot")
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(server.url(), http_client=http),
            mode="legacy",
            client_info=Implementation(name="claims-to-be-someone-else", version="1"),
        ) as client,
    ):
        assert not (await client.call_tool("list_notebooks", {})).is_error
    (record,) = [r for r in audit_records(server) if r.get("tool") == "list_notebooks"][-1:]
    # The token's client, not the clientInfo the client declared about itself.
    assert record["caller"]["user"] == "dana" and record["caller"]["client"] == "notebook-bot"


async def test_an_opaque_token_is_introspected(server, provider):
    provider.control("format", resource=server.url(), format="opaque")
    try:
        async with signed_in(server, "bob") as (client, storage):
            assert storage.tokens is not None and storage.tokens.access_token.count(".") != 2
            assert {READS, EDITS, RUNS} <= await tool_names(client)
    finally:
        provider.control("format", resource=server.url(), format="jwt")
    # A token the provider never issued, though shaped like its opaque ones.
    refused = mcp_post(server, "x" * 43)
    assert refused.status_code == 401 and "not active" in refused.json()["error_description"]


# --- The metadata and the challenge -----------------------------------------------------


def test_the_challenge_points_to_the_protected_resource_metadata(server, provider):
    refused = httpx.post(server.url(), headers=MCP_HEADERS, json=INITIALIZE)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    metadata_url = f"{server.base}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == server.url()
    assert metadata["authorization_servers"] == [provider.issuer]
    assert metadata["scopes_supported"] == ALL_SCOPES.split()
    assert httpx.get(f"{server.base}/toolsets").status_code == 401
    assert httpx.get(f"{server.base}/healthz").status_code == 200


# --- Tokens refused for what they are ----------------------------------------------------


def mint(
    provider: Provider, *, key: Any = None, headers: dict[str, Any] | None = None, **claims: Any
) -> str:
    """A token signed with the provider's own key (or `key`), its claims defaulted to a good one."""
    now = int(time.time())
    body = {
        "iss": provider.issuer,
        "sub": "carol",
        "aud": AUDIENCE[0],
        "client_id": "minted",
        "scope": ALL_SCOPES,
        "iat": now,
        "exp": now + 300,
        "jti": str(time.monotonic_ns()),
        **claims,
    }
    body = {name: value for name, value in body.items() if value is not None}
    return jwt.encode(
        body,
        key if key is not None else provider.key,
        algorithm="RS256",
        headers={"kid": provider.kid, **(headers or {})},
    )


#: The audience minted tokens name: the server's URL, set once the server is up.
AUDIENCE: list[str] = []


@pytest.fixture(autouse=True)
def audience(server: HttpServer) -> None:
    AUDIENCE[:] = [server.url()]


def b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def hand_made(header: str, claims: str, signature: bytes = b"sig") -> str:
    """A JWT whose segments are written as given (JSON text, duplicates and all)."""
    return f"{b64(header)}.{b64(claims)}.{b64(signature)}"


def mcp_post(
    server: HttpServer, token: str | None, *, authorization: str | None = None
) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(server.url(), headers=headers, json=INITIALIZE, timeout=30)


def assert_refused(response: httpx.Response, status: int, reason: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert reason in body["error_description"], body
    if status == 401:
        challenge = response.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge


def test_a_good_minted_token_is_accepted(server, provider):
    # What every refusal below is measured against: the same token, nothing wrong with it.
    assert mcp_post(server, mint(provider)).status_code == 200


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"aud": "http://127.0.0.1:1/mcp"}, "another audience"),
        ({"exp": int(time.time()) - 120, "iat": int(time.time()) - 900}, "expired"),
        ({"iss": "http://127.0.0.1:1/another-issuer"}, "another issuer"),
        ({"nbf": int(time.time()) + 600}, "not valid yet"),
        ({"aud": None}, "no 'aud' claim"),
        ({"scope": {"notebooks:read": True}}, "neither a string nor a list"),
        ({"aud": [["nested"]]}, "audience"),
        ({"sub": {"id": "carol"}}, "Subject must be a string"),
    ],
    ids=[
        "audience",
        "expired",
        "issuer",
        "not-yet",
        "no-aud",
        "scope-object",
        "aud-nested",
        "sub-object",
    ],
)
def test_tokens_the_provider_signed_are_refused_for_what_they_say(server, provider, claims, reason):
    assert_refused(mcp_post(server, mint(provider, **claims)), 401, reason)


def test_a_small_clock_skew_is_forgiven(server, provider):
    now = int(time.time())
    assert mcp_post(server, mint(provider, exp=now - 10, iat=now - 300)).status_code == 200
    assert mcp_post(server, mint(provider, nbf=now + 10)).status_code == 200


def test_forged_and_unsigned_tokens_are_refused(server, provider):
    forger, _ = new_key(provider.kid)
    assert_refused(mcp_post(server, mint(provider, key=forger)), 401, "signature does not verify")
    good = mint(provider)
    header, claims, _ = good.split(".")
    none_header = b64(json.dumps({"alg": "none", "typ": "JWT", "kid": provider.kid}))
    assert_refused(mcp_post(server, f"{none_header}.{claims}."), 401, "alg none")
    hmac_token = jwt.encode(
        json.loads(base64.urlsafe_b64decode(claims + "==")),
        "a-shared-secret-of-32-bytes-or-more",
        algorithm="HS256",
    )
    assert_refused(mcp_post(server, hmac_token), 401, "'HS256'")
    # Claims changed under a good signature.
    tampered = json.loads(base64.urlsafe_b64decode(claims + "=="))
    tampered["sub"] = "mallory"
    assert_refused(
        mcp_post(server, f"{header}.{b64(json.dumps(tampered))}.{good.split('.')[2]}"),
        401,
        "signature does not verify",
    )
    # A key of another issuer, unknown to this one's JWKS.
    stranger, _ = new_key("someone-elses-key")
    other = mint(
        provider, key=stranger, headers={"kid": "someone-elses-key"}, iss="http://127.0.0.1:1/x"
    )
    assert_refused(mcp_post(server, other), 401, "not among the authorization server's keys")
    # The token naming its own key.
    assert_refused(
        mcp_post(server, mint(provider, headers={"jku": "http://127.0.0.1:1/keys"})),
        401,
        "names its own key",
    )


def test_too_few_scopes_is_403_naming_the_scope_to_ask_for(server, provider):
    refused = mcp_post(server, mint(provider, scope="openid profile"))
    assert refused.status_code == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="notebooks:read"' in challenge
    assert refused.json()["scope"] == "notebooks:read"
    assert mcp_post(server, mint(provider, scope=None)).status_code == 403


@pytest.mark.parametrize(
    ("scope", "allowed", "refused"),
    [
        ("notebooks:read", {READS}, {EDITS: "notebooks:write", RUNS: "code:execute"}),
        ("notebooks:read notebooks:write", {READS, EDITS}, {RUNS: "code:execute"}),
        ("code:execute", {READS, EDITS, RUNS}, {}),
    ],
)
async def test_scopes_choose_what_may_be_called_and_the_server_what_is_listed(
    server, provider, scope, allowed, refused
):
    token = mint(provider, scope=scope)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(server.url(), http_client=http), mode="legacy") as client,
    ):
        # Listed whatever the token: a client that lists only what it may call would refuse
        # the others itself, and never hear the 403 naming the scope that would allow them.
        assert {READS, EDITS, RUNS} <= await tool_names(client)
    with raw_session(server, token) as session:
        for tool, needed in refused.items():
            assert_step_up(session.call(tool, STEP_UP_ARGUMENTS[tool]), needed)
        read = result_of(session.call(READS, {"notebook_name": "a.ipynb"}))["result"]
        assert READS in allowed and not read.get("isError"), read


# --- Step-up: a tool the token's scopes do not reach is 403 naming the scope -------------

INSERT = {"cell_index": 0, "cell_type": "code", "cell_source": "1", "notebook_name": "a.ipynb"}
STEP_UP_ARGUMENTS: dict[str, dict[str, Any]] = {EDITS: INSERT, RUNS: {"code": "1"}}


@dataclass
class RawSession:
    """An MCP session spoken as plain HTTP, to see each answer's status and headers."""

    http: httpx.Client
    url: str
    headers: dict[str, str]

    def post(self, body: Any) -> httpx.Response:
        return self.http.post(self.url, headers=self.headers, json=body)

    def call(self, tool: str, arguments: dict[str, Any]) -> httpx.Response:
        params = {"name": tool, "arguments": arguments}
        return self.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})


@contextlib.contextmanager
def raw_session(server: HttpServer, token: str, query: str = "") -> Iterator[RawSession]:
    with httpx.Client(timeout=60) as http:
        url = server.url(query) if query else server.url()
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        opened = http.post(url, headers=headers, json=INITIALIZE)
        assert opened.status_code == 200, opened.text
        headers |= {
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        session = RawSession(http, url, headers)
        assert session.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).is_success
        yield session


def result_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a 200 answer, JSON or one server-sent event."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


def assert_step_up(response: httpx.Response, scope: str) -> None:
    assert response.status_code == 403, (response.status_code, response.text)
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and f'scope="{scope}"' in challenge
    assert "resource_metadata=" in challenge
    assert response.json()["scope"] == scope


def test_a_tool_past_the_tokens_scopes_is_403_naming_the_scope_that_grants_it(server, provider):
    with raw_session(server, mint(provider, scope="notebooks:read")) as session:
        assert_step_up(session.call(EDITS, INSERT), "notebooks:write")
        assert_step_up(session.call(RUNS, {"code": "1"}), "code:execute")
        # A tool the token reaches: the body read to decide goes on to the tool whole.
        read = result_of(session.call(READS, {"notebook_name": "a.ipynb"}))["result"]
        assert not read.get("isError"), read
    with raw_session(server, mint(provider, scope="notebooks:read notebooks:write")) as session:
        assert_step_up(session.call(RUNS, {"code": "1"}), "code:execute")
        inserted = result_of(session.call(EDITS, {**INSERT, "cell_source": "# stepped"}))["result"]
        assert not inserted.get("isError"), inserted
        deleted = session.call("delete_cell", {"cell_indices": [0], "notebook_name": "a.ipynb"})
        assert not result_of(deleted)["result"].get("isError")


def test_what_no_wider_token_changes_stays_a_tool_error(server, provider):
    # The URL narrowed the connection: asking for more scopes cannot help.
    for scope in (ALL_SCOPES, "notebooks:read"):
        with raw_session(server, mint(provider, scope=scope), "profile=read-only") as session:
            refused = result_of(session.call(EDITS, INSERT))["result"]
            assert refused["isError"] and "not permitted" in refused["content"][0]["text"]
    # What is not one tools/call goes on unread to the SDK, which answers it as it does.
    with raw_session(server, mint(provider, scope="notebooks:read")) as session:
        call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call"}
        batch = session.post([{**call, "params": {"name": EDITS, "arguments": INSERT}}])
        assert batch.status_code != 403, batch.text
        garbage = session.http.post(session.url, headers=session.headers, content=b"{not json")
        assert garbage.status_code == 400, garbage.text
        unknown = result_of(session.call("no_such_tool", {}))
        assert "no_such_tool" in json.dumps(unknown)
        # A long call sent in pieces is decided whole all the same: the access checks read
        # every body whole (up to their 8 MiB) before the sign-in sees it.
        before = (server.workspace / "a.ipynb").read_bytes()
        params = {"name": EDITS, "arguments": {**INSERT, "cell_source": "#" * (2 * 1024 * 1024)}}
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params})

        def in_pieces() -> Iterator[bytes]:
            data = body.encode()
            for start in range(0, len(data), 256 * 1024):
                yield data[start : start + 256 * 1024]
                time.sleep(0.05)

        padded = session.http.post(session.url, headers=session.headers, content=in_pieces())
        assert_step_up(padded, "notebooks:write")
        assert (server.workspace / "a.ipynb").read_bytes() == before


def test_the_step_up_rule_stays_within_the_server_and_the_url():
    from jupyter_mcp_server._transports.authorization import ToolRule, wider_profile

    edits = ToolRule(True, {"readOnlyHint": False, "openWorldHint": False})
    runs = ToolRule(True, {"readOnlyHint": False, "openWorldHint": True})
    assert wider_profile("read-only", "full", edits) == "edit"
    assert wider_profile("read-only", "full", runs) == "full"
    assert wider_profile("read-only", "edit", runs) is None  # the server's own profile refuses
    assert wider_profile("edit", "full", edits) is None  # the token already reaches it
    assert wider_profile("read-only", "full", ToolRule(False)) is None  # not a tool here
    narrowed = ToolRule(True, edits.annotations, "read-only")
    assert wider_profile("read-only", "full", narrowed) is None


def test_a_uri_scope_is_held_by_its_short_name_as_entra_writes_it():
    from jupyter_mcp_server._transports.authorization import ScopeProfiles

    entra = ScopeProfiles(
        (
            ("api://app-id/notebooks.read", "read-only"),
            ("api://app-id/notebooks.write", "edit"),
            ("api://app-id/code.execute", "full"),
        ),
        "full",
    )
    assert entra.profile(["notebooks.read"]) == "read-only"
    assert entra.profile(["notebooks.read", "notebooks.write"]) == "edit"
    assert entra.profile(["api://app-id/code.execute"]) == "full"
    assert entra.profile(["app-id/notebooks.read", "read"]) is None
    assert entra.step_up("edit") == "api://app-id/notebooks.write"  # the name to ask for
    plain = ScopeProfiles((("notebooks:read", "read-only"),), "full")
    assert plain.profile(["read"]) is None and plain.profile(["notebooks:read"]) == "read-only"


async def test_the_official_client_steps_up_when_a_tool_needs_more(server, provider):
    provider.control("scopes", resource=server.url(), scope="notebooks:read")
    storage = Memory()
    pending: list[str] = []
    asked: list[str] = []

    async def redirect(url: str) -> None:
        pending.append(url)
        asked.append(parse_qs(urlsplit(url).query)["scope"][0])

    async def callback() -> AuthorizationCodeResult:
        return await person_signs_in(pending.pop(), "erin")

    oauth = OAuthClientProvider(
        server_url=server.url(),
        client_metadata=OAuthClientMetadata(
            client_name="step-up-tests",
            redirect_uris=[REDIRECT],  # type: ignore[list-item]
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    try:
        async with (
            httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(30, read=120)) as http,
            Client(streamable_http_client(server.url(), http_client=http), mode="legacy") as client,
        ):
            assert storage.tokens is not None and storage.tokens.scope == "notebooks:read"
            # Listed though the token cannot call it: what Claude Code and its kind call.
            assert EDITS in await tool_names(client)
            provider.control("scopes", resource=server.url())  # the person may now grant more
            inserted = await client.call_tool(EDITS, {**INSERT, "cell_source": "# by erin"})
            assert not inserted.is_error, text_of(inserted)
            # Signed in twice: the second time asking for the scope the 403 named, besides.
            assert len(asked) == 2 and "notebooks:write" in asked[1].split(), asked
            assert "notebooks:write" in (storage.tokens.scope or "").split()
            assert not (
                await client.call_tool(
                    "delete_cell", {"cell_indices": [0], "notebook_name": "a.ipynb"}
                )
            ).is_error
    finally:
        provider.control("scopes", resource=server.url())


async def test_a_narrower_url_profile_still_narrows_a_wide_token(server, provider):
    token = mint(provider)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(server.url("profile=read-only"), http_client=http), mode="legacy"
        ) as client,
    ):
        names = await tool_names(client)
        assert READS in names and EDITS not in names


# --- Every refusal, scope or profile, is one audit record ------------------------------


def records_of(server: HttpServer, user: str) -> list[dict[str, Any]]:
    """The audit log's tool calls by `user` (each test mints tokens for a user of its own)."""
    return [
        r
        for r in audit_records(server)
        if r.get("event") == "tool_call" and (r.get("caller") or {}).get("user") == user
    ]


def test_every_refusal_is_one_audit_record_without_a_secret(server, provider):
    secret = "s3cret-jupyter-token-value"
    connect = {"jupyter_url": "http://127.0.0.1:9", "jupyter_token": secret}
    token = mint(provider, sub="audited-reader", client_id="audit-bot", scope="notebooks:read")
    before = (server.workspace / "a.ipynb").read_text()
    with raw_session(server, token) as session:
        assert_step_up(session.call("connect_to_jupyter", connect), "code:execute")
        assert_step_up(session.call(EDITS, INSERT), "notebooks:write")
    assert (server.workspace / "a.ipynb").read_text() == before  # nothing past the token ran
    (stepped_up, edit) = records_of(server, "audited-reader")
    assert stepped_up["tool"] == "connect_to_jupyter" and edit["tool"] == EDITS
    for record in (stepped_up, edit):
        assert record["outcome"] == "insufficient_scope" and record["duration_ms"] == 0
        assert record["caller"]["client"] == "audit-bot" and record["caller"]["session"]
    assert stepped_up["arguments"]["jupyter_token"] == "***"
    assert edit["arguments"] == INSERT
    assert secret not in (server.workspace.parent / "auth-audit.jsonl").read_text()

    # A profile refusal (the URL narrowed the connection): one record, as before.
    wide = mint(provider, sub="audited-narrowed", scope=ALL_SCOPES)
    with raw_session(server, wide, "profile=read-only") as session:
        refused = result_of(session.call(EDITS, INSERT))["result"]
        assert refused["isError"] and "not permitted" in refused["content"][0]["text"]
    (narrowed,) = records_of(server, "audited-narrowed")
    assert narrowed["tool"] == EDITS and narrowed["outcome"] == "not_permitted"

    # A token granting nothing: its tools/call is refused before any session, and recorded.
    nothing = mint(provider, sub="audited-nobody", scope="openid profile")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {nothing}"}
    call = {"name": "connect_to_jupyter", "arguments": connect}
    refused_call = httpx.post(
        server.url(),
        headers=headers,
        json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
    )
    assert refused_call.status_code == 403, refused_call.text
    assert httpx.post(server.url(), headers=headers, json=INITIALIZE).status_code == 403
    (nobody,) = records_of(server, "audited-nobody")  # the initialize is no tool call
    assert (
        nobody["outcome"] == "insufficient_scope" and nobody["arguments"]["jupyter_token"] == "***"
    )
    assert secret not in (server.workspace.parent / "auth-audit.jsonl").read_text()


@pytest.fixture(scope="module")
def edit_server(
    provider: Provider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HttpServer]:
    """A server whose own profile is ``edit``: no token reaches code."""
    root = tmp_path_factory.mktemp("auth-edit-server")
    with http_server(
        root,
        None,  # type: ignore[arg-type] - no extension site: the core tools alone
        "--capability",
        "kernel.prestart=off",
        "--capability",
        "profile=edit",
        "--auth-issuer",
        provider.issuer,
        "--audit-log",
        str(root / "auth-audit.jsonl"),
        JUPYTER_MCP_EXTENSIONS="",
        JUPYTER_MCP_AUTH_TIMEOUT="2",
    ) as running:
        (running.workspace / "a.ipynb").write_text(
            json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
        yield running


async def test_the_listing_stays_within_the_servers_profile_and_the_url(edit_server, provider):
    token = mint(provider, aud=edit_server.url(), sub="edit-server-reader", scope="notebooks:read")
    headers = {"Authorization": f"Bearer {token}"}
    for query, listed, unlisted in (
        ("", {READS, EDITS}, {RUNS}),  # the server's edit profile, past the token's read-only
        ("profile=read-only", {READS}, {EDITS, RUNS}),  # the URL still narrows
    ):
        url = edit_server.url(query) if query else edit_server.url()
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
        ):
            names = await tool_names(client)
            assert listed <= names and not (unlisted & names), (query, sorted(names))
    with raw_session(edit_server, token) as session:
        assert_step_up(session.call(EDITS, INSERT), "notebooks:write")
        # No token runs code here: the server's own profile refuses, as a tool error.
        refused = result_of(session.call(RUNS, {"code": "1"}))["result"]
        assert refused["isError"] and "'edit' profile" in refused["content"][0]["text"]
    path = edit_server.workspace.parent / "auth-audit.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["tool"], r["outcome"]) for r in records if r.get("event") == "tool_call"] == [
        (EDITS, "insufficient_scope"),
        (RUNS, "not_permitted"),
    ]


# --- Bad input ----------------------------------------------------------------------------


def test_malformed_authorization_headers_get_a_reason(server, provider):
    good = mint(provider)
    for authorization in ("Basic dXNlcjpwYXNz", "Bearer", good, f"Token {good}"):
        refused = mcp_post(server, None, authorization=authorization)
        assert refused.status_code == 401, (authorization, refused.text)
        assert "resource_metadata=" in refused.headers["www-authenticate"]
    for authorization in (
        f"Bearer  {good}",
        f"Bearer {good} extra",
        f"Bearer {good[:40]}%%{good[40:]}",
    ):
        assert_refused(mcp_post(server, None, authorization=authorization), 401, "RFC 6750")
    assert_refused(mcp_post(server, "not-a-jwt.at-all.really"), 401, "not base64url JSON")


def test_a_huge_token_is_refused_with_a_reason(server, provider):
    for size in (20_000, 1024 * 1024, 8 * 1024 * 1024):
        refused = mcp_post(server, "a" * size)
        # Past 16 KiB a token is refused by this server's verifier, or, when the head arrives
        # in pieces past h11's limit, before it is read whole: either way with its reason.
        assert refused.status_code in (401, 431), (size, refused.status_code)
        body = refused.json()
        assert "16 KiB" in body.get("error", "") or "longer than 16384" in body.get(
            "error_description", ""
        ), body
    assert mcp_post(server, mint(provider)).status_code == 200


def test_ambiguous_and_deeply_nested_claims_are_refused(server, provider):
    header = json.dumps({"alg": "RS256", "kid": provider.kid})
    now = int(time.time())
    twice = (
        f'{{"iss": "{provider.issuer}", "aud": "http://127.0.0.1:1/mcp", "aud": "{AUDIENCE[0]}", '
        f'"exp": {now + 300}, "scope": "{ALL_SCOPES}"}}'
    )
    assert_refused(mcp_post(server, hand_made(header, twice)), 401, "'aud' twice")
    header_twice = f'{{"alg": "RS256", "alg": "none", "kid": "{provider.kid}"}}'
    assert_refused(mcp_post(server, hand_made(header_twice, "{}")), 401, "'alg' twice")
    deep = '{"scope": ' + "[" * 5000 + "]" * 5000 + "}"
    assert_refused(mcp_post(server, hand_made(header, deep)), 401, "nested too deep")
    assert_refused(mcp_post(server, hand_made(header, "[1, 2]")), 401, "not base64url JSON")


def test_an_unknown_key_id_is_refused(server, provider):
    stranger, _ = new_key("rotated-in-later")
    token = mint(provider, key=stranger, headers={"kid": "rotated-in-later"})
    assert_refused(mcp_post(server, token), 401, "not among the authorization server's keys")


async def test_when_the_jwks_fails_known_keys_keep_working_and_a_new_key_is_503(server, provider):
    assert mcp_post(server, mint(provider)).status_code == 200  # the keys are fetched
    stranger, _ = new_key("new-key")
    try:
        for mode in ("down", "garbage"):
            provider.control("jwks", mode=mode)
            await asyncio.sleep(0.3)  # past the cooldown: an unknown key fetches the set again
            assert mcp_post(server, mint(provider)).status_code == 200, mode
            new = mint(provider, key=stranger, headers={"kid": f"new-key-{mode}"})
            refused = mcp_post(server, new)
            assert refused.status_code == 503, (mode, refused.text)
            assert "authorization server could not be asked" in refused.json()["error_description"]
            assert refused.headers["retry-after"].isdigit()
            assert mcp_post(server, mint(provider)).status_code == 200, mode
            await asyncio.sleep(2.1)  # past the retry pause before the next mode
        provider.control("jwks", mode="slow")
        await asyncio.sleep(0.3)
        async with httpx.AsyncClient(timeout=30) as http:

            async def post(token: str) -> tuple[int, float]:
                started = time.monotonic()
                response = await http.post(
                    server.url(),
                    headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
                    json=INITIALIZE,
                )
                return response.status_code, time.monotonic() - started

            slow = asyncio.create_task(
                post(mint(provider, key=stranger, headers={"kid": "new-key-slow"}))
            )
            await asyncio.sleep(0.2)
            # Another caller, while the key fetch hangs: answered at once.
            status, took = await post(mint(provider))
            assert status == 200 and took < 1.5, took
            status, took = await slow
            assert status == 503 and took < 5, (status, took)  # JUPYTER_MCP_AUTH_TIMEOUT=2
    finally:
        provider.control("jwks", mode="up")
    await asyncio.sleep(2.1)
    refused = mcp_post(server, mint(provider, key=stranger, headers={"kid": "new-key-up"}))
    assert_refused(refused, 401, "not among the authorization server's keys")
    assert "Traceback" not in server.log_text() and " 500 " not in server.log_text()


async def test_tokens_are_checked_concurrently_without_mixing_callers(server, provider):
    tokens = [mint(provider, sub=f"user-{n}", scope="notebooks:read") for n in range(10)]
    bad = [mint(provider, sub=f"bad-{n}", aud="http://127.0.0.1:1/mcp") for n in range(10)]
    async with httpx.AsyncClient(timeout=30) as http:
        answers = await asyncio.gather(
            *(
                http.post(
                    server.url(),
                    headers={**MCP_HEADERS, "Authorization": f"Bearer {t}"},
                    json=INITIALIZE,
                )
                for t in tokens + bad
            )
        )
    assert [a.status_code for a in answers] == [200] * 10 + [401] * 10
