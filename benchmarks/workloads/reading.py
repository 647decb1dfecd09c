"""Workload 5, and insert latency at the big notebook (workload 4's second half).

A 2,000-cell notebook (each cell a two-line source and a small stream
output) read whole in the detailed form against ``nbformat.read`` of the
same file: the first read (the server parses the file), repeated reads,
a read right after another program saved the file (which must be seen, so
no cache may hide it), the brief first page, the outline, a literal search
over the workspace (against reading the file, the least either must do),
and the bytes of each response;
and whether each cell comes back once. With that notebook open, inserts
appended to it are timed against writing the file once.

Then a notebook whose outputs are large (50 MiB in full mode: each cell
4 MiB of printed text and a 1 MiB image), read whole in the detailed form
after a brief read has loaded it: the response bytes (each output is cut to
the inline limits) and the server's RSS after the read against before it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import floor
from harness import Harness, Session, response_bytes, text_of
from profiles import OURS

NOTEBOOK = "big.ipynb"


def big_notebook(cells: int) -> Any:
    import nbformat
    from nbformat import v4

    notebook = v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i in range(cells):
        cell = v4.new_code_cell(source=f"x_{i} = {i} * 2\nprint(x_{i})", execution_count=i + 1)
        cell.outputs = [v4.new_output("stream", name="stdout", text=f"{i * 2}\n")]
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook


def write_notebook(notebook: Any, path: Path) -> None:
    import nbformat

    nbformat.write(notebook, str(path))


async def read_big(h: Harness) -> None:
    r = h.results
    cells = h.sizes.read_cells
    notebook = big_notebook(cells)
    await _first_reads(h, notebook)
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for profile in h.serving("reading", "read_all"):
            workspace = h.workspace("read")
            write_notebook(notebook, workspace / NOTEBOOK)
            session = await stack.enter_async_context(h.connect(profile, workspace))
            if profile.supports("open_notebook"):
                await session.op("open_notebook", notebook=NOTEBOOK)
            await session.op("read_all", notebook=NOTEBOOK)
            sessions.append(session)
        path = (sessions[0].workspace if sessions else h.workspace("read")) / NOTEBOOK
        if not path.exists():
            write_notebook(notebook, path)
        r.note("read_detailed", f"{cells} cells, file {path.stat().st_size:,} B")
        for rep in range(h.sizes.repetitions):
            for session in sessions:
                await _reads(h, session, path, rep)
        # Insert latency at this size, alternating with the cost of writing
        # this file once (our store's serializer and atomic write).
        write = floor.atomic_writer(path.parent)
        for i in range(h.sizes.big_inserts):
            for session in sessions:
                if session.profile.supports("insert_cell"):
                    await h.measure(
                        "insert_big",
                        session,
                        "insert_cell",
                        notebook=NOTEBOOK,
                        source=f"z_{i} = {i}",
                    )
            with r.timing("write_once", "floor"):
                write(notebook)
    r.note("insert_big", f"appending to the {cells}-cell notebook")


async def _first_reads(h: Harness, notebook: Any) -> None:
    """A fresh server's first read, twice: right after the handshake and the tool list (what a
    host does before the model's first call), so with whatever the server imports on the way;
    and after a settle (the model's first turn), so the parse and validation of the file
    alone. Every server is spawned afresh for each, one ``nbformat.read`` of the file between."""
    import asyncio

    r = h.results
    for _rep in range(h.sizes.repetitions):
        for profile in h.serving("first reads", "read_all"):
            for metric, settle in (("read_first", 0.0), ("read_first_settled", h.sizes.settle)):
                workspace = h.workspace("first-read")
                write_notebook(notebook, workspace / NOTEBOOK)
                async with h.connect(profile, workspace) as session:
                    await asyncio.sleep(settle)
                    elapsed, _ = await session.timed("read_all", notebook=NOTEBOOK)
                    r.add(metric, profile.name, elapsed)
                    if not settle:
                        # What the person waits for when the first thing asked is a read:
                        # the server's start, the handshake and the read together.
                        r.add("read_first_from_spawn", profile.name, session.init_seconds + elapsed)
                with r.timing("read_detailed", "floor"):
                    floor.read_notebook(workspace / NOTEBOOK)
            r.add(
                "read_first_from_spawn", "floor", floor.read_in_a_new_process(workspace / NOTEBOOK)
            )
    r.note("read_first", "a fresh server's first call, right after initialize and tools/list")
    r.note(
        "read_first_from_spawn",
        "spawn, initialize and that first read (the tool list between them not counted); floor: a new Python process importing nbformat "
        "and reading the file, in the same environment",
    )
    r.note(
        "read_first_settled", f"a fresh server's first call, {h.sizes.settle:g} s after initialize"
    )


async def _reads(h: Harness, session: Session, floor_path: Path, rep: int) -> None:
    """One repetition of the reads on one server, with one floor read between."""
    r = h.results
    name = session.profile.name
    for _ in range(3):
        result = await h.measure("read_detailed", session, "read_all", notebook=NOTEBOOK)
    r.add("read_bytes", name, response_bytes(result))
    if session.profile is OURS and rep == 0:
        cells = h.sizes.read_cells
        returned = len((result.structured_content or {}).get("cells", []))
        sources = text_of(result).count("print(x_")
        once = returned == cells and sources <= cells
        r.note(
            "read_cells_once", "yes" if once else f"no ({returned} structured, {sources} in text)"
        )
    with r.timing("read_detailed", "floor"):
        floor.read_notebook(floor_path)
    if session.profile.supports("read_page"):
        page = await h.measure("read_brief", session, "read_page", notebook=NOTEBOOK)
        r.add("read_brief_bytes", name, response_bytes(page))
    if session.profile.supports("outline"):
        outline = await h.measure("outline", session, "outline", notebook=NOTEBOOK)
        r.add("outline_bytes", name, response_bytes(outline))
    if session.profile.supports("search"):
        # One match in the last cell: every cell's source and output is searched.
        await h.measure("search", session, "search", query=f"x_{h.sizes.read_cells - 1} =")
    # Somebody else saves the file: the next read must see it.
    changed = floor.read_notebook(session.workspace / NOTEBOOK)
    changed.metadata["saved_by"] = f"someone else {rep}"
    write_notebook(changed, session.workspace / NOTEBOOK)
    await h.measure("read_changed", session, "read_all", notebook=NOTEBOOK)


HEAVY = "heavy.ipynb"


def heavy_notebook(cells: int) -> Any:
    """`cells` code cells, each 4 MiB of printed text and a 1 MiB base64 PNG."""
    import base64
    import random

    from nbformat import v4

    notebook = v4.new_notebook()
    payload = base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(768 * 1024)
    ).decode()
    for i in range(cells):
        text = "".join(f"line {i}-{n} " + "x" * 60 + "\n" for n in range(4 * 1024 * 1024 // 72))
        outputs = [
            v4.new_output("stream", name="stdout", text=text),
            v4.new_output("display_data", data={"image/png": payload, "text/plain": "<Figure>"}),
        ]
        notebook.cells.append(v4.new_code_cell(source=f"plot({i})", outputs=outputs))
    return notebook


async def read_heavy_outputs(h: Harness) -> None:
    import asyncio

    r = h.results
    notebook = heavy_notebook(h.sizes.heavy_cells)
    written = None
    for profile in h.serving("heavy outputs", "read_all", "read_page"):
        workspace = h.workspace("heavy")
        written = workspace / HEAVY
        write_notebook(notebook, written)
        async with h.connect(profile, workspace) as session:
            if profile.supports("open_notebook"):
                await session.op("open_notebook", notebook=HEAVY)
            await session.op(
                "read_page", notebook=HEAVY
            )  # loaded: what every later read starts from
            await asyncio.sleep(0.5)
            before = session.rss_mib()
            seen = []
            for _ in range(h.sizes.repetitions):
                result = await h.measure("read_heavy", session, "read_all", notebook=HEAVY)
                r.add("read_heavy_bytes", profile.name, response_bytes(result))
                await asyncio.sleep(0.5)
                if (rss := session.rss_mib()) is not None:
                    seen.append(rss)
            if before is not None and seen:
                r.add("read_heavy_rss_growth", profile.name, max(seen) - before)
                trail = " ".join(f"{v:.1f}" for v in seen)
                r.note(
                    "read_heavy_rss_growth",
                    f"{profile.name}: {before:.1f} MiB, after each read {trail}",
                )
    if written is not None:
        r.note("read_heavy", f"{h.sizes.heavy_cells} cells, file {written.stat().st_size:,} B")
