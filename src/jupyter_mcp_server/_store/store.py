"""The notebooks the server edits: one in-memory document per file, never stale.

Agents edit notebooks that people also have open in JupyterLab or an editor.
Re-parsing a 2,000-cell notebook on every call is slow, and keeping a parsed
copy without checking it silently overwrites whatever someone else saved. So
each file's parsed document is kept together with the file's status
(mtime, size, inode, device) and its revision; every call stats the file
first and re-reads it only when it changed. A mutation edits the document in
place, serializes it once, checks the file once more and replaces it
atomically. Nothing is validated again per mutation: the document was
validated when it was read, and the tools keep it valid.

A revision is the first 16 hex digits of the SHA-256 of the file's bytes, so
it changes exactly when the bytes do, whoever wrote them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import ALREADY_EXISTS, NOT_FOUND, REVISION_CONFLICT, ToolFailure
from .._workspace import ChangedMeanwhile
from . import formats
from .change_origins import HeldEntry
from .files import Files, Snapshot, WorkspaceFiles, revision_of
from .layout import CellTexts
from .patience import Patience
from .recording import Recorder

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from .._workspace import Workspace

T = TypeVar("T")


@dataclass(frozen=True)
class NotebookView:
    """A notebook as the store holds it right now.

    ``notebook`` is the live document, shared with the store: callers read
    what they need before their next ``await`` and never change it; only
    :meth:`NotebookStore.mutate` does.
    """

    path: str
    notebook: NotebookNode
    revision: str
    format: str
    #: The file's nbformat version when older than 4.5 ("3.0", "4.4"): the
    #: next write saves it as 4.5.
    older_format: str | None = None
    #: The file's nbformat version when newer than 4.5 ("4.99"): kept at every write.
    newer_format: str | None = None
    #: On the view a mutation answers with: the version that write upgraded the file from.
    upgraded_from: str | None = None
    #: On the view a mutation answers with: the revision it was applied to.
    previous_revision: str | None = None
    #: On the view a mutation answers with: why the change is not in the notebook's history.
    history_off: str | None = None


@dataclass(frozen=True)
class _Document:
    notebook: NotebookNode
    format: str
    snapshot: Snapshot
    #: The notebook may no longer match the file (a change failed half-way):
    #: the file is read again, and this copy only lends its ids.
    stale: bool = False
    #: The file's older nbformat version, until this store writes it as 4.5.
    older_format: str | None = None
    #: The file's newer nbformat version (4.99), which its writes keep.
    newer_format: str | None = None

    @property
    def revision(self) -> str:
        return self.snapshot.revision


#: What a call's changes could not keep in their notebooks' histories: a list the tool runner
#: sets for the call (``_tools.results.tool_handler``), added to by every write made for it, so
#: that its result says history is off, whatever tool it is.
HISTORY_OFF_NOTES: ContextVar[list[str] | None] = ContextVar("history_off_notes", default=None)

#: Seconds between two reads of a file that is being saved.
TORN_READ_PAUSE = 0.02


class NotebookStore:
    """Reads, creates and changes notebooks in a workspace (or other ``files``), noticing outside edits."""

    #: How long a change without ``expected_revision`` keeps trying a file that
    #: other writers keep changing under it before it is a ``revision_conflict``.
    write_deadline: float = 5.0
    #: How long a notebook that reads as half written (empty, or not JSON) and is
    #: still changing is read again before it is invalid: Jupyter Server saves a file in
    #: place, so a read can land in the middle of its write (JupyterLab's saves of a
    #: notebook a person has open).
    torn_read_wait: float = 1.0

    def __init__(
        self, workspace: Workspace, files: Files | None = None, recorder: Recorder | None = None
    ) -> None:
        self.files: Files = files if files is not None else WorkspaceFiles(workspace)
        #: Keeps each notebook's history (:mod:`.recording`); None keeps none.
        self.recorder = recorder
        self._documents: dict[str, _Document] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        #: Each notebook's cell texts from its last write (keyed by content, never stale).
        self._cell_texts: dict[str, CellTexts] = {}
        #: Called with ``(path, revision)`` after this store wrote a file
        #: (subscriptions hear about the server's own changes this way).
        self.observers: list[Callable[[str, str], None]] = []
        #: Why the last change this store made is not in its notebook's history (None: it is).
        self.history_off: str | None = None

    async def read(self, path: str) -> NotebookView:
        """The notebook at ``path``, re-read only if the file changed since last time."""
        key, fmt = self._locate(path)
        async with self._lock(key):
            return _view(key, await self._current(key, fmt))

    async def remember(self, path: str) -> tuple[NotebookView, str | None]:
        """The notebook, its current revision kept in its history (which starts one if there
        was none: outside changes are noticed from then on); the note if it could not be."""
        key, fmt = self._locate(path)
        async with self._lock(key):
            document = await self._current(key, fmt)
            note = await self._before_write(
                key, document.notebook, document.revision, self._texts(key)
            )
            return _view(key, document), self.history_said(note)

    def locate(self, path: str) -> str:
        """The canonical relative path of a notebook or directory; ``invalid_path`` for one
        that is absolute, escapes, or is malformed."""
        return self.files.locate(path)

    async def list_files(
        self, path: str = "", max_depth: int = 1, pattern: str = ""
    ) -> list[dict[str, Any]]:
        """What ``list_files`` lists, wherever the notebooks are kept."""
        return await self.files.list_files(path, max_depth, pattern)

    async def revision(self, path: str) -> str:
        """The revision of the notebook at ``path`` as it is on disk now."""
        return (await self.read(path)).revision

    async def create(self, path: str, kernelspec: dict[str, str] | None = None) -> NotebookView:
        """A new empty notebook at ``path``; ``already_exists`` if anything is there."""
        key, fmt = self._locate(path)
        async with self._lock(key):
            notebook = formats.new_notebook(kernelspec)
            texts = self._texts(key)
            data = formats.serialize_notebook(notebook, fmt, texts)
            revision = revision_of(data)
            note = self._will_write(key, notebook, revision, None, texts, None)
            checked_ns = time.time_ns()
            try:
                fingerprint = await self.files.write(key, data, exclusive=True)
            except ToolFailure as failure:
                if failure.code != ALREADY_EXISTS:
                    raise
                raise ToolFailure(
                    ALREADY_EXISTS,
                    f'{key!r} already exists. Open it with use_notebook mode="connect", '
                    "or choose another name to create a new notebook.",
                    path=key,
                ) from failure
            document = _Document(notebook, fmt, Snapshot(fingerprint, revision, checked_ns))
            self._documents[key] = document
            note = self.history_said(note or self._written(key, revision, None))
            self.announce_write(key, document.revision)
            return replace(_view(key, document), history_off=note)

    async def mutate(
        self,
        path: str,
        change: Callable[[NotebookNode], T],
        expected_revision: str | None = None,
    ) -> tuple[T, NotebookView]:
        """Apply ``change`` to the notebook and store the result atomically.

        ``change(notebook)`` edits the document in place and returns what the
        caller wants back. It must check everything it needs (and raise its
        ``ToolFailure``) before it touches the notebook: the document is not
        copied first, because copying thousands of cells per edit is slow. Should
        it raise anyway, the document is dropped and read again from the file.

        With ``expected_revision``, a file that is not at that revision is
        refused with ``revision_conflict`` carrying ``current_revision``. A
        file that changes while the change is being applied is read again and
        the change applied once more on top of it (which, with
        ``expected_revision``, becomes a conflict): an outside edit is never
        overwritten with a stale copy. Without ``expected_revision`` the caller
        asked for no check, so a busy file is tried again, after a short,
        growing, random pause and holding the other writers back
        (:meth:`Files.others_held_back`), for up to ``write_deadline`` seconds;
        only a file that keeps changing all that time is a ``revision_conflict``.
        """
        key, fmt = self._locate(path)
        async with self._lock(key):
            patience = Patience(self.write_deadline)
            attempt: Callable[[], contextlib.AbstractAsyncContextManager[None]] = (
                contextlib.nullcontext
            )
            while True:
                async with attempt():
                    written = await self._write_once(key, fmt, change, expected_revision)
                if written is not None:
                    return written
                if not await patience.wait_before_retrying():
                    break
                if patience.is_wearing_thin():
                    # The other writer's next write takes less time than this
                    # one's re-read of what it wrote, so trying the same way
                    # keeps losing while it keeps writing: hold it back instead.
                    # Not from the first loss: the loser then re-reads all the
                    # time, and two busy writers alternate at parsing speed.
                    attempt = functools.partial(self.files.others_held_back, key)
            current = revision_of(await self.files.read_bytes(key))
            raise ToolFailure(
                REVISION_CONFLICT,
                f"{key} kept changing {self.files.changing_where} for "
                f"{self.write_deadline:g} s, so the change was not written; its current revision "
                f"is {current}. Read it again (read_notebook / get_notebook_revision) and retry, "
                f"with expected_revision={current} to be sure nothing changed in between.",
                path=key,
                current_revision=current,
            )

    async def _write_once(
        self,
        key: str,
        fmt: str,
        change: Callable[[NotebookNode], T],
        expected_revision: str | None,
    ) -> tuple[T, NotebookView] | None:
        """Apply ``change`` to the file as it is now and write it; None when the file changed meanwhile."""
        document = await self._current(key, fmt)
        if expected_revision is not None and expected_revision != document.revision:
            raise revision_conflict(key, expected_revision, document.revision)
        texts = self._texts(key)
        note = await self._before_write(key, document.notebook, document.revision, texts)
        try:
            result = change(document.notebook)
            data = formats.serialize_notebook(document.notebook, fmt, texts)
            revision = revision_of(data)
            if revision == document.revision:  # same bytes: leave the file be
                texts.take_written()
                return result, replace(
                    _view(key, document),
                    previous_revision=revision,
                    history_off=self.history_said(note),
                )
            note = self._will_write(
                key, document.notebook, revision, document.revision, texts, note
            )
            checked_ns = time.time_ns()
            fingerprint = await self.files.write(key, data, unchanged_since=document.snapshot)
        except ChangedMeanwhile:
            self._retire(key)
            return None
        except BaseException:
            self._retire(key)
            raise
        upgraded_from, previous = document.older_format, document.revision
        document = _Document(
            document.notebook,
            fmt,
            Snapshot(fingerprint, revision, checked_ns),
            newer_format=document.newer_format,
        )
        self._documents[key] = document
        note = self.history_said(note or self._written(key, revision, previous))
        self.announce_write(key, revision)
        return result, replace(
            _view(key, document),
            upgraded_from=upgraded_from,
            previous_revision=previous,
            history_off=note,
        )

    # The notebook's history (:mod:`.recording`): a history never fails an edit;
    # what could not be kept is said as the note a view carries in ``history_off``.

    def history_said(self, note: str | None) -> str | None:
        """`note`, the last word on whether a change is in its history: kept for
        ``capabilities://``, and told to the call the change was made for."""
        self.history_off = note
        heard = HISTORY_OFF_NOTES.get()
        if note is not None and heard is not None and note not in heard:
            heard.append(note)
        return note

    def _texts(self, key: str) -> CellTexts:
        texts = self._cell_texts.get(key)
        if texts is None:
            texts = self._cell_texts[key] = (
                self.recorder.new_cell_texts() if self.recorder else CellTexts()
            )
        return texts

    async def _before_write(
        self, key: str, notebook: NotebookNode, revision: str, texts: CellTexts
    ) -> str | None:
        if self.recorder is None:
            return None
        return await self.recorder.before_write(
            key, notebook, revision, texts, self.files.stat, self._still_on_disk(key, revision)
        )

    def _still_on_disk(self, key: str, revision: str) -> Callable[[], bool | None] | None:
        """Whether the file still holds ``revision`` as this store last read it, asked by the
        history under its lock (None when this store holds no snapshot of that revision)."""
        document = self._documents.get(key)
        if document is None or document.revision != revision:
            return None
        return functools.partial(self.files.still_holds, key, document.snapshot)

    def _will_write(
        self,
        key: str,
        notebook: NotebookNode,
        revision: str,
        previous: str | None,
        texts: CellTexts,
        note: str | None,
    ) -> str | None:
        written = texts.take_written()  # always: the texts are not kept past this write
        if self.recorder is None or note is not None:
            return note
        return self.recorder.will_write(key, notebook, revision, previous, written)

    def _written(self, key: str, revision: str, previous: str | None) -> str | None:
        return None if self.recorder is None else self.recorder.written(key, revision, previous)

    async def release_held(self, path: str, held: HeldEntry) -> str | None:
        """The history entry of writes made under `held` (``HELD_ENTRY``), now they are done."""
        key, _fmt = self._locate(path)
        # Under the file's lock: a write of it in flight has changed the document in
        # memory before its revision is known, and the entry must name the two together.
        async with self._lock(key):
            document = self._documents.get(key)
            if self.recorder is None or document is None:
                held.before.pop(key, None)
                return None
            return self.history_said(
                self.recorder.release(
                    key, document.notebook, document.revision, self._texts(key), held
                )
            )

    async def before_outside_write(self, view: NotebookView) -> str | None:
        """Before another writer (a JupyterLab room's loader) saves a change made for this
        server: keep the revision it changes."""
        return await self._before_write(
            view.path, view.notebook, view.revision, self._texts(view.path)
        )

    def intend_outside_write(self, view: NotebookView) -> str | None:
        """Say that the next revision after ``view``'s, saved by that other writer, is this server's."""
        return (
            None
            if self.recorder is None
            else self.recorder.will_write(view.path, None, None, view.revision, None)
        )

    def after_outside_write(self, view: NotebookView, previous: str) -> str | None:
        """After that save, read back as ``view``: its entry (if the read did not add it)."""
        return self._written(view.path, view.revision, previous)

    def revision_if(self, view: NotebookView, notebook: NotebookNode) -> str:
        """The revision ``view``'s file would have if it held ``notebook`` (nothing is written)."""
        data = formats.serialize_notebook(notebook, view.format, self._texts(view.path).fork())
        return revision_of(data)

    @contextlib.asynccontextmanager
    async def executing(
        self, path: str, cell_id: str
    ) -> AsyncIterator[Callable[[dict[str, Any]], None] | None]:
        """While a cell of `path` runs: who shows its outputs as they arrive, where a
        person watches the notebook live (None here: the file gets them when it ends)."""
        yield None

    async def shows_runs_live(self, path: str) -> bool:
        """Whether a person watches `path` live, so that a cell must be in it before it runs
        (:meth:`executing` shows its outputs there as they arrive). Not here: the file
        gets a cell's outputs when its run ends."""
        return False

    def announce_write(self, key: str, revision: str) -> None:
        """Tell the observers that ``key`` now holds ``revision``, written by this server."""
        for observer in list(self.observers):
            try:
                observer(key, revision)
            except Exception:  # an observer never fails the write it watches
                logging.getLogger(__name__).exception("A store observer failed on %s", key)

    def forget(self, path: str) -> None:
        """Drop the in-memory document of ``path``; the next call reads the file."""
        key, _ = self._locate(path)
        self._documents.pop(key, None)
        self._cell_texts.pop(key, None)
        lock = self._locks.get(key)
        if lock is not None and not lock.locked():
            del self._locks[key]

    def _locate(self, path: str) -> tuple[str, str]:
        """The canonical relative path (one per file) and its format."""
        key = self.files.locate(path)
        return key, formats.format_of(key)

    def _lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    async def _current(self, key: str, fmt: str, waited: float = 0.0) -> _Document:
        """The document matching the file as it is now, parsing only if it changed."""
        checked_ns = time.time_ns()
        document = self._documents.get(key)
        data = None
        if document is not None and not document.stale and not self.files.trusts(document.snapshot):
            # Its bytes are compared whatever the status says: one look gives both.
            seen = await self.files.read_with_fingerprint(key)
            data, fingerprint = (None, None) if seen is None else seen
        else:
            fingerprint = await self.files.stat(key)
        if fingerprint is None:
            if self.recorder is not None:
                self.recorder.missing(key)
            raise ToolFailure(
                NOT_FOUND,
                f"{key!r} does not exist {self.files.missing_where}. Create it with use_notebook "
                'mode="create", or use list_files to find an existing notebook.',
                path=key,
            )
        if (
            document is not None
            and not document.stale
            and document.snapshot.fingerprint == fingerprint
        ):
            if data is None:  # a snapshot its status proves
                return document
            if revision_of(data) == document.revision:
                document = replace(
                    document, snapshot=replace(document.snapshot, checked_ns=checked_ns)
                )
                self._documents[key] = document
                return document
        if data is None:
            # Status first, bytes second: a write in between only causes another read later.
            data = await self.files.read_bytes(key)
        previous = document.notebook if document is not None else None
        try:
            remembered = None
            if previous is None and self.recorder is not None:
                remembered = functools.partial(self.recorder.last_kept, key)
            notebook, older_format, newer_format = formats.parse_notebook(
                data, fmt, key, previous, remembered
            )
        except ToolFailure:
            self._retire(key)  # keep its ids for when the file is fixed
            if waited < self.torn_read_wait and formats.maybe_half_written(data, fmt):
                # Read in the middle of Jupyter Server's in-place save? Then the file changed
                # since, or is still being saved: read it again when it is done. A file that
                # nobody is writing is broken, and said so at once.
                changed = await self.files.stat(key) != fingerprint
                if changed or self.files.being_saved(key):
                    await asyncio.sleep(0 if changed else TORN_READ_PAUSE)
                    return await self._current(key, fmt, waited + TORN_READ_PAUSE)
            raise
        document = _Document(
            notebook,
            fmt,
            Snapshot(fingerprint, revision_of(data), checked_ns),
            older_format=older_format,
            newer_format=newer_format,
        )
        self._documents[key] = document
        # Parsing a big notebook takes a while: a revision another process replaced
        # meanwhile is not recorded as current (the next read notices the newer one).
        if self.recorder is not None and await self.files.stat(key) == fingerprint:
            self.recorder.noticed(
                key,
                notebook,
                document.revision,
                self._texts(key),
                self._still_on_disk(key, document.revision),
            )
        return document

    def _retire(self, key: str) -> None:
        document = self._documents.get(key)
        if document is not None:
            self._documents[key] = replace(document, stale=True)


def _view(key: str, document: _Document) -> NotebookView:
    return NotebookView(
        key,
        document.notebook,
        document.revision,
        document.format,
        document.older_format,
        document.newer_format,
    )


def revision_conflict(key: str, expected: str, current: str) -> ToolFailure:
    """The refusal of a change made against ``expected`` while the file is at ``current``."""
    return ToolFailure(
        REVISION_CONFLICT,
        f"{key} was changed since revision {expected}; its current revision is {current}. "
        "Read it again (read_notebook / get_notebook_revision) and retry with "
        f"expected_revision={current}.",
        path=key,
        expected_revision=expected,
        current_revision=current,
    )
