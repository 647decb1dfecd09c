"""The agent as a collaborator a person can see in JupyterLab.

JupyterLab's real-time collaboration shows who else is in a document through
the Y awareness protocol: each client of a notebook's room publishes a state
(``user``: a name, initials and a colour; ``cursors``: where its caret is, as
Y relative positions), and every page draws the others' carets in the cells,
with their names; the "Online collaborators" panel lists the users of the
global awareness room (``JupyterLab:globalAwareness``) with the document each
has in front of it.

The agent edits a room's document as the room's own (server-side) client, so
it is shown through that client's awareness state: while it edits or runs a
cell of a notebook open in JupyterLab, the room's awareness names it
``CLIENT (agent)``, CLIENT being the MCP client's ``clientInfo`` name (its
username ``jupyter-mcp-server:CLIENT``), with the agent's colour and its caret at the end of the cell it wrote
or is running; the global room lists it with that notebook. A few seconds
after its last edit (or when a run ends), the states are emptied again, and
the pages drop it. Rooms broadcast their local awareness state themselves;
nothing here awaits, and a failure only costs the courtesy, never the edit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

#: Seconds the agent stays shown in a room after its last edit there.
LINGER = 5.0
#: JupyterLab's palette of collaborator colours (a CSS variable the theme defines).
COLOUR = "var(--jp-collaborator-color7)"
#: The room JupyterLab's "Online collaborators" panel follows.
GLOBAL_AWARENESS_ROOM = "JupyterLab:globalAwareness"
#: Every name this server shows starts so: a state it set is told from a person's by it.
USERNAME = "jupyter-mcp-server"


def identity(client: str | None) -> dict[str, Any]:
    """The agent as JupyterLab's awareness describes a user."""
    # The client's name first: JupyterLab cuts a caret's flag at about twenty characters.
    name = f"{client} (agent)" if client else f"{USERNAME} agent"
    return {
        "username": f"{USERNAME}:{client}" if client else USERNAME,
        "name": name,
        "display_name": name,
        "initials": "AI",
        "color": COLOUR,
        "avatar_url": None,
    }


def caret_at_end(ycell: Any) -> dict[str, Any] | None:
    """A collapsed selection at the end of a cell's source, as Yjs writes a cursor's
    relative positions in awareness (every key present, null when unused)."""
    from pycrdt import Assoc, StickyIndex, Text

    source = ycell.get("source") if ycell is not None else None
    if not isinstance(source, Text):
        return None
    # Before the last character (or at the start of an empty text): Yjs' own end position.
    position = {"type": None, "tname": None, "item": None, "assoc": 0}
    position.update(StickyIndex.new(source, len(source), Assoc.BEFORE).to_json())
    return {"anchor": position, "head": position, "primary": True, "empty": True}


def _is_ours(awareness: Any) -> bool:
    state = awareness.get_local_state() or {}
    return str((state.get("user") or {}).get("username", "")).startswith(USERNAME)


@dataclass
class _Shown:
    """The agent shown in one room: its awareness, its path, runs holding it, the clear timer."""

    awareness: Any
    path: str
    holds: int = 0
    timer: asyncio.TimerHandle | None = None
    state: dict[str, Any] = field(default_factory=dict)


class Presence:
    """The agent in the awareness of the rooms it works in, and of JupyterLab's global room."""

    def __init__(self, global_awareness: Any, linger: float = LINGER) -> None:
        #: Answers the global awareness room's awareness, or None when no page has it open.
        self._global_awareness = global_awareness
        self.linger = linger
        self._shown: dict[int, _Shown] = {}

    def show(self, awareness: Any, path: str, ycell: Any, client: str | None) -> None:
        """Show the agent in this room, its caret at the end of `ycell` (None: no caret), until
        `linger` seconds from now or the end of a run holding it, whichever is later."""
        try:
            shown = self._shown.get(id(awareness))
            if shown is None or shown.awareness is not awareness:
                shown = self._shown[id(awareness)] = _Shown(awareness, path)
            state: dict[str, Any] = {"user": identity(client)}
            caret = caret_at_end(ycell)
            if caret is not None:
                state["cursors"] = [caret]
            if state != shown.state:
                shown.state = state
                awareness.set_local_state(state)
            self._show_globally(client, path)
            self._clear_later(shown)
        except Exception:  # shown to the person as a courtesy: the edit is what counts
            logger.debug("Could not show the agent in the awareness of %s", path, exc_info=True)

    @contextlib.contextmanager
    def holding(self, awareness: Any, path: str, ycell: Any, client: str | None) -> Iterator[None]:
        """Shown for as long as the block runs (a cell running), and `linger` seconds after."""
        self.show(awareness, path, ycell, client)
        shown = self._shown.get(id(awareness))
        if shown is not None:
            shown.holds += 1
        try:
            yield
        finally:
            if shown is not None:
                shown.holds -= 1
                self._clear_later(shown)

    def _clear_later(self, shown: _Shown) -> None:
        if shown.timer is not None:
            shown.timer.cancel()
            shown.timer = None
        if shown.holds == 0:
            shown.timer = asyncio.get_running_loop().call_later(self.linger, self._clear, shown)

    def _clear(self, shown: _Shown) -> None:
        shown.timer = None
        if shown.holds or self._shown.get(id(shown.awareness)) is not shown:
            return
        del self._shown[id(shown.awareness)]
        with contextlib.suppress(Exception):
            if _is_ours(shown.awareness):
                shown.awareness.set_local_state({})
        self._show_globally(None, None)

    def _show_globally(self, client: str | None, current: str | None) -> None:
        """The global room lists the agent with the notebooks it is shown in (`current`, or one
        of them, in front of it), or not at all."""
        with contextlib.suppress(Exception):
            awareness = self._global_awareness()
            if awareness is None:
                return
            paths = sorted({shown.path for shown in self._shown.values()})
            if not paths:
                if _is_ours(awareness):
                    awareness.set_local_state({})
                return
            if client is None and _is_ours(awareness):
                user = (awareness.get_local_state() or {}).get("user") or identity(None)
            else:
                user = identity(client)
            if current not in paths:
                before = str((awareness.get_local_state() or {}).get("current", "")).partition(":")[
                    2
                ]
                current = before if before in paths else paths[0]
            state = {"user": user, "current": f"notebook:{current}", "documents": paths}
            if awareness.get_local_state() != state:
                awareness.set_local_state(state)
