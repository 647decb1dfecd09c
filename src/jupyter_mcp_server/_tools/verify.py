"""``verify_notebook``: does this notebook still run from the top, and give what it shows?

The notebook as it is now runs top to bottom in a new kernel of its
kernelspec, started for this call and stopped after it (it counts against
``--max-kernels`` while it lives); the live kernel and the file are never
touched. The answer lists:

- cells whose outputs differ from the stored ones, after normalising what
  changes between any two runs (memory addresses, timestamps, uuids,
  execution counts, trailing blanks) and comparing images by kind only;
- cells that fail, with the exception, and modules missing
  (``ModuleNotFoundError``);
- names a cell reads before any cell above it defines them
  (``_tools/hidden_state.py``): state only the live kernel has, usually from
  running cells out of order.

The whole run is bounded by ``timeout`` (each cell gets what is left); a
cell still running then is interrupted and the answer says where it stopped.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.approvals import approve_shell_cells
from jupyter_mcp_server._errors import KERNEL_GONE, KERNEL_UNRESPONSIVE, ToolFailure
from jupyter_mcp_server._kernels.kernel import Kernel
from jupyter_mcp_server._kernels.outputs import plain_output
from jupyter_mcp_server._kernels.staleness import code_cells_of
from jupyter_mcp_server._rendering.model_text import IMAGE_TYPES, joined
from jupyter_mcp_server._runs.cell_tags import expects_an_error, skips_execution
from jupyter_mcp_server._runs.executions import effective_timeout
from jupyter_mcp_server._runs.hidden_state import hidden_uses
from jupyter_mcp_server._schemas import run_models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler

DEFAULT_TIMEOUT = 300.0
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
#: An address printed with "%x" (IPython's ExecutionResult, in its "Error in callback" line).
_BARE_ADDRESS = re.compile(r"(?<= at )[0-9a-f]{8,16}\b")
#: The folder ipykernel compiles a cell's code into, named after the kernel's process.
_KERNEL_FOLDER = re.compile(r"ipykernel_\d+")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b")
_MISSING_MODULE = re.compile(r"No module named '([^']+)'")


def normalised(text: str) -> str:
    """`text` without what differs between any two runs of the same code."""
    text = _UUID.sub("<uuid>", text)
    text = _TIMESTAMP.sub("<time>", text)
    text = _CLOCK.sub("<time>", text)
    text = _ADDRESS.sub("0x…", text)
    text = _BARE_ADDRESS.sub("…", text)
    text = _KERNEL_FOLDER.sub("ipykernel_…", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def comparable(outputs: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Outputs as two runs of the same code should agree on them."""
    shown: list[tuple[str, ...]] = []
    for output in map(plain_output, outputs):
        kind = output.get("output_type", "")
        if kind == "stream":
            text = normalised(joined(output.get("text", "")))
            if shown and shown[-1][0] == "stream" and shown[-1][1] == output.get("name"):
                # Streams split differently from run to run: one text per name in a row.
                shown[-1] = ("stream", shown[-1][1], normalised(shown[-1][2] + "\n" + text))
            else:
                shown.append(("stream", str(output.get("name", "stdout")), text))
        elif kind == "error":
            shown.append(("error", str(output.get("ename")), normalised(str(output.get("evalue")))))
        else:
            data = output.get("data") or {}
            images = tuple(
                sorted(mime for mime in data if mime in IMAGE_TYPES or mime.startswith("image/"))
            )
            text = "" if images else normalised(joined(data.get("text/plain", "")))
            shown.append(("display", ",".join(images), text))
    return shown


def first_difference(stored: list[tuple[str, ...]], now: list[tuple[str, ...]]) -> tuple[str, str]:
    """A line of each side where they part, for a model to read."""

    def said(item: tuple[str, ...] | None) -> str:
        if item is None:
            return "(nothing)"
        kind, name, text = item
        label = {
            "stream": f"[{name}]",
            "error": f"[error {name}]",
            "display": f"[{name or 'output'}]",
        }[kind]
        return f"{label} {text}"[:300]

    for index in range(max(len(stored), len(now))):
        left = stored[index] if index < len(stored) else None
        right = now[index] if index < len(now) else None
        if left != right:
            if left is not None and right is not None and left[:2] == right[:2]:
                for line_left, line_right in zip(
                    left[2].splitlines() or [""], right[2].splitlines() or [""], strict=False
                ):
                    if line_left != line_right:
                        return f"{said(left).split(' ', 1)[0]} {line_left}"[
                            :300
                        ], f"{said(right).split(' ', 1)[0]} {line_right}"[:300]
            return said(left), said(right)
    return "", ""


#: The first this many failures show where they failed (their folded tracebacks) in the text.
SHOWN_TRACEBACKS = 5


@tool_handler("verify_notebook")
async def verify_notebook(
    notebook_name: NotebookName = None,
    timeout: Annotated[
        float | None,
        Field(description="Seconds for the whole run (default 300, at most --max-timeout)."),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, run_models.Verification]:
    """Check that the notebook runs from the top: every cell in a new throwaway kernel (the live kernel and the file are untouched). Answers cells whose outputs differ from the stored ones, cells that fail, missing modules, and names used before any cell above defines them (hidden state)."""
    server = state_of(ctx)
    seconds = _checked_timeout(server, timeout)
    path = notebook_path(ctx, notebook_name)
    view = await server.store.read(path)
    code_cells = code_cells_of(view.notebook)
    stored = {
        str(cell.get("id", "")): list(cell.get("outputs") or [])
        for cell in view.notebook.cells
        if cell.get("cell_type") == "code"
    }
    kernel_name = server.kernels.choose(view.notebook.get("metadata")).kernel_name
    # The notebook's own code runs, whatever its shell lines do to the person's files.
    await approve_shell_cells(
        ctx,
        ((cell_id, source) for _, cell_id, source in code_cells),
        f"of '{path}' in a throwaway kernel",
    )
    hidden = hidden_uses(code_cells) if _is_python(view.notebook) else []
    report = run_models.Verification(
        status="ok",
        kernel_name=kernel_name,
        revision=view.revision,
        cells_run=0,
        seconds=0.0,
        failures=[],
        differences=[],
        missing_modules=[],
        hidden_state=[
            run_models.HiddenState(
                index=use.index,
                cell_id=use.cell_id,
                names=use.names,
                defined_below=use.defined_below,
            )
            for use in hidden
        ],
        stopped_at=None,
        stop_reason=None,
    )
    started = time.monotonic()
    cells = view.notebook.cells
    skipping = {index for index, _, _ in code_cells if skips_execution(cells[index])}
    expecting = {cell_id for index, cell_id, _ in code_cells if expects_an_error(cells[index])}
    report.tag_skipped = [
        cell_id for index, cell_id, source in code_cells if index in skipping and source.strip()
    ]
    # In the notebook's folder, as nbclient runs it: the files beside it are found.
    async with server.kernels.throwaway(
        kernel_name, folder=server.kernels.folder_for(path)
    ) as kernel:
        for index, cell_id, source in code_cells:
            if not source.strip() or index in skipping:
                continue
            left = seconds - (time.monotonic() - started)
            if left <= 0:
                report.stopped_at, report.stop_reason = (
                    run_models.CellRef(index=index, cell_id=cell_id),
                    "the run's timeout",
                )
                break
            stop = await _run_one(
                server,
                kernel,
                index,
                cell_id,
                source,
                left,
                stored.get(cell_id, []),
                report,
                cell_id in expecting,
            )
            if stop is not None:
                report.stopped_at, report.stop_reason = (
                    run_models.CellRef(index=index, cell_id=cell_id),
                    stop,
                )
                break
    report.seconds = round(time.monotonic() - started, 2)
    if report.stopped_at is not None:
        report.status = "incomplete"
    elif report.failures or report.hidden_state:
        report.status = "fails"
    elif report.differences:
        report.status = "differs"
    return _answer(path, report)


async def _run_one(
    server: ServerState,
    kernel: Kernel,
    index: int,
    cell_id: str,
    source: str,
    left: float,
    stored: list[dict[str, Any]],
    report: run_models.Verification,
    error_expected: bool = False,
) -> str | None:
    """Run one cell in the throwaway kernel and note what it says; a reason to stop, or None.
    `error_expected`: the cell is tagged ``raises-exception``, so its error is no failure."""
    try:
        outcome = await server.run_in_turn(
            kernel,
            source,
            left,
            None,
            on_death=lambda: _nothing(),
            gone_message=lambda: "The throwaway kernel died under the run.",
        )
    except ToolFailure as refused:
        if refused.code in (KERNEL_GONE, KERNEL_UNRESPONSIVE):
            return refused.message
        raise
    report.cells_run += 1
    error = outcome.outputs.error
    if outcome.status == "timeout":
        return "the run's timeout (the cell was interrupted)"
    if error_expected and outcome.status == "error":
        report.expected_errors.append(cell_id)
    elif error is not None or outcome.status != "ok":
        ename = error.ename if error else outcome.status
        evalue = error.evalue if error else ""
        traceback = list(error.traceback) if error else []
        report.failures.append(
            run_models.CellFailure(
                index=index, cell_id=cell_id, ename=ename, evalue=evalue, traceback=traceback
            )
        )
        missing = _MISSING_MODULE.search(evalue or "")
        if ename in ("ModuleNotFoundError", "ImportError") and missing:
            module = missing.group(1).split(".")[0]
            if module not in report.missing_modules:
                report.missing_modules.append(module)
    before, now = comparable(stored), comparable(outcome.outputs.outputs)
    if before != now:
        was, became = first_difference(before, now)
        report.differences.append(
            run_models.OutputDifference(index=index, cell_id=cell_id, stored=was, now=became)
        )
    return None


async def _nothing() -> None:
    return None


def _checked_timeout(server: ServerState, timeout: float | None) -> float:
    return (
        effective_timeout(server, timeout)
        if timeout is not None
        else min(DEFAULT_TIMEOUT, server.config.max_timeout)
    )


def _is_python(notebook: Any) -> bool:
    language = (notebook.get("metadata", {}).get("kernelspec") or {}).get("language") or (
        notebook.get("metadata", {}).get("language_info") or {}
    ).get("name", "python")
    return str(language).lower() == "python"


def _answer(path: str, report: run_models.Verification) -> CallToolResult:
    lines = [
        f"Ran {report.cells_run} code cell(s) of '{path}' (revision {report.revision}) from the top in a new "
        f"{report.kernel_name} kernel in {report.seconds:g} s; the live kernel and the file were not touched."
    ]
    if report.stopped_at is not None:
        lines.append(
            f"Stopped at cell [{report.stopped_at.index}] ({report.stopped_at.cell_id}): {report.stop_reason}."
        )
    for number, fail in enumerate(report.failures):
        lines.append(f"Fails: [{fail.index}] {fail.cell_id}: {fail.ename}: {fail.evalue}")
        if number < SHOWN_TRACEBACKS:
            # Where it failed: the folded traceback but its last entry (the exception line, above).
            shown = "\n".join(fail.traceback[:-1]).strip("\n")
            lines.extend("    " + line for line in shown.split("\n") if shown)
    if report.missing_modules:
        lines.append(f"Missing modules: {', '.join(report.missing_modules)}.")
    for use in report.hidden_state:
        below = (
            f" (defined below, in {', '.join(use.defined_below)})"
            if use.defined_below
            else " (defined in no cell)"
        )
        lines.append(
            f"Hidden state: [{use.index}] {use.cell_id} uses {', '.join(use.names)} before any cell above defines it{below}."
        )
    for diff in report.differences:
        lines.append(
            f"Differs: [{diff.index}] {diff.cell_id}: stored {diff.stored!r}, now {diff.now!r}"
        )
    if report.tag_skipped:
        lines.append(
            f"Not run, tagged skip-execution (as nbclient does): {', '.join(report.tag_skipped)}."
        )
    if report.expected_errors:
        lines.append(
            f"Raised, as their raises-exception tag expects (not failures): {', '.join(report.expected_errors)}."
        )
    if report.status == "ok":
        every = "Every other cell" if report.tag_skipped else "Every cell"
        lines.append(f"{every} ran, and every output matches the stored one.")
    return answer(report.model_dump(), "\n".join(lines))
