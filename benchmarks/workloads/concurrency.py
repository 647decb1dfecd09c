"""Workloads 7 (second half) and 8: eight notebooks on eight kernels in one server.

The server's RSS with 8 notebooks each on its own kernel, and 8 notebooks
running ``time.sleep(1)`` at once over one connection (``asyncio.gather``):
notebooks must run in parallel, so the wall time stays near one second.
"""

from __future__ import annotations

import asyncio

from harness import Harness
from sizes import CONCURRENT_NOTEBOOKS


async def eight_notebooks(h: Harness) -> None:
    r = h.results
    sleep = "import time\ntime.sleep(1)"
    for profile in h.serving("eight notebooks", "create_notebook", "execute_code"):
        async with h.connect(profile, h.workspace("eight")) as session:
            names = [f"nb{i}.ipynb" for i in range(CONCURRENT_NOTEBOOKS)]
            execute = (
                "execute_in_notebook" if profile.supports("execute_in_notebook") else "execute_code"
            )
            for name in names:
                await session.op("create_notebook", notebook=name)
                await session.op(execute, notebook=name, code="1+1")
            await asyncio.sleep(1.0)
            h.record_rss("rss_8", session)
            for _rep in range(h.sizes.repetitions):
                with r.timing("concurrent_sleep", profile.name):
                    results = await asyncio.gather(
                        *(session.op(execute, notebook=name, code=sleep) for name in names)
                    )
                assert len(results) == CONCURRENT_NOTEBOOKS
    r.note(
        "concurrent_sleep",
        "execute_code on 8 notebooks at once over one connection (asyncio.gather)",
    )
