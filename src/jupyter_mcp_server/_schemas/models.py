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


def run_id_field() -> Any:
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
    provisioner: str | None = Field(
        None,
        description="The kernel provisioner its kernelspec names (not jupyter_client's local "
        "one): the kernel runs where that puts it (another host, a container, a cluster).",
    )


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


#: A code cell's execution state (_tools/staleness.py); null for other cells and empty ones.
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


def cell_summary(
    index: int,
    cell_id: str,
    cell_type: str,
    source: str,
    execution_count: int | None,
    execution_state: str | None,
    outputs: list[dict[str, Any]] | None,
    outputs_cut: list[OutputCut] | None,
) -> dict[str, Any]:
    """A :class:`CellSummary`'s wire form, built as a dict.

    A page is up to every cell of the notebook: 2,000 CellSummary models built
    and dumped cost a read 14 ms, these dicts 1 ms. The keys, their order and
    what is left out are the model's (tests/tools/test_reading.py compares the
    two on every kind of cell); the model stays the schema a client is given.
    """
    cell: dict[str, Any] = {}
    if outputs_cut:
        cell["outputs_cut"] = [cut.model_dump() for cut in outputs_cut]
    cell.update(
        index=index,
        cell_id=cell_id,
        cell_type=cell_type,
        source=source,
        execution_count=execution_count,
        execution_state=execution_state,
        outputs=outputs,
    )
    return cell


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
    run_id: str | SkipJsonSchema[None] = run_id_field()


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


class OutlineHeading(Heading):
    #: Deeper headings folded under it (``section=cell_index`` lists them); left out when 0.
    folded_below: int = 0


class OutlineCell(Result):
    index: int
    cell_id: str
    cell_type: str
    first_line: str
    outputs: list[str]
    execution_state: ExecutionState = Field(default=None, description=EXECUTION_STATE_HELP)


class Outline(Revisioned):
    notebook: str
    cell_count: int
    cell_types: dict[str, int]
    headings: list[OutlineHeading]
    headings_folded: int
    cells: list[OutlineCell]
    next_start_index: int | None
    #: Where the headings go on (pass it as ``start_index``); left out when they all fit.
    more_headings_from: int | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=_without_a_default
    )
    #: Who else is in this notebook, and where; left out when nobody is.
    people: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=_without_a_default)


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
