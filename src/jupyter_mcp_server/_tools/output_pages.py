"""``read_output``: one output, a page at a time, by line or by byte.

A result over its inline budget keeps the head and tail of a long output and
names the line where what it left out begins. This reads from there: a
notebook's stored output (``notebook-output:``) or the output of recent
scratch code (``scratch-output:``), as the same text a result shows
(``model_text``), so the line numbers agree. A page is itself bounded by the
server's inline budget.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.scratch import SCRATCH_SCHEME
from jupyter_mcp_server._errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.widgets import widget_models
from jupyter_mcp_server._rendering.budget import MAX_OUTPUT_CHARS, budget_of
from jupyter_mcp_server._rendering.model_text import output_text
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._workspace.notebook_uris import OUTPUT_SCHEME, path_of_uri

DEFAULT_LINES = 500


async def output_of_uri(state: ServerState, uri: str) -> tuple[Any, dict[str, Any]]:
    """The nbformat output a ``notebook-output:`` or ``scratch-output:`` URI names, and the
    widget models saved beside it (its notebook's: what its Output widgets hold)."""
    scheme, colon, rest = uri.partition(":")
    if not colon or scheme not in (OUTPUT_SCHEME, SCRATCH_SCHEME):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{uri!r} is not an output URI; pass the notebook-output: or scratch-output: URI a result named.",
        )
    rest, _, query_text = rest.partition("?")
    query = dict(parse_qsl(query_text, keep_blank_values=True))
    raw = query.get("output", "")
    if not raw.isdigit():
        raise ToolFailure(INVALID_ARGUMENT, f"{uri!r} needs &output=N, the output's 0-based index.")
    index = int(raw)
    if scheme == SCRATCH_SCHEME:
        key = rest.removeprefix("///")
        outputs = state.scratch.get(key)
        if outputs is None:
            raise ToolFailure(
                NOT_FOUND,
                f"The scratch outputs {key!r} are gone (only recent ones are kept, for a limited time). "
                "Run the code again, or run it as a cell so its outputs are stored.",
            )
        where = "that execution"
        widgets: dict[str, Any] = {}
    else:
        path = path_of_uri("notebook:" + rest)
        cell_id = query.get("cell")
        if not cell_id:
            raise ToolFailure(
                INVALID_ARGUMENT, f"{uri!r} names no cell; add ?cell=ID (see read_notebook)."
            )
        relative = state.locate(path)
        view = await state.store.read(relative)
        cell = next((cell for cell in view.notebook.cells if cell.get("id") == cell_id), None)
        if cell is None:
            raise ToolFailure(
                NOT_FOUND,
                f"'{relative}' has no cell with id {cell_id!r}; read_notebook lists the ids.",
            )
        outputs = list(cell.get("outputs") or [])
        where = f"cell {cell_id}"
        widgets = widget_models(view.notebook.get("metadata"))
    if index >= len(outputs):
        raise ToolFailure(
            NOT_FOUND, f"{where} has {len(outputs)} outputs; output {index} does not exist."
        )
    return outputs[index], widgets


@tool_handler("read_output")
async def read_output(
    uri: Annotated[str, Field(description="The output URI a cut result names.")],
    offset: Annotated[int, Field(description="First line (or byte) to read, 0-based.", ge=0)] = 0,
    limit: Annotated[
        int | None, Field(description="Lines (or bytes) to read; default 500 lines.", ge=1)
    ] = None,
    by: Annotated[
        Literal["lines", "bytes"], Field(description="Page by lines or by UTF-8 bytes.")
    ] = "lines",
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.OutputPage]:
    """Read part of one long output by lines or bytes: what a result cut out. Images: read the URI as a resource."""
    state = state_of(ctx)
    text = output_text(*await output_of_uri(state, uri))
    if text is None:
        raise ToolFailure(
            INVALID_ARGUMENT, f"{uri} has no text (an image); read it as a resource instead."
        )
    budget = budget_of(state.config.inline_budget_chars, None)
    data = text.encode("utf-8", "surrogatepass")
    # Lines end at '\n' only, as the markers of a cut result count them (str.splitlines
    # would also split at form feeds and other separators and shift every number).
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    if by == "bytes":
        want = min(limit or budget, MAX_OUTPUT_CHARS, budget)
        start = _char_start(data, min(offset, len(data)))
        end = _char_start(data, min(start + want, len(data)))
        if end == start and start < len(data):
            end = _char_start(data, min(start + 4, len(data)))
        page = data[start:end].decode("utf-8", "surrogatepass")
        returned, following, total = end - start, end, len(data)
    else:
        wanted = lines[offset : offset + (limit or DEFAULT_LINES)]
        kept: list[str] = []
        size = 0
        long_line = ""
        for line in wanted:
            if kept and size + len(line) > budget:
                break
            if len(line) > budget:
                # One line longer than a page: its start here, the rest by bytes.
                at = len("".join(lines[: offset + len(kept)]).encode("utf-8", "surrogatepass"))
                long_line = (
                    f"\n[jupyter-mcp-server: line {offset + len(kept)} is {len(line)} characters, longer than a "
                    f"page; read it whole with by='bytes', offset={at}]"
                )
                line = line[:budget]
            kept.append(line)
            size += len(line)
            if long_line:
                break
        page = "".join(kept) + long_line
        returned, following, total = len(kept), offset + len(kept), len(lines)
        start = offset
    next_offset = following if following < total else None
    result = models.OutputPage(
        uri=uri,
        by=by,
        offset=start,
        returned=returned,
        next_offset=next_offset,
        total_lines=len(lines),
        total_bytes=len(data),
    )
    more = f"[jupyter-mcp-server: {by} {start}-{start + returned - 1} of {total}; " + (
        f"next: offset={next_offset}]" if next_offset is not None else "the end]"
    )
    return answer(
        result.model_dump(), page + ("" if page.endswith("\n") or not page else "\n") + more
    )


def _char_start(data: bytes, position: int) -> int:
    """`position` moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < position < len(data) and data[position] & 0xC0 == 0x80:
        position -= 1
    return position
