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
:data:`SCOPE_KEY` and refuses a wider one with 403).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.types import CallToolResult

from jupyter_mcp_server._errors import NOT_PERMITTED, ToolFailure
from jupyter_mcp_server._hooks import ToolCall, ToolCallEnded, redacted
from jupyter_mcp_server._policy.profiles import (
    FULL,
    PROFILE_CAPABILITY,
    allows,
    narrowest,
    refusal_message,
    unknown_tool_message,
)
from jupyter_mcp_server._protocol.handlers import Handler, tool_annotations, wrap
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._tools.helpers.results import failure

logger = logging.getLogger(__name__)

#: Where the HTTP transport puts a connection's profile in the ASGI scope.
SCOPE_KEY = "jupyter_mcp.profile"


def server_profile(state: ServerState) -> str:
    return state.capabilities.value(PROFILE_CAPABILITY) or FULL


def request_profile(ctx: Any, state: ServerState) -> str:
    """The profile in force for a request: the server's, narrowed by its HTTP connection's."""
    request_context = getattr(ctx, "request_context", ctx)
    request = getattr(request_context, "request", None)
    scope = getattr(request, "scope", None)
    asked = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    return narrowest(server_profile(state), asked)


def attach_profiles(server: Any, state: ServerState) -> None:
    """Enforce the request's profile on `server`'s ``tools/list`` and ``tools/call``."""

    def listing(original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            profile = request_profile(ctx, state)
            if profile != FULL and hasattr(result, "tools"):
                result.tools = [tool for tool in result.tools if allows(profile, tool.annotations)]
            return result

        return listed

    def calling(original: Handler) -> Handler:
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
            return refuse(state, name, arguments, profile, known=found)

        return called

    wrap(server, "tools/list", listing)
    wrap(server, "tools/call", calling)


def refuse(
    state: ServerState, tool: str, arguments: dict[str, Any], profile: str, known: bool = True
) -> CallToolResult:
    """The refusal of a tool outside the profile, seen by the hooks (the audit log) like any call."""
    logger.info("Refused %s under the %s profile", tool, profile)
    hooks = state.hooks
    seen = redacted(arguments)
    hooks.fire(hooks.before_tool, ToolCall(tool=tool, arguments=seen))
    hooks.fire(
        hooks.after_tool,
        ToolCallEnded(tool=tool, arguments=seen, duration=0.0, outcome=NOT_PERMITTED),
    )
    message = refusal_message(tool, profile) if known else unknown_tool_message(tool, profile)
    return failure(ToolFailure(NOT_PERMITTED, message, profile=profile, tool=tool))
