"""Notebook cells and outputs as a model reads them in ``content``, within the inline budget.

Each output becomes the text a model reads (``model_text``), PNG and JPEG
image content (a large one shrunk, ``images``), and, for what a result leaves
out, a link to where it is whole. The texts of one result share its budget
(``budget``): short ones whole, long ones cut to head and tail. Structured
data lives in ``structuredContent``; this is the readable side.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.types import ContentBlock, ImageContent, ResourceLink, TextContent

from jupyter_mcp_server._kernels.outputs import plain_output
from jupyter_mcp_server._rendering.budget import allot, budget_of, head_and_tail
from jupyter_mcp_server._rendering.images import downscaled
from jupyter_mcp_server._rendering.model_text import (
    IMAGE_TYPES,
    WidgetModels,
    joined,
    output_text,
)
from jupyter_mcp_server._store import WRITTEN_VERSION, NotebookView


@dataclass(frozen=True)
class InlineLimits:
    """How much of an execution's or a cell's outputs a result carries inline, the rest linked."""

    #: An image larger than this (base64 characters) is shrunk, or linked rather than inlined.
    image_bytes: int = 262_144
    #: No one text output carries more than this (characters) inline.
    text_chars: int = 65_536
    #: All the output text of one result together (characters).
    budget_chars: int = 16_384

    @classmethod
    def of(cls, config: Any, max_output_chars: int | None = None) -> "InlineLimits":
        """The server's limits, with a call's `max_output_chars` (checked) as the budget."""
        budget = budget_of(config.inline_budget_chars, max_output_chars)
        return cls(
            config.inline_image_bytes,
            max(config.inline_text_chars, budget if max_output_chars else 0),
            budget,
        )


#: The limits when a caller gives none.
DEFAULT_INLINE = InlineLimits()

#: The URI of output N of the outputs being rendered, where they are kept whole.
OutputLink = Callable[[int], str]


def output_blocks(
    outputs: list[dict[str, Any]],
    link: OutputLink | None = None,
    limits: InlineLimits = DEFAULT_INLINE,
    widgets: WidgetModels | None = None,
) -> list[ContentBlock]:
    """Each output as the content blocks a model can read, their texts within ``limits.budget_chars``.

    `widgets` are the notebook's saved widget models: a widget's text says what its
    Output widgets hold, within the same budget.

    With `link` (the outputs are kept whole somewhere: a notebook's cell, the
    scratch outputs), an image above ``limits.image_bytes`` is shrunk or
    replaced by a ``resource_link``, and a text over its share of the budget
    is cut to head and tail, the marker naming the ``read_output`` call that
    pages the rest, followed by a link to the whole.
    """
    pieces: list[ContentBlock | tuple[int, str]] = []
    for index, output in enumerate(outputs):
        if output.get("output_type") in ("display_data", "execute_result"):
            pieces.extend(_image_blocks(output.get("data") or {}, index, link, limits))
        text = output_text(output, widgets)
        if text is not None:
            pieces.append((index, text))
    texts = [piece for piece in pieces if isinstance(piece, tuple)]
    shares = iter(allot([len(text) for _, text in texts], limits.budget_chars))
    blocks: list[ContentBlock] = []
    for piece in pieces:
        if not isinstance(piece, tuple):
            blocks.append(piece)
            continue
        index, text = piece
        share = min(next(shares), limits.text_chars)
        # Asked only for a text that is cut: a link may keep the outputs somewhere.
        uri = link(index) if link is not None and len(text) > share else None
        shown = head_and_tail(text, share, uri)
        blocks.append(TextContent(type="text", text=shown))
        if uri is not None and shown is not text:
            blocks.append(
                _link(
                    uri,
                    index,
                    "text/plain",
                    len(text.encode("utf-8", "surrogatepass")),
                    "whole text",
                )
            )
    return blocks


#: Representations nbformat stores base64-encoded.
BINARY_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"})
#: Markup a browser draws and a model should not read raw: its text (text/plain, or the
#: table in the result's rendering) says the same in a fraction of the characters.
MARKUP_TYPES = frozenset({"text/html", "image/svg+xml", "application/javascript"})


def bounded_outputs(
    outputs: list[dict[str, Any]], link: OutputLink, limits: InlineLimits = DEFAULT_INLINE
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Stored outputs as a result's structured part carries them, and what was left out.

    Some clients hand their model the structured part as JSON text, so it
    obeys what the content obeys. A binary payload (an image, a PDF) never
    becomes text: it leaves ``data``, and its entry in the cuts names it and
    the resource that holds it (the content carries an image as an image
    block). Markup (HTML, SVG, JavaScript) leaves the same way. The texts (a stream, a traceback, a
    text representation, JSON as its text) share ``limits.budget_chars``, no
    one more than ``limits.text_chars``; a longer one keeps its head and tail
    around a marker saying how much is left out and where it is whole. Each
    is what a model reads (``plain_output``: no colour codes, which the
    notebook and the app's ``_meta`` keep); outputs with nothing to leave out
    are the stored ones, not copies.
    """
    plain = list(map(plain_output, outputs))
    lengths = [len(text) for text in _texts(plain)]
    if (
        sum(lengths) <= limits.budget_chars
        and max(lengths, default=0) <= limits.text_chars
        and not any(_leaves_data(output) for output in plain)
    ):
        return plain, []  # every text whole, nothing to take out: what the loop below gives
    shares = iter(allot(lengths, limits.budget_chars))
    bounded: list[dict[str, Any]] = []
    cuts: list[dict[str, Any]] = []
    for index, output in enumerate(plain):
        kind = output.get("output_type")
        cut: dict[str, Any] | None = None
        if kind == "stream":
            text = joined(output.get("text", ""))
            share = min(next(shares), limits.text_chars)
            if len(text) > share:
                cut = {
                    **output,
                    "text": _head_and_tail(text, link(index), share, cuts, index, "text/plain"),
                }
        elif kind == "error":
            traceback = "\n".join(map(str, output.get("traceback") or []))
            share = min(next(shares), limits.text_chars)
            if len(traceback) > share:
                kept = _head_and_tail(traceback, link(index), share, cuts, index, "text/plain")
                cut = {**output, "traceback": kept.split("\n")}
        elif kind in ("display_data", "execute_result"):
            data = output.get("data") or {}
            changed: dict[str, str | None] = {}
            for mime, value in data.items():
                if mime in BINARY_TYPES or mime in MARKUP_TYPES:
                    binary = mime in BINARY_TYPES
                    size = sum(map(len, value)) if isinstance(value, list) else len(str(value))
                    omitted = size * 3 // 4 if binary else size
                    uri = link(index)
                    cuts.append(
                        {
                            "output": index,
                            "mime_type": mime,
                            "uri": uri,
                            **(
                                {"omitted_bytes": omitted} if binary else {"omitted_chars": omitted}
                            ),
                        }
                    )
                    # Left out of ``data``: its entry in ``outputs_cut`` names it and its resource once.
                    changed[mime] = None
                else:
                    text = joined(value)
                    share = min(next(shares), limits.text_chars)
                    if len(text) > share:
                        changed[mime] = _head_and_tail(text, link(index), share, cuts, index, mime)
            if changed:
                cut = {
                    **output,
                    "data": {
                        mime: changed.get(mime, value)
                        for mime, value in data.items()
                        if changed.get(mime, value) is not None
                    },
                }
        bounded.append(output if cut is None else cut)
    return bounded, cuts


def _leaves_data(output: dict[str, Any]) -> bool:
    """Whether `output` holds a representation that never stays in ``data`` (binary, markup)."""
    if output.get("output_type") not in ("display_data", "execute_result"):
        return False
    return any(mime in BINARY_TYPES or mime in MARKUP_TYPES for mime in output.get("data") or {})


def _texts(outputs: list[dict[str, Any]]) -> list[str]:
    """Every text of `outputs` that shares the budget, in the order bounded_outputs meets them."""
    texts: list[str] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(joined(output.get("text", "")))
        elif kind == "error":
            texts.append("\n".join(map(str, output.get("traceback") or [])))
        elif kind in ("display_data", "execute_result"):
            for mime, value in (output.get("data") or {}).items():
                if mime in BINARY_TYPES or mime in MARKUP_TYPES:
                    continue
                texts.append(joined(value))
    return texts


def _head_and_tail(
    text: str, uri: str, chars: int, cuts: list[dict[str, Any]], index: int, mime: str
) -> str:
    # Both ends: the head says what started, the tail how it ended (the last
    # lines of a log, the error after a long traceback).
    marker_room = 160 + len(uri)
    room = max(chars - marker_room, 0)
    head = room // 2
    tail = room - head
    omitted = len(text) - head - tail
    cuts.append({"output": index, "mime_type": mime, "uri": uri, "omitted_chars": omitted})
    marker = f"\n[jupyter-mcp-server: {omitted} characters left out here; read {uri} for the whole output]\n"
    return text[:head] + marker + text[len(text) - tail :]


def _image_blocks(
    data: dict[str, Any], index: int, link: OutputLink | None, limits: InlineLimits
) -> list[ContentBlock]:
    image = next((mime for mime in IMAGE_TYPES if mime in data), None)
    if image is None:
        return []
    encoded = joined(data[image]).replace("\n", "")
    if link is None or len(encoded) <= limits.image_bytes:
        return [ImageContent(type="image", data=encoded, mime_type=image)]
    uri = link(index)
    original = _link(uri, index, image, len(encoded) * 3 // 4, "image too large to inline")
    small = downscaled(encoded, image, limits.image_bytes)
    if small is None:
        return [original]
    said = (
        f"[jupyter-mcp-server: image shrunk from {small.original_width}x{small.original_height} to "
        f"{small.width}x{small.height} to fit; the original is {uri}]"
    )
    return [
        ImageContent(type="image", data=small.data, mime_type=small.mime),
        TextContent(type="text", text=said),
        original,
    ]


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
    if view.newer_format is not None:
        return _kept_newer(view.newer_format, "this edit saved it in that version")
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
    if view.newer_format is not None:
        return _kept_newer(view.newer_format, "edits save it in that version")
    if older is None:
        return None, ""
    return (
        {"from": older, "to": WRITTEN_VERSION},
        f" The file is in nbformat {older}; the first edit will save it as nbformat "
        f"{WRITTEN_VERSION}, keeping its content.",
    )


def _kept_newer(version: str, saved: str) -> tuple[dict[str, str], str]:
    """The notice of a file in a newer nbformat than this server writes (4.99): in the
    same field as an older one's, ``to`` its own version, since it is not converted."""
    return (
        {"from": version, "to": version},
        f" The file is in nbformat {version}, newer than the {WRITTEN_VERSION} this server knows; "
        f"{saved}, and cells of types {WRITTEN_VERSION} does not know are kept as they are.",
    )


def first_line(source: str, width: int = 60) -> str:
    line = source.strip().splitlines()[0] if source.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"
