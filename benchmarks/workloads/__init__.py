"""The workloads of issue 6, in the order a run goes through them.

Each module holds the workloads of one concern as ``async def (h: Harness)``
that measure every server in the run and the floor, interleaved, into
``h.results``; ``STEPS`` is the run. The numbers in the comments and in the
table's labels are the workload numbers of issue 6 and README.md.
"""

from __future__ import annotations

from harness import Workload

from . import (
    concurrency,
    durable_writes,
    execution,
    finding,
    history,
    inserts,
    introspection,
    output,
    reading,
    runs,
    startup,
    tasks,
)

STEPS: list[tuple[str, Workload]] = [
    ("spawn, first execution, memory at initialize", startup.spawn_and_first_execution),
    ("warm executions", execution.warm_executions),
    ("kernel transports: IPC and TCP", execution.transports),
    ("inserts", inserts.inserts),
    ("reading a big notebook", reading.read_big),
    ("reading 50 MiB of outputs", reading.read_heavy_outputs),
    ("searching many notebooks", finding.search_corpus),
    ("big prints", output.big_prints),
    ("eight notebooks", concurrency.eight_notebooks),
    ("list variables", introspection.list_variables),
    ("a whole notebook", runs.run_all),
    ("batches and history", history.batches_and_diffs),
    ("inserts against a durable write", durable_writes.inserts_against_a_durable_write),
    ("what an agent spends on a task", tasks.tasks),
]
