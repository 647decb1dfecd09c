"""``outline``: a notebook's shape in a few hundred tokens, before reading any of it.

A model that reads a 2,000-cell notebook cell by cell spends its context
before it knows where to look. The outline is the Markdown headings as a
tree (shallow levels first when there are many) and one short line per cell
of a page: type, id, first line, and each output's kind and size, so the
next call can be ``read_cell`` or ``search_notebooks`` aimed at the right place.

Every heading can be reached: a shown heading says how many deeper ones are
folded under it, and ``section`` (that heading's cell index) lists them;
headings past the 30 shown continue at ``start_index``, which starts the
headings as it starts the cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._apps.notebook_pages import notebook_page, page_start
from jupyter_mcp_server._apps.shown import apps_shown, show_notebook
from jupyter_mcp_server._calls.people import focus_line
from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._kernels.outputs import payload_size
from jupyter_mcp_server._kernels.staleness import FRESH, states_of
from jupyter_mcp_server._rendering.headings import MAX_HEADINGS, headings_of
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import state_of
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._tool_calls.working import working_on

FIRST_LINE_CHARS = 60


def folded(headings: list[models.Heading], limit: int = MAX_HEADINGS) -> list[models.Heading]:
    """At most `limit` headings: the deepest levels left out first, then the last ones."""
    return _fold(headings, limit).kept


@dataclass(frozen=True)
class _Folding:
    kept: list[models.Heading]
    #: For each kept heading, how many headings below it are folded.
    under: list[int]
    #: The cell index from which the headings left out of the last layer shown continue.
    continues_at: int | None


def _fold(headings: list[models.Heading], limit: int) -> _Folding:
    """The headings as a tree (a heading's parent: the nearest earlier one of a lower level),
    kept a whole layer at a time from the top while `limit` allows. A layer that does not fit
    is shown in part (its first headings) only when the layers above it are few (a title
    over fifty sections; a section's own heading): the rest then continue at ``continues_at``.
    Every heading left out is either below a kept one (its section lists it) or after
    ``continues_at`` (where the listing goes on)."""
    parents: list[int | None] = []
    depths: list[int] = []
    stack: list[int] = []
    for position, heading in enumerate(headings):
        while stack and headings[stack[-1]].level >= heading.level:
            stack.pop()
        parents.append(stack[-1] if stack else None)
        depths.append(len(stack))
        stack.append(position)
    kept: set[int] = set()
    continues_at = None
    for depth in range(max(depths, default=-1) + 1):
        layer = [position for position, d in enumerate(depths) if d == depth]
        room = limit - len(kept)
        if len(layer) > room:
            if len(kept) < limit // 3:
                kept.update(layer[:room])
                continues_at = headings[layer[room]].cell_index
            break
        kept.update(layer)
    under = dict.fromkeys(kept, 0)
    for position in range(len(headings)):
        if position in kept:
            continue
        parent = parents[position]
        while parent is not None and parent not in kept:
            parent = parents[parent]
        if parent is not None:
            under[parent] += 1
    order = sorted(kept)
    return _Folding([headings[p] for p in order], [under[p] for p in order], continues_at)


def section_of(headings: list[models.Heading], cell_count: int, at: int) -> tuple[int, int]:
    """The cells of the section whose heading is in cell `at`: from there to the next heading
    of the same or a higher level; ``invalid_argument`` when that cell holds no heading."""
    first = next(
        (position for position, heading in enumerate(headings) if heading.cell_index == at), None
    )
    if first is None:
        near = ", ".join(f"[{h.cell_index}]" for h in headings if abs(h.cell_index - at) <= 50)[
            :200
        ]
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"cell {at} holds no heading: pass section as a heading's cell index, as outline lists it"
            + (f" (near it: {near})." if near else "."),
        )
    level = headings[first].level
    stop = next(
        (h.cell_index for h in headings[first + 1 :] if h.level <= level and h.cell_index > at),
        cell_count,
    )
    return at, stop


def size_said(size: int) -> str:
    return (
        f"{size}B"
        if size < 1024
        else f"{size / 1024:.1f}K"
        if size < 1024 * 1024
        else f"{size / 1048576:.1f}M"
    )


def output_summary(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "error":
        return f"error {output.get('ename', '')}".strip()
    if kind == "stream":
        return f"{output.get('name', 'stream')} {size_said(payload_size(output))}"
    data = output.get("data") or {}
    main = next(
        (
            mime
            for mime in (
                "image/png",
                "image/jpeg",
                "text/html",
                "text/markdown",
                "application/json",
            )
            if mime in data
        ),
        "text/plain",
    )
    return f"{main} {size_said(payload_size(output))}"


def first_line(source: str) -> str:
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1] + "…"


@tool_handler("outline")
async def outline(
    notebook_name: NotebookName = None,
    start_index: Annotated[
        int, Field(description="First cell (and heading) listed, 0-based.", ge=0)
    ] = 0,
    limit: Annotated[int, Field(description="Cells listed, 1-200.", ge=1, le=200)] = 20,
    section: Annotated[
        int | None,
        Field(
            description="A heading's cell index: list that section's subheadings and cells.", ge=0
        ),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.Outline]:
    """Start here: a notebook's headings as a tree and one line per cell (type, id, first line, outputs and sizes), paged. Then search_notebooks, read_cell or read_notebook(start_index) for only what is needed."""
    path = notebook_path(ctx, notebook_name)
    server = state_of(ctx)
    view = await server.store.read(path)
    cells = view.notebook.cells
    states = states_of(server.kernels, path, view.notebook)
    if start_index > len(cells):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"start_index {start_index} is past the end: the notebook has {len(cells)} cells.",
        )
    every = headings_of(cells)
    begin, end = 0, len(cells)
    if section is not None:
        begin, end = section_of(every, len(cells), section)
        start_index = max(start_index, begin)
    within = [h for h in every if start_index <= h.cell_index < end]
    folding = _fold(within, MAX_HEADINGS)
    shown = folding.kept
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
    people = focus_line(server.people(), path)
    if people is not None:
        lines.append(people)
    if shown:
        where = (
            f" of the section at cell {begin} (cells {begin}-{end - 1})"
            if section is not None
            else ""
        )
        lines.append(f"Headings{where} (cell index; +N: folded below it):")
        lines.extend(
            f"{'  ' * (h.level - 1)}{'#' * h.level} {h.text} [{h.cell_index}]"
            + (f" +{n}" if n else "")
            for h, n in zip(shown, folding.under, strict=True)
        )
    if any(folding.under):
        lines.append(
            f"({sum(folding.under)} folded: section=<a heading's cell index> lists its subheadings.)"
        )
    if folding.continues_at is not None:
        again = f"section={section}, " if section is not None else ""
        lines.append(
            f"(More headings from cell {folding.continues_at}: {again}start_index={folding.continues_at}.)"
        )
    kind_letter = {"code": "c", "markdown": "m", "raw": "r"}
    lines.append(
        f"Cells {start_index}-{stop - 1} (c code, m markdown, r raw):"
        if rows
        else "No cells in this page."
    )
    for row in rows:
        outputs = f" → {', '.join(row.outputs)}" if row.outputs else ""
        state = (
            f" [{row.execution_state}]"
            if row.execution_state and row.execution_state != FRESH
            else ""
        )
        lines.append(
            f"{row.index} {kind_letter.get(row.cell_type, row.cell_type)} {row.cell_id} {row.first_line}{outputs}{state}"
        )
    following = stop if stop < len(cells) else None
    if following is not None:
        lines.append(f"… {len(cells) - stop} more cells: start_index={stop}.")
    result = models.Outline(
        notebook=path,
        cell_count=len(cells),
        cell_types=counts,
        headings=[
            models.OutlineHeading(**heading.model_dump(), folded_below=under)
            for heading, under in zip(shown, folding.under, strict=True)
        ],
        headings_folded=len(within) - len(shown),
        cells=rows,
        next_start_index=following,
        more_headings_from=folding.continues_at,
        people=people,
        revision=view.revision,
    )
    if apps_shown():
        # The person's view of the notebook opens where this outline starts.
        show_notebook(notebook_page(server, view, page_start(start_index), working_on(ctx, path)))
    return answer(said_once(result), "\n".join(lines))


def said_once(result: models.Outline) -> dict[str, Any]:
    """The outline's fields without those that say nothing here (no heading folded, no more
    headings, nobody else in it): its structured part holds all its text says, so it is handed
    without a ``rendered`` copy, and a client reading JSON reads each thing once."""
    structured = result.model_dump()
    for heading in structured["headings"]:
        if not heading["folded_below"]:
            del heading["folded_below"]
    for field in ("more_headings_from", "people"):
        if structured[field] is None:
            del structured[field]
    return structured
