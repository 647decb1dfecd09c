"""What ran of each notebook on its kernels: the facts staleness and display updates rest on.

A kernel's state is the sum of what ran on it, in order. So for each
notebook the kernel manager keeps, per cell id, the last time it ran: the
hash of the source that ran, the kernel it ran on, its place in the order of
executions, and how it ended. Whether a cell is fresh (``tools/staleness``)
is judged from these and the notebook as it is now; nothing here reads a
notebook.

It also keeps where each display id was last shown: an
``update_display_data`` (or a new ``display_data`` with the same id) changes
that output wherever it is, in an earlier cell too, as JupyterLab and
nbclient do. Display ids belong to a kernel's session, so the map starts
over when the notebook's kernel changes.

Bounded: a few thousand notebooks, each up to :data:`MAX_CELLS` cells and
:data:`MAX_DISPLAYS` display ids; the least recently used go first.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

MAX_NOTEBOOKS = 4096
MAX_CELLS = 20_000
MAX_DISPLAYS = 4096


def source_hash(source: str) -> str:
    """What identifies a cell's source between runs."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class CellRun:
    """The last execution of one cell."""

    source_hash: str
    kernel_id: str
    #: Its place among this notebook's executions (larger ran later).
    order: int
    #: ``ok``, ``error``, ``timeout`` or ``interrupted``.
    status: str


@dataclass(frozen=True)
class DisplayPlace:
    """An output showing a display id: its cell, and its index there."""

    cell_id: str
    index: int


@dataclass
class NotebookRuns:
    """One notebook's executions: the last run of each cell, and where display ids are shown."""

    cells: OrderedDict[str, CellRun] = field(default_factory=OrderedDict)
    order: int = 0
    #: The kernel the display ids below belong to.
    kernel_id: str | None = None
    displays: OrderedDict[str, list[DisplayPlace]] = field(default_factory=OrderedDict)

    def ran(self, cell_id: str, source: str, kernel_id: str, status: str) -> CellRun:
        """Record that `cell_id` ran `source` on `kernel_id` and ended with `status`."""
        self.order += 1
        run = CellRun(source_hash(source), kernel_id, self.order, status)
        self.cells.pop(cell_id, None)
        self.cells[cell_id] = run
        while len(self.cells) > MAX_CELLS:
            self.cells.popitem(last=False)
        self._on_kernel(kernel_id)
        return run

    def last_run(self, cell_id: str) -> CellRun | None:
        return self.cells.get(cell_id)

    # --- Display ids ------------------------------------------------------------

    def _on_kernel(self, kernel_id: str) -> None:
        if self.kernel_id != kernel_id:
            self.kernel_id = kernel_id
            self.displays.clear()

    def places(self, display_id: str, kernel_id: str) -> list[DisplayPlace]:
        """Where `display_id` of `kernel_id`'s session is shown now (nowhere for another kernel)."""
        if kernel_id != self.kernel_id:
            return []
        return list(self.displays.get(display_id, ()))

    def shown(self, cell_id: str, kernel_id: str, displays: dict[str, list[int]]) -> None:
        """`cell_id`'s outputs are new: those at `displays` (display id -> indices) show a display id."""
        self._on_kernel(kernel_id)
        self.forget_cell(cell_id)
        for display_id, indices in displays.items():
            self.displays.setdefault(display_id, []).extend(
                DisplayPlace(cell_id, index) for index in indices
            )
            self.displays.move_to_end(display_id)
        while len(self.displays) > MAX_DISPLAYS:
            self.displays.popitem(last=False)

    def forget_cell(self, cell_id: str) -> None:
        """`cell_id`'s outputs were replaced or cleared: it shows no display id any more."""
        for display_id in list(self.displays):
            kept = [place for place in self.displays[display_id] if place.cell_id != cell_id]
            if kept:
                self.displays[display_id] = kept
            else:
                del self.displays[display_id]


class RunRecords:
    """Each notebook's :class:`NotebookRuns`, bounded, least recently used first out."""

    def __init__(self, max_notebooks: int = MAX_NOTEBOOKS) -> None:
        self.max_notebooks = max_notebooks
        self._notebooks: OrderedDict[str, NotebookRuns] = OrderedDict()

    def of(self, notebook: str) -> NotebookRuns:
        runs = self._notebooks.get(notebook)
        if runs is None:
            runs = self._notebooks[notebook] = NotebookRuns()
            while len(self._notebooks) > self.max_notebooks:
                self._notebooks.popitem(last=False)
        else:
            self._notebooks.move_to_end(notebook)
        return runs

    def peek(self, notebook: str) -> NotebookRuns | None:
        """The notebook's record if it has one (never creates one)."""
        return self._notebooks.get(notebook)
