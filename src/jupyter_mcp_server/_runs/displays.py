"""Display updates across cells: an output with a display id shows its latest state wherever it is.

``display(obj, display_id="x")`` in one cell and ``handle.update(...)`` (an
``update_display_data``, or a new ``display_data`` with the same id) in a
later one change the first cell's output, as JupyterLab and nbclient show
it. Display ids are transient: the notebook never stores them, so the kernel
manager's record keeps where each id is shown (``_kernels/records.py``) and
the write that stores a cell's outputs carries its updates into the earlier
cells too. Within one execution the collector does the same
(``_kernels/outputs.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_mcp_server._kernels.execution import ExecutionOutcome
from jupyter_mcp_server._kernels.records import NotebookRuns
from jupyter_mcp_server._tool_calls.addressing import index_of_id

#: Outputs a display id can be shown by.
DISPLAY_TYPES = frozenset({"display_data", "execute_result"})


def display_writes(
    runs: NotebookRuns, kernel_id: str, cell_id: str, outcome: ExecutionOutcome
) -> Callable[[Any], None] | None:
    """Record where `cell_id`'s new outputs show display ids, and answer the change that shows
    its display updates in the other cells (None when it has none).

    The change may be applied more than once (a store retries on a file that changed
    meanwhile): it only sets what an output shows, so applying it again changes nothing.
    """
    collected = outcome.outputs
    targets = [
        (place, update)
        for display_id, update in collected.display_updates.items()
        for place in runs.places(display_id, kernel_id)
        if place.cell_id != cell_id
    ]
    runs.shown(cell_id, kernel_id, collected.displays)
    if not targets:
        return None

    def change(notebook: Any) -> None:
        for place, update in targets:
            index = index_of_id(notebook, place.cell_id)
            outputs = notebook.cells[index].get("outputs") if index is not None else None
            if not outputs or place.index >= len(outputs):
                continue
            output = outputs[place.index]
            if output.get("output_type") in DISPLAY_TYPES:
                from nbformat import from_dict  # lazy: nbformat costs start-up its import

                output["data"] = from_dict(update["data"])
                output["metadata"] = from_dict(update["metadata"])

    return change
