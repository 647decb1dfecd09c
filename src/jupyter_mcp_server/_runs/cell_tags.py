"""The cell tags Jupyter's notebook runners honour, honoured by whole-notebook runs here too.

nbclient (so nbconvert's ``--execute``, papermill and jupyter-book) passes over
a cell tagged ``skip-execution`` and lets a cell tagged ``raises-exception``
fail without stopping the run: its error is what the notebook means to show.
A notebook written for those runners runs the same way through ``run_cells``
and ``verify_notebook``.
"""

from __future__ import annotations

from typing import Any

#: nbclient's ``skip_cells_with_tag`` default: the cell is not run, its outputs stay.
SKIP_EXECUTION = "skip-execution"
#: An error in the cell is expected: the run goes on past it.
RAISES_EXCEPTION = "raises-exception"


def tags_of(cell: Any) -> frozenset[str]:
    """A cell's tags (none when its metadata has no list of them)."""
    tags = (cell.get("metadata") or {}).get("tags")
    return (
        frozenset(tag for tag in tags if isinstance(tag, str))
        if isinstance(tags, list)
        else frozenset()
    )


def skips_execution(cell: Any) -> bool:
    return SKIP_EXECUTION in tags_of(cell)


def expects_an_error(cell: Any) -> bool:
    return RAISES_EXCEPTION in tags_of(cell)
