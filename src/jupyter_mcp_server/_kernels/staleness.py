"""Each code cell's execution state: is what the notebook shows what its kernel holds?

Judged from the kernel manager's record of what ran (``_kernels.records``)
and the notebook as it is now:

- ``never_run``: it has not run on this notebook's kernels since the server
  started (or the notebook has no kernel);
- ``earlier_kernel``: it ran, but on a kernel the notebook no longer has
  (a restart, a lost kernel replaced);
- ``changed``: its source was edited since it ran here;
- ``failed``: it ran here with this source, and ended in an error, a
  timeout or an interrupt;
- ``upstream``: it ran here with this source, but a cell above it ran after
  it, or was edited since it ran;
- ``fresh``: none of these.

A cell is *stale* unless it is ``fresh``. Empty code cells have no state
(nothing runs). States are judged top to bottom, so a walk that runs cells
as it goes (``run_cells(cells="stale")``) sees a cell below one it just ran
as ``upstream``, and runs it too: when it is done, every cell it reached is
fresh.
"""

from __future__ import annotations

from typing import Any, Literal

from jupyter_mcp_server._kernels.records import NotebookRuns, source_hash

State = Literal["never_run", "fresh", "changed", "earlier_kernel", "upstream", "failed"]
NEVER_RUN: State = "never_run"
EARLIER_KERNEL: State = "earlier_kernel"
CHANGED: State = "changed"
FAILED: State = "failed"
UPSTREAM: State = "upstream"
FRESH: State = "fresh"


class NotebookStates:
    """The states of a notebook's code cells, judged top to bottom as :meth:`state_of` is asked.

    `code_cells` are ``(index, cell_id, source)`` of every code cell, in
    order. Asking for a cell judges every code cell above it first (each
    once), reading the record as it is at that moment.
    """

    def __init__(
        self,
        code_cells: list[tuple[int, str, str]],
        runs: NotebookRuns | None,
        kernel_id: str | None,
    ) -> None:
        self.code_cells = code_cells
        self.runs = runs
        self.kernel_id = kernel_id
        self._position = 0
        #: The latest order among the cells passed, on this kernel.
        self._latest_above = 0
        self._changed_above = False
        self._states: dict[int, State | None] = {}

    def state_of(self, index: int) -> State | None:
        """The state of the code cell at `index` (None: empty, or not a code cell).

        The cells above it are judged, and counted for the ones below, as they
        are now; the cell itself only when a later cell is asked for, so a cell
        run between the two questions counts with its new run.
        """
        cells = self.code_cells
        while self._position < len(cells) and cells[self._position][0] < index:
            at, cell_id, source = cells[self._position]
            state = self._states[at] = self._judge(cell_id, source)
            run = self.runs.last_run(cell_id) if self.runs is not None else None
            if run is not None and run.kernel_id == self.kernel_id:
                self._latest_above = max(self._latest_above, run.order)
            self._changed_above = self._changed_above or state == CHANGED
            self._position += 1
        if self._position < len(cells) and cells[self._position][0] == index:
            _, cell_id, source = cells[self._position]
            self._states[index] = self._judge(cell_id, source)
        return self._states.get(index)

    def all(self) -> dict[int, State | None]:
        """Every code cell's state, by index."""
        if self.code_cells:
            self.state_of(self.code_cells[-1][0])
        return dict(self._states)

    def _judge(self, cell_id: str, source: str) -> State | None:
        if not source.strip():
            return None
        run = self.runs.last_run(cell_id) if self.runs is not None else None
        if run is None:
            return NEVER_RUN
        if self.kernel_id is None or run.kernel_id != self.kernel_id:
            return EARLIER_KERNEL
        if run.source_hash != source_hash(source):
            return CHANGED
        if run.status != "ok":
            return FAILED
        if self._changed_above or self._latest_above > run.order:
            return UPSTREAM
        return FRESH


def code_cells_of(notebook: object) -> list[tuple[int, str, str]]:
    """Each code cell's index, id and source, in order."""
    return [
        (index, str(cell.get("id", "")), str(cell.get("source", "")))
        for index, cell in enumerate(notebook.cells)  # type: ignore[attr-defined]
        if cell.get("cell_type") == "code"
    ]


def states_of(kernels: Any, path: str, notebook: object) -> NotebookStates:
    """The states of `notebook`'s code cells (the notebook at `path`, read before the next
    await) against the kernel manager's record and the notebook's kernel now."""
    return NotebookStates(
        code_cells_of(notebook), kernels.records.peek(path), kernels.kernel_id_of(path)
    )
