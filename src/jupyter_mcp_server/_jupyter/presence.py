"""The agents as collaborators a person can see in JupyterLab.

JupyterLab's real-time collaboration shows who else is in a document through
the Y awareness protocol: each client of a notebook's room publishes a state
(``user``: a name, initials and a colour; ``cursors``: where its caret is, as
Y relative positions), and every page draws the others' carets in the cells,
with their names; the "Online collaborators" panel lists the users of the
global awareness room (``JupyterLab:globalAwareness``) with the document each
has in front of it.

Every agent (every caller, ``_calls/callers.py``: one person's client in one
session) is a collaborator of its own: while it edits or runs a cell of a
notebook open in JupyterLab, the room's awareness holds a state for it under
an awareness client id of its own (derived from who it is, so it stays the
same from edit to edit), named ``CLIENT (USER)`` (its username
``jupyter-mcp-server:CLIENT:USER``), with the agents' colour and its caret at
the end of the cell it wrote or is running; the global room lists it with the
notebooks it is in. Two agents in one room are two collaborators, each with
its caret. The states are the room's own clients' as far as the pages can
tell: published with the room's awareness (as its local changes, which the
room broadcasts), renewed while a run holds them (pages drop a state not
renewed within 30 s), and emptied a few seconds after the agent's last edit
(or when its run ends). Nothing here awaits, and a failure only costs the
courtesy, never the edit.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
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


def identity(caller: Any) -> dict[str, Any]:
    """An agent as JupyterLab's awareness describes a user: its client, and whom it acts for."""
    client = getattr(caller, "client", None)
    user = getattr(caller, "user", None)
    # The client's name first: JupyterLab cuts a caret's flag at about twenty characters.
    if client and user:
        name, username = f"{client} ({user})", f"{USERNAME}:{client}:{user}"
    elif client:
        name, username = f"{client} (agent)", f"{USERNAME}:{client}"
    elif user:
        name, username = f"agent ({user})", f"{USERNAME}::{user}"
    else:
        name, username = f"{USERNAME} agent", USERNAME
    return {
        "username": username,
        "name": name,
        "display_name": name,
        "initials": "AI",
        "color": COLOUR,
        "avatar_url": None,
    }


def agent_key(caller: Any) -> str:
    """What tells one agent from another: its owner key (one person, client and session)."""
    return str(getattr(caller, "owner", None) or "")


def awareness_id(key: str, taken: int) -> int:
    """The awareness client id an agent's states have: the same for the same agent, never
    `taken` (the room's own); 31 bits, as Yjs' own random ids are at most 32."""
    number = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") & 0x7FFFFFFF
    return number if number != taken else number ^ 1


def publish(awareness: Any, client_id: int, state: dict[str, Any] | None) -> None:
    """Set (or, with None, remove) the state of `client_id` in `awareness`, as a local change:
    the room broadcasts it to every page, and a page that joins later is sent it."""
    from pycrdt import Encoder

    meta = awareness.meta.get(client_id) or {}
    clock = int(meta.get("clock", 0)) + 1
    encoder = Encoder()
    encoder.write_var_uint(1)
    encoder.write_var_uint(client_id)
    encoder.write_var_uint(clock)
    encoder.write_var_string(json.dumps(state, separators=(",", ":")))
    awareness.apply_awareness_update(encoder.to_bytes(), "local")


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


#: Seconds between renewals of a state a run holds (pages drop one not renewed in 30).
RENEW = 10.0


@dataclass
class _Shown:
    """One agent shown in one room: the room's awareness, its path, its awareness id, the runs
    holding it, the clear and renewal timers, and the state it has there."""

    awareness: Any
    path: str
    agent: str
    user: dict[str, Any]
    client_id: int
    holds: int = 0
    timer: asyncio.TimerHandle | None = None
    renewal: asyncio.TimerHandle | None = None
    state: dict[str, Any] = field(default_factory=dict)


class Presence:
    """The agents in the awareness of the rooms they work in, and of JupyterLab's global room."""

    def __init__(self, global_awareness: Any, linger: float = LINGER) -> None:
        #: Answers the global awareness room's awareness, or None when no page has it open.
        self._global_awareness = global_awareness
        self.linger = linger
        #: By (the room's awareness, the agent).
        self._shown: dict[tuple[int, str], _Shown] = {}
        #: The global room's state of each agent listed there, by agent.
        self._global: dict[str, tuple[Any, int, dict[str, Any]]] = {}

    def show(self, awareness: Any, path: str, ycell: Any, caller: Any) -> None:
        """Show the agent `caller` in this room, its caret at the end of `ycell` (None: no
        caret), until `linger` seconds from now or the end of a run holding it, whichever is later."""
        try:
            agent = agent_key(caller)
            key = (id(awareness), agent)
            shown = self._shown.get(key)
            if shown is None or shown.awareness is not awareness:
                taken = getattr(awareness, "client_id", -1)
                shown = self._shown[key] = _Shown(
                    awareness, path, agent, identity(caller), awareness_id(agent + path, taken)
                )
            state: dict[str, Any] = {"user": shown.user}
            caret = caret_at_end(ycell)
            if caret is not None:
                state["cursors"] = [caret]
            if state != shown.state:
                shown.state = state
                publish(awareness, shown.client_id, state)
            self._show_globally(agent, shown.user, path)
            self._clear_later(shown)
        except Exception:  # shown to the person as a courtesy: the edit is what counts
            logger.debug("Could not show the agent in the awareness of %s", path, exc_info=True)

    @contextlib.contextmanager
    def holding(self, awareness: Any, path: str, ycell: Any, caller: Any) -> Iterator[None]:
        """Shown for as long as the block runs (a cell running), and `linger` seconds after."""
        self.show(awareness, path, ycell, caller)
        shown = self._shown.get((id(awareness), agent_key(caller)))
        if shown is not None:
            shown.holds += 1
            self._renew_later(shown)
        try:
            yield
        finally:
            if shown is not None:
                shown.holds -= 1
                self._clear_later(shown)

    def shown_agents(self) -> int:
        """How many agents are shown in rooms now."""
        return len({shown.agent for shown in self._shown.values()})

    def _renew_later(self, shown: _Shown) -> None:
        if shown.renewal is None:
            shown.renewal = asyncio.get_running_loop().call_later(RENEW, self._renew, shown)

    def _renew(self, shown: _Shown) -> None:
        shown.renewal = None
        if not shown.holds or self._shown.get((id(shown.awareness), shown.agent)) is not shown:
            return
        with contextlib.suppress(Exception):
            publish(shown.awareness, shown.client_id, shown.state)
            listed = self._global.get(shown.agent)
            if listed is not None:
                publish(*listed)
        self._renew_later(shown)

    def _clear_later(self, shown: _Shown) -> None:
        if shown.timer is not None:
            shown.timer.cancel()
            shown.timer = None
        if shown.holds == 0:
            shown.timer = asyncio.get_running_loop().call_later(self.linger, self._clear, shown)

    def _clear(self, shown: _Shown) -> None:
        shown.timer = None
        key = (id(shown.awareness), shown.agent)
        if shown.holds or self._shown.get(key) is not shown:
            return
        del self._shown[key]
        if shown.renewal is not None:
            shown.renewal.cancel()
            shown.renewal = None
        with contextlib.suppress(Exception):
            publish(shown.awareness, shown.client_id, None)
        self._show_globally(shown.agent, shown.user, None)

    def _show_globally(self, agent: str, user: dict[str, Any], current: str | None) -> None:
        """The global room lists the agent with the notebooks it is shown in (`current`, or one
        of them, in front of it), or not at all."""
        with contextlib.suppress(Exception):
            awareness = self._global_awareness()
            listed = self._global.get(agent)
            if awareness is None or (listed is not None and listed[0] is not awareness):
                self._global.pop(agent, None)
                listed = None
                if awareness is None:
                    return
            paths = sorted({shown.path for shown in self._shown.values() if shown.agent == agent})
            if not paths:
                if listed is not None:
                    del self._global[agent]
                    publish(awareness, listed[1], None)
                return
            if current not in paths:
                before = str((listed[2] if listed else {}).get("current", "")).partition(":")[2]
                current = before if before in paths else paths[0]
            state = {"user": user, "current": f"notebook:{current}", "documents": paths}
            client_id = (
                listed[1] if listed else awareness_id(agent, getattr(awareness, "client_id", -1))
            )
            if listed is None or listed[2] != state:
                self._global[agent] = (awareness, client_id, state)
                publish(awareness, client_id, state)
