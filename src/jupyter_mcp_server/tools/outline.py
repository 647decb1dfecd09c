"""``outline``: a notebook's shape in a few hundred tokens, before reading any of it.

A model that reads a 2,000-cell notebook cell by cell spends its context
before it knows where to look. The outline is the Markdown headings as a
tree (shallow levels first when there are many) and one short line per cell
of a page: type, id, first line, and each output's kind and size, so the
next call can be ``read_cell`` or ``search_notebooks`` aimed at the right place.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server.errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server.kernels.outputs import payload_size
from jupyter_mcp_server.state import state_of
from jupyter_mcp_server.tools.helpers import models
from jupyter_mcp_server.tools.helpers.addressing import notebook_path
from jupyter_mcp_server.tools.helpers.results import answer, tool_handler
from jupyter_mcp_server.tools.helpers.staleness import FRESH, states_of
from jupyter_mcp_server.tools.notebooks import NotebookName

#: Headings shown at most; deeper levels are folded first.
MAX_HEADINGS = 30
FIRST_LINE_CHARS = 60
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def headings_of(cells: list[Any]) -> list[models.Heading]:
    """Every Markdown heading (``#`` lines outside code fences), in order."""
    found = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        fenced = False
        for line in str(cell.get("source", "")).splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and (match := _HEADING.match(line)):
                found.append(models.Heading(level=len(match.group(1)), text=match.group(2)[:80], cell_index=index))
    return found


def folded(headings: list[models.Heading], limit: int = MAX_HEADINGS) -> list[models.Heading]:
    """At most `limit` headings: the deepest levels left out first, then the last ones."""
    kept = headings
    for level in range(6, 1, -1):
        if len(kept) <= limit:
            break
        kept = [heading for heading in kept if heading.level < level]
    return kept[:limit]


def size_said(size: int) -> str:
    return f"{size}B" if size < 1024 else f"{size / 1024:.1f}K" if size < 1024 * 1024 else f"{size / 1048576:.1f}M"


def output_summary(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "error":
        return f"error {output.get('ename', '')}".strip()
    if kind == "stream":
        return f"{output.get('name', 'stream')} {size_said(payload_size(output))}"
    data = output.get("data") or {}
    main = next((mime for mime in ("image/png", "image/jpeg", "text/html", "text/markdown", "application/json") if mime in data), "text/plain")
    return f"{main} {size_said(payload_size(output))}"


def first_line(source: str) -> str:
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1] + "…"


@tool_handler("outline")
async def outline(
    notebook_name: NotebookName = None,
    start_index: Annotated[int, Field(description="First cell listed (0-based).", ge=0)] = 0,
    limit: Annotated[int, Field(description="Cells listed, 1-200.", ge=1, le=200)] = 20,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.Outline]:
    """Start here: a notebook's headings as a tree and one line per cell (type, id, first line, outputs and sizes), paged."""
    path = notebook_path(ctx, notebook_name)
    server = state_of(ctx)
    view = await server.store.read(path)
    cells = view.notebook.cells
    states = states_of(server.kernels, path, view.notebook)
    if start_index > len(cells):
        raise ToolFailure(INVALID_ARGUMENT, f"start_index {start_index} is past the end: the notebook has {len(cells)} cells.")
    every = headings_of(cells)
    shown = folded(every)
    stop = min(len(cells), start_index + limit)
    rows = []
    for index in range(start_index, stop):
        cell = cells[index]
        rows.append(
            models.OutlineCell(
                index=index,
                cell_id=str(cell.get("id", "")),
                cell_type=str(cell.get("cell_type")),
                first_line=first_line(str(cell.get("source", ""))),
                outputs=[output_summary(output) for output in cell.get("outputs") or []],
                execution_state=states.state_of(index),
            )
        )
    counts: dict[str, int] = {}
    for cell in cells:
        counts[cell.get("cell_type")] = counts.get(cell.get("cell_type"), 0) + 1
    said = ", ".join(f"{count} {kind}" for kind, count in counts.items())
    lines = [f"'{path}': {len(cells)} cells ({said}), revision {view.revision}"]
    if shown:
        lines.append("Headings (cell index):")
        lines.extend(f"{'  ' * (h.level - 1)}{'#' * h.level} {h.text} [{h.cell_index}]" for h in shown)
    if len(shown) < len(every):
        lines.append(f"({len(every) - len(shown)} deeper or later headings folded)")
    kind_letter = {"code": "c", "markdown": "m", "raw": "r"}
    lines.append(f"Cells {start_index}-{stop - 1} (c code, m markdown, r raw):" if rows else "No cells in this page.")
    for row in rows:
        outputs = f" → {', '.join(row.outputs)}" if row.outputs else ""
        state = f" [{row.execution_state}]" if row.execution_state and row.execution_state != FRESH else ""
        lines.append(f"{row.index} {kind_letter.get(row.cell_type, row.cell_type)} {row.cell_id} {row.first_line}{outputs}{state}")
    following = stop if stop < len(cells) else None
    if following is not None:
        lines.append(f"… {len(cells) - stop} more cells: start_index={stop}.")
    result = models.Outline(
        cell_count=len(cells),
        headings=shown,
        headings_folded=len(every) - len(shown),
        cells=rows,
        next_start_index=following,
        revision=view.revision,
    )
    return answer(result.model_dump(), "\n".join(lines))
