"""Workload 13: an insert and a batch at 1,000, 5,000 and 20,000 cells, against their floor.

A notebook is one JSON file, so any change to it, however small, rewrites
the whole file: the least an insert can cost is writing that notebook
durably, and that is the floor here, measured on the same disk in the same
run, interleaved: ``nbformat.writes`` of the notebook (what any server that
saves with nbformat does, its validation included), written to a temporary
file, ``fsync``, renamed over the notebook, and the directory ``fsync``ed (a
rename is durable only then). Against it: one ``insert_cell`` appended, and
one ``apply_edits`` of ten operations (inserts, overwrites, a find and
replace, moves, tags), each a single revision, with the notebook's history
kept (our server with the ``history`` toolset, its history in the run's
directory) as a user has it. Target (issue 40): each ≤ 1.2x the floor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random

import floor
from harness import Harness
from profiles import OURS

from workloads.history import fifty_operations
from workloads.reading import big_notebook, write_notebook

NOTEBOOK = "scaling.ipynb"
#: Operations of the batch: the first ten of workload 11's, one of each kind twice.
BATCH = 10


async def inserts_against_a_durable_write(h: Harness) -> None:
    r = h.results
    for cells in h.sizes.scaling_cells:
        notebook = big_notebook(cells)
        ids = [cell["id"] for cell in notebook.cells]
        rng = random.Random(cells)
        write_durably = floor.nbformat_durable_writer(h.workspace("durable-floor"))
        async with contextlib.AsyncExitStack() as stack:
            sessions = []
            for profile in h.serving(f"inserts at {cells:,} cells", "insert_cell"):
                if profile is OURS:
                    history = h.root / f"history-{cells}"
                    env = {
                        **OURS.env,
                        "JUPYTER_MCP_TOOLSETS": "history",
                        "JUPYTER_MCP_HISTORY_DIR": str(history),
                    }
                    profile = dataclasses.replace(OURS, env=env)
                workspace = h.workspace("durable")
                write_notebook(notebook, workspace / NOTEBOOK)
                session = await stack.enter_async_context(h.connect(profile, workspace))
                if profile.supports("open_notebook"):
                    await session.op("open_notebook", notebook=NOTEBOOK)
                # Parsed, and its history started: what every later change builds on.
                await session.op("insert_cell", notebook=NOTEBOOK, source="warm = 0")
                sessions.append(session)
            for rep in range(h.sizes.repetitions * 3):
                for session in sessions:
                    await h.measure(
                        f"insert_at_{cells}",
                        session,
                        "insert_cell",
                        notebook=NOTEBOOK,
                        source=f"z_{rep} = {rep}",
                    )
                    if session.profile.supports("apply_edits"):
                        operations = fifty_operations(ids, rng, f"b{rep}")[:BATCH]
                        await h.measure(
                            f"apply_edits_at_{cells}",
                            session,
                            "apply_edits",
                            notebook=NOTEBOOK,
                            operations=operations,
                        )
                with r.timing(f"durable_write_at_{cells}", "floor"):
                    write_durably(notebook)
        r.note(f"insert_at_{cells}", f"{cells:,} cells; floor: nbformat's durable write")
