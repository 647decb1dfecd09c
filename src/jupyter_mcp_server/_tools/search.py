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

The whole workspace is walked, at any depth (a workspace may hold other
projects' repositories, their notebooks five folders down), one folder at a
time through the store's ``Files``, never into a folder twice (a symlink
loop) and never into what holds installed packages rather than a project's
notebooks (``node_modules``, ``site-packages``, ``__pycache__``, a folder
with a ``pyvenv.cfg`` or ``conda-meta``: a virtualenv or conda environment);
hidden names are left out as ``list_files`` leaves them out.

A search is bounded: ``MAX_WALKED`` entries walked, at most ``MAX_FILES``
notebooks of ``MAX_FILE_BYTES`` each and ``MAX_TOTAL_BYTES`` in all,
``MAX_MATCHES`` matches, ``SEARCH_SECONDS`` of time. Whichever limit cut a
search short is said (``stopped``) and the search is not ``complete``.

A notebook the store refuses (invalid JSON or schema, duplicate or illegal
cell ids) is skipped and counted, never searched under ids no other tool
accepts; the verdict is kept under the file's fingerprint like its texts,
so a broken file is not parsed again (nor its problem logged again) at every
search. A literal search
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
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._errors import INVALID_ARGUMENT, TIMEOUT, ToolFailure
from jupyter_mcp_server._kernels.widgets import widget_models
from jupyter_mcp_server._rendering.model_text import joined, output_text
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._store.files import Snapshot
from jupyter_mcp_server._store.formats import IPYNB, format_of
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._workspace.path_names import MAX_PATH_DEPTH

MAX_FILES = 2000
#: Files and folders one search walks at most (a workspace may be a whole home directory).
MAX_WALKED = 200_000
#: Folders that hold installed packages or caches, not a project's notebooks.
SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "__pycache__"})
#: A folder holding one of these is an environment (virtualenv, conda): not descended into.
ENVIRONMENT_MARKERS = frozenset({"pyvenv.cfg", "conda-meta"})
#: Cell ids as nbformat 4.5 allows them; a notebook with others is read through the store.
_LEGAL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MAX_FILE_BYTES = 64 * 1024 * 1024
#: The bytes of all the files one search reads: what it holds in memory at most.
MAX_TOTAL_BYTES = 256 * 1024 * 1024
MAX_MATCHES = 1000
SEARCH_SECONDS = 5.0
LINE_CHARS = 160
WORKER = Path(__file__).resolve().parents[1] / "_store" / "regex_worker.py"


@dataclass(frozen=True)
class _Unit:
    notebook: str
    cell_id: str
    cell_index: int
    where: str
    text: str


def _units_of_cells(path: str, cells: Iterable[Any], metadata: Any) -> tuple[_Unit, ...]:
    units: list[_Unit] = []
    widgets = widget_models(metadata)  # what a saved Output widget holds is found too
    for index, cell in enumerate(cells):
        cell_id = str(cell.get("id", ""))
        units.append(_Unit(path, cell_id, index, "source", joined(cell.get("source", ""))))
        for number, output in enumerate(cell.get("outputs") or []):
            text = output_text(output, widgets)
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
    ids = [cell.get("id") if isinstance(cell, dict) else None for cell in cells]
    if not all(isinstance(cell_id, str) and _LEGAL_ID.fullmatch(cell_id) for cell_id in ids) or len(
        set(ids)
    ) < len(ids):
        return None  # the store decides: it refuses duplicate or illegal ids
    return _units_of_cells(path, cells, document.get("metadata"))


@dataclass(frozen=True)
class _Refused:
    """A file the store would not read, kept under its fingerprint like a file's texts."""

    reason: str


async def _units_of_file(state: ServerState, path: str) -> tuple[_Unit, ...]:
    """One file's texts, derived again only when its fingerprint changed; ValueError when
    it cannot be searched (its reason)."""
    files = state.store.files
    key = state.store.locate(path)
    checked_ns = time.time_ns()
    fingerprint = await files.stat(key)
    if fingerprint is None:
        raise ValueError("gone")
    if fingerprint.size > MAX_FILE_BYTES:
        raise ValueError("too large")
    kept = state.search_texts.get(key, fingerprint)
    if isinstance(kept, _Refused):
        raise ValueError(kept.reason)
    if kept is not None:
        return kept
    data = await files.read_bytes(key)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError("too large")
    trusted = files.trusts(Snapshot(fingerprint, "", checked_ns))
    units = _units_of_json(path, data) if format_of(path) == IPYNB else None
    if units is None:
        try:
            view = await state.store.read(path)  # ids as every other tool sees them
        except ToolFailure as failure:
            if trusted:
                state.search_texts.put(key, fingerprint, _Refused("not a valid notebook"), 64)
            raise ValueError("not a valid notebook") from failure
        units = _units_of_cells(path, view.notebook.cells, view.notebook.get("metadata"))
    if trusted:
        state.search_texts.put(
            key, fingerprint, units, sum(len(unit.text) for unit in units) + len(units) * 64
        )
    return units


@dataclass
class _Walked:
    """What a search looked at: the candidate files in walk order (shallow first), their
    sizes, and what cut the walk short."""

    paths: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None


def _wanted(path: str, glob: str | None) -> bool:
    if not path.endswith((".ipynb", ".py")):
        return False
    return (
        glob is None
        or fnmatch.fnmatch(path, glob)
        or fnmatch.fnmatch(path.rsplit("/", 1)[-1], glob)
    )


async def _walk(state: ServerState, glob: str | None, deadline: float) -> _Walked:
    """Every notebook path in the workspace, any depth, folder by folder, within the limits."""
    walked = _Walked()
    pending: deque[str] = deque([""])
    seen = {""}
    entries_seen = 0
    folders = 0
    while pending:
        if time.monotonic() > deadline:
            walked.stopped = f"the {SEARCH_SECONDS:g} s budget ran out while listing folders ({len(pending)} not listed)"
            break
        folder = pending.popleft()
        try:
            entries = await state.store.list_files(folder, 1, "")
        except (ToolFailure, OSError):
            continue  # unreadable, or gone since its parent was listed
        folders += 1
        if folder and any(
            entry["path"].rsplit("/", 1)[-1] in ENVIRONMENT_MARKERS for entry in entries
        ):
            continue
        for entry in entries:
            entries_seen += 1
            path = str(entry["path"])
            if entry.get("type") == "directory":
                if (
                    path.rsplit("/", 1)[-1] in SKIPPED_FOLDERS
                    or path.count("/") + 2 > MAX_PATH_DEPTH
                ):
                    continue
                try:
                    real = state.store.locate(path)
                except ToolFailure:
                    continue
                if real not in seen:  # a symlink to a folder already walked, or a loop
                    seen.add(real)
                    pending.append(path)
            elif _wanted(path, glob):
                walked.paths.append(path)
                walked.sizes[path] = int(entry.get("size") or 0)
        if entries_seen > MAX_WALKED:
            walked.stopped = f"the {MAX_WALKED:,}-entry limit of the walk was reached ({len(pending)} folders not listed)"
            break
        if folders % 32 == 0:
            await asyncio.sleep(0)
    return walked


@dataclass
class _Read:
    units: list[_Unit] = field(default_factory=list)
    read: int = 0
    #: Why each skipped file was skipped, in walk order.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    stopped: str | None = None


async def _units(state: ServerState, glob: str | None, deadline: float) -> _Read:
    """Every searchable text, the notebooks read, the files skipped, and what cut it short."""
    walked = await _walk(state, glob, deadline)
    out = _Read(stopped=walked.stopped)
    paths = walked.paths[:MAX_FILES]
    if len(walked.paths) > MAX_FILES:
        out.stopped = (
            out.stopped
            or f"the {MAX_FILES:,}-notebook limit ({len(walked.paths) - MAX_FILES} deeper or later not read)"
        )
    total = 0
    for number, path in enumerate(sorted(paths)):
        size = walked.sizes.get(path, 0)
        if time.monotonic() > deadline:
            out.stopped = (
                f"the {SEARCH_SECONDS:g} s budget ran out after {number} of {len(paths)} notebooks"
            )
            break
        if total + size > MAX_TOTAL_BYTES:
            out.stopped = f"the {MAX_TOTAL_BYTES // 2**20} MiB limit on bytes read ({len(paths) - number} notebooks not read)"
            break
        try:
            found = await _units_of_file(state, path)
        except (ToolFailure, ValueError, OSError) as problem:
            out.skipped.append(
                (path, str(problem) if isinstance(problem, ValueError) else "unreadable")
            )
            continue
        total += size
        out.read += 1
        out.units.extend(found)
        if out.read % 64 == 0:
            await asyncio.sleep(0)
    return out


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


async def _regex(
    units: list[_Unit], pattern: str, deadline: float
) -> tuple[list[tuple[int, int]], bool]:
    """Matches found by the worker before `deadline`; ToolFailure(timeout) when it was still at it."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        str(WORKER),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(
                (json.dumps({"pattern": pattern, "max_matches": MAX_MATCHES}) + "\n").encode()
            )
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
    return (
        ("…" if begin else "")
        + line[begin : begin + LINE_CHARS]
        + ("…" if begin + LINE_CHARS < len(line) else "")
    )


@tool_handler("search_notebooks")
async def search_notebooks(
    query: Annotated[
        str,
        Field(
            description="Text to find (case-sensitive), or a Python regex with regex=true.",
            min_length=1,
        ),
    ],
    regex: Annotated[bool, Field(description="Treat query as a regular expression.")] = False,
    glob: Annotated[
        str | None, Field(description="Only files whose path or name matches this glob.")
    ] = None,
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
    searched = await _units(state, glob, deadline)
    units, read, skipped = searched.units, searched.read, len(searched.skipped)
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
    stopped = searched.stopped
    if stopped is None and not finished:
        stopped = (
            f"the {MAX_MATCHES:,}-match limit"
            if len(found) >= MAX_MATCHES
            else f"the {SEARCH_SECONDS:g} s budget ran out while matching"
        )
    result = models.SearchResult(
        matches=matches,
        total=len(found),
        next_offset=following,
        notebooks_searched=read,
        skipped=skipped,
        complete=stopped is None,
        stopped=stopped,
    )
    said = "; ".join(f"{path} ({reason})" for path, reason in searched.skipped[:5])
    more = f" and {skipped - 5} more" if skipped > 5 else ""
    lines = [
        f"{len(found)} match(es) in {read} notebook(s)"
        + (f", {skipped} file(s) skipped: {said}{more}" if skipped else "")
        + ("" if stopped is None else f"; incomplete, stopped by {stopped}: narrow with glob")
        + "."
    ]
    lines.extend(
        f"{m.notebook} [{m.cell_index}] {m.cell_id} {m.where}:{m.line}: {m.text}" for m in matches
    )
    if following is not None:
        lines.append(f"… more: offset={following}.")
    return answer(result.model_dump(), "\n".join(lines))
