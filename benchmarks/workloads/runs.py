"""Workload 10: a whole notebook of trivial cells, run three ways.

A notebook of ``sizes.run_cells`` cells (200 in full mode), each ``1+1``:

- ``run_cells(cells="all")``: one call (the opt-in ``runs`` toolset, so our
  server is spawned with ``JUPYTER_MCP_TOOLSETS=runs`` for this workload
  only), every cell's outputs stored as it ends;
- the same cells as that many ``execute_cell`` calls, one after the other,
  each a round trip and a write of the notebook;
- the floor: raw ``jupyter_client`` executing ``1+1`` that many times on a
  warm kernel, nothing stored.

One sample of each per repetition, interleaved. The target (issue 17):
``run_all`` within 1.2x the floor.
"""

from __future__ import annotations

import dataclasses

import floor
import nbformat
from harness import Harness
from profiles import OURS

NOTEBOOK = "whole.ipynb"


async def run_all(h: Harness) -> None:
    r = h.results
    cells = h.sizes.run_cells
    async with floor.warm_kernel(h.workspace("rawrun")) as kernel:
        for profile in h.serving("run all", "open_notebook", "execute_cell", "run_all"):
            if profile is OURS:
                profile = dataclasses.replace(
                    OURS, env={**OURS.env, "JUPYTER_MCP_TOOLSETS": "runs"}
                )
            workspace = h.workspace("runall")
            notebook = nbformat.v4.new_notebook()
            notebook.cells = [nbformat.v4.new_code_cell("1+1") for _ in range(cells)]
            nbformat.write(notebook, str(workspace / NOTEBOOK))
            async with h.connect(profile, workspace) as session:
                await session.op("open_notebook", notebook=NOTEBOOK)
                # Warm-up: each path once, nothing recorded.
                await session.op("run_all", notebook=NOTEBOOK)
                for index in range(3):
                    await session.op("execute_cell", notebook=NOTEBOOK, index=index)
                    await kernel.execute("1+1")
                for _rep in range(h.sizes.repetitions):
                    await h.measure("run_all", session, "run_all", notebook=NOTEBOOK)
                    with r.timing("run_all_cells", profile.name):
                        for index in range(cells):
                            await session.op("execute_cell", notebook=NOTEBOOK, index=index)
                    with r.timing("run_all", "floor"):
                        for _ in range(cells):
                            await kernel.execute("1+1")
    r.note("run_all", f"{cells} cells of 1+1; floor: as many raw jupyter_client executions")
