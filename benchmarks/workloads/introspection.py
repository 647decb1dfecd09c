"""Workload 9: listing the variables of a kernel that holds 1,000 of them.

``list_variables`` (the opt-in ``introspection`` toolset, so our server is
spawned with ``JUPYTER_MCP_TOOLSETS=introspection`` for this workload only:
the other workloads keep the default tool list) on a notebook whose kernel
holds 1,000 small lists, asking for the largest page (500). Read against the
MCP round trip of a trivial tool (workload 3's floor): what is left is the
question to the kernel and the reprs.
"""

from __future__ import annotations

import dataclasses

from harness import Harness
from profiles import OURS
from sizes import VARIABLES

NOTEBOOK = "variables.ipynb"


async def list_variables(h: Harness) -> None:
    r = h.results
    for profile in h.serving("list variables", "create_notebook", "execute_code", "list_variables"):
        if profile is OURS:
            profile = dataclasses.replace(
                OURS, env={**OURS.env, "JUPYTER_MCP_TOOLSETS": "introspection"}
            )
        async with h.connect(profile, h.workspace("variables")) as session:
            await session.op("create_notebook", notebook=NOTEBOOK)
            code = f"for _n in range({VARIABLES}):\n    globals()[f'v{{_n:04}}'] = [_n] * (_n % 7)"
            await session.op("execute_code", notebook=NOTEBOOK, code=code)
            await session.op(
                "list_variables", notebook=NOTEBOOK
            )  # sets up the kernel's side sockets
            for _rep in range(h.sizes.repetitions * h.sizes.batch):
                await h.measure("list_variables", session, "list_variables", notebook=NOTEBOOK)
    r.note(
        "list_variables", f"{VARIABLES} variables in the kernel, a page of 500 with reprs and sizes"
    )
