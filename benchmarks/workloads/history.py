"""Workload 11: a batch of 50 edits and a diff across 100 revisions, at the 2,000-cell notebook.

Our server is spawned with the opt-in ``history`` toolset (for this workload
only) and its history kept in the run's temporary directory. On the
workload 5 notebook (2,000 cells), ``apply_edits`` of 50 mixed operations
(inserts, overwrites, find-and-replace, moves, tags) alternates with a single
``insert_cell``, each one revision: the batch must cost at most twice the
single insert. Then ``diff_notebook`` between two revisions 100 apart, made
by small batches, and ``notebook_history``.
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

from harness import Harness
from profiles import OURS

from workloads.reading import big_notebook, write_notebook

NOTEBOOK = "history.ipynb"
BATCH = 50


def fifty_operations(ids: list[str], rng: random.Random, tag: str) -> list[dict[str, Any]]:
    operations: list[dict[str, Any]] = []
    for step in range(BATCH):
        cell_id = rng.choice(ids)
        kind = step % 5
        if kind == 0:
            operations.append(
                {"op": "insert", "index": rng.randint(0, len(ids)), "source": f"{tag} = {step}"}
            )
        elif kind == 1:
            operations.append(
                {"op": "overwrite", "cell_id": cell_id, "source": f"y = {step}\nprint(y)"}
            )
        elif kind == 2:
            operations.append({"op": "overwrite", "cell_id": cell_id, "source": "a + a"})
            operations[-1:] = [
                operations[-1],
                {
                    "op": "replace",
                    "cell_id": cell_id,
                    "old_string": "a",
                    "new_string": "b",
                    "replace_all": True,
                },
            ]
        elif kind == 3:
            operations.append(
                {"op": "move", "cell_id": cell_id, "to_index": rng.randrange(len(ids))}
            )
        else:
            operations.append(
                {"op": "set_cell_metadata", "cell_id": cell_id, "tags": [f"{tag}-{step}"]}
            )
    return operations[:BATCH]


async def batches_and_diffs(h: Harness) -> None:
    r = h.results
    cells = h.sizes.read_cells
    for profile in h.serving("history", "apply_edits", "insert_cell", "diff_notebook"):
        if profile is OURS:
            env = {
                **OURS.env,
                "JUPYTER_MCP_TOOLSETS": "history",
                "JUPYTER_MCP_HISTORY_DIR": str(h.root / "history"),
            }
            profile = dataclasses.replace(OURS, env=env)
        workspace = h.workspace("history")
        write_notebook(big_notebook(cells), workspace / NOTEBOOK)
        ids = [cell["id"] for cell in json.loads((workspace / NOTEBOOK).read_text())["cells"]]
        rng = random.Random(10)
        async with h.connect(profile, workspace) as session:
            await session.op("read_page", notebook=NOTEBOOK)  # parsed once
            await session.op(
                "insert_cell", notebook=NOTEBOOK, source="warm = 1"
            )  # the history's first revision
            for rep in range(h.sizes.repetitions * 4):
                await h.measure(
                    "insert_single",
                    session,
                    "insert_cell",
                    notebook=NOTEBOOK,
                    source=f"s_{rep} = {rep}",
                )
                operations = fifty_operations(ids, rng, f"b{rep}")
                await h.measure(
                    "apply_edits_50",
                    session,
                    "apply_edits",
                    notebook=NOTEBOOK,
                    operations=operations,
                )
            history = await session.op("notebook_history", notebook=NOTEBOOK)
            start = history.structured_content["revision"]
            for step in range(h.sizes.history_revisions):
                operations = [
                    {"op": "overwrite", "cell_id": rng.choice(ids), "source": f"rev = {step}"},
                    {
                        "op": "insert",
                        "index": rng.randint(0, len(ids)),
                        "source": f"# revision {step}",
                    },
                ]
                await session.op("apply_edits", notebook=NOTEBOOK, operations=operations)
            for _ in range(h.sizes.repetitions * 2):
                await h.measure(
                    "diff_revisions", session, "diff_notebook", notebook=NOTEBOOK, revision=start
                )
                await h.measure("history_list", session, "notebook_history", notebook=NOTEBOOK)
        size = sum(f.stat().st_size for f in (h.root / "history").rglob("*") if f.is_file())
        r.add("history_bytes", profile.name, size)
    r.note(
        "apply_edits_50",
        f"{BATCH} operations on the {cells}-cell notebook, against one insert_cell there",
    )
    r.note(
        "diff_revisions",
        f"diff_notebook between revisions {h.sizes.history_revisions} batches apart",
    )
