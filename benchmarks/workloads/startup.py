"""Workloads 1, 2 and 7: a server's start, its first execution, its memory after start.

What an agent waits for before any work: the spawn to the initialize answer
and the exit (1), a first execution in a new notebook, both right after
initialize and after a settle during which a host lists tools and a model
thinks, which is what the prestarted kernel pool is for (2), and the
server's RSS right after initialize and once idle (7). Each repetition
spawns every server twice and the SDK's minimal server after each, so the
spawn floor and the memory floor come from the same minutes of the run.
"""

from __future__ import annotations

import asyncio

import floor
from harness import Harness, Session
from profiles import MINIMAL


async def spawn_and_first_execution(h: Harness) -> None:
    r = h.results
    for rep in range(h.sizes.repetitions):
        for profile in h.servers:
            # A: spawn, then the first execution at once (kernels may still be starting).
            async with h.connect(profile, h.workspace("spawn")) as session:
                r.add("spawn", profile.name, session.init_seconds)
                r.add("tools_list_bytes", profile.name, session.tools_bytes)
                await _first_execution(h, session, "first_exec_cold", "cold.ipynb")
            await _spawn_minimal(h)
            # B: spawn, memory, a settle (an agent reads the tool list and thinks), then a new notebook.
            async with h.connect(profile, h.workspace("settle")) as session:
                r.add("spawn", profile.name, session.init_seconds)
                h.record_rss("rss_init", session)
                await asyncio.sleep(h.sizes.settle)
                h.record_rss("rss_settled", session)
                await _first_execution(h, session, "first_exec_settled", "first.ipynb")
            await _spawn_minimal(h)
        # The floor of a first execution: a raw kernel start to ready, and 1+1 on it.
        r.add("first_exec_settled", "floor", await floor.first_execution(h.workspace("rawstart")))
        h.log(f"   repetition {rep + 1}/{h.sizes.repetitions}")
    r.note("first_exec_settled", f"settle {h.sizes.settle:g} s after initialize")


async def _first_execution(h: Harness, session: Session, metric: str, notebook: str) -> None:
    """Create a notebook and run 1+1 in a new cell of it, timed as one."""
    if not session.profile.supports("create_notebook", "insert_execute"):
        return
    with h.results.timing(metric, session.profile.name):
        await session.op("create_notebook", notebook=notebook)
        await session.op("insert_execute", notebook=notebook, source="1+1")


async def _spawn_minimal(h: Harness) -> None:
    """The floor of spawn and of memory: the SDK's minimal server, spawned the same way."""
    async with h.connect(MINIMAL, h.workspace("minimal")) as session:
        h.results.add("spawn", MINIMAL.name, session.init_seconds)
        h.record_rss("rss_init", session)
