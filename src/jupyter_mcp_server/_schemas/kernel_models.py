"""The output schemas of the tools that look into a kernel and its environment: variables,
completion, errors, history, packages."""

from typing import Any, Literal

from pydantic import Field

from jupyter_mcp_server._schemas.models import Result


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
