"""Every notebook's history under one state directory: found by its notebook, moved with it.

A notebook's history (:mod:`.history`) is a directory named by a hash of where
its notebooks are kept and its path. This is the one place that knows that
naming: it opens each notebook's history once, moves a history when its
notebook is renamed (unless the new name has one already), and finds which
notebooks' histories end at a revision (where a renamed notebook may have come
from, when the rename was made outside the server).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path

from .history import Limits, NotebookHistory


class Histories:
    """Every notebook's history under one state directory."""

    def __init__(
        self, root: Path | None, limits: Limits | None = None, off: str | None = None
    ) -> None:
        self.root = root
        self.limits = limits or Limits()
        #: Why there is no history at all (None: there is one).
        self.off = off if root is not None else (off or "no history directory is configured")
        self._open: dict[str, NotebookHistory] = {}

    def of(self, namespace: str, key: str) -> NotebookHistory | None:
        """The history of notebook ``key`` where notebooks are kept in ``namespace``."""
        if self.root is None:
            return None
        name = hashlib.sha256(f"{namespace}\0{key}".encode()).hexdigest()[:32]
        history = self._open.get(name)
        if history is None:
            history = self._open[name] = NotebookHistory(
                self.root / name, namespace, key, self.limits
            )
        return history

    def moved(self, namespace: str, old: str, new: str) -> bool:
        """The notebook ``old`` is now ``new``: its history follows (unless ``new`` has one)."""
        source, target = self.of(namespace, old), self.of(namespace, new)
        if source is None or target is None or not source.exists() or target.exists():
            return False
        with source.locked():
            if target.directory.exists():
                shutil.rmtree(target.directory)  # a lock file, at most: no entries
            os.replace(source.directory, target.directory)
        self._open.pop(source.directory.name, None)
        self._open.pop(target.directory.name, None)
        moved = self.of(namespace, new)
        assert moved is not None
        with moved.locked():
            index = moved.index()
            index.pop("missing", None)
            index["path"] = new
            index.setdefault("renamed_from", []).append(old)
            moved.write_index(index)
        return True

    def ended_at(self, namespace: str, revision: str) -> list[str]:
        """The notebooks whose history ends at ``revision`` (where a renamed one may have come from)."""
        if self.root is None or not self.root.is_dir():
            return []
        found = []
        for directory in self.root.iterdir():
            candidate = NotebookHistory(directory, namespace, "", self.limits)
            with contextlib.suppress(OSError, ValueError):
                index = candidate.index()
                if (
                    index.get("namespace") == namespace
                    and candidate.last_revision_read() == revision
                ):
                    found.append(str(index["path"]))
        return found
