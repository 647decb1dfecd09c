"""Where a store's notebooks are kept, and what a file's status proves about its bytes.

The store reads and writes through :class:`Files`: the workspace
(:class:`WorkspaceFiles`, here) or a Jupyter Server's contents
(:mod:`.contents`). A :class:`Fingerprint` says when bytes changed; a
:class:`Snapshot` is what a write checks against, and within the racy window
of its file's timestamp the bytes are compared as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import ToolFailure
from .uninterrupted import run_to_the_end

if TYPE_CHECKING:
    from .._workspace import Workspace

#: A file's timestamp proves nothing about writes in the same clock tick. Until
#: a check happened this long after the file's mtime (2 s covers the coarsest
#: file systems, FAT and some network mounts), the bytes are compared as well.
_RACY_WINDOW_NS = 2_000_000_000


def revision_of(data: bytes) -> str:
    """The revision of a file holding ``data``."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True)
class Fingerprint:
    """What a file's status says about its bytes: they changed if this did."""

    mtime_ns: int
    size: int
    inode: int = 0
    device: int = 0

    @classmethod
    def of(cls, status: os.stat_result) -> Fingerprint:
        return cls(status.st_mtime_ns, status.st_size, status.st_ino, status.st_dev)


@dataclass(frozen=True)
class Snapshot:
    """What a file held when it was last read or written: a write checks against this."""

    fingerprint: Fingerprint
    revision: str
    #: Wall-clock time taken just before the status in ``fingerprint`` was seen.
    checked_ns: int

    def is_racy(self) -> bool:
        return self.checked_ns - self.fingerprint.mtime_ns < _RACY_WINDOW_NS


class Files(Protocol):
    """Where a store's notebook files are: the workspace, or a Jupyter Server's contents."""

    @property
    def missing_where(self) -> str:
        """Said in messages: ``f"{key!r} does not exist {missing_where}"``."""
        ...

    @property
    def changing_where(self) -> str:
        """Said in messages: ``f"{key} kept changing {changing_where}"``."""
        ...

    def locate(self, path: str) -> str:
        """The canonical relative path of ``path`` (one per file); ``invalid_path`` if it is not one."""
        ...

    async def stat(self, key: str) -> Fingerprint | None:
        """The file's fingerprint, or None when there is no file."""
        ...

    def being_saved(self, key: str) -> bool:
        """Whether Jupyter Server is saving the file right now (it saves in place)."""
        ...

    async def read_bytes(self, key: str) -> bytes: ...

    async def read_with_fingerprint(self, key: str) -> tuple[bytes, Fingerprint] | None:
        """The file's bytes and its fingerprint, taken first (bytes never older than it); None
        when there is no file. Where a snapshot's bytes must be compared anyway (within its
        racy window), one look instead of a `stat` and then a read."""
        ...

    async def list_files(self, path: str, max_depth: int, pattern: str) -> list[dict[str, Any]]:
        """Entries under ``path`` down to ``max_depth`` levels (``path``, ``type``, ``size``,
        ``last_modified``), sorted by path; ``pattern`` is a glob on an entry's path or name."""
        ...

    def changes(
        self, wanted: Callable[[], set[str]], stop: asyncio.Event, debounce_ms: int
    ) -> AsyncIterator[set[str]]:
        """The files among ``wanted()`` that changed, a set at a time, until ``stop``."""
        ...

    def trusts(self, snapshot: Snapshot) -> bool:
        """Whether a file still showing ``snapshot.fingerprint`` surely holds the same bytes."""
        ...

    def still_holds(self, key: str, snapshot: Snapshot) -> bool | None:
        """Whether the file holds what ``snapshot`` saw, now, without waiting on anything but
        the local disk; None where that cannot be told so (a Jupyter Server's contents)."""
        ...

    def others_held_back(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """While inside, other writers wait before replacing ``key`` (where the files allow it).

        A change that lost a race to another writer makes its next attempt in
        here, so that it cannot lose again for as long as the other keeps writing.
        """
        ...

    async def write(
        self,
        key: str,
        data: bytes,
        *,
        exclusive: bool = False,
        unchanged_since: Snapshot | None = None,
    ) -> Fingerprint:
        """Replace (or create) the file; its new fingerprint.

        ``exclusive`` refuses an existing file with ``already_exists``. With
        ``unchanged_since``, a file that no longer holds what that snapshot saw
        is left alone and :class:`~..workspace.ChangedMeanwhile` is raised.
        """
        ...


class WorkspaceFiles:
    """The files under the workspace root; writes check and rename under a directory lock."""

    missing_where = "in the workspace"
    changing_where = "on disk while it was being edited (another program is writing it)"

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def locate(self, path: str) -> str:
        return self.workspace.relative_of(self.workspace.resolve(path))

    async def stat(self, key: str) -> Fingerprint | None:
        status = self.workspace.stat(key)
        return None if status is None else Fingerprint.of(status)

    def being_saved(self, key: str) -> bool:
        # Jupyter Server's "atomic" save copies the file to .~NAME, rewrites the file in
        # place, and removes the copy: while the copy is there, the file may be half written.
        *parent, name = key.split("/")
        with contextlib.suppress(ToolFailure, OSError):
            return self.workspace.stat("/".join([*parent, f".~{name}"])) is not None
        return False

    async def read_bytes(self, key: str) -> bytes:
        return self.workspace.read_bytes(key)

    async def read_with_fingerprint(self, key: str) -> tuple[bytes, Fingerprint] | None:
        return self._read_with_fingerprint(key)

    def _read_with_fingerprint(self, key: str) -> tuple[bytes, Fingerprint] | None:
        try:
            data, status = self.workspace.read_with_status(key)
        except ToolFailure:
            if self.workspace.stat(key) is None:
                return None  # missing, as `stat` says it: the caller's own message follows
            raise
        return data, Fingerprint.of(status)

    async def list_files(self, path: str, max_depth: int, pattern: str) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self.workspace.list_files(path, max_depth, pattern)]

    async def changes(
        self, wanted: Callable[[], set[str]], stop: asyncio.Event, debounce_ms: int
    ) -> AsyncIterator[set[str]]:
        import watchfiles  # lazy: the watcher runs only while someone subscribes

        root = str(self.workspace.root)

        def relative(changed: str) -> str:
            return os.path.relpath(changed, root).replace(os.sep, "/")

        async for batch in watchfiles.awatch(
            root,
            watch_filter=lambda change, changed: relative(changed) in wanted(),
            debounce=debounce_ms,
            step=50,
            stop_event=stop,
            recursive=True,
        ):
            yield {relative(changed) for _, changed in batch}

    def trusts(self, snapshot: Snapshot) -> bool:
        return not snapshot.is_racy()

    @contextlib.asynccontextmanager
    async def others_held_back(self, key: str) -> AsyncIterator[None]:
        # The other server processes wait at their last check, under the
        # directory lock this holds: no await inside ever suspends on it.
        with self.workspace.others_held_back(key):
            yield

    async def write(
        self,
        key: str,
        data: bytes,
        *,
        exclusive: bool = False,
        unchanged_since: Snapshot | None = None,
    ) -> Fingerprint:
        # Checked again under the directory lock, just before the rename:
        # another server process may have written meanwhile.
        unchanged = None
        if unchanged_since is not None:
            unchanged = functools.partial(self.still_holds, key, unchanged_since)
        write = functools.partial(
            self.workspace.write_atomic, key, data, exclusive=exclusive, unchanged=unchanged
        )
        if self.workspace.holds_a_write_lock():
            # Inside others_held_back the lock is this thread's: a worker would wait for it
            # for ever. That path is rare (a writer that kept losing a race) and short.
            return Fingerprint.of(write())
        # Off the event loop: the fsyncs and another process's hold on the directory lock
        # would otherwise stop every other call this server is serving.
        return Fingerprint.of(await run_to_the_end(write))

    def still_holds(self, key: str, snapshot: Snapshot) -> bool:
        """Whether the file still holds what ``snapshot`` saw."""
        if snapshot.is_racy():
            # The bytes are compared anyway: one look gives them and the status.
            with contextlib.suppress(ToolFailure):  # then as below, which says why
                seen = self._read_with_fingerprint(key)
                return (
                    seen is not None
                    and seen[1] == snapshot.fingerprint
                    and revision_of(seen[0]) == snapshot.revision
                )
        status = self.workspace.stat(key)
        if status is None or Fingerprint.of(status) != snapshot.fingerprint:
            return False
        if not snapshot.is_racy():
            return True
        return revision_of(self.workspace.read_bytes(key)) == snapshot.revision
