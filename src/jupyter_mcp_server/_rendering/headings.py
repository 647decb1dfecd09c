"""A notebook's Markdown headings: what ``outline`` folds into a tree and a page of cells names.

Headings are how a long notebook says what it holds; a model that knows
where they are reads only the section it needs. Kept apart from ``outline``
so that ``read_notebook`` can say which headings fall inside the page it
answers without importing the outline tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from jupyter_mcp_server._schemas import models

#: Headings shown at most; deeper levels are folded first.
MAX_HEADINGS = 30
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def headings_of(cells: Sequence[Any], first_index: int = 0) -> list[models.Heading]:
    """Every Markdown heading (``#`` lines outside code fences), in order; cell indices
    counted from `first_index` (the index of ``cells[0]`` in its notebook)."""
    found = []
    for index, cell in enumerate(cells, start=first_index):
        if cell.get("cell_type") != "markdown":
            continue
        fenced = False
        for line in str(cell.get("source", "")).splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and (match := _HEADING.match(line)):
                found.append(
                    models.Heading(
                        level=len(match.group(1)), text=match.group(2)[:80], cell_index=index
                    )
                )
    return found


def headings_line(headings: list[models.Heading]) -> str | None:
    """The headings of a page of cells on one line, or None when it holds none."""
    if not headings:
        return None
    said = "; ".join(f"{'#' * h.level} {h.text} [{h.cell_index}]" for h in headings[:MAX_HEADINGS])
    more = f"; … {len(headings) - MAX_HEADINGS} more" if len(headings) > MAX_HEADINGS else ""
    return f"Headings in these cells: {said}{more}"
