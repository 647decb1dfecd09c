"""Values computed from a file's bytes, kept until the file changes.

A search reads every notebook in the workspace; reading and parsing a
hundred megabytes of notebooks on every call would cost seconds each time.
What a caller derives from a file (its searchable texts) is kept here under
the file's fingerprint and computed again only when the fingerprint differs.
A fingerprint seen within the same clock tick as the file's last write proves
nothing (the file may change again without its status showing it), so the
caller stores a value only when its ``Files`` trusts that snapshot, exactly as
the store decides whether to compare bytes before a write.

The values are bounded by a total weight (the caller's measure, characters
for texts); the least recently used go first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from jupyter_mcp_server._store.files import Fingerprint

Value = TypeVar("Value")


@dataclass(frozen=True)
class _Kept(Generic[Value]):
    fingerprint: Fingerprint
    value: Value
    weight: int


class DerivedValues(Generic[Value]):
    """Per-file values keyed by the file's fingerprint, least recently used dropped past `max_weight`."""

    def __init__(self, max_weight: int) -> None:
        self.max_weight = max_weight
        self.weight = 0
        self._kept: OrderedDict[str, _Kept[Value]] = OrderedDict()

    def get(self, key: str, fingerprint: Fingerprint) -> Value | None:
        """The value derived from `key` when it showed `fingerprint`, or None."""
        kept = self._kept.get(key)
        if kept is None:
            return None
        if kept.fingerprint != fingerprint:
            self._drop(key)
            return None
        self._kept.move_to_end(key)
        return kept.value

    def put(self, key: str, fingerprint: Fingerprint, value: Value, weight: int) -> None:
        """Keep `value` for `key` at `fingerprint`; a value heavier than the whole bound is not kept."""
        self._drop(key)
        if weight > self.max_weight:
            return
        self._kept[key] = _Kept(fingerprint, value, weight)
        self.weight += weight
        while self.weight > self.max_weight:
            oldest = next(iter(self._kept))
            self._drop(oldest)

    def forget(self, key: str) -> None:
        self._drop(key)

    def __len__(self) -> int:
        return len(self._kept)

    def _drop(self, key: str) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:
            self.weight -= kept.weight
