"""Changes a person was shown before they land, kept until they answer: each server's own.

A dry run shown in the review app (``_apps/reviews.py``) leaves a
:class:`Proposal` behind under an unguessable id; ``review_change`` takes it
back, once, and only for the client it was shown to. The proposals belong to
one :class:`~jupyter_mcp_server._state.ServerState`, so two servers in one
process never answer each other's.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

#: Proposals kept at once (the oldest is forgotten first: its accept then says so).
KEPT = 64


@dataclass(frozen=True)
class Proposal:
    """One change a person was shown: which notebook, from which revision to which."""

    id: str
    #: Who was shown it (``callers.caller_of(ctx).owner``): only they answer it.
    owner: str
    tool: str
    path: str
    from_revision: str
    to_revision: str
    #: apply_edits: the batch, as the dry run planned it.
    operations: tuple[dict[str, Any], ...] = ()
    #: restore_notebook: the revision whose content comes back.
    restored_revision: str | None = None


class Proposals:
    """The proposals one server keeps, the newest :data:`KEPT` of them."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._lock = threading.Lock()
        self._proposals: OrderedDict[str, Proposal] = OrderedDict()

    def propose(
        self,
        owner: str,
        tool: str,
        path: str,
        from_revision: str,
        to_revision: str,
        *,
        operations: list[dict[str, Any]] | None = None,
        restored_revision: str | None = None,
    ) -> Proposal:
        """Keep a proposal; its id is what the review app answers about."""
        proposal = Proposal(
            id=secrets.token_urlsafe(16),
            owner=owner,
            tool=tool,
            path=path,
            from_revision=from_revision,
            to_revision=to_revision,
            operations=tuple(operations or ()),
            restored_revision=restored_revision,
        )
        with self._lock:
            self._proposals[proposal.id] = proposal
            while len(self._proposals) > self._kept:
                self._proposals.popitem(last=False)
        return proposal

    def taken(self, review_id: str, owner: str) -> Proposal | None:
        """The proposal, forgotten as it is answered: each is accepted or rejected once, and
        only by the client it was shown to (another's answer finds nothing, and changes
        nothing)."""
        with self._lock:
            proposal = self._proposals.get(review_id)
            if proposal is None or proposal.owner != owner:
                return None
            return self._proposals.pop(review_id)
