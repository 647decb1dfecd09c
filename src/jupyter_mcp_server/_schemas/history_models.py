"""The output schemas of the history toolset: batches of edits, history, diffs, restores."""

from typing import Any

from pydantic import Field

from jupyter_mcp_server._schemas.models import Result, Revisioned, Written


class AddedOrRemovedCell(Result):
    cell_id: str
    index: int
    cell_type: str
    source: str


class MovedCell(Result):
    cell_id: str
    from_index: int
    to_index: int


class ChangedCell(Result):
    cell_id: str
    index: int = Field(description="Its index afterwards.")
    source_diff: str | None = Field(default=None, description="A unified diff of its source.")
    outputs: str | None = Field(
        default=None, description="Its outputs before -> after, summarised."
    )
    cell_type: str | None = None
    execution_count: str | None = None
    metadata: list[str] | None = Field(default=None, description="The metadata keys that changed.")
    attachments: str | None = None


class NotebookDiff(Result):
    """Cell by cell, by id."""

    added: list[AddedOrRemovedCell]
    removed: list[AddedOrRemovedCell]
    moved: list[MovedCell]
    changed: list[ChangedCell]
    metadata: dict[str, Any] | None = Field(
        default=None, description="Notebook metadata keys changed: before and after."
    )


class EditStep(Result):
    op: str
    cell_id: str | None = None
    cell_index: int | None = Field(
        default=None, description="The cell's index right after this operation."
    )


class HistoryNote(Result):
    """Whether the change was kept in the notebook's history; left out when it was."""

    history: str | None = Field(
        default=None,
        description="Set when the change could not be kept in the notebook's history (history is off), saying why.",
    )


class EditsApplied(HistoryNote, Written):
    previous_revision: str = Field(description="The revision the batch was applied to.")
    dry_run: bool = Field(description="True: nothing was written; revision is what it would be.")
    operations: list[EditStep]
    diff: NotebookDiff


class HistoryEntry(Result):
    revision: str = Field(description="The revision after the change.")
    previous_revision: str | None = Field(
        description="The revision before it (null: the first one seen)."
    )
    time: str
    tool: str | None = Field(
        description="The tool that made the change; null for a change made outside the server."
    )
    user: str | None = None
    client: str | None = None
    connection: str | None = None
    checkpoints: list[str] = Field(default_factory=list)
    restored_from: str | None = None


class NotebookHistory(Result):
    path: str
    revision: str | None = Field(
        description="The notebook's current revision; null when it is missing (deleted or renamed)."
    )
    entries: list[HistoryEntry] = Field(description="Newest first.")
    total: int = Field(description="Entries kept.")
    dropped: int = Field(description="Older entries dropped to keep the history within its bounds.")
    checkpoints: dict[str, str] = Field(description="Checkpoint name -> revision.")
    history: str | None = Field(default=None, description="Set when history is off, saying why.")


class NotebookDiffed(Result):
    path: str
    from_revision: str
    to_revision: str
    diff: NotebookDiff


class NotebookRestored(HistoryNote, Written):
    restored_revision: str = Field(
        description="The revision whose content was written (as a new revision)."
    )
    diff: NotebookDiff


class Checkpointed(HistoryNote, Revisioned):
    name: str
    jupyter_checkpoint: str | None = Field(
        default=None,
        description="The Jupyter Server checkpoint id, where notebooks are kept there.",
    )
