"""An access token checked, as the SDK's ``TokenVerifier``: whose it is, or why it is refused.

A JWT is checked against the issuer's keys (_transports/issuer.py): an asymmetric
signature (``alg=none`` and HMAC are refused: a public key is no secret), ``iss`` equal
to ``--auth-issuer``, ``aud`` naming this resource (``--auth-audience``, RFC 8707),
``exp`` and ``nbf`` with :data:`LEEWAY` seconds of clock skew. Anything else is
introspected (RFC 7662) where the issuer offers it and this server has a client there.

The SDK's verifier answers a token or None, which would make every refusal the same
"authentication required"; here a refusal raises :class:`TokenRefused` (a Starlette
``AuthenticationError``, which its authentication middleware hands to
``_transports/authorization.py``) carrying the status and the reason: 401
``invalid_token`` for a token that is not good, 503 when the issuer cannot be asked.

A token is read as its issuer wrote it, or refused: a claim given twice (JSON parsers
disagree on which one counts), claims of the wrong type (a nested ``aud``, a scope that
is not a string), nesting deep enough to exhaust a parser.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import time
from collections.abc import Iterable
from typing import Any

from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthenticationError

from jupyter_mcp_server._transports.issuer import Issuer, IssuerUnavailable, UnknownKey

#: Seconds of clock skew allowed on exp, nbf and iat.
LEEWAY = 30
#: Signature algorithms accepted: asymmetric ones only.
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
#: RFC 6750's b64token: what a bearer token may be made of.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: Characters of a token this server reads at all (the request head is bounded before this).
MAX_TOKEN_CHARS = 16 * 1024
#: Introspection answers kept, by the token's hash, for at most this many seconds.
INTROSPECTION_CACHE_SECONDS = 30.0
INTROSPECTION_CACHE_ENTRIES = 4096


class TokenRefused(AuthenticationError):
    """A request's token not accepted: the HTTP status, the OAuth error code and why."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description


def invalid(description: str) -> TokenRefused:
    return TokenRefused(401, "invalid_token", description)


def unavailable(error: IssuerUnavailable) -> TokenRefused:
    return TokenRefused(
        503,
        "temporarily_unavailable",
        f"The authorization server could not be asked about this token ({error}); try again shortly.",
    )


class AccessTokens:
    """The SDK's TokenVerifier for one issuer and one audience."""

    def __init__(self, issuer: Issuer, audience: str, resource: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.resource = resource
        self._introspected: dict[bytes, tuple[float, AccessToken]] = {}

    async def verify_token(self, token: str) -> AccessToken | None:
        if len(token) > MAX_TOKEN_CHARS:
            raise invalid(f"The token is longer than {MAX_TOKEN_CHARS} characters.")
        if not _TOKEN.fullmatch(token):
            raise invalid(
                "The Authorization header is not 'Bearer <token>' with one token of RFC 6750's "
                "characters (letters, digits, -._~+/ and trailing =)."
            )
        try:
            if token.count(".") == 2:
                return await self._jwt(token)
            return await self._introspected_token(token)
        except IssuerUnavailable as error:
            raise unavailable(error) from None

    # --- JWT ----------------------------------------------------------------------

    async def _jwt(self, token: str) -> AccessToken:
        import jwt  # PyJWT: only with --auth-issuer

        header_part, payload_part, _ = token.split(".")
        header = _segment(header_part, "header")
        _segment(payload_part, "claims")  # duplicated or nested past reason: refused here
        alg = header.get("alg")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise invalid("The token is not signed (alg none): refused.")
        if alg not in ALGORITHMS:
            raise invalid(
                f"The token is signed with {alg!r}; this server accepts {', '.join(ALGORITHMS)}."
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise invalid("The token's kid is not a string.")
        if "jku" in header or "x5u" in header or "jwk" in header:
            # Keys come from the issuer's JWKS, never from the token that wants to be trusted.
            raise invalid("The token names its own key (jku, x5u or jwk): refused.")
        try:
            key = await self.issuer.key(kid)
        except UnknownKey:
            raise invalid(
                f"The token's key {kid!r} is not among the authorization server's keys "
                "(signed by another issuer, or forged)."
            ) from None
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise invalid(
                "The token has expired: ask the authorization server for a new one."
            ) from None
        except jwt.ImmatureSignatureError:
            raise invalid("The token is not valid yet (nbf or iat in the future).") from None
        except jwt.InvalidAudienceError:
            raise invalid(
                f"The token is for another audience; this server is {self.audience!r} "
                "(ask for a token with resource= this server's URL, RFC 8707)."
            ) from None
        except jwt.InvalidIssuerError:
            raise invalid(
                f"The token is from another issuer; this server trusts {self.issuer.issuer!r}."
            ) from None
        except jwt.MissingRequiredClaimError as error:
            raise invalid(f"The token has no {error.claim!r} claim.") from None
        except jwt.InvalidSignatureError:
            raise invalid("The token's signature does not verify: refused.") from None
        except (jwt.InvalidTokenError, ValueError, TypeError) as error:
            raise invalid(f"The token is malformed: {error}") from None
        return self._access_token(token, claims)

    def _access_token(self, token: str, claims: dict[str, Any]) -> AccessToken:
        subject = claims.get("sub")
        if subject is not None and not isinstance(subject, str):
            raise invalid("The token's sub is not a string.")
        client = claims.get("client_id", claims.get("azp"))
        if client is not None and not isinstance(client, str):
            raise invalid("The token's client_id is not a string.")
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=client or "",
            scopes=scopes_of(claims),
            # The moment this server stops accepting it, the skew allowed included.
            expires_at=int(exp) + LEEWAY if isinstance(exp, (int, float)) else None,
            resource=self.resource,
            subject=subject,
            claims={
                name: claims[name]
                for name in (
                    "iss",
                    "sub",
                    "client_id",
                    "azp",
                    "name",
                    "preferred_username",
                    "email",
                )
                if isinstance(claims.get(name), str)
            },
        )

    # --- Introspection -------------------------------------------------------------

    async def _introspected_token(self, token: str) -> AccessToken:
        digest = hashlib.sha256(token.encode()).digest()
        now = time.time()
        kept = self._introspected.get(digest)
        if kept is not None and kept[0] > now:
            return kept[1]
        if not await self.issuer.can_introspect():
            raise invalid(
                "The token is not a JWT, and this server cannot introspect tokens at this issuer "
                "(it offers no introspection endpoint, or --auth-client-id is not set)."
            )
        answer = await self.issuer.introspect(token)
        if answer.get("active") is not True:
            raise invalid("The authorization server says this token is not active.")
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.issuer.issuer:
            raise invalid(
                f"The token is from another issuer; this server trusts {self.issuer.issuer!r}."
            )
        audience = answer.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or self.audience not in audiences:
            raise invalid(
                f"The token is for another audience; this server is {self.audience!r} "
                "(ask for a token with resource= this server's URL, RFC 8707)."
            )
        exp = answer.get("exp")
        if not isinstance(exp, (int, float)) or exp + LEEWAY < now:
            raise invalid("The token has expired: ask the authorization server for a new one.")
        accepted = self._access_token(token, answer)
        if len(self._introspected) >= INTROSPECTION_CACHE_ENTRIES:
            self._introspected = {k: v for k, v in self._introspected.items() if v[0] > now}
            if len(self._introspected) >= INTROSPECTION_CACHE_ENTRIES:
                self._introspected.clear()
        self._introspected[digest] = (min(float(exp), now + INTROSPECTION_CACHE_SECONDS), accepted)
        return accepted


def scopes_of(claims: dict[str, Any]) -> list[str]:
    """The token's scopes: ``scope`` (space-separated, RFC 9068 and most providers), or Entra's
    ``scp`` (space-separated, or a list); refused when neither is what it should be."""
    for name in ("scope", "scp"):
        value = claims.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            return value.split()
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [scope for item in value for scope in item.split()]
        raise invalid(f"The token's {name} claim is neither a string nor a list of strings.")
    return []


def _segment(part: str, what: str) -> dict[str, Any]:
    """One JWT segment as its JSON object, refused when a name appears twice in any object."""
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return _no_duplicates(json.loads(raw, object_pairs_hook=_pairs))
    except _Duplicate as error:
        raise invalid(
            f"The token's {what} give {str(error)!r} twice: refused as ambiguous."
        ) from None
    except RecursionError:
        raise invalid(f"The token's {what} are nested too deep.") from None
    except (ValueError, binascii.Error, TypeError):
        raise invalid(f"The token's {what} are not base64url JSON: not a JWT.") from None


class _Duplicate(ValueError):
    pass


def _pairs(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise _Duplicate(name)
        result[name] = value
    return result


def _no_duplicates(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value
