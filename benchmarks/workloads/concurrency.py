"""Workloads 7 (second half) and 8: eight notebooks on eight kernels in one server.

The server's RSS with 8 notebooks each on its own kernel; the server and its
kernels together (every process below the server: RSS summed, and PSS summed,
which counts once the pages the kernels share), against 8 kernels started with
``jupyter_client`` alone, each having run ``1+1``; and 8 notebooks
running ``time.sleep(1)`` at once over one connection (``asyncio.gather``):
notebooks must run in parallel, so the wall time stays near one second.
"""

from __future__ import annotations

import asyncio

import floor
from harness import Harness
from procfs import tree_memory_mib
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
            if session.pid is not None:
                rss, pss, count = tree_memory_mib(session.pid)
                r.add("tree_rss_8", profile.name, rss)
                r.add("tree_pss_8", profile.name, pss)
                r.note("tree_rss_8", f"{profile.name}: {count} processes")
            for _rep in range(h.sizes.repetitions):
                with r.timing("concurrent_sleep", profile.name):
                    results = await asyncio.gather(
                        *(session.op(execute, notebook=name, code=sleep) for name in names)
                    )
                assert len(results) == CONCURRENT_NOTEBOOKS
    rss, pss, count = await _raw_kernels_memory(h)
    r.add("tree_rss_8", "floor", rss)
    r.add("tree_pss_8", "floor", pss)
    r.note("tree_rss_8", f"floor: {count} kernels started with jupyter_client, each ran 1+1")
    r.note(
        "concurrent_sleep",
        "execute_code on 8 notebooks at once over one connection (asyncio.gather)",
    )


async def _raw_kernels_memory(h: Harness) -> tuple[float, float, int]:
    """The floor of a server and its kernels: 8 kernels started with jupyter_client alone,
    each having run 1+1, summed over each kernel's process tree (RSS, PSS, processes)."""
    kernels = [floor.RawKernel(h.workspace("rawkernels")) for _ in range(CONCURRENT_NOTEBOOKS)]
    try:
        for kernel in kernels:
            await kernel.start()
            await kernel.execute("1+1")
        await asyncio.sleep(1.0)
        totals = [0.0, 0.0, 0]
        for kernel in kernels:
            pid = kernel.manager.provisioner.pid
            rss, pss, count = tree_memory_mib(pid)
            totals = [totals[0] + rss, totals[1] + pss, totals[2] + count]
        return totals[0], totals[1], int(totals[2])
    finally:
        for kernel in kernels:
            await kernel.stop()
