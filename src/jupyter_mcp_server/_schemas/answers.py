"""A tool's answer as MCP carries it: a result with its structured part and the text a model
reads, or a failure with its message and stable code.

Built from nothing but the MCP types and the failures (:mod:`jupyter_mcp_server._errors`),
so an extension's module can answer the way the server's tools do without importing the
server (:mod:`jupyter_mcp_server.api` hands these out).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp.types import CallToolResult, ContentBlock, TextContent

from jupyter_mcp_server._errors import ToolFailure


def answer(
    structured: dict[str, Any],
    text: str | None = None,
    content: Sequence[ContentBlock] = (),
) -> CallToolResult:
    """A successful result: the structured answer, and what a model reads."""
    blocks: list[ContentBlock] = []
    if text is not None:
        blocks.append(TextContent(type="text", text=text))
    blocks.extend(content)
    if not blocks:
        blocks.append(TextContent(type="text", text=json.dumps(structured, ensure_ascii=False)))
    return CallToolResult(content=blocks, structured_content=structured)


def failure(
    error: ToolFailure,
    structured: dict[str, Any] | None = None,
    content: Sequence[ContentBlock] = (),
) -> CallToolResult:
    """A failed result: never reported as success, never without its reason."""
    blocks: list[ContentBlock] = [TextContent(type="text", text=error.message), *content]
    return CallToolResult(
        content=blocks,
        structured_content=structured,
        is_error=True,
        _meta=error.as_meta(),
    )
