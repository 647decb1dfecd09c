"""What each agent client hands its model of a tool result, as one function per client.

A server's result is only worth what reaches the model, and the clients
people use pass a ``CallToolResult`` on in their own ways: some only its
``structuredContent`` as JSON, some only its ``content``, some both; some
drop images, some wrap each block or the whole result. These functions are
those rules, taken from the real CLIs driven headless against a stand-in
model (``tests/protocol/test_agent_clients.py``, which checks every view here against
what each real client handed for each step, so they cannot drift), so that
workload 12 counts the bytes each client hands its model rather than the
result as it travels.

Each view answers a ``str``: the text the client hands, its pieces joined by
``\\n`` the way the stand-in records them, the client's own wrapping included
(Codex's ``Wall time`` header, Gemini's ``<untrusted_context>`` and JSON,
Copilot's error prefix); an image the client passes on is in it as a
``data:`` URL (its base64: what the client sends its model API), an image it
drops is not. JSON is written as JavaScript's ``JSON.stringify`` writes it
(compact, non-ASCII kept), which is what these Node clients send.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

#: Codex puts the call's wall time first; the number varies, its width hardly.
CODEX_HEADER = "Wall time: 0.0000 seconds\nOutput:\n"


def js_json(value: Any) -> str:
    """JSON as ``JSON.stringify`` writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", "") == "text"]


def images(result: Any) -> list[str]:
    """Each image block as the ``data:`` URL a client sends its model."""
    return [
        f"data:{block.mime_type};base64,{block.data}"
        for block in result.content
        if getattr(block, "type", "") == "image"
    ]


def whole(result: Any) -> dict[str, Any]:
    """The result as it travelled (``_meta``, ``content``, ``structuredContent``, ``isError``)."""
    return result.model_dump(mode="json", by_alias=True, exclude_unset=True)


#: Where Claude Code says it saved an image it passes on (a typical path: its length varies).
CLAUDE_IMAGE_NOTE = (
    "[Image: source: /home/user/.claude/projects/-home-user-work/"
    "00000000-0000-0000-0000-000000000000/tool-results/mcp-jupyter-blob-0000000000000-000000.png]"
)


def claude_code(result: Any, tool: str = "", arguments: Any = None) -> str:
    """Only ``structuredContent``, as JSON, when there is one and no image; errors: the
    content; with an image: the content, each image passed on with a line naming the file it
    saved it to, then the structured JSON."""
    structured = result.structured_content
    if result.is_error or structured is None:
        return "\n".join([*texts(result), *images(result)])
    if not images(result):
        return js_json(structured)
    saved = [piece for image in images(result) for piece in (image, CLAUDE_IMAGE_NOTE)]
    return "\n".join([*texts(result), *saved, js_json(structured)])


def codex(result: Any, tool: str = "", arguments: Any = None) -> str:
    """Only ``structuredContent`` (errors too: their structured result holds the traceback)
    when there is one, else the text; after its ``Wall time`` header; images dropped."""
    if result.structured_content is not None:
        return CODEX_HEADER + js_json(result.structured_content)
    return CODEX_HEADER + "\n".join(texts(result))


def copilot(result: Any, tool: str = "", arguments: Any = None) -> str:
    """The text blocks joined with nothing between, then the structured JSON after a blank
    line; an error the same after the server's name; images dropped."""
    text = "".join(texts(result))
    prefix = "MCP server 'jupyter': " if result.is_error else ""
    if result.structured_content is None:
        return prefix + text
    structured = js_json(result.structured_content)
    return prefix + (f"{text}\n\n{structured}" if text else structured)


def _gemini_like_error(result: Any, tool: str, arguments: Any, qwen: bool) -> str:
    """Gemini CLI and Qwen Code hand an error as a sentence holding the call and the whole
    result as JSON, itself in the function response's JSON."""
    call = js_json({"name": tool, "args": arguments or {}})
    response: Any = whole(result)
    if qwen:  # its serializer meets the content a second time, and says so
        response = {"error": response, "content": "[Circular]"}
    inner = js_json([{"functionResponse": {"name": tool, "response": response}}])
    sentence = (
        f"MCP tool '{tool}' reported tool error for function call: {call} with response: {inner}"
    )
    return sentence if qwen else js_json({"error": sentence})


def _image_notes(result: Any, tool: str) -> list[str]:
    return [
        f"[Tool '{tool}' provided the following image data with mime-type: {block.mime_type}]"
        for block in result.content
        if getattr(block, "type", "") == "image"
    ]


def gemini(result: Any, tool: str = "", arguments: Any = None) -> str:
    """The content only, each text block in ``<untrusted_context>``, as the function
    response's JSON; an image named there and passed on beside it; an error: the whole result."""
    if result.is_error:
        return _gemini_like_error(result, tool, arguments, qwen=False)
    wrapped = [f"<untrusted_context>\n{t}\n</untrusted_context>" for t in texts(result)]
    output = "\n".join([*wrapped, *_image_notes(result, tool)])
    return "\n".join([js_json({"output": output}), *images(result)])


#: What Qwen Code says after naming an image, when its model takes no image input (the
#: stand-in's model, and the default).
QWEN_NO_IMAGES = (
    '[Unsupported image file: "{mime}". This model does not support image input. The read_file '
    "tool cannot process this type of file either. To handle this file, try using skills if "
    "applicable, or any tools installed at system wide, or let the user know you cannot "
    "process this type of file.]"
)


def qwen(result: Any, tool: str = "", arguments: Any = None) -> str:
    """The content only, text blocks joined by a line break; an image replaced by a
    placeholder (without image input); an error: the whole result, as Gemini CLI does."""
    if result.is_error:
        return _gemini_like_error(result, tool, arguments, qwen=True)
    parts = ["\n".join(texts(result))] if texts(result) else []
    for block in result.content:
        if getattr(block, "type", "") == "image":
            note = f"[Tool '{tool}' provided the following image data with mime-type: {block.mime_type}]"
            parts += [note, QWEN_NO_IMAGES.format(mime=block.mime_type)]
    return "\n".join(parts)


def opencode(result: Any, tool: str = "", arguments: Any = None) -> str:
    """The content only, text blocks joined by a blank line; images passed on (as a user
    message after the results, introduced by a line of its own)."""
    parts = ["\n\n".join(texts(result))]
    if images(result):
        parts += ["Attached media from tool result:", *images(result)]
    return "\n".join(parts)


View = Callable[..., str]

#: Each client tested in ``tests/protocol/test_agent_clients.py``, by its name there.
VIEWS: dict[str, View] = {
    "claude-code": claude_code,
    "codex": codex,
    "copilot": copilot,
    "gemini": gemini,
    "opencode": opencode,
    "qwen": qwen,
}

#: The clients that pass images on to their model (Qwen Code only with image input on).
PASSES_IMAGES = {"claude-code", "gemini", "opencode"}
