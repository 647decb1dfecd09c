"""The output schemas of the notebooks tools.

Each model is what a tool publishes as its ``outputSchema`` and what its
``structuredContent`` is checked against. Field names are the public output schema's (README.md, docs/protocol.md).
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import SkipJsonSchema


def plain_schema(schema: dict[str, Any]) -> None:
    """Drop the titles pydantic makes of class and field names.

    Every client compiles each output schema once (the official one checks it
    against the JSON Schema meta-schema first) and hosts may show it to the
    model: a title per field costs both and says nothing the field name does
    not. Nullable fields keep pydantic's ``anyOf: [x, null]``: a ``type``
    array is shorter but does not map onto single-type dialects (the OpenAPI
    subset of some model providers), which the inspector's strict mode flags.
    """
    schema.pop("title", None)
    # A model's docstring is written for this code's readers, not for a client.
    schema.pop("description", None)
    for field in schema.get("properties", {}).values():
        field.pop("title", None)


class Result(BaseModel):
    """A tool's structured result; its JSON schema is the plain one (:func:`plain_schema`)."""

    model_config = ConfigDict(json_schema_extra=plain_schema)


class Revisioned(Result):
    revision: str


def _without_a_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class FormatUpgradeField(Result):
    """Says when a notebook's older nbformat was, or will be, saved as 4.5, and when a
    change could not be kept in the notebook's history.

    Each field is left out when there is nothing to say, so the results for
    notebooks already in 4.5 stay as they were and the schema need not allow null.
    """

    format_upgraded: dict[str, str] | SkipJsonSchema[None] = Field(
        default=None,
        description="Set when the file is not in nbformat 4.5: from its version, to the one this call saved "
        "(a read: the next edit will save): 4.5 for an older file, its own for a newer one.",
        json_schema_extra=_without_a_default,
    )
    #: Set by the tool runner (``results.history_off_said``), for every tool alike.
    history_off: str | SkipJsonSchema[None] = Field(
        default=None,
        description="Set when this call's change could not be kept in the notebook's history (history is off), "
        "saying why: restore_notebook cannot undo it.",
        json_schema_extra=_without_a_default,
    )

    @model_serializer(mode="wrap")
    def _without_an_absent_upgrade(
        self, serialize: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        data: dict[str, Any] = serialize(self)
        if data.get("history_off", "") is None:
            data.pop("history_off")
        upgraded = data.pop("format_upgraded", None)
        if "run_id" in data and data["run_id"] is None:
            data.pop("run_id")  # only a detached call's answer has one (RunIdField)
        if upgraded is not None:
            data["format_upgraded"] = upgraded  # last: after what the call is about
        return data


def _run_id_field() -> Any:
    return Field(
        default=None,
        description="detach=true: the run going on (get_run follows it).",
        json_schema_extra=_without_a_default,
    )


class Written(FormatUpgradeField, Revisioned):
    """A notebook after a call that may have written it, or a read before its first write."""


class FileEntry(Result):
    path: str
    type: Literal["file", "directory", "notebook"]
    size: int
    last_modified: str


class FileList(Result):
    files: list[FileEntry]
    total: int = Field(description="How many entries matched, before paging.")


class KernelEntry(Result):
    kernel_id: str
    kernel_name: str
    state: str
    notebooks: list[str]


class EnvironmentEntry(Result):
    name: str = Field(description="What to pass as kernel_name (or environment).")
    kind: Literal["kernelspec", "virtualenv", "conda", "python"]
    language: str
    display_name: str
    found_in: list[str] = Field(
        description="jupyter (an installed kernelspec), workspace, VIRTUAL_ENV, CONDA_PREFIX, --python."
    )
    interpreter: str | None
    prefix: str | None
    python_version: str | None
    has_ipykernel: bool | None = Field(
        description="Whether ipykernel is installed there (None: not an ipykernel kernel)."
    )
    ready: bool = Field(description="Whether a kernel can start on it now.")
    problem: str | None
    server_environment: bool = Field(description="The server's own Python.")


class KernelChoiceModel(Result):
    kernel_name: str
    reason: str


class KernelList(Result):
    kernels: list[KernelEntry]
    kernelspecs: list[str] = Field(
        description="Every name kernel_name accepts: installed kernelspecs, then environments."
    )
    environments: list[EnvironmentEntry] = Field(
        description="Where a local kernel can run, with its interpreter and whether ipykernel is there."
    )
    default_kernel: KernelChoiceModel = Field(description="What a new notebook runs on, and why.")


class NotebookUsed(Written):
    notebook_name: str
    notebook_path: str
    cell_count: int
    kernel_id: str | None
    kernel_name: str = Field(description="The kernelspec or environment the kernel runs.")
    kernel_reason: str = Field(
        description="Why this kernel: the notebook's metadata, the workspace's environment, …"
    )


class NotebookEntry(Result):
    notebook_name: str
    notebook_path: str
    current: bool
    kernel_id: str | None


class NotebookList(Result):
    notebooks: list[NotebookEntry]


class JupyterConnected(Result):
    jupyter_url: str = Field(description="The Jupyter Server later kernels start on.")
    version: str = Field(description="Its Jupyter Server version.")
    kernelspecs: list[str] = Field(description="The kernelspecs it can start.")


class KernelOnly(Result):
    kernel_id: str


class KernelRestarted(Revisioned):
    kernel_id: str


class Released(Result):
    notebook_name: str
    notebook_path: str
    kernel_id: str | None


class OutputCut(Result):
    """What a result left out of one stored output, and where it is whole."""

    output: int = Field(description="The output's 0-based index in its cell.")
    mime_type: str = Field(
        description="The representation cut: text/plain for a stream or a traceback."
    )
    uri: str = Field(description="The notebook-output: resource holding the output whole.")
    omitted_chars: int | SkipJsonSchema[None] = Field(
        default=None,
        description="Characters of text left out between its head and tail.",
        json_schema_extra=_without_a_default,
    )
    omitted_bytes: int | SkipJsonSchema[None] = Field(
        default=None,
        description="Bytes of a binary payload left out whole.",
        json_schema_extra=_without_a_default,
    )

    @model_serializer(mode="wrap")
    def _only_what_was_cut(self, serialize: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = serialize(self)
        return {key: value for key, value in data.items() if value is not None}


class OutputsCutField(Result):
    """Says which of a cell's stored outputs a result cut; left out when none was."""

    outputs_cut: list[OutputCut] | SkipJsonSchema[None] = Field(
        default=None,
        description="Outputs too large for a result, cut in outputs (long text keeps its head and tail, a large "
        "binary payload is replaced by a marker): each with its resource, to read it whole.",
        json_schema_extra=_without_a_default,
    )

    @model_serializer(mode="wrap")
    def _without_an_absent_cut(self, serialize: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = serialize(self)
        if data.get("outputs_cut") is None:
            data.pop("outputs_cut", None)
        return data


#: A code cell's execution state (tools/staleness.py); null for other cells and empty ones.
ExecutionState = (
    Literal["never_run", "fresh", "changed", "earlier_kernel", "upstream", "failed"] | None
)
EXECUTION_STATE_HELP = (
    "Code cells: fresh, or stale as never_run (on this kernel), changed (edited since it ran), earlier_kernel "
    "(ran before a restart), upstream (a cell above ran or changed since), failed (its last run failed)."
)


class CellSummary(OutputsCutField):
    index: int
    cell_id: str
    cell_type: str
    source: str
    execution_count: int | None = None
    execution_state: ExecutionState = Field(default=None, description=EXECUTION_STATE_HELP)
    outputs: list[dict[str, Any]] | None = None


class NotebookRead(Written):
    cell_count: int
    start_index: int
    cells: list[CellSummary]


class CellPlaced(Written):
    cell_id: str
    cell_index: int


class CellEdited(Written):
    cell_id: str
    diff: str


class CellCleared(Written):
    cell_id: str


class DeletedCell(Result):
    cell_id: str
    source: str | None


class CellsDeleted(Written):
    deleted: list[DeletedCell]


class CellRead(Revisioned, OutputsCutField):
    cell_id: str
    cell_index: int
    cell_type: str
    source: str
    execution_count: int | None
    outputs: list[dict[str, Any]] | None
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="The cell's metadata (tags among it)."
    )


class TruncationModel(Result):
    truncated: bool
    omitted_blocks: int
    omitted_bytes: int


class ErrorModel(Result):
    ename: str
    evalue: str
    traceback: list[str]


class ExecutionResult(FormatUpgradeField):
    """Output schema 1.0, plus status, and cell_id and revision where a cell ran."""

    schema_version: Literal["1.0"] = "1.0"
    execution_count: int | None
    truncation: TruncationModel
    error: ErrorModel | None
    user_expressions: dict[str, Any] | None
    status: Literal["ok", "error", "timeout", "interrupted", "running"]
    cell_id: str | None = None
    revision: str | None = None
    run_id: str | SkipJsonSchema[None] = _run_id_field()


class VariableList(Result):
    kernel_id: str
    variables: list[dict[str, Any]] = Field(
        description="name, type, repr (bounded; null with repr_note when it raised or ran out of time), "
        "and where they cost nothing: len, shape, dtype, bytes."
    )
    total: int = Field(description="How many variables matched, before paging.")
    offset: int


class VariableDescribed(Result):
    kernel_id: str
    variable: dict[str, Any] = Field(
        description="name, type, kind (dataframe, series, array, class, function, callable, iterator, "
        "object) and what suits it: columns, head, stats, signature, doc, attributes, repr."
    )


class CodeAssisted(Result):
    kernel_id: str
    mode: Literal["complete", "inspect", "is_complete"]
    matches: list[str] | None = None
    cursor_start: int | None = None
    cursor_end: int | None = None
    found: bool | None = None
    text: str | None = None
    status: str | None = Field(
        default=None, description="is_complete: complete, incomplete, invalid or unknown."
    )
    indent: str | None = None


class ErrorReport(Result):
    kernel_id: str
    error: dict[str, Any] | None = Field(
        description="ename and evalue of the last error; null when none was raised."
    )
    frames: list[dict[str, Any]] = Field(
        description="Innermost last: file, cell_index and cell_id when it is a cell of the notebook, line, "
        "function, source around the line, locals (bounded reprs; null for the notebook's namespace); "
        "folded_before (frames, packages) where frames between this one and the one before are left out."
    )
    frames_total: int


class KernelHistory(Result):
    kernel_id: str
    entries: list[dict[str, Any]] = Field(
        description="session, line and input of each execution, oldest first."
    )
    truncated: bool


class OutputPage(Result):
    uri: str
    by: Literal["lines", "bytes"]
    offset: int
    returned: int
    next_offset: int | None
    total_lines: int
    total_bytes: int


class Heading(Result):
    level: int
    text: str
    cell_index: int


class OutlineCell(Result):
    index: int
    cell_id: str
    cell_type: str
    first_line: str
    outputs: list[str]
    execution_state: ExecutionState = Field(default=None, description=EXECUTION_STATE_HELP)


class Outline(Revisioned):
    cell_count: int
    headings: list[Heading]
    headings_folded: int
    cells: list[OutlineCell]
    next_start_index: int | None


class SearchMatch(Result):
    notebook: str
    cell_id: str
    cell_index: int
    where: str
    line: int
    text: str


class SearchResult(Result):
    matches: list[SearchMatch]
    total: int
    next_offset: int | None
    notebooks_searched: int
    skipped: int
    complete: bool
    stopped: str | None = Field(
        default=None, description="What cut the search short, when it is not complete."
    )


class PackageEntry(Result):
    name: str
    version: str


class PackageList(Result):
    environment: str
    interpreter: str | None
    packages: list[PackageEntry]
    total: int = Field(description="How many packages the environment has, before the pattern.")


class InstalledPackage(Result):
    name: str
    version: str
    previous_version: str | None = Field(
        description="The version it replaced; None for a new package."
    )


class PackagesInstalled(Result):
    environment: str
    interpreter: str | None
    installer: str = Field(description="uv, pip or conda.")
    command: list[str] = Field(description="What ran, as its arguments (never through a shell).")
    installed: list[InstalledPackage] = Field(
        description="Every distribution the install added or changed."
    )
    removed: list[str]
    already_present: list[str] = Field(
        description="Asked-for packages that were there already and did not change."
    )
    kernel_id: str | None = Field(
        description="The notebook's kernel in this environment, if one runs."
    )
    needs_restart: bool | None = Field(
        description="Whether that kernel had imported a module the install changed (restart_notebook for it to take "
        "effect); None when there is no such kernel or it could not be asked."
    )
    stale_modules: list[str]
    seconds: float


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
    run_id: str | SkipJsonSchema[None] = _run_id_field()


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
