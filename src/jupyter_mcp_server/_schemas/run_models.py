"""The output schemas of the runs toolset: whole-notebook runs, their state, and verification."""

from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from jupyter_mcp_server._schemas.models import Result, Revisioned, Written, run_id_field

RunCellStatus = Literal[
    "ok", "error", "timeout", "interrupted", "kernel_gone", "kernel_unresponsive"
]


class RunCell(Result):
    """One cell of a whole-notebook run, as it ended."""

    index: int
    cell_id: str
    status: RunCellStatus
    execution_count: int | None
    output: str = Field(
        description="Its outputs as text, cut to its share of the inline budget (images named, not inlined)."
    )
    error: str | None = Field(description="'Name: message' of the exception it raised, if any.")
    stored: bool = Field(
        description="Whether its outputs are in the notebook (not when it was edited or deleted meanwhile; "
        "a percent script's are kept in memory only)."
    )
    expected_error: bool = Field(
        default=False,
        description="It raised, as its raises-exception tag says it should; the run went on.",
    )


class CellRef(Result):
    index: int
    cell_id: str


class NotebookRun(Written):
    """A whole-notebook run (run_cells): each cell that ran, and where and why it stopped."""

    status: Literal[
        "ok",
        "error",
        "timeout",
        "interrupted",
        "kernel_gone",
        "kernel_unresponsive",
        "cancelled",
        "running",
    ]
    kernel_id: str | None
    read_revision: str = Field(
        description="The revision the run read: the cells it ran are that revision's."
    )
    cells_selected: int
    cells_run: int
    cells: list[RunCell]
    stopped_at: CellRef | None = Field(
        description="The cell the run stopped at; null when it reached the end."
    )
    stop_reason: str | None
    not_run: list[str] = Field(
        description="Ids of selected cells that did not run (after the stop)."
    )
    fresh_skipped: int = Field(description='cells="stale": fresh cells passed over.')
    tag_skipped: list[str] = Field(
        default_factory=list,
        description="Ids of cells tagged skip-execution, not run (as nbclient does).",
    )
    run_id: str | SkipJsonSchema[None] = run_id_field()


class OutputsCleared(Written):
    cleared: list[str] = Field(description="Ids of the code cells whose outputs were cleared.")


class RunState(Result):
    """A detached run (detach=true): where it is, what it printed since, and its result once it ends."""

    run_id: str
    tool: str
    status: Literal["queued", "working", "input_required", "completed", "failed", "cancelled"]
    queue_position: int | None = Field(
        description="Runs ahead of it on its notebook's kernel (0: running); null once it ended."
    )
    notebook: str | None
    created_at: str
    updated_at: str
    status_message: str | None
    outputs: list[dict[str, Any]] = Field(
        description="Outputs numbered since_output and later, while it runs (bounded like read_cell's)."
    )
    next_output: int = Field(description="Pass as since_output next time to get only what is new.")
    outputs_missed: int = Field(
        description="Outputs asked for that the run no longer holds (the notebook has them)."
    )
    result: dict[str, Any] | None = Field(
        description="Once it ended: the call's structured result, as the tool answers it."
    )
    result_is_error: bool | None = Field(
        description="Once it ended: whether that result is an error (its code in error)."
    )
    error: dict[str, Any] | None = Field(
        description="code and message: a failed run's error, or an ended call's error code."
    )


class RunWatch(Result):
    """A detached run as the output app follows it (watch_run): its progress; the cells that
    ended since are in the result's app data."""

    run_id: str
    tool: str
    status: Literal["queued", "working", "input_required", "completed", "failed", "cancelled"]
    notebook: str | None
    cells_total: int
    cells_done: int
    running: dict[str, Any] | None = Field(description="The cell running now: index, cell_id.")
    next_cell: int = Field(description="Pass as since_cell next time.")
    ended: bool
    outcome: str | None = Field(description="Once it ended: its result's status (ok, error, ...).")
    said: str | None = Field(description="Once it ended: its result's first line.")


class CellFailure(Result):
    index: int
    cell_id: str
    ename: str
    evalue: str
    traceback: list[str] = Field(
        default_factory=list,
        description="The traceback folded as execution results carry it: the cells' frames whole, library frames folded.",
    )


class OutputDifference(Result):
    index: int
    cell_id: str
    stored: str = Field(
        description="Where the stored outputs part from the new ones: a line of the stored side."
    )
    now: str = Field(description="The same place in this run's outputs.")


class HiddenState(Result):
    index: int
    cell_id: str
    names: list[str] = Field(description="Names it reads before any cell above it defines them.")
    defined_below: list[str] = Field(description="Ids of cells below it that define some of them.")


class Verification(Revisioned):
    """verify_notebook: the notebook run from the top in a throwaway kernel."""

    status: Literal["ok", "differs", "fails", "incomplete"] = Field(
        description="ok; differs (outputs only); fails (a cell failed, or hidden state); incomplete (stopped: timeout, kernel died)."
    )
    kernel_name: str
    cells_run: int
    seconds: float
    failures: list[CellFailure]
    differences: list[OutputDifference]
    missing_modules: list[str]
    hidden_state: list[HiddenState]
    stopped_at: CellRef | None
    stop_reason: str | None
    tag_skipped: list[str] = Field(
        default_factory=list,
        description="Ids of cells tagged skip-execution, not run (as nbclient does).",
    )
    expected_errors: list[str] = Field(
        default_factory=list,
        description="Ids of cells tagged raises-exception that raised: not failures.",
    )
