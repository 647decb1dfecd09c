"""Notebook cells and outputs as a model reads them in ``content``.

Text as text, PNG and JPEG as image content, errors as their traceback text.
Structured data lives in ``structuredContent``; this is the readable side.
"""

from typing import Any

from mcp.types import ContentBlock, ImageContent, TextContent

IMAGE_TYPES = ("image/png", "image/jpeg")
TEXT_TYPES = ("text/markdown", "text/plain", "application/json", "text/html", "text/latex")


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(value)
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False)


def output_blocks(outputs: list[dict[str, Any]]) -> list[ContentBlock]:
    """Each output as the content blocks a model can read."""
    blocks: list[ContentBlock] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            blocks.append(TextContent(type="text", text=_text(output.get("text", ""))))
        elif kind == "error":
            traceback = output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]
            blocks.append(TextContent(type="text", text="\n".join(traceback)))
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            image = next((mime for mime in IMAGE_TYPES if mime in data), None)
            if image is not None:
                blocks.append(
                    ImageContent(type="image", data=_text(data[image]).replace("\n", ""), mime_type=image)
                )
            text = next((mime for mime in TEXT_TYPES if mime in data), None)
            if (text is not None and (image is None or text != "text/plain")) or (text is not None and image is None):
                blocks.append(TextContent(type="text", text=_text(data[text])))
    return blocks


def cell_heading(index: int, cell: Any) -> str:
    count = cell.get("execution_count")
    run = f", execution_count {count}" if count is not None else ""
    return f"[{index}] id={cell.get('id')} {cell.get('cell_type')}{run}"


def source_preview(source: str, limit: int = 160) -> str:
    """The first line or so of a cell, for the brief listing."""
    first = source.split("\n", 1)[0]
    shortened = first if len(first) <= limit else first[: limit - 1] + "…"
    return shortened + (" …" if "\n" in source and shortened == first else "")
