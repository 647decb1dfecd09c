"""The profile in force for a request, and the two places it is enforced.

``tools/list`` leaves out the tools the profile does not allow, and
``tools/call`` of one is refused with ``not_permitted`` (``details.profile``
names the profile) before anything runs, and so is a tool the server's registry
cannot name (read through the SDK's public ``list_tools()``): a check that
cannot tell what a tool is fails closed. It happens before a task is made of it, before
an extension's wrapper or the tool sees its arguments. Both sit around the
low-level handlers, so every tool on a server is covered, whoever offered it
(:mod:`jupyter_mcp_server._policy.profiles` says which tools a profile allows).

The profile of a request is the server's (the ``profile`` capability),
narrowed by the HTTP connection's (``?profile=`` in the URL, kept for the
session by the HTTP transport, which puts it in the request's scope under
:data:`SCOPE_KEY` and refuses a wider one with 403), and by a signed-in
token's scopes (:data:`TOKEN_SCOPE_KEY`). The token's profile narrows the
calls and not the listing: a client that lists only what it may call never
calls past its token, so it never hears the 403 that tells it which scope
to ask for (the HTTP transport's step-up). So ``tools/list`` shows what the
server and the URL allow, and a call past the token is refused at the HTTP
layer with 403, or here, when that layer could not read the call.

Every refusal here is one record for the hooks (the audit log), with the
call's arguments as observers see them (:func:`jupyter_mcp_server._hooks.redacted`):
:func:`record_refusal`, which the HTTP transport's 403 uses too.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.types import CallToolResult

from jupyter_mcp_server._errors import NOT_PERMITTED, ToolFailure
from jupyter_mcp_server._hooks import Hooks, ToolCall, ToolCallEnded, redacted
from jupyter_mcp_server._policy.profiles import (
    FULL,
    PROFILE_CAPABILITY,
    allows,
    narrowest,
    refusal_message,
    token_refusal_message,
    unknown_tool_message,
)
from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler, tool_annotations
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._tool_calls.results import failure

logger = logging.getLogger(__name__)

#: Where the HTTP transport puts a connection's profile in the ASGI scope.
SCOPE_KEY = "jupyter_mcp.profile"
#: Where a sign-in (``--auth-issuer``) puts the profile its token's scopes grant: the calls
#: are held to it, the listing is not (a wider token is one sign-in away).
TOKEN_SCOPE_KEY = "jupyter_mcp.token_profile"


def server_profile(state: ServerState) -> str:
    return state.capabilities.value(PROFILE_CAPABILITY) or FULL


def _scope_of(ctx: Any) -> dict[str, Any]:
    request_context = getattr(ctx, "request_context", ctx)
    scope = getattr(getattr(request_context, "request", None), "scope", None)
    return scope if isinstance(scope, dict) else {}


def listing_profile(ctx: Any, state: ServerState) -> str:
    """The profile ``tools/list`` shows: the server's, narrowed by its HTTP connection's."""
    return narrowest(server_profile(state), _scope_of(ctx).get(SCOPE_KEY))


def request_profile(ctx: Any, state: ServerState) -> str:
    """The profile a call is held to: the listing's, narrowed by the token's scopes."""
    scope = _scope_of(ctx)
    return narrowest(server_profile(state), scope.get(SCOPE_KEY), scope.get(TOKEN_SCOPE_KEY))


def feature(state: ServerState) -> Feature:
    """The request's profile enforced on the server's ``tools/list`` and ``tools/call``."""

    def listing(server: Any, original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            profile = listing_profile(ctx, state)
            if profile != FULL and hasattr(result, "tools"):
                result.tools = [tool for tool in result.tools if allows(profile, tool.annotations)]
            return result

        return listed

    def calling(server: Any, original: Handler) -> Handler:
        async def called(ctx: Any, params: Any) -> Any:
            profile = request_profile(ctx, state)
            name = getattr(params, "name", None)
            if profile == FULL or not isinstance(name, str):
                return await original(ctx, params)
            found, annotations = await tool_annotations(server, name)
            if found and allows(profile, annotations):
                return await original(ctx, params)
            # A tool the registry cannot vouch for is refused, not waved through: the check
            # must fail closed whatever the SDK keeps where.
            arguments = dict(getattr(params, "arguments", None) or {})
            listed = listing_profile(ctx, state)
            if found and not allows(listed, annotations):
                # The server or the URL refuse it: say theirs, which no token changes.
                return refuse(state, name, arguments, listed)
            return refuse(state, name, arguments, profile, known=found, by_token=found)

        return called

    return Feature(
        "profiles", wraps=(Wrapped("tools/list", listing), Wrapped("tools/call", calling))
    )


def refuse(
    state: ServerState,
    tool: str,
    arguments: dict[str, Any],
    profile: str,
    known: bool = True,
    by_token: bool = False,
) -> CallToolResult:
    """The refusal of a tool outside the profile, seen by the hooks (the audit log) like any
    call. `by_token`: the server and the URL allow it, the token's scopes do not (a call the
    HTTP layer could not read, so it could not answer it with a step-up)."""
    logger.info("Refused %s under the %s profile", tool, profile)
    record_refusal(state.hooks, tool, arguments, NOT_PERMITTED)
    if not known:
        message = unknown_tool_message(tool, profile)
    elif by_token:
        message = token_refusal_message(tool, profile)
    else:
        message = refusal_message(tool, profile)
    return failure(ToolFailure(NOT_PERMITTED, message, profile=profile, tool=tool))


def record_refusal(hooks: Hooks, tool: str, arguments: Any, outcome: str) -> None:
    """One refused call, as the hooks see a call that ran: before and after, nothing between.
    The arguments are redacted here, whoever refused (the audit log writes what it is given)."""
    seen = redacted(arguments) if isinstance(arguments, dict) else {}
    hooks.fire(hooks.before_tool, ToolCall(tool=tool, arguments=seen))
    hooks.fire(
        hooks.after_tool, ToolCallEnded(tool=tool, arguments=seen, duration=0.0, outcome=outcome)
    )
