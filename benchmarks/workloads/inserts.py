"""Workload 4 (first half): 500 cells inserted one by one into a new notebook.

Whether an insert's cost grows with the notebook: the latency of the last 50
inserts against the first 50, allowed on top the cost of writing that file
once (our store's serializer and atomic write, measured here on the file the
inserts built). Insert latency at the 2,000-cell notebook is measured with
the reading workload, which has that notebook open.
"""

from __future__ import annotations

import floor
from harness import Harness
from profiles import OURS

NOTEBOOK = "inserts.ipynb"


async def inserts(h: Harness) -> None:
    r = h.results
    count = h.sizes.inserts
    window = min(50, count // 2)
    for profile in h.serving("inserts", "create_notebook", "insert_cell"):
        async with h.connect(profile, h.workspace("insert")) as session:
            await session.op("create_notebook", notebook=NOTEBOOK)
            latencies = []
            for i in range(count):
                elapsed, _ = await session.timed(
                    "insert_cell", notebook=NOTEBOOK, source=f"y_{i} = {i}"
                )
                latencies.append(elapsed)
            for value in latencies[:window]:
                r.add("insert_first", profile.name, value)
            for value in latencies[-window:]:
                r.add("insert_last", profile.name, value)
            if profile is OURS:
                # The cost of writing that notebook once, our own way (serialize + atomic write).
                notebook = floor.read_notebook(session.workspace / NOTEBOOK)
                write = floor.atomic_writer(session.workspace)
                for _ in range(10):
                    with r.timing("write_once", OURS.name):
                        write(notebook)
    r.note("insert_first", f"{count} inserts one by one into a new notebook; windows of {window}")
    r.note(
        "write_once",
        "floor: serialize + atomic write (fsync) of the big notebook; ours: of the insert notebook",
    )
