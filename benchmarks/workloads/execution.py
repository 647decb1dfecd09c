"""Workload 3: one warm execution, persisted (``execute_cell``) and not (``execute_code``).

The cost an agent pays on every call once everything is running, read
against raw ``jupyter_client`` on a warm kernel, one floor sample between
each pair of ours. Alongside, the MCP round trip of a trivial tool on our
server and of the SDK's minimal server's one tool, through the official
client and through plain pipes (``raw.py``): the difference is the client
library's share of every latency, the same whichever server answers.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

import floor
from harness import Harness
from profiles import MINIMAL, OURS
from raw import raw_round_trips

NOTEBOOK = "warm.ipynb"


async def warm_executions(h: Harness) -> None:
    r = h.results
    async with (
        floor.warm_kernel(h.workspace("rawwarm")) as kernel,
        contextlib.AsyncExitStack() as stack,
    ):
        sessions = []
        for profile in h.serving("warm executions", "create_notebook", "insert_execute"):
            session = await stack.enter_async_context(h.connect(profile, h.workspace("warm")))
            await session.op("create_notebook", notebook=NOTEBOOK)
            await session.op("insert_execute", notebook=NOTEBOOK, source="1+1")
            sessions.append(session)
        minimal = await stack.enter_async_context(h.connect(MINIMAL, h.workspace("minimal")))
        # Warm-up: every path once or a few times, nothing recorded.
        for _ in range(5):
            await kernel.execute("1+1")
            for session in sessions:
                if session.profile.supports("execute_code"):
                    await session.op("execute_code", notebook=NOTEBOOK, code="1+1")
                if session.profile.supports("execute_cell"):
                    await session.op("execute_cell", notebook=NOTEBOOK, index=0)
        # Each server answers a batch of calls in a row, as one agent's session does, a floor
        # sample between each two; the servers take turns batch by batch. Interleaving
        # servers call by call made every call meet caches another server had just
        # filled (1.6x the floor for every server in a four-server run, 1.2x alone).
        for _ in range(h.sizes.repetitions):
            for session in sessions:
                for _ in range(h.sizes.batch):
                    if session.profile.supports("execute_code"):
                        await h.measure(
                            "execute_code", session, "execute_code", notebook=NOTEBOOK, code="1+1"
                        )
                    with r.timing("execute_code", "floor"):
                        await kernel.execute("1+1")
                    if session.profile.supports("execute_cell"):
                        await h.measure(
                            "execute_cell", session, "execute_cell", notebook=NOTEBOOK, index=0
                        )
                    if session.profile is OURS:
                        with r.timing("round_trip", OURS.name):
                            await session.client.call_tool("list_notebooks", {})
                        with r.timing("round_trip", MINIMAL.name):
                            await minimal.client.call_tool("add", {"a": 1, "b": 2})
    # The same trivial calls with nothing around them (raw.py): batches of
    # each server in turn, so load hits both; no kernel for ours to prestart.
    for _ in range(h.sizes.repetitions):
        for profile, tool, arguments, env in (
            (OURS, "list_notebooks", {}, {"JUPYTER_MCP_CAPABILITIES": "kernel.prestart=off"}),
            (MINIMAL, "add", {"a": 1, "b": 2}, None),
        ):
            for latency in await raw_round_trips(
                profile, h.workspace("raw"), tool, arguments, h.sizes.batch * 10, env
            ):
                r.add("raw_round_trip", profile.name, latency)


async def transports(h: Harness) -> None:
    """Warm ``execute_code`` on a kernel over Unix sockets (the default, ``kernel.ipc``) and on
    one over TCP on loopback (``kernel.ipc=off``), interleaved."""
    tcp = replace(
        OURS, name="ours-tcp", env={**OURS.env, "JUPYTER_MCP_CAPABILITIES": "kernel.ipc=off"}
    )
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for profile in (OURS, tcp):
            session = await stack.enter_async_context(h.connect(profile, h.workspace(profile.name)))
            await session.op("create_notebook", notebook=NOTEBOOK)
            sessions.append(session)
        for _ in range(5):
            for session in sessions:
                await session.op("execute_code", notebook=NOTEBOOK, code="1+1")
        for _ in range(h.sizes.repetitions * h.sizes.batch):
            for session in sessions:
                await h.measure(
                    "execute_code_transport", session, "execute_code", notebook=NOTEBOOK, code="1+1"
                )
