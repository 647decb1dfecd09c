"""Where the people beside the agent are: the open notebook, the selected cell, the selected text.

Inside JupyterLab with its collaboration package, each person's page says where they are
(:mod:`jupyter_mcp_server._jupyter.focus` reads it); elsewhere nobody is known and nothing is
said. An agent told "fix this cell" needs the cell the person means, so ``outline`` and
``read_notebook`` say it in one line, only when somebody is in that notebook, and
``presence://`` says it for everyone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Characters of selected text shown; the rest is cut with an ellipsis.
SELECTION_CHARS = 200


@dataclass(frozen=True)
class PersonFocus:
    """One person in JupyterLab and what is in front of them."""

    #: As JupyterLab shows them (their display name).
    name: str
    #: Their identity's username, stable while they are signed in.
    username: str
    #: The document in front of them (the tab they look at), when the page says.
    current: str | None = None
    #: The notebook their caret is in, and its cell there (id and index, None: no caret).
    notebook: str | None = None
    cell_id: str | None = None
    cell_index: int | None = None
    #: The text they selected in that cell ("" when the selection is empty).
    selection: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def shortened(text: str) -> str:
    return text if len(text) <= SELECTION_CHARS else text[: SELECTION_CHARS - 1] + "…"


def focus_line(people: list[PersonFocus], path: str) -> str | None:
    """One line saying who is in `path` and where, or None when nobody is."""
    said = []
    for person in people:
        if person.notebook == path and person.cell_index is not None:
            where = f"cell {person.cell_index} ({person.cell_id})"
            if person.selection:
                where += f", selected {person.selection!r}"
            said.append(f"{person.name} at {where}")
        elif person.current == path:
            said.append(f"{person.name} has it open")
    return "People here: " + "; ".join(said) + "." if said else None
