"""Where each person is in JupyterLab, read from the collaboration awareness.

Every page of a collaborative JupyterLab publishes, through the Y awareness protocol, who
it is (``user``) and, in a notebook's room, where its caret is: ``cursors``, each an
``anchor`` and a ``head`` as Yjs relative positions. A relative position names the shared
text it is in by that text's item id (``type``: ``{client, clock}``) and the character it
sticks to (``item``); the cell is the one whose source text has that id, and the selection is
the text between the anchor's and the head's offsets. JupyterLab's global awareness room
(the collaborators panel's) says which document each page has in front of it (``current``).

Only the server's copies of the rooms are read (the collaboration extension's rooms, in this
process): nothing is sent, nobody is asked, and the agent's own states (this package's
:mod:`jupyter_mcp_server._jupyter.presence`) are left out. Whatever cannot be read (a room
being torn down, a state from an older page) is skipped: the people are a courtesy to the
agent, never a reason for a call to fail.
"""

from __future__ import annotations

import logging
from typing import Any

from jupyter_mcp_server._calls.people import PersonFocus, shortened
from jupyter_mcp_server._jupyter.presence import GLOBAL_AWARENESS_ROOM, USERNAME

logger = logging.getLogger(__name__)

#: A notebook's room is named FORMAT:TYPE:FILE_ID.
NOTEBOOK_ROOM = "json:notebook:"


def people_in(rooms: dict[str, Any], path_of: Any) -> list[PersonFocus]:
    """Everyone in the collaboration extension's `rooms` and where they are, by username;
    `path_of(file_id)` answers a file id's path (None: unknown)."""
    found: dict[str, PersonFocus] = {}
    for name, room in list(rooms.items()):
        if not name.startswith(NOTEBOOK_ROOM):
            continue
        try:
            path = path_of(name[len(NOTEBOOK_ROOM) :])
            if path is None:
                continue
            for user, cursor in _carets(room):
                focus = _in_cell(room, cursor)
                if focus is None:
                    continue
                cell_index, cell_id, selection = focus
                found[user["username"]] = PersonFocus(
                    name=_name(user),
                    username=user["username"],
                    notebook=path,
                    cell_id=cell_id,
                    cell_index=cell_index,
                    selection=shortened(selection),
                )
        except Exception:
            logger.debug("Could not read the awareness of room %s", name, exc_info=True)
    front = rooms.get(GLOBAL_AWARENESS_ROOM)
    for user, state in _states(front) if front is not None else []:
        current = _current(state.get("current"), path_of)
        person = found.get(user["username"])
        if person is None:
            found[user["username"]] = PersonFocus(
                name=_name(user), username=user["username"], current=current
            )
        else:
            found[user["username"]] = PersonFocus(**{**person.as_json(), "current": current})
    return sorted(found.values(), key=lambda person: (person.name, person.username))


def _states(room: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(user, state) of each person in a room: not the room's own (the server's) client's,
    and not the agent's."""
    awareness = getattr(room, "awareness", None)
    if awareness is None:
        return []
    own = getattr(awareness, "client_id", None)
    people = []
    for client, state in list(getattr(awareness, "states", {}).items()):
        user = state.get("user") if isinstance(state, dict) else None
        if client == own or not isinstance(user, dict) or not user.get("username"):
            continue
        if str(user["username"]).startswith(USERNAME):
            continue
        people.append((user, state))
    return people


def _carets(room: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(user, primary cursor) of each person whose caret is in this room's document."""
    carets = []
    for user, state in _states(room):
        cursors = [c for c in state.get("cursors") or [] if isinstance(c, dict)]
        primary = next((c for c in cursors if c.get("primary")), cursors[0] if cursors else None)
        if primary is not None and isinstance(primary.get("anchor"), dict):
            carets.append((user, primary))
    return carets


def _in_cell(room: Any, cursor: dict[str, Any]) -> tuple[int, str, str] | None:
    """(cell index, cell id, selected text) of a cursor, or None: in no cell of the document."""
    from pycrdt import Array, Assoc, StickyIndex, Text

    anchor, head = cursor["anchor"], cursor.get("head") or cursor["anchor"]
    text_id = anchor.get("type")
    cells = room.ydoc.get("cells", type=Array)
    for index, ycell in enumerate(cells):
        source = ycell.get("source")
        if not isinstance(source, Text):
            continue
        # The text's own item id, as a relative position at its start names it.
        if StickyIndex.new(source, 0, Assoc.BEFORE).to_json().get("type") != text_id:
            continue
        start, end = sorted(
            StickyIndex.from_json(_position(p), source).get_index() for p in (anchor, head)
        )
        return index, str(ycell.get("id") or ""), str(source)[start:end]
    return None


def _position(position: dict[str, Any]) -> dict[str, Any]:
    """A Yjs relative position's JSON as pycrdt reads it (no null keys)."""
    return {key: value for key, value in position.items() if value is not None}


def _current(value: Any, path_of: Any) -> str | None:
    """The path of the document a page has in front of it (``current`` in its global state)."""
    if not isinstance(value, str) or not value:
        return None
    if value.startswith(NOTEBOOK_ROOM):
        return path_of(value[len(NOTEBOOK_ROOM) :]) or None
    return value.partition(":")[2] or None


def _name(user: dict[str, Any]) -> str:
    return str(user.get("display_name") or user.get("name") or user["username"])
