"""How big each workload is, in full and in quick mode, and the limits the targets use.

Full mode is the run README.md quotes; quick mode keeps every workload but
shrinks it, so CI runs the harness end to end in about a minute without
asserting anything. The server's default output limit lives here too: the
5 MB print is measured under it and judged against it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The server's default --max-output-bytes: the 5 MB print is measured under it.
MAX_OUTPUT_BYTES = 1_048_576
#: What a truncated execution result may carry beyond the kept output bytes.
RESPONSE_OVERHEAD_BYTES = 16_384
CONCURRENT_NOTEBOOKS = 8
#: Variables in the kernel whose list is timed (workload 9).
VARIABLES = 1000


@dataclass(frozen=True)
class Sizes:
    """The defaults are full mode."""

    repetitions: int = 5
    #: Samples per repetition for the millisecond workloads (warm executions).
    batch: int = 20
    inserts: int = 500
    read_cells: int = 2000
    print_bytes: int = 5_000_000
    #: Repetitions of the print workload (each moves print_bytes twice per server).
    print_repetitions: int = 3
    #: Seconds a fresh server is left alone before its first notebook (the pool warms).
    settle: float = 3.0
    #: Inserts into the big notebook, for insert latency at read_cells cells.
    big_inserts: int = 20
    #: Cells of the notebook with large outputs (5 MiB each: 50 MiB in full mode).
    heavy_cells: int = 10
    #: Revisions between the two a diff_notebook compares (workload 10).
    history_revisions: int = 100
    #: Notebooks searched, and the size of each (100 MB in full mode).
    corpus_notebooks: int = 1000
    corpus_notebook_bytes: int = 100_000
    #: Trivial cells of the notebook run whole (workload 10).
    run_cells: int = 200
    #: Notebooks a function is looked for among, and lines of the long output (workload 12).
    task_notebooks: int = 300
    task_output_lines: int = 200_000
    #: Notebook sizes an insert and a batch are measured at against a durable write (workload 13).
    scaling_cells: tuple[int, ...] = (1000, 5000, 20_000)


FULL = Sizes()
QUICK = Sizes(
    # One repetition of each workload, the warm rows' ten samples as one batch: CI prints
    # those ratios (issue 40) from as many samples as before, in half the time.
    repetitions=1,
    batch=10,
    inserts=100,
    read_cells=500,
    print_bytes=1_000_000,
    print_repetitions=1,
    settle=2.0,
    big_inserts=5,
    heavy_cells=2,
    history_revisions=20,
    corpus_notebooks=100,
    run_cells=50,
    task_notebooks=30,
    task_output_lines=20_000,
    scaling_cells=(1000,),
)
