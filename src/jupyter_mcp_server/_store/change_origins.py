"""Who makes a change to a notebook, and which writes are one change for a person.

A tool sets the origin of the changes it makes (``EDIT_ORIGIN``, from its
caller); the store's writes read it, so that each entry of a notebook's
history (:mod:`.history`) names its tool, client, connection and user
without the store knowing about tools or callers. A whole-notebook run
holds its writes' entry (``HELD_ENTRY``) so that they are one entry.
"""

from __future__ import annotations

import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field, fields


@dataclass(frozen=True)
class Origin:
    """Who makes a change: the tool, the caller's client (its ``clientInfo`` name, or its
    token's client), its connection, and the person it acts for (``_calls/callers.py``)."""

    tool: str | None = None
    client: str | None = None
    connection: str | None = None
    #: For a restore: the revision whose content it wrote.
    restored_from: str | None = None
    #: The caller's user: its token's subject, or the local OS user.
    user: str | None = None


#: Origin's fields, by name (a history's note carries each).
ORIGIN_FIELDS = tuple(f.name for f in fields(Origin))

#: The origin of the changes the code running now makes (set by the tool being called).
EDIT_ORIGIN: ContextVar[Origin | None] = ContextVar("jupyter_mcp_edit_origin", default=None)


@dataclass
class HeldEntry:
    """Writes that are one change for a person (a whole-notebook run storing each cell's
    outputs as it ends): one entry in the history for all of them, added when they are done,
    instead of one per write pushing the rest of the history out."""

    #: Per notebook written, the revision before the first of these writes.
    before: dict[str, str | None] = field(default_factory=dict)
    #: The id of these writes in their pending notes and their entry (see `NotebookHistory.intend`).
    write: str = field(default_factory=lambda: secrets.token_hex(8))


#: Set while writes whose entry is held are made (see `HeldEntry`).
HELD_ENTRY: ContextVar[HeldEntry | None] = ContextVar("jupyter_mcp_held_entry", default=None)
