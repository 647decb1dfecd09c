"""Profiles: how much a client may do, decided per tool from its annotations.

An agent running code in somebody's notebook acts with that person's rights;
a profile is what the person lets it do:

- ``read-only``: the tools that only read (``readOnlyHint: true``) and do not
  reach outside (``openWorldHint: false``): no edit, no execution;
- ``edit``: every tool that does not reach outside (``openWorldHint:
  false``): reading and editing notebooks, starting and restarting kernels,
  but no code of the caller's runs;
- ``full``: everything (the default).

A tool is judged by its MCP annotations, as the specification defaults them
when a tool says nothing (``readOnlyHint`` false, ``openWorldHint`` true), so
an extension's tools are covered without being named, and a tool that does
not describe itself counts as one that runs code. The server's profile is the
``profile`` capability (command line, environment); an HTTP client may
narrow it for its connection in the URL (``/mcp?profile=read-only``), never
widen it.
"""

from __future__ import annotations

from typing import Any

#: The capability that sets the server's profile.
PROFILE_CAPABILITY = "profile"
READ_ONLY = "read-only"
EDIT = "edit"
FULL = "full"
#: Narrowest first.
PROFILES: tuple[str, ...] = (READ_ONLY, EDIT, FULL)
#: The URL query key an HTTP client narrows its connection's profile with.
QUERY_KEY = "profile"

WHAT_IT_ALLOWS = {
    READ_ONLY: "tools that only read",
    EDIT: "tools that read and edit, without running code",
    FULL: "every tool",
}


def rank(profile: str) -> int:
    return PROFILES.index(profile)


def narrowest(*profiles: str | None) -> str:
    """The narrowest of the profiles given (None counts as ``full``)."""
    return min((p or FULL for p in profiles), key=rank)


def annotation(annotations: Any, name: str, default: bool) -> bool:
    """One hint off a tool's annotations (an object or a dict), as the spec defaults it."""
    if annotations is None:
        return default
    if isinstance(annotations, dict):
        value = annotations.get(name)
        if value is None:
            value = annotations.get(
                {"read_only_hint": "readOnlyHint", "open_world_hint": "openWorldHint"}[name]
            )
    else:
        value = getattr(annotations, name, None)
    return default if value is None else bool(value)


def allows(profile: str, annotations: Any) -> bool:
    """Whether a tool with these annotations is served under `profile`."""
    if profile == FULL:
        return True
    reaches_out = annotation(annotations, "open_world_hint", True)
    if profile == EDIT:
        return not reaches_out
    return not reaches_out and annotation(annotations, "read_only_hint", False)


def unknown_tool_message(tool: str, profile: str) -> str:
    return (
        f"{tool} is not a tool this server can name, so the '{profile}' profile cannot allow it. "
        f"Call tools/list for the tools served here."
    )


def refusal_message(tool: str, profile: str) -> str:
    return (
        f"{tool} is not permitted under the '{profile}' profile, which allows {WHAT_IT_ALLOWS[profile]}. "
        f"The person running this server chose it; ask them for a wider profile "
        f"(--capability profile=full, or a URL without a narrower ?profile=) if this call is needed."
    )


def token_refusal_message(tool: str, profile: str) -> str:
    return (
        f"{tool} is not permitted with this access token, whose scopes grant the '{profile}' "
        f"profile ({WHAT_IT_ALLOWS[profile]}). The server would allow it with a token of a wider "
        f"scope: sign in again asking for it (the protected resource metadata lists the scopes)."
    )
