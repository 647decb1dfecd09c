"""Notebook cells and outputs as a model reads them in ``content``.

Text as text, PNG and JPEG as image content, errors as their traceback text.
Structured data lives in ``structuredContent``; this is the readable side.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.types import ContentBlock, ImageContent, ResourceLink, TextContent

from jupyter_mcp_server.store import WRITTEN_VERSION, NotebookView

IMAGE_TYPES = ("image/png", "image/jpeg")
TEXT_TYPES = ("text/markdown", "text/plain", "application/json", "text/html", "text/latex")



@dataclass(frozen=True)
class InlineLimits:
    """How much of a stored output a result carries inline, the rest linked to its resource."""

    #: An image larger than this (base64 characters) is linked rather than inlined.
    image_bytes: int = 262_144
    #: A text output longer than this (characters) is cut, with a link to the whole.
    text_chars: int = 65_536

    @classmethod
    def of(cls, config: Any) -> "InlineLimits":
        return cls(config.inline_image_bytes, config.inline_text_chars)


#: The limits when a caller gives none.
DEFAULT_INLINE = InlineLimits()

#: The URI of output N of the cell being rendered, when its outputs are stored.
OutputLink = Callable[[int], str]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(value)
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False)


def output_blocks(
    outputs: list[dict[str, Any]], link: OutputLink | None = None, limits: InlineLimits = DEFAULT_INLINE
) -> list[ContentBlock]:
    """Each output as the content blocks a model can read.

    With `link` (the outputs are stored in a notebook), an image above
    ``limits.image_bytes`` becomes a ``resource_link`` to its output resource
    and a text above ``limits.text_chars`` is cut with a link to the whole.
    """
    blocks: list[ContentBlock] = []
    for index, output in enumerate(outputs):
        kind = output.get("output_type")
        if kind == "stream":
            blocks.extend(_text_blocks(_text(output.get("text", "")), index, link, limits))
        elif kind == "error":
            traceback = output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]
            blocks.append(TextContent(type="text", text="\n".join(traceback)))
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            image = next((mime for mime in IMAGE_TYPES if mime in data), None)
            if image is not None:
                encoded = _text(data[image]).replace("\n", "")
                if link is not None and len(encoded) > limits.image_bytes:
                    blocks.append(_link(link(index), index, image, len(encoded) * 3 // 4, "image too large to inline"))
                else:
                    blocks.append(ImageContent(type="image", data=encoded, mime_type=image))
            text = next((mime for mime in TEXT_TYPES if mime in data), None)
            if (text is not None and (image is None or text != "text/plain")) or (text is not None and image is None):
                blocks.extend(_text_blocks(_text(data[text]), index, link, limits))
    return blocks


#: Representations nbformat stores base64-encoded.
BINARY_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"})


def bounded_outputs(
    outputs: list[dict[str, Any]], link: OutputLink, limits: InlineLimits = DEFAULT_INLINE
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Stored outputs as a result's structured part carries them, and what was cut.

    The same limits as the content blocks: a text (a stream, a traceback, a
    text representation, JSON as its text) longer than ``limits.text_chars``
    keeps its head and tail around a marker saying how much is left out and
    which resource holds it whole; a binary payload larger than
    ``limits.image_bytes`` is replaced by a marker naming the resource.
    Outputs within the limits are the stored ones, not copies.
    """
    bounded: list[dict[str, Any]] = []
    cuts: list[dict[str, Any]] = []
    for index, output in enumerate(outputs):
        kind = output.get("output_type")
        cut: dict[str, Any] | None = None
        if kind == "stream":
            text = _text(output.get("text", ""))
            if len(text) > limits.text_chars:
                cut = {**output, "text": _head_and_tail(text, link(index), limits, cuts, index, "text/plain")}
        elif kind == "error":
            traceback = "\n".join(map(str, output.get("traceback") or []))
            if len(traceback) > limits.text_chars:
                kept = _head_and_tail(traceback, link(index), limits, cuts, index, "text/plain")
                cut = {**output, "traceback": kept.split("\n")}
        elif kind in ("display_data", "execute_result"):
            data = output.get("data") or {}
            changed = {}
            for mime, value in data.items():
                if mime in BINARY_TYPES:
                    size = sum(map(len, value)) if isinstance(value, list) else len(str(value))
                    if size > limits.image_bytes:
                        uri = link(index)
                        omitted = size * 3 // 4
                        cuts.append({"output": index, "mime_type": mime, "uri": uri, "omitted_bytes": omitted})
                        changed[mime] = f"[jupyter-mcp-server: {mime} of about {omitted} bytes left out; read {uri} for it whole]"
                else:
                    text = _text(value)
                    if len(text) > limits.text_chars:
                        changed[mime] = _head_and_tail(text, link(index), limits, cuts, index, mime)
            if changed:
                cut = {**output, "data": {**data, **changed}}
        bounded.append(output if cut is None else cut)
    return bounded, cuts


def _head_and_tail(
    text: str, uri: str, limits: InlineLimits, cuts: list[dict[str, Any]], index: int, mime: str
) -> str:
    # Both ends: the head says what started, the tail how it ended (the last
    # lines of a log, the error after a long traceback).
    head = limits.text_chars // 2
    tail = limits.text_chars - head
    omitted = len(text) - head - tail
    cuts.append({"output": index, "mime_type": mime, "uri": uri, "omitted_chars": omitted})
    marker = f"\n[jupyter-mcp-server: {omitted} characters left out here; read {uri} for the whole output]\n"
    return text[:head] + marker + text[len(text) - tail :]


def _text_blocks(text: str, index: int, link: OutputLink | None, limits: InlineLimits) -> list[ContentBlock]:
    if link is None or len(text) <= limits.text_chars:
        return [TextContent(type="text", text=text)]
    uri = link(index)
    cut = text[: limits.text_chars]
    note = f"\n[jupyter-mcp-server: {len(text) - len(cut)} more characters cut here; the whole output is {uri}]"
    return [TextContent(type="text", text=cut + note), _link(uri, index, "text/plain", len(text.encode()), "whole text")]


def _link(uri: str, index: int, mime: str, size: int, why: str) -> ResourceLink:
    return ResourceLink(
        type="resource_link",
        uri=uri,
        name=f"output-{index}",
        title=f"Output {index} ({mime})",
        description=f"Output {index}, {why} ({size} bytes): read this resource to get it whole.",
        mime_type=mime,
        size=size,
    )


def cell_heading(index: int, cell: Any) -> str:
    count = cell.get("execution_count")
    run = f", execution_count {count}" if count is not None else ""
    return f"[{index}] id={cell.get('id')} {cell.get('cell_type')}{run}"


def source_preview(source: str, limit: int = 160) -> str:
    """The first line or so of a cell, for the brief listing."""
    first = source.split("\n", 1)[0]
    shortened = first if len(first) <= limit else first[: limit - 1] + "…"
    return shortened + (" …" if "\n" in source and shortened == first else "")


def upgrade_by_edit(view: NotebookView) -> tuple[dict[str, str] | None, str]:
    """What an edit answered with ``view`` says of the format it saved: the field, and a sentence."""
    older = view.upgraded_from
    if older is None:
        return None, ""
    return (
        {"from": older, "to": WRITTEN_VERSION},
        f" The file was in nbformat {older}; this edit saved it as nbformat {WRITTEN_VERSION}, "
        "with the same content.",
    )


def upgrade_ahead(view: NotebookView) -> tuple[dict[str, str] | None, str]:
    """What a read says of the file's older format, before any edit: the field, and a sentence."""
    older = view.older_format
    if older is None:
        return None, ""
    return (
        {"from": older, "to": WRITTEN_VERSION},
        f" The file is in nbformat {older}; the first edit will save it as nbformat "
        f"{WRITTEN_VERSION}, keeping its content.",
    )
