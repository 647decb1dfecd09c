"""The authorization server as this resource server knows it: its metadata, its keys, its
introspection.

Signing in through an OpenID provider makes every HTTP request depend on what the
provider publishes, so how this server asks it decides how an outage or an attack on
it looks to callers:

- its metadata (RFC 8414, or OpenID discovery) is fetched once, on the first token, and
  must name the configured issuer exactly; a failure is retried no more than every
  :data:`RETRY_AFTER` seconds;
- its keys (the JWKS) are kept: a key once fetched keeps working while the JWKS is down
  or answering garbage, long past the set's refresh; a ``kid`` not among them fetches the
  set again, one fetch at a time for all callers (the others wait for that one), and not
  again for ``JUPYTER_MCP_AUTH_KEYS_COOLDOWN`` seconds after a fetch succeeded, so tokens with
  invented ``kid`` values cannot make this server hammer the provider;
- every request to it is bounded (``JUPYTER_MCP_AUTH_TIMEOUT``); what cannot be had in time is
  :class:`IssuerUnavailable`, which callers see as 503 with ``Retry-After``.

Fetching is ours (httpx, asynchronous, single flight) rather than PyJWT's
``PyJWKClient``: that client is synchronous, holds one lock across a refresh (a slow
JWKS would stall every caller, known keys included) and drops the keys it has once its
cache's lifespan ends while the JWKS is down. The keys themselves are PyJWT's (``PyJWK``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

logger = logging.getLogger(__name__)

#: Seconds after a failed fetch before the provider is asked again (503 meanwhile).
RETRY_AFTER = 2.0
#: Seconds after which the JWKS is fetched again on use (its keys kept if that fails).
KEYS_LIFETIME = 300.0
#: Bytes a metadata, JWKS or introspection answer may have.
MAX_ANSWER_BYTES = 1024 * 1024


class IssuerUnavailable(Exception):
    """The provider could not be asked or answered nonsense: what it said, for the 503."""


class UnknownKey(Exception):
    """The provider's key set has no such key."""


@dataclass(frozen=True)
class IssuerMetadata:
    issuer: str
    jwks_uri: str | None
    introspection_endpoint: str | None


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata is: RFC 8414's path-inserted URL, then OpenID discovery's."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return [
        urlunsplit(
            (parts.scheme, parts.netloc, f"/.well-known/oauth-authorization-server{path}", "", "")
        ),
        urlunsplit(
            (parts.scheme, parts.netloc, f"{path}/.well-known/openid-configuration", "", "")
        ),
    ]


class Issuer:
    """One authorization server: metadata, keys and introspection, asked within bounds."""

    def __init__(
        self,
        issuer: str,
        *,
        timeout: float,
        keys_cooldown: float = 10.0,
        client_id: str | None = None,
        client_secret: str | None = None,
    ) -> None:
        self.issuer = issuer
        self.timeout = timeout
        self.keys_cooldown = keys_cooldown
        self._credentials = (client_id, client_secret) if client_id and client_secret else None
        self._http: httpx.AsyncClient | None = None
        self._metadata: IssuerMetadata | None = None
        self._metadata_failed: tuple[float, str] | None = None
        self._metadata_lock = asyncio.Lock()
        self._keys: dict[str, Any] = {}
        self._keys_fetched = 0.0
        self._keys_failed: tuple[float, str] | None = None
        self._keys_fetch: asyncio.Task[None] | None = None

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout), follow_redirects=False
            )
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- Metadata ---------------------------------------------------------------

    async def metadata(self) -> IssuerMetadata:
        if self._metadata is not None:
            return self._metadata
        async with self._metadata_lock:
            if self._metadata is not None:
                return self._metadata
            failed = self._metadata_failed
            if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER:
                raise IssuerUnavailable(failed[1])
            try:
                self._metadata = await self._fetch_metadata()
            except IssuerUnavailable as error:
                self._metadata_failed = (time.monotonic(), str(error))
                logger.warning("The authorization server's metadata: %s", error)
                raise
            self._metadata_failed = None
            return self._metadata

    async def _fetch_metadata(self) -> IssuerMetadata:
        problems: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                answer = await self._get_json(url)
            except IssuerUnavailable as error:
                problems.append(str(error))
                continue
            if answer is None:
                problems.append(f"{url}: 404")
                continue
            if answer.get("issuer") != self.issuer:
                raise IssuerUnavailable(
                    f"the metadata at {url} names the issuer {answer.get('issuer')!r}, not "
                    f"--auth-issuer {self.issuer!r} (they must be equal, character for character)"
                )
            jwks_uri = answer.get("jwks_uri")
            introspection = answer.get("introspection_endpoint")
            return IssuerMetadata(
                issuer=self.issuer,
                jwks_uri=jwks_uri if isinstance(jwks_uri, str) else None,
                introspection_endpoint=introspection if isinstance(introspection, str) else None,
            )
        raise IssuerUnavailable(
            "could not read the authorization server's metadata: " + "; ".join(problems)
        )

    async def _get_json(self, url: str) -> dict[str, Any] | None:
        """The JSON object at `url`, None for a 404; anything else is IssuerUnavailable."""
        status, body = await self._request("GET", url)
        if status == 404:
            return None
        return _json_object(url, status, body)

    async def _request(self, method: str, url: str, **options: Any) -> tuple[int, bytes]:
        """(status, body) of one request, bounded in time as a whole and in size."""

        async def asked() -> tuple[int, bytes]:
            headers = {"Accept": "application/json", **options.pop("headers", {})}
            async with self.http.stream(method, url, headers=headers, **options) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER_BYTES:
                        raise IssuerUnavailable(f"{url}: an answer past {MAX_ANSWER_BYTES} bytes")
                return response.status_code, bytes(body)

        try:
            return await asyncio.wait_for(asked(), self.timeout)
        except asyncio.TimeoutError:
            raise IssuerUnavailable(
                f"{url} did not answer within {self.timeout:g} s (JUPYTER_MCP_AUTH_TIMEOUT)"
            ) from None
        except httpx.HTTPError as error:
            raise IssuerUnavailable(f"{url}: {type(error).__name__} {error}".strip()) from None

    # --- Keys -------------------------------------------------------------------

    async def key(self, kid: str | None) -> Any:
        """The signing key (a ``jwt.PyJWK``) named `kid`, fetched when not known yet.

        No ``kid``: the only key, when the set has exactly one.
        """
        now = time.monotonic()
        known = self._key_in_hand(kid)
        stale = now - self._keys_fetched > KEYS_LIFETIME
        if known is not None:
            if stale:
                self._start_fetch(background=True)  # keys kept if it fails
            return known
        cooling = self._keys and now - self._keys_fetched < self.keys_cooldown
        if cooling:
            raise UnknownKey(kid)
        failed = self._keys_failed
        if failed is not None and now - failed[0] < RETRY_AFTER:
            raise IssuerUnavailable(failed[1])
        await asyncio.shield(self._start_fetch())
        known = self._key_in_hand(kid)
        if known is not None:
            return known
        if self._keys_failed is not None and self._keys_failed[0] >= now:
            raise IssuerUnavailable(self._keys_failed[1])
        raise UnknownKey(kid)

    def _key_in_hand(self, kid: str | None) -> Any:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _start_fetch(self, *, background: bool = False) -> asyncio.Task[None]:
        """The JWKS fetch under way, or a new one: one at a time, whoever asks."""
        if self._keys_fetch is None or self._keys_fetch.done():
            self._keys_fetch = asyncio.ensure_future(self._fetch_keys())
        return self._keys_fetch

    async def _fetch_keys(self) -> None:
        try:
            keys = await self._read_keys()
        except Exception as error:  # whatever went wrong, the caller gets a 503
            if not isinstance(error, IssuerUnavailable):
                logger.exception("Reading the authorization server's keys failed")
            self._keys_failed = (time.monotonic(), str(error) or type(error).__name__)
            logger.warning(
                "The authorization server's keys: %s (%d keys fetched earlier still used)",
                error,
                len(self._keys),
            )
            return
        self._keys = keys
        self._keys_fetched = time.monotonic()
        self._keys_failed = None

    async def _read_keys(self) -> dict[str, Any]:
        import jwt  # PyJWT: only with --auth-issuer

        metadata = await self.metadata()
        if metadata.jwks_uri is None:
            raise IssuerUnavailable("the authorization server's metadata names no jwks_uri")
        answer = await self._get_json(metadata.jwks_uri)
        if answer is None:
            raise IssuerUnavailable(f"{metadata.jwks_uri}: 404")
        listed = answer.get("keys")
        if not isinstance(listed, list):
            raise IssuerUnavailable(f"{metadata.jwks_uri} answered no 'keys' list")
        keys: dict[str, Any] = {}
        for entry in listed:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError, KeyError):
                continue  # a key of a kind this server cannot use: the others still serve
            kid = entry.get("kid")
            keys[kid if isinstance(kid, str) else f"#{len(keys)}"] = key
        if not keys:
            raise IssuerUnavailable(f"{metadata.jwks_uri} lists no usable signing key")
        return keys

    # --- Introspection ------------------------------------------------------------

    async def can_introspect(self) -> bool:
        if self._credentials is None:
            return False
        return (await self.metadata()).introspection_endpoint is not None

    async def introspect(self, token: str) -> dict[str, Any]:
        """RFC 7662: what the provider says of `token` (``active`` and its claims)."""
        metadata = await self.metadata()
        assert metadata.introspection_endpoint is not None and self._credentials is not None
        url = metadata.introspection_endpoint
        status, body = await self._request(
            "POST",
            url,
            data={"token": token, "token_type_hint": "access_token"},
            auth=self._credentials,
        )
        if status in (401, 403):
            raise IssuerUnavailable(
                f"the introspection endpoint refused this server's client ({status}): "
                "check --auth-client-id and JUPYTER_MCP_AUTH_CLIENT_SECRET"
            )
        return _json_object(url, status, body)


def _json_object(url: str, status: int, body: bytes) -> dict[str, Any]:
    if status != 200:
        raise IssuerUnavailable(f"{url}: HTTP {status}")
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise IssuerUnavailable(f"{url} answered something that is not JSON") from None
    if not isinstance(answer, dict):
        raise IssuerUnavailable(f"{url} answered JSON that is not an object")
    return answer
