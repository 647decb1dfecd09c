"""Signing in with an OpenID provider: this server as an OAuth 2.1 resource server (MCP's
authorization specification), on the SDK's own seam.

With ``--auth-issuer``, every HTTP route but ``/healthz`` and the metadata wants an access
token from that issuer, and the pieces are the SDK's (``mcp.server.auth``):

- the protected resource metadata (RFC 9728) at the well-known path of ``/mcp``
  (``/.well-known/oauth-protected-resource/mcp``) names the resource and its authorization
  server, and the scopes this server knows (``create_protected_resource_routes``);
- ``BearerAuthBackend`` under Starlette's ``AuthenticationMiddleware`` reads the token and
  asks the verifier (_transports/access_tokens.py); ``AuthContextMiddleware`` makes the
  token the request's, so the SDK binds a session to the principal that opened it;
  ``RequireAuthMiddleware`` answers a request without a token 401 with
  ``WWW-Authenticate: Bearer ..., resource_metadata="..."``, where clients start signing in.

What is this server's own: a refused token's 401 says why (``error_description``), an issuer
that cannot be asked is 503 with ``Retry-After``, never a 500; and the token's scopes choose
the caller's profile (``--auth-scopes``): the widest its scopes grant, never wider than the
server's, put where the profile guard reads it. A token none of whose scopes grants anything
is 403 ``insufficient_scope`` naming the scope to ask for; so is a ``tools/call`` of a tool its
profile does not allow when a wider profile, within the server's, would (a step-up: the 403
names the scope that grants it, so the client can ask the person for more and retry). What a
wider token cannot change (the server's own profile, a ``?profile=`` narrowing in the URL)
stays the profile guard's tool error.

The token's profile narrows the calls, not ``tools/list`` (the profile guard,
``TOKEN_SCOPE_KEY``): a client that listed only what its token reaches would refuse a wider
tool itself and never hear the 403 that says which scope to ask for. A 403 ``tools/call`` is
one record for the hooks (the audit log: outcome ``insufficient_scope``, the arguments
redacted, the token's caller), as the profile guard's refusals are.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from jupyter_mcp_server._calls.callers import caller_of, serving_as
from jupyter_mcp_server._hooks import Hooks
from jupyter_mcp_server._policy.profiles import PROFILES, allows, narrowest, rank
from jupyter_mcp_server._protocol.profile_guard import TOKEN_SCOPE_KEY, record_refusal
from jupyter_mcp_server._transports.access_checks import ASGIApp, Receive, Scope, Send
from jupyter_mcp_server._transports.access_tokens import AccessTokens, TokenRefused
from jupyter_mcp_server._transports.issuer import RETRY_AFTER, Issuer

if TYPE_CHECKING:
    from jupyter_mcp_server._config import ServerConfig

logger = logging.getLogger(__name__)

#: URLs as given: an issuer without a path stays without a trailing slash (issuers compare as strings).
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


def _url(text: str) -> AnyHttpUrl:
    return _URL.validate_python(text)


def _granted(scope: str, scopes: Sequence[str]) -> bool:
    """Whether a token's `scopes` hold `scope`. A scope written as a URI
    (``api://APPLICATION-ID/notebooks.read``) is also held by its last segment: Microsoft Entra
    wants the full name asked for and writes the short one in ``scp``, of the API that the
    token's audience (already checked to be this server) names."""
    if scope in scopes:
        return True
    return "://" in scope and scope.rsplit("/", 1)[-1] in scopes


@dataclass(frozen=True)
class ScopeProfiles:
    """Which scope grants which profile, and the server's own profile above them all."""

    granted_by: tuple[tuple[str, str], ...]
    server: str

    def profile(self, scopes: Sequence[str]) -> str | None:
        """The widest profile `scopes` grant, within the server's; None: they grant nothing."""
        granted = [profile for scope, profile in self.granted_by if _granted(scope, scopes)]
        if not granted:
            return None
        return narrowest(max(granted, key=rank), self.server)

    def scope_for(self, profile: str) -> str:
        """The scopes that grant `profile` (or more), the narrowest first, space-separated."""
        return " ".join(scope for scope, given in self.granted_by if rank(given) >= rank(profile))

    def step_up(self, profile: str) -> str:
        """The one scope to ask for to reach `profile`: of those granting it or more, one granting
        the least (RFC 6750's `scope` lists scopes all needed, so alternatives are not listed)."""
        reaching = [
            (scope, given) for scope, given in self.granted_by if rank(given) >= rank(profile)
        ]
        least = min(rank(given) for _, given in reaching)
        return next(scope for scope, given in reaching if rank(given) == least)

    @property
    def advertised(self) -> list[str]:
        """The scopes worth asking for: those granting up to the server's profile."""
        return [scope for scope, given in self.granted_by if rank(given) <= rank(self.server)] or [
            scope for scope, _ in self.granted_by
        ]

    @property
    def least(self) -> str:
        """The scope to ask for to do anything at all: the one granting the narrowest profile."""
        narrowest_given = min((given for _, given in self.granted_by), key=rank)
        return " ".join(scope for scope, given in self.granted_by if given == narrowest_given)


@dataclass(frozen=True)
class ToolRule:
    """What decides a ``tools/call`` beyond the token: the tool's annotations in the server the
    request reaches, and the profile its connection's URL (``?profile=``) narrowed it to."""

    found: bool
    annotations: Any = None
    connection_profile: str | None = None


#: The rule of a tool `name` for a request (its ASGI scope), as a ToolRule's fields: the
#: composition root's, which knows the applications' tools (_transports/http.py).
ToolRules = Callable[[Scope, str], Awaitable[tuple[bool, Any, str | None]]]


def wider_profile(token: str, server: str, rule: ToolRule) -> str | None:
    """The narrowest profile past the token's, within the server's, that would serve the tool;
    None when the token's serves it or no token could (the server or the URL refuse it)."""
    if not rule.found or allows(token, rule.annotations):
        return None
    if rule.connection_profile is not None and not allows(
        rule.connection_profile, rule.annotations
    ):
        return None  # the URL narrowed it: a wider token changes nothing
    for profile in PROFILES:
        if rank(token) < rank(profile) <= rank(server) and allows(profile, rule.annotations):
            return profile
    return None


#: The most of a body read to find a tools/call; past it the body goes on unread.
STEP_UP_BODY = 1024 * 1024
#: How the hooks (the audit log) record a call refused with 403 for its token's scopes.
INSUFFICIENT_SCOPE = "insufficient_scope"


@dataclass(frozen=True)
class CalledTool:
    """The one ``tools/call`` a request's body holds: what deciding and recording it needs."""

    name: str
    arguments: Any
    meta: Any


class Authorization:
    """The sign-in in front of the MCP routes: its public routes and the wall it puts around an app."""

    def __init__(
        self,
        config: ServerConfig,
        server_profile: Callable[[], str],
        tool_rules: ToolRules | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        assert config.auth_issuer and config.auth_resource and config.auth_audience
        self.issuer = Issuer(
            config.auth_issuer,
            timeout=config.auth_timeout,
            keys_cooldown=config.auth_keys_cooldown,
            client_id=config.auth_client_id,
            client_secret=config.auth_client_secret,
        )
        self.resource = config.auth_resource
        self.tokens = AccessTokens(self.issuer, config.auth_audience, config.auth_resource)
        self.scope_map = config.auth_scopes
        self.server_profile = server_profile
        self.tool_rules = tool_rules
        #: Where a 403 ``tools/call`` is recorded (the audit log); None: nowhere.
        self.hooks = hooks
        self.metadata_url = str(build_resource_metadata_url(_url(self.resource)))

    def profiles(self) -> ScopeProfiles:
        return ScopeProfiles(self.scope_map, self.server_profile())

    def public_routes(self) -> list[Any]:
        """The protected resource metadata (RFC 9728), at the well-known path of /mcp."""
        return list(
            create_protected_resource_routes(
                resource_url=_url(self.resource),
                authorization_servers=[_url(self.issuer.issuer)],
                scopes_supported=self.profiles().advertised,
                resource_name="Jupyter MCP Server",
            )
        )

    def protect(self, app: ASGIApp) -> ASGIApp:
        """`app` behind the token checks: the SDK's middlewares, then the caller's profile."""
        required: ASGIApp = RequireAuthMiddleware(_Profiled(app, self), [], _url(self.metadata_url))
        return AuthenticationMiddleware(
            AuthContextMiddleware(required),
            backend=BearerAuthBackend(self.tokens),
            on_error=self.refused,
        )

    def challenge(self, error: str, description: str, scope: str | None = None) -> str:
        parts = [f'error="{error}"', f'error_description="{_quoted(description)}"']
        if scope:
            parts.append(f'scope="{scope}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        return "Bearer " + ", ".join(parts)

    def refused(self, conn: HTTPConnection, error: Exception) -> Response:
        """A refused token's answer: 401 with the challenge and the reason, 503 when the issuer is out."""
        if not isinstance(error, TokenRefused):
            logger.warning("Authentication failed: %s", error)
            error = TokenRefused(401, "invalid_token", str(error) or "The token was refused.")
        body = {"error": error.error, "error_description": error.description}
        if error.status == 503:
            logger.warning("Refused a request with 503: %s", error.description)
            return JSONResponse(
                body, status_code=503, headers={"Retry-After": str(int(RETRY_AFTER) + 1)}
            )
        logger.info("Refused a token: %s", error.description)
        return JSONResponse(
            body,
            status_code=error.status,
            headers={"WWW-Authenticate": self.challenge(error.error, error.description)},
        )

    async def close(self) -> None:
        await self.issuer.close()


class _Profiled:
    """The caller's profile from its token's scopes, or 403 insufficient_scope: for a token
    granting nothing, and for a tools/call a wider token would be allowed."""

    def __init__(self, app: ASGIApp, authorization: Authorization) -> None:
        self.app = app
        self.authorization = authorization

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        credentials = scope.get("auth")
        granted = list(getattr(credentials, "scopes", []) or [])
        profiles = self.authorization.profiles()
        profile = profiles.profile(granted)
        rules = self.authorization.tool_rules
        # Only a token narrower than the server can be refused a call: the others' bodies go
        # on unread. A refused call is read to be recorded (its tool, its redacted arguments).
        narrower = profile is None or rank(profile) < rank(profiles.server)
        called: CalledTool | None = None
        if narrower and scope.get("method") == "POST" and (rules is not None or profile is None):
            messages, body = await _read_some(receive, STEP_UP_BODY)
            receive = _replay(messages, receive)
            called = _called_tool(body)
        if profile is None:
            needed = profiles.least
            description = (
                f"The token grants none of this server's scopes (it has: {' '.join(granted) or 'none'}); "
                f"ask for {needed} to read notebooks, or see the protected resource metadata for all."
            )
            self._record(scope, called)
            await self._refuse(send, description, needed)
            return
        scope[TOKEN_SCOPE_KEY] = profile
        if called is not None and rules is not None:
            wider = wider_profile(
                profile, profiles.server, ToolRule(*await rules(scope, called.name))
            )
            if wider is not None:
                needed = profiles.step_up(wider)
                description = (
                    f"{called.name} needs the '{wider}' profile; this token's scopes "
                    f"({' '.join(granted)}) grant '{profile}'. Ask for {needed} and retry."
                )
                logger.info("Asked for a step-up to %s (%s) for %s", needed, wider, called.name)
                self._record(scope, called)
                await self._refuse(send, description, needed)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, description: str, needed: str) -> None:
        await _send(
            send,
            403,
            {"error": INSUFFICIENT_SCOPE, "error_description": description, "scope": needed},
            self.authorization.challenge(INSUFFICIENT_SCOPE, description, needed),
        )

    def _record(self, scope: Scope, called: CalledTool | None) -> None:
        """A refused tools/call, for the hooks: as its caller, the one the SDK would have named
        (the same definition, read off this request: its token, session header and handle)."""
        hooks = self.authorization.hooks
        if hooks is None or called is None:
            return
        request = SimpleNamespace(request=Request(scope), meta=called.meta, session=None)
        try:
            caller = caller_of(SimpleNamespace(request_context=request))
        except Exception:
            logger.exception("Could not name the caller of a refused call; recorded without one")
            caller = None
        with serving_as(caller):
            record_refusal(hooks, called.name, called.arguments, INSUFFICIENT_SCOPE)


async def _read_some(receive: Receive, limit: int) -> tuple[list[Any], bytes | None]:
    """The body's first messages, and the whole body when it came within `limit` (else None)."""
    messages: list[Any] = []
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        messages.append(message)
        if message.get("type") != "http.request":
            return messages, None
        chunk = message.get("body", b"")
        seen += len(chunk)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return messages, b"".join(chunks)
        if seen > limit:
            return messages, None


def _replay(messages: list[Any], receive: Receive) -> Receive:
    """`receive` that answers `messages` again, in order, then whatever the connection says."""
    pending = list(reversed(messages))

    async def replay() -> Any:
        if pending:
            return pending.pop()
        return await receive()

    return replay


def _called_tool(body: bytes | None) -> CalledTool | None:
    """The tool a body's single JSON-RPC tools/call names; None for anything else."""
    if not body:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return None
    return CalledTool(params["name"], params.get("arguments"), params.get("_meta"))


def _quoted(text: str) -> str:
    """Text safe inside a quoted-string of a header: no quotes, backslashes or controls."""
    return "".join(
        c if 32 <= ord(c) < 127 and c not in '"\\' else "'" if c == '"' else "?" for c in text
    )[:500]


async def _send(send: Send, status: int, body: dict[str, Any], challenge: str) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"www-authenticate", challenge.encode("latin-1", "replace")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
