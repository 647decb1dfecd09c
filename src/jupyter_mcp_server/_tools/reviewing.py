"""The person's answer to a reviewed change: the one tool only the review app calls.

A dry run of ``apply_edits`` or ``restore_notebook`` by a client that shows apps
keeps its proposal (:mod:`jupyter_mcp_server._apps.reviews`) and shows it in the review app. The
person's Accept or Reject there calls ``review_change`` through the host bridge;
its ``_meta.ui.visibility`` is ``["app"]``, so a host keeps it out of the model's
tools, and the protocol feature (:mod:`jupyter_mcp_server._protocol.apps`) lists it
to, and lets it be called by, clients that negotiated apps only.

An accept applies exactly the proposal shown, against the revision it was made
from: a notebook changed since is refused with ``revision_conflict`` and nothing is
written. The click is the person's approval of what they saw, so the deletions or
the restore it applies are not asked about again.
"""

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from jupyter_mcp_server._apps import reviews
from jupyter_mcp_server._calls.approvals import DELETE_CELLS, RESTORE_REVISION, approved_already
from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._errors import NOT_FOUND, REVISION_CONFLICT, ToolFailure
from jupyter_mcp_server._state import state_of
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._tools import editing, history


class ReviewDecided(BaseModel):
    accepted: bool
    notebook: str
    from_revision: str
    revision: str = Field(description="The notebook's revision now.")


@tool_handler("review_change")
async def review_change(
    review_id: Annotated[str, Field(description="The review's id, as the app was given it.")],
    accept: Annotated[bool, Field(description="True applies the change shown; false drops it.")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, ReviewDecided]:
    """The person's answer to a change shown in the review app (app-only)."""
    proposal = state_of(ctx).reviews.taken(review_id, caller_of(ctx).owner)
    if proposal is None:
        raise ToolFailure(
            NOT_FOUND,
            "This review is no longer open (answered already, or forgotten): nothing was written. "
            "Ask for a new preview (a dry run).",
        )
    if not accept:
        decided = ReviewDecided(
            accepted=False,
            notebook=proposal.path,
            from_revision=proposal.from_revision,
            revision=proposal.from_revision,
        )
        return answer(
            decided.model_dump(),
            f"Rejected: nothing was written to {proposal.path} (revision {proposal.from_revision}).",
        )
    # The person approved what they saw: its deletions or its restore are not asked again.
    approved_already(DELETE_CELLS, RESTORE_REVISION)
    try:
        if proposal.tool == reviews.EDITS:
            plan, view, previous = await editing.apply_operations(
                ctx, proposal.path, list(proposal.operations), proposal.from_revision
            )
            applied = editing.edited_answer(plan, view, previous, False, view.revision)
            revision = view.revision
        else:
            server, view, notebook_history = await history.opened(ctx, proposal.path)
            if view is None:
                raise ToolFailure(
                    REVISION_CONFLICT,
                    f"{proposal.path} is missing since the review was shown.",
                    path=proposal.path,
                )
            applied = await history.restored(
                server,
                view,
                notebook_history,
                proposal.restored_revision or "",
                proposal.from_revision,
            )
            revision = str((applied.structured_content or {})["revision"])
    except ToolFailure as failure:
        if failure.code != REVISION_CONFLICT:
            raise
        now = failure.details.get("current_revision", "another")
        raise ToolFailure(
            REVISION_CONFLICT,
            f"{proposal.path} changed since the review was shown (revision {proposal.from_revision}, "
            f"now {now}): nothing was written. Ask for a new preview of the change.",
            path=proposal.path,
            expected_revision=proposal.from_revision,
            current_revision=now,
        ) from None
    said = applied.content[0].text if applied.content else ""  # type: ignore[union-attr]
    decided = ReviewDecided(
        accepted=True,
        notebook=proposal.path,
        from_revision=proposal.from_revision,
        revision=revision,
    )
    return answer(decided.model_dump(), f"Accepted: {said}")
