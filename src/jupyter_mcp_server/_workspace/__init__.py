"""The workspace boundary: every file the server touches goes through here.

Agents name notebooks with paths they make up. A path is first checked on
its own (:mod:`jupyter_mcp_server._workspace.path_names`: relative, no ``..``, bounded
depth, likely mistakes named), and then must not resolve outside the root
through a symlink. Checking
a path and then opening it leaves a window in which a directory can be
swapped for a symlink, so reads and writes walk from a descriptor of the root
one component at a time with ``O_NOFOLLOW`` along the already resolved path:
a symlink appearing there makes the open fail instead of leaving the root.
Writes go to a temporary file in the same directory and are renamed into
place, so a reader never sees half a notebook and a crash never loses one.

A name that is legal but almost certainly a mistake ('~', '$HOME', a
``file:`` URI) is refused with what was probably meant, unless that name
really is on disk (then it is the one meant).

POSIX only: the walk needs ``dir_fd`` and ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import logging
import os
import re
import secrets
import stat as stat_module
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypedDict

from jupyter_mcp_server._errors import (
    ALREADY_EXISTS,
    INVALID_ARGUMENT,
    INVALID_PATH,
    NOT_FOUND,
    ToolFailure,
)
from jupyter_mcp_server._text.timestamps import iso_utc
from jupyter_mcp_server._workspace.path_names import MAX_PATH_DEPTH, likely_mistakes, problem_with
from jupyter_mcp_server._workspace.storage_errors import storage_failure

logger = logging.getLogger(__name__)

MAX_LIST_DEPTH = 3
#: Entries the start-up sweep for a crash's temporary files looks at, at most
#: (a workspace may be a whole home directory).
MAX_SWEPT_ENTRIES = 1_000_000

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# Only names we create are removed at start-up, never a user's file that merely ends alike.
_TEMPORARY_NAME = re.compile(r"\..*\.[0-9a-f]{16}\.jmcp-tmp", re.DOTALL)
_SKIPPED_WHEN_CLEANING = frozenset({".git", "node_modules"})
#: How many well-formed relative paths a workspace remembers before it starts again, and
#: the longest it remembers (a client sending many long paths costs at most 256 KiB here).
_WELL_FORMED_KEPT = 1024
_WELL_FORMED_CHARS = 256
_PASS_INSIDE = "Pass a path inside the workspace such as 'notebook.ipynb'."
_CHECK_IT = "Check the file, or pass another path inside the workspace."
# The OS errors a caller can act on, said as what is wrong with the path.
_OS_REASONS = {
    errno.ELOOP: "is a symbolic link that was swapped in or loops; it is not followed",
    errno.ENOTDIR: "has a parent that is not a directory (or was just replaced by a symlink)",
    errno.EISDIR: "is a directory, not a file",
    errno.EACCES: "cannot be accessed: permission denied",
    errno.EPERM: "cannot be accessed: operation not permitted",
    errno.ENAMETOOLONG: "is too long for the file system",
}


class ChangedMeanwhile(Exception):
    """The file changed between the caller's read and the replace; nothing was written."""


@contextlib.contextmanager
def _locked(directory: int) -> Iterator[None]:
    """An exclusive ``flock`` of a directory descriptor: every server process
    writing in that directory takes it around its last check and its rename.
    Where the file system has no locks, the check and the rename go unlocked."""
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        fcntl.flock(directory, fcntl.LOCK_UN)


def _remove_if_abandoned(path: str) -> bool:
    """Remove `path` if no live writer holds it; whether it was removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


class FileEntry(TypedDict):
    path: str
    type: str
    size: int
    last_modified: str


class Workspace:
    """A directory whose contents agents may read and write, and nothing outside it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root: Path = Path(os.path.realpath(os.fspath(root)))
        if not self.root.is_dir():
            raise ValueError(f"workspace root {self.root} is not an existing directory")
        # Paths are checked as text: every tool call resolves its notebook's path several
        # times, and pathlib's objects cost more than the checks they wrap.
        self._root_text = os.fspath(self.root)
        self._inside_prefix = self._root_text.rstrip("/") + "/"
        #: Relative paths whose text passed every check that does not look at the disk.
        self._well_formed: set[str] = set()
        #: The directories (device, inode) whose write lock a thread holds
        #: through :meth:`others_held_back`, per thread: ``flock`` locks belong
        #: to an open file, so that thread locking such a directory again would
        #: wait for ever; another thread (a write handed to a worker) must wait
        #: for the lock like any other writer, not take it as its own.
        self._held = threading.local()

    def _reject(self, relative: object, problem: str, next_step: str = _PASS_INSIDE) -> ToolFailure:
        shown = repr(relative)
        if len(shown) > 300:  # a path thousands of characters long, said once is enough
            shown = f"{shown[:150]}…{shown[-50:]}"
        return ToolFailure(
            INVALID_PATH,
            f"Paths are relative to the workspace root {self.root}; {shown} {problem}. "
            + next_step,
            path=relative if isinstance(relative, str) else None,
        )

    def _missing(self, relative: str) -> ToolFailure:
        return ToolFailure(
            NOT_FOUND,
            f"{relative!r} does not exist in the workspace {self.root}. "
            "Use list_files to see what is there.",
            path=relative,
        )

    def _holds(self, real: str) -> bool:
        """Whether the real path `real` is the root or inside it."""
        return real == self._root_text or real.startswith(self._inside_prefix)

    def _check_text(self, relative: object) -> None:
        """Refuse a path whose text cannot name anything in the workspace."""
        if not isinstance(relative, str):
            raise self._reject(relative, f"is a {type(relative).__name__}, not a string")
        if relative in self._well_formed:
            return
        problem = problem_with(relative)
        if problem:
            raise self._reject(relative, problem)
        parts = [part for part in relative.split("/") if part not in ("", ".")]
        plain = True
        for index, mistake, instead in likely_mistakes(parts):
            plain = False
            # A name that really is on disk is the one meant, odd as it looks.
            if not os.path.lexists(self.root.joinpath(*parts[: index + 1])):
                raise self._reject(relative, mistake, instead)
        if plain and len(relative) <= _WELL_FORMED_CHARS:
            # A verdict that looked at the disk is not kept: the disk changes.
            if len(self._well_formed) >= _WELL_FORMED_KEPT:
                self._well_formed.clear()
            self._well_formed.add(relative)

    def resolve(self, relative: str, *, must_exist: bool = False) -> Path:
        """The real absolute path ``relative`` names inside the root ("" is the root)."""
        self._check_text(relative)
        try:
            real = os.path.realpath(os.path.join(self._root_text, relative))
        except OSError:
            # realpath raises when a component stops being a symlink between
            # its lstat and its readlink: something is swapping it.
            raise self._reject(relative, "changed while it was being resolved", _CHECK_IT) from None
        if not self._holds(real):
            raise self._reject(relative, "resolves outside the workspace through a symbolic link")
        if must_exist and not os.path.exists(real):
            raise self._missing(relative)
        return Path(real)

    def relative_of(self, path: Path) -> str:
        """The POSIX path of ``path`` relative to the root ("" for the root itself)."""
        try:
            relative = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            raise self._reject(str(path), "is not inside the workspace") from None
        return "" if relative == "." else relative

    def stat(self, relative: str) -> os.stat_result | None:
        """The status of the file ``relative`` names, or None when nothing is there."""
        real = self.resolve(relative)
        with self._explained(relative):
            try:
                return os.stat(real)
            except (FileNotFoundError, NotADirectoryError):
                return None

    @contextlib.contextmanager
    def _explained(self, relative: str) -> Iterator[None]:
        """Turn the OS errors a caller can act on into failures that say what to do."""
        try:
            yield
        except OSError as error:
            if error.errno == errno.ENOENT:
                raise self._missing(relative) from error
            if error.errno in _OS_REASONS:
                raise self._reject(relative, _OS_REASONS[error.errno], _CHECK_IT) from error
            raise

    @contextlib.contextmanager
    def _refused_write(self, relative: str, names: tuple[str, ...]) -> Iterator[None]:
        """A write the file system refuses (full, quota, read-only, forbidden) said as such:
        the temporary file is gone by then, and the file is as it was."""
        try:
            yield
        except OSError as error:
            failure = storage_failure(
                error,
                repr(relative),
                self.root.joinpath(*names[:-1]),
                "The file on disk is unchanged (its last good version) and no temporary file is left.",
            )
            if failure is None:
                raise
            failure.details["path"] = relative
            raise failure from error

    def _open_directory(self, names: tuple[str, ...], *, create_missing: bool) -> int:
        """A descriptor of root/names, reached without following any symlink."""
        fd = os.open(self.root, _DIRECTORY_FLAGS)
        try:
            for name in names:
                try:
                    next_fd = os.open(name, _DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create_missing:
                        raise
                    # Someone else may create it at the same moment; either way it exists.
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, dir_fd=fd)
                    next_fd = os.open(name, _DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                fd, previous = next_fd, fd
                os.close(previous)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _names_of(self, relative: str) -> tuple[str, ...]:
        real = os.fspath(self.resolve(relative))
        if real == self._root_text:
            raise self._reject(relative, "is the workspace root, a directory, not a file")
        return tuple(real[len(self._inside_prefix) :].split("/"))

    def read_bytes(self, relative: str) -> bytes:
        """The content of a regular file, refusing any symlink swapped in after the check."""
        return self.read_with_status(relative)[0]

    def read_with_status(self, relative: str) -> tuple[bytes, os.stat_result]:
        """The content of a regular file (as `read_bytes`) and the status of that very file,
        taken before the read: a change in between leaves bytes newer than the status,
        never older, so what the status says changed is only ever read again."""
        names = self._names_of(relative)
        with self._explained(relative):
            directory = self._open_directory(names[:-1], create_missing=False)
            try:
                # O_NONBLOCK so a FIFO planted under the name cannot hang the server.
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
                fd = os.open(names[-1], flags, dir_fd=directory)
            finally:
                os.close(directory)
            with open(fd, "rb") as file:
                status = os.fstat(fd)
                if stat_module.S_ISDIR(status.st_mode):
                    raise self._reject(relative, "is a directory, not a file; use list_files on it")
                if not stat_module.S_ISREG(status.st_mode):
                    raise self._reject(relative, "is not a regular file")
                return file.read(), status

    def write_atomic(
        self,
        relative: str,
        data: bytes,
        *,
        exclusive: bool = False,
        unchanged: Callable[[], bool] | None = None,
    ) -> os.stat_result:
        """Replace (or create) a file all at once, creating missing parent directories.

        ``exclusive`` refuses an existing file. It is checked before writing and
        again just before the rename. ``unchanged``, when given, is asked just
        before the rename whether the file still holds what the caller read;
        when it answers False nothing is replaced and :class:`ChangedMeanwhile`
        is raised. The last check and the rename happen under an exclusive
        ``flock`` of the directory, so two server processes writing the same
        file never replace each other's write unseen; a program that does not
        take the lock (an editor) can still slip in between, but only within
        that check-and-rename, not while the data is written and synced.
        """
        names = self._names_of(relative)
        name = names[-1]
        with self._explained(relative), self._refused_write(relative, names):
            directory = self._open_directory(names[:-1], create_missing=True)
            try:
                existing = self._existing(directory, name, relative, exclusive=exclusive)
                temporary = f".{name[:32]}.{secrets.token_hex(8)}.jmcp-tmp"
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                # 0o666 lets the umask decide, as for any new file; an existing file keeps its mode.
                fd = os.open(temporary, flags, 0o666, dir_fd=directory)
                try:
                    # Held until the rename: a temporary file nobody holds is a
                    # crashed write's, and only those are swept away at start.
                    with contextlib.suppress(OSError):
                        fcntl.flock(fd, fcntl.LOCK_EX)
                    if existing is not None:
                        os.fchmod(fd, stat_module.S_IMODE(existing.st_mode))
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                    with self._locked_unless_held(directory):
                        self._existing(directory, name, relative, exclusive=exclusive)
                        if unchanged is not None and not unchanged():
                            raise ChangedMeanwhile(relative)
                        os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
                except BaseException:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(temporary, dir_fd=directory)
                    raise
                finally:
                    os.close(fd)
                # The rename is durable only once the directory entry itself is on disk.
                os.fsync(directory)
                return os.stat(name, dir_fd=directory, follow_symlinks=False)
            finally:
                os.close(directory)

    @contextlib.contextmanager
    def others_held_back(self, relative: str) -> Iterator[None]:
        """Hold the write lock of the directory of ``relative`` for a whole read, change and write.

        Every server process takes that lock for its last check and rename
        only. A writer that re-reads a big notebook after losing a race needs
        longer than the winner needs for its next write, so it would lose for
        as long as the winner keeps writing; holding the lock from before its
        read until its own rename makes the others wait at their last check
        instead (and then find the file changed and re-read it themselves).
        :meth:`write_atomic` inside knows the lock is held.
        """
        names = self._names_of(relative)
        with self._explained(relative):
            directory = self._open_directory(names[:-1], create_missing=False)
        try:
            status = os.fstat(directory)
            identity = (status.st_dev, status.st_ino)
            held = self._held_directories()
            if identity in held:
                yield
                return
            with _locked(directory):
                held.add(identity)
                try:
                    yield
                finally:
                    held.discard(identity)
        finally:
            os.close(directory)

    def _held_directories(self) -> set[tuple[int, int]]:
        """The directories whose write lock the calling thread holds."""
        held: set[tuple[int, int]] | None = getattr(self._held, "directories", None)
        if held is None:
            held = self._held.directories = set()
        return held

    def holds_a_write_lock(self) -> bool:
        """Whether the calling thread holds a directory's write lock (:meth:`others_held_back`):
        a write it makes then must be made by this thread, which the lock belongs to."""
        return bool(self._held_directories())

    def _locked_unless_held(self, directory: int) -> contextlib.AbstractContextManager[None]:
        status = os.fstat(directory)
        if (status.st_dev, status.st_ino) in self._held_directories():
            return contextlib.nullcontext()
        return _locked(directory)

    def _existing(
        self, directory: int, name: str, relative: str, *, exclusive: bool
    ) -> os.stat_result | None:
        try:
            existing = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if exclusive:
            raise ToolFailure(
                ALREADY_EXISTS,
                f"{relative!r} already exists in the workspace. Choose another name, "
                "or open the existing file instead of creating it.",
                path=relative,
            )
        # Resolved paths hold no symlinks, so one here loops or was swapped in.
        if stat_module.S_ISLNK(existing.st_mode):
            raise self._reject(relative, _OS_REASONS[errno.ELOOP], _CHECK_IT)
        if not stat_module.S_ISREG(existing.st_mode):
            raise self._reject(relative, "is a directory or special file", _CHECK_IT)
        return existing

    def remove_stale_temp_files(
        self, *, max_depth: int = MAX_PATH_DEPTH, max_entries: int = MAX_SWEPT_ENTRIES
    ) -> int:
        """Delete temporary files a crashed write left behind; how many there were.

        A write holds a lock on its temporary file until the rename, so one
        that can be locked was left by a process that died; one that cannot
        is another server's write in flight on the same workspace, and stays.

        The walk keeps its own list of directories (a recursive walk fails
        thousands of levels down) and is bounded: no write goes deeper than
        ``max_depth`` levels, so nothing below is looked into, and it stops
        after ``max_entries`` entries. What it left out is logged; nothing in
        it raises, since one odd directory must not cost the rest.
        """
        removed = entries = 0
        too_deep: list[str] = []
        unreadable = 0
        pending: list[tuple[str, int]] = [(os.fspath(self.root), 0)]
        while pending:
            directory, depth = pending.pop()
            try:
                with os.scandir(directory) as scan:
                    children = list(scan)
            except OSError:
                unreadable += 1  # unreadable, or gone since it was listed
                continue
            for child in children:
                entries += 1
                if entries > max_entries:
                    logger.warning(
                        "Stopped looking for temporary files left by a crash after %d entries "
                        "of %s; any further on stay until they are deleted by hand",
                        max_entries,
                        self.root,
                    )
                    return removed
                try:
                    is_directory = child.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_directory:
                    if child.name in _SKIPPED_WHEN_CLEANING:
                        continue
                    if depth + 1 >= max_depth:
                        too_deep.append(child.path)
                    else:
                        pending.append((child.path, depth + 1))
                elif _TEMPORARY_NAME.fullmatch(child.name) and _remove_if_abandoned(child.path):
                    removed += 1
        if too_deep:
            logger.info(
                "Did not look for temporary files left by a crash in %d directories %d levels "
                "below %s, deeper than any path may go, such as %s",
                len(too_deep),
                max_depth,
                self.root,
                os.path.relpath(too_deep[0], self.root)[:200],
            )
        if unreadable:
            logger.debug(
                "Could not list %d directories while looking for temporary files", unreadable
            )
        return removed

    def list_files(self, path: str = "", max_depth: int = 1, pattern: str = "") -> list[FileEntry]:
        """Entries under ``path`` down to ``max_depth`` levels, sorted by path.

        ``max_depth`` 0 lists ``path`` itself, 1 its children, up to 3. Hidden
        names and symlinks leading outside the workspace are left out. ``pattern``
        is a glob matched against an entry's path or its name; directories are
        descended into even when they do not match it.
        """
        if type(max_depth) is not int or not 0 <= max_depth <= MAX_LIST_DEPTH:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"max_depth is {max_depth!r}; pass an integer from 0 (the path itself) "
                f"to {MAX_LIST_DEPTH}.",
            )
        if not isinstance(pattern, str):
            raise ToolFailure(INVALID_ARGUMENT, "pattern must be a glob string such as '*.ipynb'.")
        base = self.resolve(path, must_exist=True)
        if not base.is_dir():
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{path!r} is a file, not a directory. List its parent directory and pass "
                f"pattern={base.name!r} to see it.",
                path=path,
            )
        # Entries keep the name the caller used, even when it goes through a symlink.
        shown = "/".join(part for part in path.split("/") if part not in ("", "."))
        entries: list[FileEntry] = []

        def visit(
            names: tuple[str, ...],
            relative: str,
            status: os.stat_result,
            fd: int | None,
            depth: int,
        ) -> None:
            name = relative.rsplit("/", 1)[-1]
            is_directory = fd is not None
            # The path itself is an entry only when nothing below it was asked for.
            listed = depth > 0 or max_depth == 0
            matches = fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(name, pattern)
            if listed and (not pattern or matches):
                kind = "notebook" if name.lower().endswith(".ipynb") else "file"
                entries.append(
                    {
                        "path": relative,
                        "type": "directory" if is_directory else kind,
                        "size": 0 if is_directory else status.st_size,
                        "last_modified": iso_utc(status.st_mtime),
                    }
                )
            if fd is not None and depth < max_depth:
                for child, child_names, child_status, child_fd in self._children_of(
                    fd, names, allow_failure=depth > 0
                ):
                    try:
                        child_relative = f"{relative}/{child}" if relative else child
                        visit(child_names, child_relative, child_status, child_fd, depth + 1)
                    finally:
                        if child_fd is not None:
                            os.close(child_fd)

        with self._explained(path):
            names = base.relative_to(self.root).parts
            # Reached from the root without following a symlink: a directory
            # swapped for one since the check above is refused, not listed.
            fd = self._open_directory(names, create_missing=False)
            try:
                visit(names, shown, os.fstat(fd), fd, 0)
            finally:
                os.close(fd)
        return sorted(entries, key=lambda entry: entry["path"])

    def _children_of(
        self, fd: int, names: tuple[str, ...], *, allow_failure: bool
    ) -> Iterator[tuple[str, tuple[str, ...], os.stat_result, int | None]]:
        """The listable entries of the directory open as `fd` (at root/names):
        each name, the real path it leads to, its status, and a descriptor when
        it is a directory (the caller closes it). Nothing here follows a
        symlink by name: a symlink's target is reached again from the root."""
        try:
            with os.scandir(fd) as scan:
                children = list(scan)
        except OSError:
            # One unreadable subdirectory should not hide the rest of the listing.
            if allow_failure:
                return
            raise
        for child in children:
            if child.name.startswith(".") or problem_with(child.name):
                continue
            try:
                status = child.stat(follow_symlinks=False)
                if stat_module.S_ISLNK(status.st_mode):
                    target = Path(os.path.realpath(self.root.joinpath(*names, child.name)))
                    if not self._holds(os.fspath(target)):
                        continue
                    real_names = target.relative_to(self.root).parts
                    status, child_fd = self._reach(real_names)
                elif stat_module.S_ISDIR(status.st_mode):
                    real_names = (*names, child.name)
                    child_fd = os.open(child.name, _DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                    status = os.fstat(child_fd)
                else:
                    real_names, child_fd = (*names, child.name), None
            except OSError:
                continue  # a dangling symlink, a loop, or an entry deleted or swapped meanwhile
            yield child.name, real_names, status, child_fd

    def _reach(self, names: tuple[str, ...]) -> tuple[os.stat_result, int | None]:
        """The status of root/names reached without following any symlink, and a
        descriptor of it when it is a directory."""
        if not names:
            fd = os.open(self.root, _DIRECTORY_FLAGS)
            return os.fstat(fd), fd
        parent = self._open_directory(names[:-1], create_missing=False)
        try:
            status = os.stat(names[-1], dir_fd=parent, follow_symlinks=False)
            if stat_module.S_ISLNK(status.st_mode):
                raise OSError(errno.ELOOP, "a symbolic link appeared on a resolved path")
            if not stat_module.S_ISDIR(status.st_mode):
                return status, None
            fd = os.open(names[-1], _DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
            return os.fstat(fd), fd
        finally:
            os.close(parent)
