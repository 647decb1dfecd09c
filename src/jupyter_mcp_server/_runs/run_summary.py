"""A whole-notebook run as its result: a line per cell, the outputs within the inline budget.

Every cell that ran gets its id, status and execution count; its outputs'
texts share the call's inline budget with every other cell's (short ones
whole, long ones cut to head and tail around a marker naming the
``read_output`` call that pages the rest). Images are named, not inlined:
``read_cell`` shows one. Consecutive cells that ended ``ok`` without
printing anything are one line in the text. The headline says how many
cells ran, where the run stopped and why, and the revision.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from jupyter_mcp_server._errors import (
    EXECUTION_ERROR,
    INTERRUPTED,
    KERNEL_GONE,
    KERNEL_UNRESPONSIVE,
    TIMEOUT,
    ToolFailure,
)
from jupyter_mcp_server._kernels.execution import WENT_ON
from jupyter_mcp_server._kernels.widgets import widget_models
from jupyter_mcp_server._rendering.budget import allot, head_and_tail
from jupyter_mcp_server._rendering.content import InlineLimits, upgrade_by_edit
from jupyter_mcp_server._rendering.model_text import IMAGE_TYPES, output_text
from jupyter_mcp_server._runs.notebook_runs import CellRan, RunReport
from jupyter_mcp_server._schemas import run_models
from jupyter_mcp_server._store.formats import IPYNB
from jupyter_mcp_server._tool_calls.results import answer, failure
from jupyter_mcp_server._workspace.notebook_uris import output_uri

CODES = {
    "error": EXECUTION_ERROR,
    "timeout": TIMEOUT,
    "interrupted": INTERRUPTED,
    "cancelled": INTERRUPTED,
    "kernel_gone": KERNEL_GONE,
    "kernel_unresponsive": KERNEL_UNRESPONSIVE,
}


def run_result(report: RunReport, revision: str, limits: InlineLimits) -> CallToolResult:
    """The result of ``run_cells``: structured per cell, and the same as text a model reads."""
    texts = _cell_texts(report, limits)
    cells = [
        run_models.RunCell(
            index=ran.index,
            cell_id=ran.cell_id,
            status=ran.status,  # type: ignore[arg-type]
            execution_count=ran.outcome.execution_count if ran.outcome else None,
            output=texts[position],
            error=_error_of(ran),
            stored=ran.outcome is not None and ran.not_stored is None,
            expected_error=ran.expected_error,
        )
        for position, ran in enumerate(report.cells)
    ]
    upgraded, said = upgrade_by_edit(report.written) if report.written is not None else (None, "")
    stopped = report.stopped_at
    structured = run_models.NotebookRun(
        status=report.status,  # type: ignore[arg-type]
        kernel_id=report.kernel_id,
        read_revision=report.read_revision,
        revision=revision,
        cells_selected=report.selected,
        cells_run=len(report.cells),
        cells=cells,
        stopped_at=run_models.CellRef(index=stopped.index, cell_id=stopped.cell_id)
        if stopped
        else None,
        stop_reason=report.stop_reason,
        not_run=report.not_run,
        fresh_skipped=report.fresh_skipped,
        tag_skipped=report.tag_skipped,
        format_upgraded=upgraded,
    )
    headline = _headline(report, revision) + said
    lines = [headline, *report.notes, *_cell_lines(cells)]
    if report.write_failure is not None:
        lines.append(f"Some outputs could not be stored: {report.write_failure.message}")
    content = [TextContent(type="text", text="\n".join(lines))]
    if report.status == "ok":
        return answer(structured.model_dump(), content=content)
    # A failure's message is the headline; the cells follow it.
    error = ToolFailure(
        CODES.get(report.status, EXECUTION_ERROR),
        headline,
        stopped_at=stopped.cell_id if stopped else None,
    )
    rest = "\n".join(lines[1:])
    return failure(
        error, structured.model_dump(), [TextContent(type="text", text=rest)] if rest else []
    )


def _headline(report: RunReport, revision: str) -> str:
    ran = len(report.cells)
    where = f"'{report.path}' ({report.said})"
    if report.selected == 0:
        return f"No code cell of {where} was selected; nothing ran. Revision {revision}."
    counted = f"Ran {ran} of {report.selected} selected code cell(s) of {where}"
    if report.fresh_skipped:
        counted += f", passing over {report.fresh_skipped} fresh one(s)"
    stopped = report.stopped_at
    reason = (report.stop_reason or "").rstrip(".")
    if stopped is not None:
        said = f"{counted}; stopped at cell [{stopped.index}] (id {stopped.cell_id}): {reason}."
    elif report.stop_reason is not None:
        said = f"{counted}; stopped before the next cell: {reason}."
    elif report.status != "ok":
        failed = sum(1 for cell in report.cells if cell.status != "ok" and not cell.expected_error)
        said = f"{counted}; {failed} cell(s) failed (stop_on_error was off, so the run went on)."
    elif any(cell.expected_error for cell in report.cells):
        expected = sum(1 for cell in report.cells if cell.expected_error)
        said = f"{counted}: every cell ran as expected ({expected} raised, as its raises-exception tag says it should)."
    else:
        said = f"{counted}: every cell ran ok."
    if report.tag_skipped:
        said += (
            f" {len(report.tag_skipped)} cell(s) tagged skip-execution were not run, as nbclient does "
            f"({', '.join(report.tag_skipped[:5])}); execute_cell runs one, or name it in cells."
        )
    if report.not_run:
        said += f" {len(report.not_run)} selected cell(s) did not run."
    return f"{said}{_where_outputs_are(report)} Revision {revision}."


def _where_outputs_are(report: RunReport) -> str:
    """What became of the outputs, true of the file kind and of each cell: a script keeps
    none on disk, and a cell whose kernel died has none to keep."""
    finished = [cell for cell in report.cells if cell.outcome is not None]
    if not finished:
        return " No cell finished, so no outputs were stored."
    if report.format != IPYNB:
        return (
            f" A {report.format} script stores no outputs: they are returned here and kept in memory "
            "while the server runs (read_cell shows them), and the file is left as it was."
        )
    changed = [cell.cell_id for cell in finished if cell.not_stored]
    if not changed:
        return (
            f" The outputs of the {len(finished)} cell(s) that finished are stored in the notebook."
        )
    said = (
        f" The outputs of {len(changed)} cell(s) were not stored ({', '.join(changed[:5])}): "
        f"the notebook changed meanwhile; the run ran it as read at revision {report.read_revision}."
    )
    if len(changed) < len(finished):
        said += f" Those of the other {len(finished) - len(changed)} are stored in the notebook."
    return said


def _cell_lines(cells: list[run_models.RunCell]) -> list[str]:
    lines: list[str] = []
    quiet: list[run_models.RunCell] = []

    def flush() -> None:
        if not quiet:
            return
        if len(quiet) == 1:
            lines.append(_heading(quiet[0]) + " (no output)")
        else:
            counts = [cell.execution_count for cell in quiet if cell.execution_count is not None]
            said = f", execution counts {counts[0]}-{counts[-1]}" if counts else ""
            lines.append(
                f"[{quiet[0].index}-{quiet[-1].index}] {len(quiet)} cells ok, no output{said}"
            )
        quiet.clear()

    for cell in cells:
        if cell.status == "ok" and not cell.output and cell.stored:
            quiet.append(cell)
            continue
        flush()
        lines.append(_heading(cell))
        if cell.output:
            lines.append(cell.output)
    flush()
    return lines


def _heading(cell: run_models.RunCell) -> str:
    count = f" [{cell.execution_count}]" if cell.execution_count is not None else ""
    stored = "" if cell.stored else " (outputs not stored)"
    expected = " (expected: tagged raises-exception)" if cell.expected_error else ""
    return f"[{cell.index}] id={cell.cell_id} {cell.status}{count}{expected}{stored}"


def _error_of(ran: CellRan) -> str | None:
    error = ran.outcome.outputs.error if ran.outcome is not None else None
    if error is None:
        return None
    return f"{error.ename}: {error.evalue}" if error.evalue else error.ename


def _cell_texts(report: RunReport, limits: InlineLimits) -> list[str]:
    """Each cell's outputs as one text, all of them within the budget."""
    pieces: list[tuple[int, int, str]] = []  # (cell position, output index, text)
    # The widgets as the run left them (each execution that changed any carries them all).
    saved: dict[str, Any] = {}
    for ran in report.cells:
        if ran.outcome is not None and ran.outcome.widgets:
            saved = widget_models({"widgets": ran.outcome.widgets})
    for position, ran in enumerate(report.cells):
        outputs: list[dict[str, Any]] = (
            ran.outcome.outputs.outputs if ran.outcome is not None else []
        )
        for index, output in enumerate(outputs):
            data = output.get("data") or {}
            images = [mime for mime in IMAGE_TYPES if mime in data]
            if images:
                pieces.append(
                    (
                        position,
                        index,
                        f"[{images[0]}: read_cell(cell_id='{ran.cell_id}') shows it]\n",
                    )
                )
            text = output_text(output, saved)
            if text and output.get("output_type") == "error" and ran.status == "ok":
                # An error shown by code that went on: the kernel's reply says the cell did not fail.
                text = text.rstrip("\n") + f"\n[jupyter-mcp-server: {WENT_ON}]\n"
            if text:
                pieces.append((position, index, text))
    shares = allot([len(text) for _, _, text in pieces], limits.budget_chars)
    texts = [""] * len(report.cells)
    for (position, index, text), share in zip(pieces, shares, strict=True):
        ran = report.cells[position]
        uri = output_uri(report.path, ran.cell_id, index) if ran.not_stored is None else None
        shown = head_and_tail(text, min(share, limits.text_chars), uri)
        texts[position] += shown if shown.endswith("\n") else shown + "\n"
    return [text.rstrip("\n") for text in texts]
