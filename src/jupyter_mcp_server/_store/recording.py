"""What the store tells a notebook's history, and how a kept revision is read back.

:class:`Recorder` is the store's side of :mod:`.history`: before a write, and
before the history answers, the history is reconciled with the file, so that
it ends at the revision being changed (the first time, as a revision seen,
without a tool; a revision the history does not end at, as the change of the
write that landed or as someone else's); the new revision's content is kept
before the file is written, and its entry added after. A change someone else
made is recorded when the store reads it, too. Nothing here ever fails an
edit: a history that cannot be written is logged, and the answer says that
history is off and why.

A revision's content is its header and its cells' texts; the texts are the
ones the store just encoded to write the file (:class:`.layout.CellTexts`),
so keeping a revision costs hashing the cells that changed, not re-encoding
the notebook.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._workspace.storage_errors import is_storage_error
from . import formats
from .change_origins import EDIT_ORIGIN, HELD_ENTRY, HeldEntry
from .diffs import cell_diff, metadata_diff
from .histories import Histories
from .history import Content, NotebookHistory, digest_of
from .layout import CellTexts, NotPlainJson, Verbatim, indented_json

if TYPE_CHECKING:
    from nbformat import NotebookNode

logger = logging.getLogger(__name__)


def content_of(notebook: NotebookNode, written: list[tuple[str, str]] | None) -> Content:
    """The content the history keeps of ``notebook``; ``written``: its cells' (text, digest), if encoded."""
    cells = notebook["cells"]
    header = {
        k: v for k, v in formats.disk_form(notebook, with_cells=False).items() if k != "cells"
    }
    if written is None or len(written) != len(cells) or any(not digest for _, digest in written):
        from nbformat.v4.nbjson import BytesEncoder

        texts = [
            json.dumps(
                formats.disk_cell(cell), cls=BytesEncoder, sort_keys=True, ensure_ascii=False
            )
            for cell in cells
        ]
        written = [(text, digest_of(text)) for text in texts]
    return Content(
        header=header,
        ids=[cell["id"] for cell in cells],
        digests=[digest for _, digest in written],
        texts=[text for text, _ in written],
    )


def encoded_content(notebook: NotebookNode, texts: CellTexts) -> Content:
    """The content of a notebook not just written (one read, or about to change)."""
    with contextlib.suppress(NotPlainJson):  # then content_of encodes each cell with json
        texts.cells_text(notebook["cells"], formats.disk_cell)
    return content_of(notebook, texts.take_written())


def notebook_at(history: NotebookHistory, revision: str) -> NotebookNode:
    """The notebook as it was at ``revision`` (``not_found`` when it is not kept)."""
    header, cells = history.content(revision)
    texts = history.texts(revision)
    joined = ",".join(texts[digest] for _, digest in cells)
    data = indented_json({**header, "cells": Verbatim("[" + joined + "]")}) + "\n"
    return formats.parse_notebook(data.encode("utf-8"), formats.IPYNB, history.key).notebook


def diff_revisions(history: NotebookHistory, before: str, after: str) -> dict[str, Any]:
    """The cell-level diff between two kept revisions, reading only the cells that differ."""
    old_header, old_cells = history.content(before)
    new_header, new_cells = history.content(after)
    same = set(old_cells) & set(new_cells)
    shared: dict[tuple[str, str], dict[str, Any]] = {}

    def cells(revision: str, listed: list[tuple[str, str]]) -> list[dict[str, Any]]:
        texts = history.texts(
            revision, {digest for pair in listed if pair not in same for _, digest in [pair]}
        )
        out = []
        for pair in listed:
            if pair in same:
                out.append(shared.setdefault(pair, {"id": pair[0]}))  # the same object: unchanged
            else:
                out.append(_memory_cell(json.loads(texts[pair[1]])))
        return out

    diff = cell_diff(cells(before, old_cells), cells(after, new_cells))
    diff["metadata"] = metadata_diff(old_header.get("metadata", {}), new_header.get("metadata", {}))
    return diff


def _memory_cell(disk: dict[str, Any]) -> dict[str, Any]:
    """A stored cell as the tools see it (sources joined), enough to compare and summarise."""
    source = disk.get("source", "")
    return {**disk, "source": "".join(source) if isinstance(source, list) else source}


class Recorder:
    """Keeps the histories of the notebooks one store holds."""

    def __init__(self, histories: Histories, namespace: str) -> None:
        self.histories = histories
        self.namespace = namespace
        #: Per notebook, the id of the write said to be coming (`will_write`), for its entry
        #: (`written`). The store's lock of the notebook holds between the two.
        self._writes: dict[str, str] = {}
        #: Each notebook's last history failure, until a write of its history succeeds.
        self._failures: dict[str, BaseException] = {}

    def history(self, key: str) -> NotebookHistory | None:
        return self.histories.of(self.namespace, key)

    def new_cell_texts(self) -> CellTexts:
        return CellTexts(digest_of)

    def _off(self, key: str, error: BaseException) -> str:
        where = self.histories.root
        self._failures[key] = error
        if is_storage_error(error):
            # The disk is full, read-only or forbidden: said in one line, no traceback; the
            # person can act on it, and nothing here is a bug.
            logger.warning("The history of %s could not be written in %s: %s", key, where, error)
        else:
            logger.warning("The history of %s could not be written: %s", key, error, exc_info=error)
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return f"the history directory {where} could not be written ({reason}); the change was made but is not in its history."

    def failure_of(self, key: str) -> BaseException | None:
        """Why the last write to `key`'s history failed, until one succeeds again."""
        return self._failures.get(key)

    def last_kept(self, key: str) -> NotebookNode | None:
        """The notebook as its history last kept it (None without one): where the ids of a file
        that stores none (a percent script, nbformat before 4.5) are found after a restart."""
        history = self.history(key)
        try:
            if history is None or not history.exists():
                return None
            revision = history.last_revision()
            return notebook_at(history, revision) if revision else None
        except Exception:  # a history never fails a read: the ids are derived instead
            logger.debug("The history of %s could not be read for its cell ids", key, exc_info=True)
            return None

    def noticed(
        self,
        key: str,
        notebook: NotebookNode,
        revision: str,
        texts: CellTexts,
        still_on_disk: Callable[[], bool | None] | None = None,
    ) -> str | None:
        """The store read a revision it did not write: the history ends there, if the notebook
        has one (and the file, by ``still_on_disk``, still holds it)."""
        history = self.history(key)
        try:
            if history is None or not history.exists():
                return None
            history.reconcile(revision, lambda: encoded_content(notebook, texts), still_on_disk)
        except Exception as error:  # a history never fails what the store was asked to do
            return self._off(key, error)
        return None

    async def before_write(
        self,
        key: str,
        notebook: NotebookNode,
        revision: str,
        texts: CellTexts,
        stat: Any,
        still_on_disk: Callable[[], bool | None] | None = None,
    ) -> str | None:
        """Make sure the history ends at the revision about to change, the file's: the first
        time, as a revision seen (or, for a notebook renamed outside the server, at the end of
        its old history); later, reconciled (`NotebookHistory.reconcile`). Before the history
        answers, too (the store's `remember`)."""
        held = HELD_ENTRY.get()
        if held is not None and key in held.before:
            return None  # what the held writes change was kept before the first of them
        history = self.history(key)
        if history is None:
            return self.histories.off
        try:
            if history.last_revision() == revision:
                return None
            if not history.exists():
                await self.renamed_here(key, revision, stat)
                history = self.history(key)  # the one that followed the notebook here, if any
                assert history is not None
            if history.exists():
                # A revision read while another process replaced the file is not recorded
                # after that process's entry (`still_on_disk`); the write then finds the file
                # changed and reads it again.
                history.reconcile(revision, lambda: encoded_content(notebook, texts), still_on_disk)
            else:
                history.store(revision, encoded_content(notebook, texts))
                history.append(revision, None, None)
        except Exception as error:
            return self._off(key, error)
        return None

    def will_write(
        self,
        key: str,
        notebook: NotebookNode | None,
        revision: str | None,
        previous: str | None,
        written: Any,
    ) -> str | None:
        """Keep the content of the revision about to be written, and say it is coming."""
        history = self.history(key)
        if history is None:
            return self.histories.off
        held = HELD_ENTRY.get()
        try:
            if held is not None:
                # The entry comes when they are done (`release`); the note says that each of
                # these writes is theirs, should the process die before. Not the content: the
                # next read keeps it, from the file.
                held.before.setdefault(key, previous)
                history.intend(revision, history.last_revision(), EDIT_ORIGIN.get(), held.write)
                return None
            content = None
            if revision is not None and notebook is not None:
                content = content_of(notebook, written)
            self._writes[key] = history.intend(
                revision, previous, EDIT_ORIGIN.get(), content=content
            )
        except Exception as error:
            return self._off(key, error)
        return None

    def written(self, key: str, revision: str, previous: str | None) -> str | None:
        """Add the entry of a write that happened."""
        held = HELD_ENTRY.get()
        if held is not None and key in held.before:
            return None
        history = self.history(key)
        if history is None:
            return self.histories.off
        try:
            history.append(revision, previous, EDIT_ORIGIN.get(), self._writes.pop(key, None))
        except Exception as error:
            return self._off(key, error)
        self._failures.pop(key, None)
        return None

    def release(
        self, key: str, notebook: NotebookNode, revision: str, texts: CellTexts, held: HeldEntry
    ) -> str | None:
        """The one entry of the held writes to ``key``: from the revision before the first of
        them to ``revision``, the notebook as the last left it (by the origin set now)."""
        if key not in held.before:
            return None
        previous = held.before.pop(key)
        history = self.history(key)
        if history is None:
            return self.histories.off
        try:
            last = history.last_revision()
            if last == revision:
                return None
            if last != previous:
                # The history was reconciled meanwhile (someone looked, or changed the notebook,
                # during the run): the run's entry follows what it recorded.
                previous = last
            history.store(revision, encoded_content(notebook, texts))
            history.append(revision, previous, EDIT_ORIGIN.get(), held.write)
        except Exception as error:
            return self._off(key, error)
        self._failures.pop(key, None)
        return None

    def missing(self, key: str) -> None:
        """The notebook is not there any more: its history says so, and stays."""
        history = self.history(key)
        if history is not None and history.exists():
            try:
                history.mark_missing()
            except Exception as error:
                self._off(key, error)

    async def renamed_here(self, key: str, revision: str, stat: Any) -> None:
        """A notebook new to the history holding what a missing notebook's history ended
        at was renamed outside the server: that history follows it."""
        for old in self.histories.ended_at(self.namespace, revision):
            if old != key and await stat(old) is None:
                self.histories.moved(self.namespace, old, key)
                return
