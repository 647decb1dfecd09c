"""Signing in to ``/mcp`` of a user's server behind JupyterHub, the way MCP clients sign in.

An MCP client sent to ``https://HUB/user/NAME/mcp`` without a token expects a 401 whose
``WWW-Authenticate: Bearer resource_metadata="..."`` starts MCP's authorization: the protected
resource metadata (RFC 9728) names an authorization server, whose metadata (RFC 8414) names
the endpoints of the code flow with PKCE. JupyterHub is that OAuth 2 provider
(``/hub/api/oauth2/authorize``, ``/hub/api/oauth2/token``) and what it issues is a Hub token,
which Jupyter's own authentication in the user's server already accepts (the profile then comes
from its scopes, :mod:`jupyter_mcp_server._jupyter.permissions`). But the Hub publishes no
authorization server metadata, so the user's server publishes both documents itself:

- the protected resource metadata at ``{server}/.well-known/oauth-protected-resource/mcp``
  (RFC 9728's well-known path of ``/mcp``, inside the server's own URL: the origin's root
  belongs to the Hub, so the root-relative path never reaches this server; the 401 names the
  URL, which is what clients read first);
- the authorization server metadata of an issuer named after the server, ``{server}`` without
  its trailing slash, at ``{server}/.well-known/openid-configuration``: of the three places
  MCP clients look for an issuer with a path (RFC 8414's path insertion, OpenID's path
  insertion, OpenID's path appending), the only one under the server's URL, hence the only one
  the Hub's proxy sends here (the other two reach the Hub, which redirects them: a client
  then tries the next). It is RFC 8414 metadata, not OpenID's: the Hub issues no ID tokens.

Every endpoint it names is the Hub's, at the Hub's public URL: ``JUPYTERHUB_PUBLIC_HUB_URL``
when the Hub has ``c.JupyterHub.public_url`` (it then never depends on the request), else the
origin the request came to (the one the client already sends its token to) with the Hub's base
URL. ``code_challenge_methods_supported`` is ``S256`` (JupyterHub's provider checks a PKCE
challenge whenever one was sent, oauthlib's S256 and plain; clients are told S256); no
``registration_endpoint``: JupyterHub registers no clients at run time, so an MCP client is a
Hub service configured in advance, with its redirect URI and a secret the token request sends
(``client_secret_post``: the Hub authenticates every token request by the client's secret).
Nothing here is secret: the documents say only what the Hub's own login page shows.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

#: The path of /mcp's protected resource metadata, inside the server's base URL.
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
#: The path of the issuer's metadata, inside the server's base URL (the issuer is that URL).
SERVER_METADATA_PATH = "/.well-known/openid-configuration"
#: Jupyter Server's permissions as Hub custom scopes (docs/jupyter-server.md), narrowest first.
CUSTOM_SCOPES = (
    "custom:jupyter_server:read:contents",
    "custom:jupyter_server:write:contents",
    "custom:jupyter_server:execute:kernels",
)


#: An origin made from a request's Host: a scheme, then a host name or address and a port.
_ORIGIN = re.compile(
    r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)


def _origin(url: str) -> str | None:
    """`url`'s scheme and authority, or None when it has none (an unset public URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _slashed(path: str) -> str:
    return "/" + path.strip("/") + "/" if path.strip("/") else "/"


@dataclass(frozen=True)
class HubSignIn:
    """The documents MCP clients read to sign in through the Hub, for one user's server."""

    #: The server's public base URL, with its trailing slash (``https://HUB/user/NAME/``).
    server_url: str
    #: The Hub's public URL, with its trailing slash (``https://HUB/hub/``).
    hub_url: str
    #: The scopes a client asks for: reaching this server, then (if declared) the custom ones.
    scopes: tuple[str, ...]

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], request_origin: str, *, custom_scopes: bool = False
    ) -> HubSignIn | None:
        """The sign-in of the server JupyterHub spawned with `environ`; None: not behind a Hub.

        `request_origin` (``scheme://host`` of the request) stands in for the Hub's public
        origin when the Hub was not given ``public_url``."""
        prefix = environ.get("JUPYTERHUB_SERVICE_PREFIX")
        user = environ.get("JUPYTERHUB_USER")
        if not (environ.get("JUPYTERHUB_API_URL") and prefix and user):
            return None
        server_url = environ.get("JUPYTERHUB_PUBLIC_URL", "")
        hub_url = environ.get("JUPYTERHUB_PUBLIC_HUB_URL", "")
        if (_origin(server_url) is None or _origin(hub_url) is None) and not _ORIGIN.fullmatch(
            request_origin
        ):
            return None  # a Host that is no host name: nothing to name (and no header to break)
        if _origin(server_url) is None:
            server_url = request_origin + _slashed(prefix)
        if _origin(hub_url) is None:
            base = environ.get("JUPYTERHUB_BASE_URL", "/")
            hub_url = (_origin(server_url) or request_origin) + _slashed(base) + "hub/"
        server = _access_filter(environ, user)
        scopes = [f"access:servers{server}"]
        if custom_scopes:
            scopes += [f"{scope}{server}" for scope in CUSTOM_SCOPES]
        return cls(_slashed_url(server_url), _slashed_url(hub_url), tuple(scopes))

    @property
    def resource(self) -> str:
        return self.server_url + "mcp"

    @property
    def issuer(self) -> str:
        return self.server_url.rstrip("/")

    @property
    def resource_metadata_url(self) -> str:
        return self.issuer + RESOURCE_METADATA_PATH

    def protected_resource(self) -> dict[str, object]:
        """RFC 9728's document for ``/mcp``."""
        return {
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": list(self.scopes),
            "bearer_methods_supported": ["header"],
            "resource_name": "Jupyter MCP Server (JupyterHub)",
        }

    def authorization_server(self) -> dict[str, object]:
        """RFC 8414's document for the issuer: the Hub's endpoints and what it supports."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.hub_url + "api/oauth2/authorize",
            "token_endpoint": self.hub_url + "api/oauth2/token",
            "response_types_supported": ["code"],
            # The Hub issues no refresh tokens (oauthlib's would be dropped unsaved).
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
            "scopes_supported": list(self.scopes),
            "service_documentation": "https://jupyterhub.readthedocs.io/en/stable/reference/services.html",
        }

    def challenge(self, error: str | None = None, description: str | None = None) -> str:
        """The 401's ``WWW-Authenticate`` (RFC 6750, with RFC 9728's ``resource_metadata``)."""
        parts = []
        if error:
            parts.append(f'error="{error}"')
        if description:
            parts.append(f'error_description="{description}"')
        parts.append(f'resource_metadata="{self.resource_metadata_url}"')
        return "Bearer " + ", ".join(parts)


def _slashed_url(url: str) -> str:
    return url if url.endswith("/") else url + "/"


def _access_filter(environ: Mapping[str, str], user: str) -> str:
    """The filter naming this server (``!server=NAME/SERVER``), as the Hub wrote it for the
    server's own access check (``JUPYTERHUB_OAUTH_ACCESS_SCOPES``), else made the same way."""
    try:
        scopes = json.loads(environ.get("JUPYTERHUB_OAUTH_ACCESS_SCOPES") or "[]")
    except ValueError:
        scopes = []
    for scope in scopes if isinstance(scopes, list) else []:
        if isinstance(scope, str) and scope.startswith("access:servers!server="):
            return scope.removeprefix("access:servers")
    return f"!server={user}/{environ.get('JUPYTERHUB_SERVER_NAME', '')}"


def spawned_sign_in(request_origin: str, *, custom_scopes: bool = False) -> HubSignIn | None:
    """This process's sign-in through the Hub, if JupyterHub spawned it."""
    return HubSignIn.from_environment(os.environ, request_origin, custom_scopes=custom_scopes)
