"""Arguments the SDK refuses, answered in the contract's shape.

The SDK checks a call's arguments against the tool's input schema before the
tool runs, and answers a bare ``isError`` with pydantic's text and a link to
its documentation; an unknown tool gets "Unknown tool". Neither carries a
code. This interceptor (the SDK's own ``Extension.intercept_tool_call``)
gives both the contract's shape: ``invalid_argument`` naming each field and
what it accepts, ``not_found`` naming the tools that exist.
"""

from __future__ import annotations

import re
from typing import Any

from mcp.server.extension import Extension
from mcp.types import CallToolResult, TextContent

from jupyter_mcp_server._errors import ERROR_META_KEY, INVALID_ARGUMENT, NOT_FOUND, ToolFailure

VALIDATION = re.compile(
    r"^Error executing tool (?P<tool>\S+): \d+ validation errors? for \S+\n(?P<body>.*)$", re.S
)
UNKNOWN_TOOL = re.compile(r"^Unknown tool: (?P<tool>.+)$")
DOCS_LINK = re.compile(r"\n\s*For further information visit \S+")


def field_problems(body: str) -> list[str]:
    """pydantic's report as one line per field: `field: problem (got value)`."""
    problems: list[str] = []
    lines = [line for line in DOCS_LINK.sub("", body).splitlines() if line.strip()]
    for name, detail in zip(lines[::2], lines[1::2], strict=False):
        message, _, context = detail.strip().partition(" [")
        got = re.search(r"input_value=(.*?), input_type", context)
        problems.append(f"{name.strip()}: {message}" + (f" (got {got.group(1)})" if got else ""))
    return problems


class ArgumentErrors(Extension):
    """Coded answers for calls the SDK refuses before any tool runs."""

    identifier = "io.jupyter-mcp/argument-errors"

    def __init__(self, server: Any = None) -> None:
        """`server`: the server it is on, whose tools an unknown tool's answer names (handed
        in as the server is made: ``_protocol/features.Feature.extension_on``)."""
        self.server = server

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if (
            not isinstance(result, CallToolResult)
            or not result.is_error
            or (result.meta or {}).get(ERROR_META_KEY)
        ):
            return result
        text = "".join(getattr(block, "text", "") for block in result.content)
        if match := VALIDATION.match(text):
            problems = field_problems(match.group("body"))
            failure = ToolFailure(
                INVALID_ARGUMENT,
                f"Invalid arguments for {match.group('tool')}: "
                + "; ".join(problems)
                + ". Fix them and call again; the tool's input schema says what each accepts.",
                fields=[problem.split(":", 1)[0] for problem in problems],
            )
        elif match := UNKNOWN_TOOL.match(text):
            known = (
                sorted(tool.name for tool in await self.server.list_tools()) if self.server else []
            )
            failure = ToolFailure(
                NOT_FOUND,
                f"There is no tool '{match.group('tool')}' on this server. Its tools: {', '.join(known)}.",
                known=known,
            )
        else:
            return result
        return CallToolResult(
            content=[TextContent(type="text", text=failure.message)],
            is_error=True,
            _meta=failure.as_meta(),
        )
