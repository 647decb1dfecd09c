"""Each notebook's history: every revision the server wrote or saw, restorable.

The history lives in the server's own state directory (``--history-dir``,
by default the platform's user state location), never in the workspace. A
notebook's history is a directory named by a hash of where its notebooks are
kept (the workspace root, or a Jupyter Server's contents) and its path:

- ``entries.jsonl``: one line per change, oldest first: the revision after and
  before, the time, the tool, who asked for it (the caller's user, the client's
  name, its connection; entries written before callers were named have no user)
  (no tool: a change made outside the server, noticed when it next read the file);
- ``revisions/<revision>``: each kept revision's content, as the notebook's
  header (everything but the cells), its cells' ids and the digests of their
  texts, and the packs that hold those texts;
- ``packs/<revision>``: the cell texts a revision introduced, keyed by digest.
  A text is stored once however many revisions hold it, so 100 revisions of
  a 2,000-cell notebook cost the cells that changed, not 100 copies; and
  one file per revision, however many cells it changed (a file costs a
  millisecond or more to create on some disks);
- ``index.json``: the notebook's path, checkpoints and how many entries were dropped;
- ``pending.json``: a write this server is about to make (so that a write
  whose process died before its entry is still attributed to its tool).

Content is written before the notebook file, and the entry after: a process
killed at any point leaves a history whose every entry can be restored.
Before the history answers or a write is made, it is reconciled with the file
(:meth:`NotebookHistory.reconcile`): a file that is not at the newest entry's
revision is recorded, as the pending write's change when that write landed,
and otherwise as a change made outside the server. So the newest entry is
always the file's revision once anyone looks, after a crash, a restore or an
outside write. An entry is never skipped for holding a revision seen before
(an undo then a redo writes the same revisions again); what two processes
must not both record, one change, is known by its write's id.
Every file is replaced atomically (or appended in one ``write``), under an
``flock`` of the notebook's history directory, so two server processes can
share it. The history is bounded by entries and bytes per notebook: the
oldest entries are dropped (the count is kept and said), then the content no
kept entry or checkpoint needs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import NOT_FOUND, ToolFailure
from .._text.timestamps import iso_utc
from .change_origins import ORIGIN_FIELDS, Origin
from .history_files import files_in, opened, packed, read, replace_whole, unpacked, write_all

logger = logging.getLogger(__name__)

#: Hex digits of a cell text's SHA-256 naming it in the packs.
DIGEST_CHARS = 24
#: When over a bound, entries are dropped down to this share of it, so that
#: dropping (which reads every kept revision) is not done at every write.
_DROP_TO = 0.9


def digest_of(text: str) -> str:
    """The name of a cell's text in a notebook's history."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


@dataclass(frozen=True)
class Content:
    """A notebook's content as the history keeps it."""

    #: The notebook without its cells, as stored (nbformat, metadata).
    header: dict[str, Any]
    #: Each cell's id, in order.
    ids: list[str]
    #: The digest of each cell's text, in the same order.
    digests: list[str]
    #: Each cell's stored JSON text, in the same order.
    texts: list[str]


@dataclass(frozen=True)
class Limits:
    max_entries: int = 500
    max_bytes: int = 256 * 1024 * 1024
    #: Content written less than this long ago is never collected: another server
    #: process may be about to write the entry that needs it.
    young_seconds: float = 120.0


@dataclass
class _Entries:
    """The entries as ``entries.jsonl`` held them at ``stamp`` (its size and mtime)."""

    stamp: tuple[int, int]
    entries: list[dict[str, Any]]
    _writes: set[tuple[str, str]] | None = None

    def writes(self) -> set[tuple[str, str]]:
        """Each entry's write id and revision, where it has a write id."""
        if self._writes is None:
            self._writes = {
                (e["write"], e["revision"]) for e in self.entries if isinstance(e.get("write"), str)
            }
        return self._writes

    def followed_by(self, entry: dict[str, Any], stamp: tuple[int, int]) -> _Entries:
        """These entries and ``entry``, just appended (the file then has ``stamp``)."""
        writes = self._writes
        if writes is not None and isinstance(entry.get("write"), str):
            writes = {*writes, (entry["write"], entry["revision"])}
        return _Entries(stamp, [*self.entries, entry], writes)


class NotebookHistory:
    """One notebook's history directory."""

    def __init__(self, directory: Path, namespace: str, key: str, limits: Limits) -> None:
        self.directory = directory
        self.namespace = namespace
        self.key = key
        self.limits = limits
        # Joined once: a write opens five of these, and pathlib's joins cost more than its calls.
        folder = str(directory)
        self._entries_file = os.path.join(folder, "entries.jsonl")
        self._index_file = os.path.join(folder, "index.json")
        self._pending_file = os.path.join(folder, "pending.json")
        self._lock_file = os.path.join(folder, "lock")
        self._entries_cache: _Entries | None = None
        #: The status of the index last read here and found to need no change by an entry.
        self._index_settled: tuple[int, int, int] | None = None
        #: Which pack holds each cell text this process knows of, valid for one collection
        #: generation (a collection by any process may delete packs).
        self._where: dict[str, str] = {}
        self._where_generation: int | None = None
        #: Each kept revision's packs, by the status of its file when it was read.
        self._packs_of: dict[str, tuple[tuple[int, int, int], list[str]]] = {}
        self._bytes: int | None = None

    # Files.

    def exists(self) -> bool:
        return os.path.exists(self._entries_file)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fd = opened(self._lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _write_file(self, path: Path | str, data: bytes) -> None:
        replace_whole(path, data)
        if self._bytes is not None:
            self._bytes += len(data)

    def index(self) -> dict[str, Any]:
        try:
            with open(self._index_file, "rb") as file:
                loaded = json.loads(file.read())
        except FileNotFoundError:
            return {"path": self.key, "namespace": self.namespace, "dropped": 0, "checkpoints": {}}
        return loaded if isinstance(loaded, dict) else {}

    def write_index(self, index: dict[str, Any]) -> None:
        self._write_file(self._index_file, json.dumps(index, sort_keys=True).encode())

    # Content.

    def _pack_path(self, name: str) -> str:
        return os.path.join(self.directory, "packs", name)

    def _revision_path(self, revision: str) -> str:
        return os.path.join(self.directory, "revisions", revision)

    def has_content(self, revision: str) -> bool:
        return os.path.exists(self._revision_path(revision))

    def store(self, revision: str, content: Content) -> None:
        """Keep ``content`` as ``revision``'s (its new texts first, then the revision that names them)."""
        if self._kept_already(revision):
            return
        with self.locked():
            self._store(revision, content)

    def _kept_already(self, revision: str) -> bool:
        path = self._revision_path(revision)
        if not os.path.exists(path):
            return False
        with contextlib.suppress(OSError):
            os.utime(path)  # young again: not collected before its entry is written
        return True

    def _store(self, revision: str, content: Content) -> None:
        """Under the lock (see `store`)."""
        where = self._known_packs()
        new: dict[str, str] = {}
        for digest, text in zip(content.digests, content.texts, strict=True):
            if digest not in where and digest not in new:
                new[digest] = text
        if new:
            self._write_file(self._pack_path(revision), packed(new))
            where.update(dict.fromkeys(new, revision))
        packs: list[str] = []
        numbered: dict[str, int] = {}
        at = []
        for digest in content.digests:
            pack = where[digest]
            number = numbered.get(pack)
            if number is None:
                number = numbered[pack] = len(packs)
                packs.append(pack)
            at.append(number)
        # Ids (letters, digits, '-', '_') one a line and digests end to end: strings
        # encode at C speed, where a pair per cell of a 2,000-cell notebook does not.
        record = {
            "header": content.header,
            "ids": "\n".join(content.ids),
            "digests": "".join(content.digests),
            "packs": packs,
            "at": at,
        }
        self._write_file(self._revision_path(revision), packed(record))

    def _known_packs(self) -> dict[str, str]:
        """Which pack holds each text of the latest revision (under the lock)."""
        generation = int(self.index().get("collected", 0))
        if self._where_generation != generation:
            self._where, self._where_generation = {}, generation
            last = self.last_revision()
            if last is not None and self.has_content(last):
                with contextlib.suppress(OSError, ValueError, KeyError):
                    record = unpacked(read(self._revision_path(last)))
                    digests, packs = record["digests"], record["packs"]
                    for i, number in enumerate(record["at"]):
                        self._where[digests[i * DIGEST_CHARS : (i + 1) * DIGEST_CHARS]] = packs[
                            number
                        ]
        return self._where

    def _record(self, revision: str) -> dict[str, Any]:
        try:
            return dict(unpacked(read(self._revision_path(revision))))
        except FileNotFoundError:
            raise self.not_kept(revision) from None

    def content(self, revision: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """A kept revision's header and cells (id, digest); ``not_found`` saying what is kept."""
        record = self._record(revision)
        ids, digests = record["ids"].split("\n") if record["ids"] else [], record["digests"]
        return record["header"], [
            (cell_id, digests[i * DIGEST_CHARS : (i + 1) * DIGEST_CHARS])
            for i, cell_id in enumerate(ids)
        ]

    def texts(self, revision: str, digests: set[str] | None = None) -> dict[str, str]:
        """The texts of a kept revision's cells (only those of ``digests``, when given), by digest."""
        record = self._record(revision)
        all_digests, packs = record["digests"], record["packs"]
        wanted: dict[str, set[str]] = {}
        for i, number in enumerate(record["at"]):
            digest = all_digests[i * DIGEST_CHARS : (i + 1) * DIGEST_CHARS]
            if digests is None or digest in digests:
                wanted.setdefault(packs[number], set()).add(digest)
        found: dict[str, str] = {}
        for pack, needed in wanted.items():
            texts = unpacked(read(self._pack_path(pack)))
            found.update({digest: texts[digest] for digest in needed})
        return found

    def not_kept(self, revision: str) -> ToolFailure:
        entries = self.entries()
        oldest = next((e["revision"] for e in entries if self.has_content(e["revision"])), None)
        index = self.index()
        dropped = int(index.get("dropped", 0))
        said = f"the oldest kept is {oldest}" if oldest else "no revision is kept yet"
        if dropped:
            said += f" ({dropped} older entries were dropped to keep the history within its bounds)"
        return ToolFailure(
            NOT_FOUND,
            f"Revision {revision} of {self.key} is not in its history: {said}. "
            "notebook_history lists the revisions kept.",
            revision=revision,
            oldest_kept=oldest,
            dropped=dropped,
        )

    # Entries.

    def entries(self) -> list[dict[str, Any]]:
        """Every kept entry, oldest first (a line torn by a crash is skipped)."""
        return self._entries().entries

    def _entries(self) -> _Entries:
        try:
            status = os.stat(self._entries_file)
        except FileNotFoundError:
            return _Entries((0, 0), [])
        stamp = (status.st_size, status.st_mtime_ns)
        if self._entries_cache is not None and self._entries_cache.stamp == stamp:
            return self._entries_cache
        entries = []
        for line in read(self._entries_file).splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("revision"), str):
                entries.append(entry)
        self._entries_cache = _Entries(stamp, entries)
        return self._entries_cache

    def last_revision(self) -> str | None:
        entries = self.entries()
        return entries[-1]["revision"] if entries else None

    def last_revision_read(self) -> str | None:
        """The last entry's revision, reading only the end of the file (for a look at many histories)."""
        try:
            with open(self._entries_file, "rb") as file:
                file.seek(max(0, file.seek(0, os.SEEK_END) - 4096))
                lines = file.read().splitlines()
        except FileNotFoundError:
            return None
        for line in reversed(lines):
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and isinstance(entry.get("revision"), str):
                    return str(entry["revision"])
        return None

    def intend(
        self,
        revision: str | None,
        previous: str | None,
        origin: Origin | None,
        write: str | None = None,
        content: Content | None = None,
    ) -> str:
        """Say which write comes next, for a process that dies before its entry (and for another
        process that reads the file first): the write's id, which its entry carries too.

        ``content``, when given, is kept first as ``revision``'s (as `store` keeps it), under
        the same hold of the lock."""
        write = write or secrets.token_hex(8)
        origin = origin or Origin()
        record = {"revision": revision, "previous_revision": previous, "write": write}
        record.update((name, getattr(origin, name)) for name in ORIGIN_FIELDS)
        data = json.dumps(record).encode()
        kept = content is None or revision is None or self._kept_already(revision)
        with self.locked():
            if not kept:
                assert content is not None and revision is not None
                self._store(revision, content)
            # Rewritten in place, not replaced: a note comes before every write (each cell's
            # outputs in a run), and creating and renaming a file costs a millisecond or more
            # on some disks. Readers hold the lock; a process killed between the write and the
            # truncation leaves a note that does not parse, which is no note.
            fd = os.open(self._pending_file, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.pwrite(fd, data, 0)
                os.ftruncate(fd, len(data))
            finally:
                os.close(fd)
        return write

    def pending(self) -> dict[str, Any] | None:
        try:
            record = json.loads(read(self._pending_file))
        except (FileNotFoundError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def _forget_pending(self, write: str | None) -> None:
        """Under the lock: the note of write ``write`` has its entry (another write's note stays)."""
        if write is not None and (self.pending() or {}).get("write") == write:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._pending_file)

    def append(
        self, revision: str, previous: str | None, origin: Origin | None, write: str | None = None
    ) -> None:
        """Add the entry of a change, unless the history already ends at ``revision`` or holds
        this very write (``write``: its id, from `intend`), recorded by another process."""
        with self.locked():
            try:
                self._append(revision, previous, origin, write)
            finally:
                # After the entry, never before: a process killed in between would leave the
                # change to be recorded as someone else's.
                self._forget_pending(write)

    def reconcile(
        self,
        revision: str,
        content: Callable[[], Content],
        still_on_disk: Callable[[], bool | None] | None = None,
    ) -> None:
        """The file is at ``revision`` (``content``: its content, made only if needed): the
        history ends there. A revision it does not end at is recorded: as the change of the
        pending write, when that is the write that landed (its process died before its entry,
        or has not written it yet), and otherwise as a change made outside the server.

        ``still_on_disk`` says, under the lock, whether the file still holds ``revision``:
        a revision read just before another process replaced the file and recorded its
        write is not recorded after that write, as if the file had gone back to it (the
        next read records what is on disk)."""
        if self.last_revision() == revision:
            return  # the common case, without the lock: the entries are cached by their file's status
        with self.locked():
            last = self.last_revision()
            if last == revision:
                return
            if still_on_disk is not None and still_on_disk() is False:
                return
            pending = self.pending()
            origin, write = None, None
            if (
                pending
                and pending.get("revision") in (None, revision)
                and pending.get("previous_revision") == last
            ):
                origin = Origin(
                    pending.get("tool"),
                    pending.get("client"),
                    pending.get("connection"),
                    pending.get("restored_from"),
                    pending.get("user"),
                )
                write = pending.get("write")
            if not self._kept_already(revision):
                self._store(revision, content())
            self._append(revision, last, origin, write)
            # Its change is recorded: the note could only be mistaken for a later one's.
            self._forget_pending(write)

    def _append(
        self, revision: str, previous: str | None, origin: Origin | None, write: str | None
    ) -> None:
        """Under the lock (see `append`)."""
        known = self._entries()
        entries = known.entries
        if entries and entries[-1]["revision"] == revision:
            return
        # Another server process may have recorded this very write already (it read the file
        # before this one added the entry, and found the pending note): once is enough. Only
        # the write's id says so: the same revisions come again in an undo then a redo.
        if write is not None and (write, revision) in known.writes():
            return
        self._settle_index()
        origin = origin or Origin()
        entry: dict[str, Any] = {
            "revision": revision,
            "previous_revision": previous,
            "time": iso_utc(time.time()),
            "tool": origin.tool,
            "client": origin.client,
            "connection": origin.connection,
        }
        if origin.user is not None:
            entry["user"] = origin.user
        if origin.restored_from is not None:
            entry["restored_from"] = origin.restored_from
        if write is not None:
            entry["write"] = write
        line = json.dumps(entry, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
        fd = os.open(self._entries_file, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line  # after a torn line: start a whole one
            try:
                write_all(fd, line)  # a write cut short by a filling disk goes on (and then fails)
            except OSError:
                # The disk filled up part way: no torn line is left for the next append.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
            status = os.fstat(fd)
        finally:
            os.close(fd)
        # Under the lock nobody else appended: the entries read above and this one are
        # the file, and the next look (the bounds, the next edit) need not parse it again.
        self._entries_cache = known.followed_by(entry, (status.st_size, status.st_mtime_ns))
        if self._bytes is not None:
            self._bytes += len(line)
        self._within_bounds()

    def _settle_index(self) -> None:
        """Under the lock, before an entry: the index exists, names the notebook, and does not
        say it is missing. Read only when its status changed since it was last found so (a
        note that it is missing always changes its size)."""
        try:
            status = os.stat(self._index_file)
        except FileNotFoundError:
            index = self.index()
        else:
            seen = (status.st_ino, status.st_size, status.st_mtime_ns)
            if seen == self._index_settled:
                return
            index = self.index()
            if not index.get("missing"):
                self._index_settled = seen
                return
        index.pop("missing", None)
        index.update(path=self.key, namespace=self.namespace)
        self.write_index(index)

    def mark_missing(self) -> None:
        """The notebook is gone (deleted or renamed outside the server): its history stays."""
        with self.locked():
            index = self.index()
            if not index.get("missing"):
                index["missing"] = True
                self.write_index(index)

    def checkpoint(self, name: str, revision: str) -> None:
        with self.locked():
            index = self.index()
            index.setdefault("checkpoints", {})[name] = revision
            self.write_index(index)

    # Bounds.

    def size(self) -> int:
        if self._bytes is None:
            total = 0
            for folder, _, files in os.walk(self.directory):
                for name in files:
                    with contextlib.suppress(OSError):
                        total += os.stat(os.path.join(folder, name)).st_size
            self._bytes = total
        return self._bytes

    def _within_bounds(self) -> None:
        entries = self.entries()
        limits = self.limits
        if len(entries) <= limits.max_entries and self.size() <= limits.max_bytes:
            return
        keep = len(entries)
        if keep > limits.max_entries:
            keep = max(1, int(limits.max_entries * _DROP_TO))
        while True:
            kept = entries[len(entries) - keep :]
            self._rewrite(entries, kept)
            if self.size() <= limits.max_bytes * _DROP_TO or keep <= 1:
                return
            entries, keep = kept, max(1, int(keep * 0.75))

    def _rewrite(self, entries: list[dict[str, Any]], kept: list[dict[str, Any]]) -> None:
        dropped = len(entries) - len(kept)
        if dropped:
            data = b"".join(
                json.dumps(e, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
                for e in kept
            )
            self._write_file(self._entries_file, data)
            index = self.index()
            index["dropped"] = int(index.get("dropped", 0)) + dropped
            self.write_index(index)
            logger.info(
                "History of %s: dropped its %d oldest entries to stay within bounds",
                self.key,
                dropped,
            )
        index = self.index()
        needed = {e["revision"] for e in kept} | set(index.get("checkpoints", {}).values())
        oldest_young = time.time() - self.limits.young_seconds
        packs: set[str] = set()
        size = 0
        packs_of: dict[str, tuple[tuple[int, int, int], list[str]]] = {}
        for entry in files_in(os.path.join(self.directory, "revisions")):
            status = entry.stat()
            if entry.name not in needed and status.st_mtime < oldest_young:
                os.unlink(entry.path)
                continue
            size += status.st_size
            # A revision's file is only ever replaced whole: by its status, its packs are
            # the ones read at an earlier collection, and only new files are read.
            stamp = (status.st_ino, status.st_size, status.st_mtime_ns)
            known = self._packs_of.get(entry.name)
            if known is None or known[0] != stamp:
                try:
                    known = (stamp, list(unpacked(read(entry.path))["packs"]))
                except (OSError, ValueError, KeyError, TypeError, zlib.error):
                    continue
            packs_of[entry.name] = known
            packs.update(known[1])
        self._packs_of = packs_of
        for entry in files_in(os.path.join(self.directory, "packs")):
            status = entry.stat()
            if entry.name not in packs and status.st_mtime < oldest_young:
                os.unlink(entry.path)
            else:
                size += status.st_size
        index["collected"] = int(index.get("collected", 0)) + 1
        self.write_index(index)
        for entry in files_in(self.directory):
            size += entry.stat().st_size
        self._bytes = size
