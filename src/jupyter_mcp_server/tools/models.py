"""The output schemas of the notebooks tools.

Each model is what a tool publishes as its ``outputSchema`` and what its
``structuredContent`` is checked against. Field names are CONTRACT.md's.
"""

from typing import Any, Literal

from pydantic import BaseModel, Field


class Revisioned(BaseModel):
    revision: str = Field(description="The notebook's revision after the call.")


class FileEntry(BaseModel):
    path: str
    type: Literal["file", "directory", "notebook"]
    size: int
    last_modified: str


class FileList(BaseModel):
    files: list[FileEntry]
    total: int = Field(description="How many entries matched, before paging.")


class KernelEntry(BaseModel):
    kernel_id: str
    kernel_name: str
    state: str
    notebooks: list[str]


class KernelList(BaseModel):
    kernels: list[KernelEntry]
    kernelspecs: list[str]


class NotebookUsed(Revisioned):
    notebook_name: str
    notebook_path: str
    cell_count: int
    kernel_id: str | None


class NotebookEntry(BaseModel):
    notebook_name: str
    notebook_path: str
    current: bool
    kernel_id: str | None


class NotebookList(BaseModel):
    notebooks: list[NotebookEntry]


class JupyterConnected(BaseModel):
    jupyter_url: str = Field(description="The Jupyter Server later kernels start on.")
    version: str = Field(description="Its Jupyter Server version.")
    kernelspecs: list[str] = Field(description="The kernelspecs it can start.")


class KernelOnly(BaseModel):
    kernel_id: str


class KernelRestarted(Revisioned):
    kernel_id: str


class Released(BaseModel):
    notebook_name: str
    notebook_path: str
    kernel_id: str | None


class CellSummary(BaseModel):
    index: int
    cell_id: str
    cell_type: str
    source: str
    execution_count: int | None = None
    outputs: list[dict[str, Any]] | None = None


class NotebookRead(Revisioned):
    cell_count: int
    start_index: int
    cells: list[CellSummary]


class CellPlaced(Revisioned):
    cell_id: str
    cell_index: int


class CellEdited(Revisioned):
    cell_id: str
    diff: str


class CellCleared(Revisioned):
    cell_id: str


class DeletedCell(BaseModel):
    cell_id: str
    source: str | None


class CellsDeleted(Revisioned):
    deleted: list[DeletedCell]


class CellRead(Revisioned):
    cell_id: str
    cell_index: int
    cell_type: str
    source: str
    execution_count: int | None
    outputs: list[dict[str, Any]] | None


class TruncationModel(BaseModel):
    truncated: bool
    omitted_blocks: int
    omitted_bytes: int


class ErrorModel(BaseModel):
    ename: str
    evalue: str
    traceback: list[str]


class ExecutionResult(BaseModel):
    """Output schema 1.0 (seeds/004), plus status, and cell_id and revision where a cell ran."""

    schema_version: Literal["1.0"] = "1.0"
    execution_count: int | None
    truncation: TruncationModel
    error: ErrorModel | None
    user_expressions: dict[str, Any] | None
    status: Literal["ok", "error", "timeout", "interrupted"]
    cell_id: str | None = None
    revision: str | None = None
