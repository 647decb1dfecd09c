"""Which cells a whole-notebook call means: ``"all"``, ``"stale"``, a range, or a list of ids.

``run_cells`` and ``clear_outputs`` take one ``cells`` argument rather than
a tool per shape of selection:

- ``"all"``: every code cell, top to bottom;
- ``"stale"``: the code cells whose execution state is not ``fresh``
  (:mod:`.staleness`), judged again as the run goes;
- ``"3-7"``: the cells at indices 3 to 7, both included (``"3-"``: from 3 to
  the end; ``"5"``: that one cell);
- a list of cell ids: those cells, in the notebook's order.

``up_to_cell`` (an id or a 0-based index) ends any selection at that cell,
included. Markdown and raw cells in a range are passed over; naming one by
id is refused, as ``execute_cell`` refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._tool_calls.addressing import cell_position, index_of_id

ALL = "all"
STALE = "stale"
_RANGE = re.compile(r"^\s*(\d+)\s*(?:(-)\s*(\d+)?)?\s*$")

#: What the ``cells`` argument says, for a model reading the schema.
CELLS_HELP = (
    '"all" (every code cell), "stale" (cells not fresh on this kernel: never run, edited, run before a '
    'restart, or below a cell that ran or changed since), an index range "3-7" (inclusive; "3-" to the '
    "end), or a list of cell ids."
)


@dataclass(frozen=True)
class Selection:
    """The cells a call acts on: their indices, top to bottom, and whether to judge staleness."""

    indices: list[int]
    #: ``"stale"``: the caller runs a cell of ``indices`` only while it is stale.
    stale_only: bool = False
    #: How the caller named them, said back in results.
    said: str = ALL


def select(notebook: Any, cells: str | list[str], up_to_cell: int | str | None = None) -> Selection:
    """The code cells of `notebook` that `cells` and `up_to_cell` name (module docstring)."""
    all_cells = notebook.cells
    last = len(all_cells) - 1
    if up_to_cell is not None:
        last = _position(notebook, up_to_cell, "up_to_cell")
    if isinstance(cells, list):
        wanted = set()
        for cell_id in cells:
            index = _position(notebook, cell_id, "cell in cells")
            if all_cells[index].get("cell_type") != "code":
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    f"Cell {cell_id} is a {all_cells[index].get('cell_type')} cell; only code cells run or have outputs.",
                    cell_id=cell_id,
                )
            wanted.add(index)
        indices = sorted(index for index in wanted if index <= last)
        return Selection(indices, said=f"{len(cells)} cell(s) by id")
    text = cells.strip().lower()
    if text in (ALL, STALE):
        return Selection(_code_cells(all_cells, 0, last), stale_only=text == STALE, said=text)
    match = _RANGE.match(text)
    if match is None:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"cells={cells!r} is not a selection. Pass {CELLS_HELP}",
        )
    start = int(match.group(1))
    end = int(match.group(3)) if match.group(3) is not None else (last if match.group(2) else start)
    if start > len(all_cells) - 1 or end < start:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"cells={cells!r} names no cell: the notebook has {len(all_cells)} cells (indices 0 to "
            f"{len(all_cells) - 1}), and a range is 'first-last' with first <= last.",
            cell_count=len(all_cells),
        )
    return Selection(
        _code_cells(all_cells, start, min(end, last)), said=f"cells {start}-{min(end, last)}"
    )


def _code_cells(cells: Any, start: int, stop: int) -> list[int]:
    return [index for index in range(start, stop + 1) if cells[index].get("cell_type") == "code"]


def _position(notebook: Any, cell: int | str, argument: str) -> int:
    """The index of a cell named by id, or by a 0-based index (an int, or its digits when no
    cell has them as its id)."""
    if isinstance(cell, int) or (cell.isdigit() and index_of_id(notebook, cell) is None):
        return cell_position(notebook, int(cell), None, what=argument)
    return cell_position(notebook, None, cell, what=argument)
