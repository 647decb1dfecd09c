"""Which profile Jupyter's own authorization grants the caller of ``{base_url}/mcp``.

Inside Jupyter Server, who may do what is the server's ``Authorizer``'s to say
(``is_authorized(handler, user, action, resource)``, asked by every API handler), not this
package's. So each request to ``/mcp`` asks it what the caller may do, and the caller gets the
widest profile that allows (the profile guard narrows it further to the server's own):

- ``execute`` on ``kernels`` and ``write`` on ``contents``: ``full`` (running a cell writes
  its outputs into the notebook, so running code needs both);
- ``write`` on ``contents``: ``edit``;
- ``read`` on ``contents``: ``read-only``;
- none of these: refused (403).

Behind JupyterHub, the single-user server's authorizer ignores the action and the resource:
it checks only that the token reaches this server (``access:servers``), so every Hub token
that gets here would be ``full``. JupyterHub's custom scopes carry finer grants, in the shape
its documentation recommends (``custom:jupyter_server:ACTION:RESOURCE``); a token that
carries any scope of that shape for this server is held to them (e.g. only
``custom:jupyter_server:read:contents`` makes the caller ``read-only``). A token with none of
them keeps what the authorizer said.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.utils import ensure_async

from jupyter_mcp_server._policy.profiles import EDIT, FULL, READ_ONLY

#: Widest first: each profile and the (action, resource) pairs it needs, all of them.
NEEDS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (FULL, (("execute", "kernels"), ("write", "contents"))),
    (EDIT, (("write", "contents"),)),
    (READ_ONLY, (("read", "contents"),)),
)
#: JupyterHub custom scopes naming Jupyter Server permissions start so.
HUB_SCOPE_PREFIX = "custom:jupyter_server:"


async def granted_profile(handler: Any, user: Any) -> str | None:
    """The widest profile Jupyter's authorizer (and a Hub token's custom scopes) grant `user`
    for this request, or None: not even reading."""
    hub = _HubGrants.of(handler, user)
    answered: dict[tuple[str, str], bool] = {}

    async def allowed(action: str, resource: str) -> bool:
        if (action, resource) not in answered:
            verdict = await ensure_async(
                handler.authorizer.is_authorized(handler, user, action, resource)
            )
            answered[(action, resource)] = bool(verdict) and (
                hub is None or hub.allows(action, resource)
            )
        return answered[(action, resource)]

    for profile, needs in NEEDS:
        if all([await allowed(action, resource) for action, resource in needs]):
            return profile
    return None


class _HubGrants:
    """A JupyterHub token's ``custom:jupyter_server:*`` scopes for this server."""

    def __init__(self, hub_auth: Any, hub_user: dict[str, Any], filters: list[str]) -> None:
        self.hub_auth = hub_auth
        self.hub_user = hub_user
        self.filters = filters

    @classmethod
    def of(cls, handler: Any, user: Any) -> _HubGrants | None:
        """The Hub token's grants, or None: not behind a Hub, or a token without such scopes."""
        hub_user = getattr(user, "hub_user", None)
        hub_auth = getattr(getattr(handler, "identity_provider", None), "hub_auth", None)
        if not isinstance(hub_user, dict) or hub_auth is None:
            return None
        scopes = [str(scope) for scope in hub_user.get("scopes") or []]
        if not any(scope.startswith(HUB_SCOPE_PREFIX) for scope in scopes):
            return None
        # This server's filter, as the Hub's own access check names it ("!server=alice/").
        filters = sorted(
            {"!" + scope.partition("!")[2] for scope in hub_auth.oauth_scopes if "!" in scope}
        ) or [""]
        return cls(hub_auth, hub_user, filters)

    def allows(self, action: str, resource: str) -> bool:
        needed = {f"{HUB_SCOPE_PREFIX}{action}:{resource}{filter_}" for filter_ in self.filters}
        return bool(self.hub_auth.check_scopes(needed, self.hub_user))
