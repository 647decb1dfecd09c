"""Batches of edits that land as one revision or not at all, and cell metadata on its own.

``apply_edits`` plans the whole batch against the notebook as it is
(:mod:`jupyter_mcp_server._store.edits`), and only a batch whose every
operation succeeds is committed, in one ``mutate`` of the store: one atomic
replace of the file, or one change of the shared document of a notebook open
in JupyterLab, exactly the path every single-cell edit takes.
"""

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from jupyter_mcp_server._apps import reviews
from jupyter_mcp_server._apps.shown import apps_shown, show_review
from jupyter_mcp_server._calls.approvals import DELETE_CELLS, approve, asks_for
from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._rendering.content import first_line, upgrade_by_edit
from jupyter_mcp_server._schemas import history_models as hm
from jupyter_mcp_server._state import state_of
from jupyter_mcp_server._store.diffs import diff_text
from jupyter_mcp_server._store.edits import MAX_OPERATIONS, EditPlan, check_batch, plan_edits
from jupyter_mcp_server._store.store import revision_conflict
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import ExpectedRevision, NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._tool_calls.working import EDITED, worked_on

HISTORY_TOOLSET = "history"

_CellId = Annotated[str | None, Field(description="The cell's id. Give this or cell_index.")]
_CellIndex = Annotated[
    int | None,
    Field(
        description="The cell's index as the earlier operations of the batch left it. Give this or cell_id."
    ),
]
_Metadata = Annotated[
    dict[str, Any] | None,
    Field(description="Keys to set (merged in); a null value removes the key."),
]


class _Operation(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Insert(_Operation):
    op: Literal["insert"]
    index: int = Field(default=-1, description="Where the new cell goes; -1 appends.")
    cell_type: Literal["code", "markdown", "raw"] = "code"
    source: str = ""
    cell_id: str | None = Field(
        default=None,
        description="An id for the new cell, so later operations can name it (unique).",
    )
    metadata: _Metadata = None


class Overwrite(_Operation):
    op: Literal["overwrite"]
    cell_id: _CellId = None
    cell_index: _CellIndex = None
    source: str


class Replace(_Operation):
    op: Literal["replace"]
    cell_id: _CellId = None
    cell_index: _CellIndex = None
    old_string: str = Field(
        description="Exact text in the cell's source; must occur once unless replace_all."
    )
    new_string: str
    replace_all: bool = False


class Delete(_Operation):
    op: Literal["delete"]
    cell_id: _CellId = None
    cell_index: _CellIndex = None


class Move(_Operation):
    op: Literal["move"]
    cell_id: _CellId = None
    cell_index: _CellIndex = None
    to_index: int = Field(description="The cell's index after the move.")


class SetCellMetadata(_Operation):
    op: Literal["set_cell_metadata"]
    cell_id: _CellId = None
    cell_index: _CellIndex = None
    metadata: _Metadata = None
    tags: list[str] | None = Field(
        default=None, description="The cell's whole tags list (e.g. ['parameters']); [] removes it."
    )


class SetNotebookMetadata(_Operation):
    op: Literal["set_notebook_metadata"]
    metadata: dict[str, Any] = Field(
        description="Keys to set (merged in); a null value removes the key."
    )


Operation = Annotated[
    Insert | Overwrite | Replace | Delete | Move | SetCellMetadata | SetNotebookMetadata,
    Field(discriminator="op"),
]


def as_dicts(operations: list[Any]) -> list[dict[str, Any]]:
    return [
        op.model_dump(exclude_none=True) if isinstance(op, BaseModel) else dict(op)
        for op in operations
    ]


async def apply_operations(
    ctx: Context | None,
    path: str,
    operations: list[dict[str, Any]],
    expected_revision: str | None,
    dry_run: bool = False,
) -> tuple[EditPlan, Any, str]:
    """Apply a batch to the notebook at `path`: (the plan, the view after, the revision before)."""
    check_batch(operations)
    store = state_of(ctx).store
    if dry_run:
        view = await store.read(path)
        if expected_revision is not None and expected_revision != view.revision:
            raise revision_conflict(view.path, expected_revision, view.revision)
        plan = plan_edits(view.notebook, operations)
        return plan, view, view.revision

    def change(notebook: Any) -> EditPlan:
        plan = plan_edits(notebook, operations)
        plan.commit(notebook)
        return plan

    if any(operation.get("op") == "delete" for operation in operations) and asks_for(
        state_of(ctx), DELETE_CELLS
    ):
        # The person approves the cells this batch deletes, and exactly those are deleted, or none.
        view = await store.read(path)
        if expected_revision is None:
            expected_revision = view.revision
        plan = plan_edits(view.notebook, operations)
        kept = {cell["id"] for cell in plan.cells}
        gone = [cell for cell in view.notebook.cells if cell["id"] not in kept]
        if gone:
            named = ", ".join(f"{c['id']} ({first_line(c.get('source', ''))!r})" for c in gone[:20])
            more = f" and {len(gone) - 20} more" if len(gone) > 20 else ""
            await approve(
                ctx,
                DELETE_CELLS,
                f"Delete {len(gone)} cell(s) of '{path}' in a batch of edits: {named}{more}.",
            )
    plan, view = await store.mutate(path, change, expected_revision)
    return plan, view, view.previous_revision or view.revision


def edited_answer(
    plan: EditPlan, view: Any, previous: str, dry_run: bool, revision: str
) -> CallToolResult:
    diff = plan.diff()
    upgraded, said = upgrade_by_edit(view) if not dry_run else (None, "")
    result = hm.EditsApplied(
        revision=revision,
        previous_revision=previous,
        dry_run=dry_run,
        operations=[hm.EditStep(**step) for step in plan.steps],
        diff=hm.NotebookDiff(**diff),
        history=view.history_off,
        format_upgraded=upgraded,
    )
    if dry_run:
        head = f"Dry run: {len(plan.steps)} operation(s) would make revision {revision} from {previous}; nothing was written."
    elif revision == previous:
        head = f"{len(plan.steps)} operation(s) changed nothing; revision {revision}."
    else:
        head = f"Applied {len(plan.steps)} operation(s) as one revision: {previous} -> {revision}.{said}"
    if result.history:
        head += f" History is off: {result.history}"
    return answer(result.model_dump(), f"{head}\n{diff_text(diff, diff.get('metadata'))}")


@tool_handler("apply_edits")
async def apply_edits(
    operations: Annotated[
        list[Operation],
        Field(
            description=f"Applied in order, as one revision: all succeed or nothing is written (at most {MAX_OPERATIONS}). "
            "Ops: insert, overwrite, replace (find-and-replace in a cell), delete, move, set_cell_metadata, "
            "set_notebook_metadata. Cells are named by cell_id, or cell_index as earlier operations left them."
        ),
    ],
    dry_run: Annotated[
        bool, Field(description="Return the diff and the revision it would make, writing nothing.")
    ] = False,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, hm.EditsApplied]:
    """Apply a list of edits to one notebook as a single revision, all or nothing, and return one cell-level diff. A failing operation is named by its index and reason and the file is left untouched. Prefer this to several single-cell edits."""
    path = notebook_path(ctx, notebook_name)
    ops = as_dicts(operations)
    plan, view, previous = await apply_operations(ctx, path, ops, expected_revision, dry_run)
    if not dry_run:
        # The agent's cell: the last one the batch named that is still there.
        kept = {cell["id"] for cell in plan.cells}
        named = [step["cell_id"] for step in plan.steps if step.get("cell_id") in kept]
        if named:
            worked_on(ctx, path, named[-1], EDITED)
        return edited_answer(plan, view, previous, dry_run, view.revision)
    after = plan.as_notebook(view.notebook)
    revision = state_of(ctx).store.revision_if(view, after)
    if apps_shown() and revision != previous:
        # The person sees this batch in the review app; an accept applies exactly it.
        proposal = state_of(ctx).reviews.propose(
            caller_of(ctx).owner, reviews.EDITS, view.path, previous, revision, operations=ops
        )
        summary = f"{len(plan.steps)} operation(s) of apply_edits: {previous} -> {revision}"
        show_review(reviews.review_of(proposal, view.notebook.cells, after.cells, summary))
    return edited_answer(plan, view, previous, dry_run, revision)


@tool_handler("set_cell_metadata")
async def set_cell_metadata(
    cell_id: _CellId = None,
    cell_index: Annotated[
        int | None, Field(description="The cell's 0-based index. Give this or cell_id.")
    ] = None,
    metadata: _Metadata = None,
    tags: Annotated[
        list[str] | None,
        Field(
            description="The cell's whole tags list (e.g. ['parameters'] for papermill); [] removes it."
        ),
    ] = None,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, hm.EditsApplied]:
    """Set a cell's metadata keys or its tags (such as papermill's 'parameters'), checked against the notebook format, as one revision. read_cell returns a cell's metadata."""
    operation: dict[str, Any] = {
        "op": "set_cell_metadata",
        "cell_id": cell_id,
        "cell_index": cell_index,
    }
    operation.update(
        {key: value for key, value in (("metadata", metadata), ("tags", tags)) if value is not None}
    )
    path = notebook_path(ctx, notebook_name)
    plan, view, previous = await apply_operations(
        ctx, path, [{k: v for k, v in operation.items() if v is not None}], expected_revision
    )
    return edited_answer(plan, view, previous, False, view.revision)
