"""The tools that insert, edit, move, delete and read cells.

Every edit goes through the store's ``mutate``: one atomic replace of the
file, refused with ``revision_conflict`` when ``expected_revision`` is stale.
Each change checks its arguments before touching the notebook, so a refused
edit leaves the document exactly as it was.
"""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.approvals import DELETE_CELLS, approve, asks_for
from jupyter_mcp_server._errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.widgets import widget_models
from jupyter_mcp_server._rendering.content import (
    InlineLimits,
    bounded_outputs,
    cell_heading,
    first_line,
    output_blocks,
    upgrade_by_edit,
)
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._store import NotebookView, new_cell
from jupyter_mcp_server._store.diffs import unified_diff
from jupyter_mcp_server._tool_calls.addressing import cell_position, insertion_index, notebook_path
from jupyter_mcp_server._tool_calls.arguments import ExpectedRevision, MaxOutputChars, NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._tool_calls.working import EDITED, worked_on
from jupyter_mcp_server._workspace.notebook_uris import output_uri

CellIndex = Annotated[int | None, Field(description="0-based index; or give cell_id.")]
CellId = Annotated[str | None, Field(description="Stable id; or give cell_index.")]


@tool_handler("insert_cell")
async def insert_cell(
    cell_index: Annotated[int, Field(description="Where the new cell goes (0-based); -1 appends.")],
    cell_type: Annotated[
        Literal["code", "markdown", "raw"], Field(description="The new cell's type.")
    ],
    cell_source: Annotated[str, Field(description="The new cell's source.")],
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellPlaced]:
    """Insert a new code, markdown or raw cell without running it. Returns its stable cell_id."""
    path = notebook_path(ctx, notebook_name)

    def change(notebook: Any) -> tuple[str, int]:
        index = insertion_index(notebook.cells, cell_index)
        cell = new_cell(cell_type, cell_source)
        notebook.cells.insert(index, cell)
        return cell["id"], index

    (cell_id, index), view = await state_of(ctx).store.mutate(path, change, expected_revision)
    worked_on(ctx, path, cell_id, EDITED)
    upgraded, said = upgrade_by_edit(view)
    result = models.CellPlaced(
        cell_id=cell_id, cell_index=index, revision=view.revision, format_upgraded=upgraded
    )
    return answer(
        result.model_dump(),
        f"Inserted {cell_type} cell {cell_id} at index {index}; revision {view.revision}.{said}",
    )


async def edit_source(
    server: ServerState,
    path: str,
    cell_index: int | None,
    cell_id: str | None,
    expected_revision: str | None,
    rewrite: Any,
) -> tuple[str, str, NotebookView]:
    """Replace one cell's source with `rewrite(old)`; answers (cell_id, diff, the notebook after)."""

    def change(notebook: Any) -> tuple[str, str]:
        cell = notebook.cells[cell_position(notebook, cell_index, cell_id)]
        before = cell.get("source", "")
        after = rewrite(before)
        cell["source"] = after
        return cell["id"], unified_diff(before, after)

    (found_id, diff), view = await server.store.mutate(path, change, expected_revision)
    return found_id, diff, view


@tool_handler("overwrite_cell_source")
async def overwrite_cell_source(
    cell_source: Annotated[str, Field(description="The cell's whole new source.")],
    cell_index: CellIndex = None,
    cell_id: CellId = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellEdited]:
    """Replace a cell's whole source (outputs are kept); returns the diff. For a small change prefer edit_cell_source."""
    path = notebook_path(ctx, notebook_name)
    found_id, diff, view = await edit_source(
        state_of(ctx), path, cell_index, cell_id, expected_revision, lambda _: cell_source
    )
    worked_on(ctx, path, found_id, EDITED)
    upgraded, said = upgrade_by_edit(view)
    result = models.CellEdited(
        cell_id=found_id, diff=diff, revision=view.revision, format_upgraded=upgraded
    )
    return answer(
        result.model_dump(),
        f"Cell {found_id} rewritten; revision {view.revision}.{said}\n{diff or '(no change)'}",
    )


@tool_handler("edit_cell_source")
async def edit_cell_source(
    old_string: Annotated[str, Field(description="Exact text to find in the cell's source.")],
    new_string: Annotated[str, Field(description="Text to put in its place.")],
    cell_index: CellIndex = None,
    cell_id: CellId = None,
    replace_all: Annotated[
        bool,
        Field(
            description="Replace every occurrence; otherwise old_string must occur exactly once."
        ),
    ] = False,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellEdited]:
    """Replace an exact piece of a cell's source (find-and-replace). Fails if old_string is missing, or occurs more than once without replace_all."""
    if old_string == "":
        raise ToolFailure(INVALID_ARGUMENT, "old_string is empty: give the exact text to replace.")
    path = notebook_path(ctx, notebook_name)

    def rewrite(source: str) -> str:
        count = source.count(old_string)
        if count == 0:
            raise ToolFailure(
                NOT_FOUND,
                "old_string does not occur in the cell's source. Read the cell with read_cell and copy the text exactly.",
            )
        if count > 1 and not replace_all:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"old_string occurs {count} times; include more surrounding text to make it unique, or pass replace_all=true.",
                occurrences=count,
            )
        return source.replace(old_string, new_string)

    found_id, diff, view = await edit_source(
        state_of(ctx), path, cell_index, cell_id, expected_revision, rewrite
    )
    worked_on(ctx, path, found_id, EDITED)
    upgraded, said = upgrade_by_edit(view)
    result = models.CellEdited(
        cell_id=found_id, diff=diff, revision=view.revision, format_upgraded=upgraded
    )
    return answer(
        result.model_dump(), f"Cell {found_id} edited; revision {view.revision}.{said}\n{diff}"
    )


@tool_handler("move_cell")
async def move_cell(
    source_index: Annotated[
        int | None, Field(description="Index of the cell to move; or give source_cell_id.")
    ] = None,
    source_cell_id: Annotated[
        str | None, Field(description="Id of the cell to move; or give source_index.")
    ] = None,
    target_index: Annotated[
        int | None, Field(description="Its index after the move; or give target_cell_id.")
    ] = None,
    target_cell_id: Annotated[
        str | None, Field(description="Move it where this cell is now; or give target_index.")
    ] = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellPlaced]:
    """Move a cell. target_index is the index the moved cell has after the move; its id does not change."""
    path = notebook_path(ctx, notebook_name)

    def change(notebook: Any) -> tuple[str, int]:
        origin = cell_position(notebook, source_index, source_cell_id, what="cell to move")
        target = cell_position(notebook, target_index, target_cell_id, what="target position")
        cell = notebook.cells.pop(origin)
        notebook.cells.insert(target, cell)
        return cell["id"], target

    (cell_id, index), view = await state_of(ctx).store.mutate(path, change, expected_revision)
    worked_on(ctx, path, cell_id, EDITED)
    upgraded, said = upgrade_by_edit(view)
    result = models.CellPlaced(
        cell_id=cell_id, cell_index=index, revision=view.revision, format_upgraded=upgraded
    )
    return answer(
        result.model_dump(),
        f"Moved cell {cell_id} to index {index}; revision {view.revision}.{said}",
    )


@tool_handler("delete_cell")
async def delete_cell(
    cell_indices: Annotated[
        list[int] | None,
        Field(description="Indices of the cells to delete; or give cell_ids_to_delete."),
    ] = None,
    cell_ids_to_delete: Annotated[
        list[str] | None, Field(description="Ids of the cells to delete; or give cell_indices.")
    ] = None,
    include_source: Annotated[
        bool, Field(description="Return each deleted cell's source, so the deletion can be undone.")
    ] = True,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellsDeleted]:
    """Delete one or more cells, all at once, by indices or by ids."""
    if (cell_indices is None) == (cell_ids_to_delete is None) or not (
        cell_indices or cell_ids_to_delete
    ):
        raise ToolFailure(
            INVALID_ARGUMENT,
            "Name the cells to delete with exactly one of cell_indices or cell_ids_to_delete (non-empty).",
        )
    path = notebook_path(ctx, notebook_name)

    def positions_in(notebook: Any) -> list[int]:
        if cell_indices is not None:
            positions = [cell_position(notebook, index, None) for index in cell_indices]
        else:
            positions = [
                cell_position(notebook, None, cell_id) for cell_id in cell_ids_to_delete or []
            ]
        if len(set(positions)) != len(positions):
            raise ToolFailure(
                INVALID_ARGUMENT, "The same cell is named twice; name each cell once."
            )
        return positions

    if asks_for(state_of(ctx), DELETE_CELLS):
        view = await state_of(ctx).store.read(path)
        if expected_revision is None:
            # What is deleted is exactly what the person approved, or nothing.
            expected_revision = view.revision
        cells = [view.notebook.cells[p] for p in positions_in(view.notebook)]
        named = ", ".join(f"{c['id']} ({first_line(c.get('source', ''))!r})" for c in cells[:20])
        more = f" and {len(cells) - 20} more" if len(cells) > 20 else ""
        await approve(ctx, DELETE_CELLS, f"Delete {len(cells)} cell(s) of '{path}': {named}{more}.")

    def change(notebook: Any) -> list[models.DeletedCell]:
        positions = positions_in(notebook)
        deleted = [
            models.DeletedCell(
                cell_id=notebook.cells[p]["id"],
                source=notebook.cells[p].get("source", "") if include_source else None,
            )
            for p in positions
        ]
        for position in sorted(positions, reverse=True):
            del notebook.cells[position]
        return deleted

    deleted, view = await state_of(ctx).store.mutate(path, change, expected_revision)
    upgraded, said = upgrade_by_edit(view)
    result = models.CellsDeleted(deleted=deleted, revision=view.revision, format_upgraded=upgraded)
    return answer(
        result.model_dump(),
        f"Deleted {len(deleted)} cell(s): {', '.join(d.cell_id for d in deleted)}; revision {view.revision}.{said}",
    )


@tool_handler("clear_cell_output")
async def clear_cell_output(
    cell_index: CellIndex = None,
    cell_id: CellId = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellCleared]:
    """Remove a code cell's outputs and execution count. The source is kept."""
    path = notebook_path(ctx, notebook_name)

    def change(notebook: Any) -> str:
        cell = notebook.cells[cell_position(notebook, cell_index, cell_id)]
        if cell.get("cell_type") != "code":
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"Cell {cell['id']} is a {cell['cell_type']} cell; only code cells have outputs.",
            )
        cell["outputs"] = []
        cell["execution_count"] = None
        return cell["id"]

    server = state_of(ctx)
    found_id, view = await server.store.mutate(path, change, expected_revision)
    worked_on(ctx, path, found_id, EDITED)
    runs = server.kernels.records.peek(path)
    if runs is not None:
        runs.forget_cell(found_id)  # its display ids are shown nowhere now
    upgraded, said = upgrade_by_edit(view)
    result = models.CellCleared(cell_id=found_id, revision=view.revision, format_upgraded=upgraded)
    return answer(
        result.model_dump(),
        f"Cleared the outputs of cell {found_id}; revision {view.revision}.{said}",
    )


@tool_handler("read_cell")
async def read_cell(
    cell_index: CellIndex = None,
    cell_id: CellId = None,
    include_outputs: Annotated[
        bool, Field(description="Include its outputs (images as image content).")
    ] = True,
    notebook_name: NotebookName = None,
    max_output_chars: MaxOutputChars = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.CellRead]:
    """Read one cell: its id, index, type, full source, execution count, outputs and metadata (tags among it)."""
    limits = InlineLimits.of(state_of(ctx).config, max_output_chars)
    path = notebook_path(ctx, notebook_name)
    view = await state_of(ctx).store.read(path)
    index = cell_position(view.notebook, cell_index, cell_id)
    cell = view.notebook.cells[index]
    outputs = (
        list(cell.get("outputs", []))
        if include_outputs and cell.get("cell_type") == "code"
        else None
    )

    def link(output_index: int) -> str:
        return output_uri(path, cell["id"], output_index)

    # A huge stored output is cut in content and in structuredContent alike, each
    # cut naming the resource that holds the output whole.
    shown, cut = bounded_outputs(outputs, link, limits) if outputs else (outputs, [])
    result = models.CellRead(
        cell_id=cell["id"],
        cell_index=index,
        cell_type=cell["cell_type"],
        source=cell.get("source", ""),
        execution_count=cell.get("execution_count"),
        outputs=shown,
        outputs_cut=[models.OutputCut(**each) for each in cut] or None,
        revision=view.revision,
        metadata=dict(cell.get("metadata", {})),
    )
    tags = cell.get("metadata", {}).get("tags")
    return answer(
        result.model_dump(),
        f"{cell_heading(index, cell)}{f' tags: {tags}' if tags else ''}\n{result.source}",
        output_blocks(outputs or [], link, limits, widget_models(view.notebook.get("metadata"))),
    )
