"""``search_notebooks``: find text in the sources, Markdown and outputs of every notebook.

Reading notebooks to find where something is costs a model its context; a
search answers with the few lines that match, each with its notebook, cell
id and line, so the next call reads exactly that cell. Files come through
the store's ``Files`` (the workspace, or a Jupyter Server's contents), .ipynb
and py:percent alike; a file that does not parse is skipped and counted.
Each file's texts are kept (``ServerState.search_texts``) until its
fingerprint changes, so a repeated search reads only what changed; a
notebook whose cells all carry ids is read as plain JSON, the others through
the store so that their ids are the ones every other tool answers with.

A search is bounded: at most ``MAX_FILES`` notebooks of ``MAX_FILE_BYTES``
each and ``MAX_TOTAL_BYTES`` in all, ``MAX_MATCHES`` matches,
``SEARCH_SECONDS`` of time. A literal search
runs here (``str`` search cannot backtrack); a regular expression runs in a
process of its own (``regex_worker``) that is killed when the time is spent,
since ``re`` can backtrack for years and cannot be interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server.errors import INVALID_ARGUMENT, TIMEOUT, ToolFailure
from jupyter_mcp_server.state import ServerState, state_of
from jupyter_mcp_server.store.files import Snapshot
from jupyter_mcp_server.store.formats import IPYNB, format_of
from jupyter_mcp_server.tools.helpers import models
from jupyter_mcp_server.tools.helpers.model_text import joined, output_text
from jupyter_mcp_server.tools.helpers.results import answer, tool_handler
from jupyter_mcp_server.workspace import MAX_LIST_DEPTH

MAX_FILES = 2000
MAX_FILE_BYTES = 64 * 1024 * 1024
#: The bytes of all the files one search reads: what it holds in memory at most.
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_MATCHES = 1000
SEARCH_SECONDS = 5.0
LINE_CHARS = 160
WORKER = Path(__file__).resolve().parent / "helpers" / "regex_worker.py"


@dataclass(frozen=True)
class _Unit:
    notebook: str
    cell_id: str
    cell_index: int
    where: str
    text: str


def _units_of_cells(path: str, cells: Iterable[Any]) -> tuple[_Unit, ...]:
    units: list[_Unit] = []
    for index, cell in enumerate(cells):
        cell_id = str(cell.get("id", ""))
        units.append(_Unit(path, cell_id, index, "source", joined(cell.get("source", ""))))
        for number, output in enumerate(cell.get("outputs") or []):
            text = output_text(output)
            if text:
                units.append(_Unit(path, cell_id, index, f"output {number}", text))
    return tuple(units)


def _units_of_json(path: str, data: bytes) -> tuple[_Unit, ...] | None:
    """The texts of a version 4 notebook whose cells all carry ids, read as plain JSON
    (a tenth of the time of a validated parse); None when only the store can say
    which ids its cells have (older files, cells without ids)."""
    try:
        document = json.loads(data)
    except ValueError:
        return None
    cells = document.get("cells") if isinstance(document, dict) else None
    if document.get("nbformat") != 4 or not isinstance(cells, list):
        return None
    if not all(isinstance(cell, dict) and isinstance(cell.get("id"), str) and cell["id"] for cell in cells):
        return None
    return _units_of_cells(path, cells)


async def _units_of_file(state: ServerState, path: str) -> tuple[_Unit, ...]:
    """One file's texts, derived again only when its fingerprint changed."""
    files = state.store.files
    key = state.store.locate(path)
    checked_ns = time.time_ns()
    fingerprint = await files.stat(key)
    if fingerprint is None:
        raise ValueError("gone")
    if fingerprint.size > MAX_FILE_BYTES:
        raise ValueError("too large")
    kept = state.search_texts.get(key, fingerprint)
    if kept is not None:
        return kept
    data = await files.read_bytes(key)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError("too large")
    units = _units_of_json(path, data) if format_of(path) == IPYNB else None
    if units is None:
        view = await state.store.read(path)  # ids as every other tool sees them
        units = _units_of_cells(path, view.notebook.cells)
    if files.trusts(Snapshot(fingerprint, "", checked_ns)):
        state.search_texts.put(key, fingerprint, units, sum(len(unit.text) for unit in units) + len(units) * 64)
    return units


async def _units(state: ServerState, glob: str | None, deadline: float) -> tuple[list[_Unit], int, int, bool]:
    """Every searchable text, the notebooks read, the files skipped, and whether all were read in time."""
    entries = await state.store.list_files("", MAX_LIST_DEPTH, "")
    paths = [
        entry["path"]
        for entry in entries
        if entry.get("type") != "directory"
        and str(entry["path"]).endswith((".ipynb", ".py"))
        and (glob is None or fnmatch.fnmatch(entry["path"], glob) or fnmatch.fnmatch(entry["path"].rsplit("/", 1)[-1], glob))
    ]
    skipped = max(0, len(paths) - MAX_FILES)
    units: list[_Unit] = []
    read = 0
    total = 0
    sizes = {entry["path"]: entry.get("size") or 0 for entry in entries}
    for path in paths[:MAX_FILES]:
        if time.monotonic() > deadline or total + sizes.get(path, 0) > MAX_TOTAL_BYTES:
            return units, read, skipped, False
        try:
            found = await _units_of_file(state, path)
        except (ToolFailure, ValueError, OSError):
            skipped += 1
            continue
        total += sizes.get(path, 0)
        read += 1
        units.extend(found)
        if read % 64 == 0:
            await asyncio.sleep(0)
    return units, read, skipped, True


def _literal(units: list[_Unit], query: str, deadline: float) -> tuple[list[tuple[int, int]], bool]:
    found = []
    for number, unit in enumerate(units):
        if query not in unit.text:
            continue
        for line_number, line in enumerate(unit.text.split("\n")):
            if query in line:
                found.append((number, line_number))
                if len(found) >= MAX_MATCHES:
                    return found, False
        if time.monotonic() > deadline:
            return found, False
    return found, True


async def _regex(units: list[_Unit], pattern: str, deadline: float) -> tuple[list[tuple[int, int]], bool]:
    """Matches found by the worker before `deadline`; ToolFailure(timeout) when it was still at it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-S", str(WORKER),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write((json.dumps({"pattern": pattern, "max_matches": MAX_MATCHES}) + "\n").encode())
            for number, unit in enumerate(units):
                stdin.write((json.dumps([number, unit.text]) + "\n").encode())
                await stdin.drain()
            stdin.close()

    found: list[tuple[int, int]] = []

    async def collect() -> None:
        while line := await stdout.readline():
            if line.strip() == b"done":
                return
            unit, number = line.split()
            found.append((int(unit), int(number)))

    feeding = asyncio.ensure_future(feed())
    try:
        await asyncio.wait_for(collect(), max(0.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        raise ToolFailure(
            TIMEOUT,
            f"The regular expression was still matching after {SEARCH_SECONDS:g} s and was stopped "
            f"({len(found)} matches by then). It probably backtracks badly (nested repeats like (a+)+); "
            "simplify it, search literally (regex=false), or narrow the files with glob.",
        ) from None
    finally:
        feeding.cancel()
        if process.returncode is None:
            process.kill()
        await process.wait()
    return found, len(found) < MAX_MATCHES


def _shortened(line: str, start: int) -> str:
    if len(line) <= LINE_CHARS:
        return line
    begin = max(0, min(start - LINE_CHARS // 3, len(line) - LINE_CHARS))
    return ("…" if begin else "") + line[begin : begin + LINE_CHARS] + ("…" if begin + LINE_CHARS < len(line) else "")


@tool_handler("search_notebooks")
async def search_notebooks(
    query: Annotated[str, Field(description="Text to find (case-sensitive), or a Python regular expression with regex=true.", min_length=1)],
    regex: Annotated[bool, Field(description="Treat query as a regular expression.")] = False,
    glob: Annotated[str | None, Field(description="Only files whose path or name matches this glob.")] = None,
    offset: Annotated[int, Field(description="Matches to skip (paging).", ge=0)] = 0,
    limit: Annotated[int, Field(description="Matches to return, 1-100.", ge=1, le=100)] = 20,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.SearchResult]:
    """Find text (or a regex) in the sources, Markdown and outputs of every notebook in the workspace; answers notebook, cell id and line per match."""
    state = state_of(ctx)
    compiled = None
    if regex:
        try:
            compiled = re.compile(query)
        except re.error as error:
            where = f" at position {error.pos}" if error.pos is not None else ""
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"query is not a valid regular expression: {error.msg}{where}. Fix it, or pass regex=false "
                "to search for the text literally.",
            ) from None
    deadline = time.monotonic() + SEARCH_SECONDS
    units, read, skipped, all_read = await _units(state, glob, deadline)
    if compiled is None:
        found, finished = _literal(units, query, deadline)
    else:
        found, finished = await _regex(units, query, deadline)
    page = found[offset : offset + limit]
    matches = []
    for unit_number, line_number in page:
        unit = units[unit_number]
        line = unit.text.split("\n")[line_number]
        at = compiled.search(line) if compiled else None
        start = at.start() if at else max(0, line.find(query))
        matches.append(
            models.SearchMatch(
                notebook=unit.notebook,
                cell_id=unit.cell_id,
                cell_index=unit.cell_index,
                where=unit.where,
                line=line_number + 1,
                text=_shortened(line, start),
            )
        )
    following = offset + len(page) if offset + len(page) < len(found) else None
    complete = all_read and finished
    result = models.SearchResult(
        matches=matches,
        total=len(found),
        next_offset=following,
        notebooks_searched=read,
        skipped=skipped,
        complete=complete,
    )
    lines = [
        f"{len(found)} match(es) in {read} notebook(s)"
        + (f", {skipped} file(s) skipped (unreadable or too large)" if skipped else "")
        + ("" if complete else f"; stopped early (the {MAX_MATCHES}-match cap or the {SEARCH_SECONDS:g} s budget): narrow with glob")
        + "."
    ]
    lines.extend(f"{m.notebook} [{m.cell_index}] {m.cell_id} {m.where}:{m.line}: {m.text}" for m in matches)
    if following is not None:
        lines.append(f"… more: offset={following}.")
    return answer(result.model_dump(), "\n".join(lines))
