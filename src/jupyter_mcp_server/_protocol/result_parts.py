"""One reading of a tool result, whichever part of it a client hands its model.

MCP lets a client hand its model either part of a result. Claude Code and
Codex hand only ``structuredContent`` (as JSON text) when there is one;
Gemini CLI, opencode and Qwen Code only the ``content``; Copilot CLI both,
its content blocks joined with nothing between (docs/protocol.md has the
table). So, as every result leaves (middleware, after extensions wrapped the
tool and before secrets are masked):

* a successful result's ``structuredContent`` starts with ``rendered``: what
  its content says, every text in order, an image or a link named in its
  place, never base64 (not where its fields already say all of it);
* every text block that another follows ends with a line break.

An error's ``rendered`` leaves out its traceback, which its structured
part carries already (in ``error``, or in a run's ``cells[i].output``, which
``rendered`` then points to): Codex hands its model an error's structured part
(so what the cell printed before it failed must be there), while Gemini CLI
and Qwen Code hand the whole result, which then holds the traceback twice,
never three times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

#: Where a successful result's structuredContent says what its content says.
RENDERED_KEY = "rendered"
#: The methods whose results are tool results.
TOOL_RESULT_METHODS = frozenset({"tools/call", "tasks/result"})


class ResultParts:
    """Middleware: tool results read the same in either part (:func:`in_both_parts`).

    `structured_says_all` names the tools whose structured result holds everything their text
    says (an outline's rows, headings and notes are all fields): theirs get no ``rendered``,
    which would only say it a second time to a client that reads the JSON."""

    def __init__(self, structured_says_all: frozenset[str] = frozenset()) -> None:
        self.structured_says_all = structured_says_all

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        method = getattr(ctx, "method", None)
        if method not in TOOL_RESULT_METHODS:
            return result
        params = getattr(ctx, "params", None)

        tool = (
            params.get("name") if method == "tools/call" and isinstance(params, Mapping) else None
        )
        return in_both_parts(result, with_rendered=tool not in self.structured_says_all)


def in_both_parts(result: Any, with_rendered: bool = True) -> Any:
    """`result` with its text blocks separated and (`with_rendered`) ``rendered`` in its
    structured part."""
    if isinstance(result, CallToolResult):
        blocks: list[Any] = list(result.content)
        structured = result.structured_content
        failed = result.is_error
    elif isinstance(result, dict) and isinstance(result.get("content"), list):
        blocks = result["content"]  # a task's stored result, in its wire form
        structured = result.get("structuredContent")
        failed = bool(result.get("isError"))
    else:
        return result
    separate(blocks)
    if not with_rendered or not isinstance(structured, dict) or RENDERED_KEY in structured:
        return result
    if _only_the_structured_as_json(blocks, structured):
        return result
    text = ""
    if failed:
        text = rendered(_without_the_traceback(blocks, structured.get("error")))
        for where, held in _long_texts(structured):
            text = text.replace(held, f"[{where}, as this result's fields hold it]")
    said = {RENDERED_KEY: text if failed else rendered(blocks), **structured}
    if isinstance(result, CallToolResult):
        result.structured_content = said
    else:
        result["structuredContent"] = said
    return result


def separate(blocks: list[Any]) -> None:
    """End every text block that another follows with a line break: a client that joins blocks
    with nothing between (Copilot CLI) must not run one output into the next."""
    for block in blocks[:-1]:
        if isinstance(block, TextContent):
            if block.text and not block.text.endswith("\n"):
                block.text += "\n"
        elif isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text") or ""
            if text and not text.endswith("\n"):
                block["text"] = text + "\n"


def rendered(blocks: Sequence[Any]) -> str:
    """What `blocks` say as one text: texts as they are, an image or a link named in its place."""
    parts: list[str] = []
    for block in blocks:
        kind, field = _kind(block), _field_of(block)
        if kind == "text":
            parts.append(str(field("text") or ""))
        elif kind == "image":
            size = len(field("data") or "") * 3 // 4
            mime = field("mime_type") or field("mimeType") or "image"
            parts.append(
                f"[{mime} image, about {size} bytes: an image block of this result's content, "
                "seen where the client passes images on]\n"
            )
        elif kind == "resource_link":
            parts.append(f"[{field('description') or field('name')}: {field('uri')}]\n")
        elif kind == "resource":
            resource = field("resource")
            if isinstance(resource, TextResourceContents):
                parts.append(resource.text)
            elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
                parts.append(resource["text"])
            else:
                uri = resource.get("uri") if isinstance(resource, dict) else resource.uri
                parts.append(f"[a binary resource: {uri}]\n")
    return "".join(parts)


def _without_the_traceback(blocks: list[Any], error: Any) -> list[Any]:
    """`blocks` but the one showing the traceback the structured ``error`` carries."""
    traceback = error.get("traceback") if isinstance(error, dict) else None
    if not isinstance(traceback, list) or not traceback:
        return blocks
    shown = "\n".join(map(str, traceback)).rstrip("\n")
    return [
        block
        for block in blocks
        if not (
            _kind(block) == "text" and str(_field_of(block)("text") or "").rstrip("\n") == shown
        )
    ]


#: A field's text this long, shown again in an error's content, is pointed to from ``rendered``
#: rather than copied (a cell's traceback in a run's ``cells[i].output``).
LONG_TEXT = 200


def _long_texts(value: Any, where: str = "") -> list[tuple[str, str]]:
    """Every string of `value` (a structured result) of at least :data:`LONG_TEXT` characters,
    with where it is (``cells[2].output``), the longest first."""
    found: list[tuple[str, str]] = []
    if isinstance(value, str) and len(value) >= LONG_TEXT:
        found.append((where, value))
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _long_texts(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _long_texts(item, f"{where}[{index}]")
    return sorted(found, key=lambda pair: -len(pair[1]))


def _kind(block: Any) -> str | None:
    if isinstance(block, TextContent | ImageContent | ResourceLink | EmbeddedResource):
        return block.type
    return block.get("type") if isinstance(block, dict) else None


def _field_of(block: Any) -> Any:
    if isinstance(block, dict):
        return block.get
    return lambda name: getattr(block, name, None)


def _only_the_structured_as_json(blocks: list[Any], structured: dict[str, Any]) -> bool:
    """Whether the content is one text block holding the structured part as JSON (the SDK's way
    of answering a tool that returned only data): the structured part already says it all."""
    if len(blocks) != 1 or _kind(blocks[0]) != "text":
        return False
    text = str(_field_of(blocks[0])("text") or "").strip()
    if not text.startswith("{"):
        return False
    try:
        return bool(json.loads(text) == structured)
    except ValueError:
        return False
