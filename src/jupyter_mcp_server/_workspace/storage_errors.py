"""The file system saying no: full, over quota, read-only, or forbidden, as failures with codes.

A write that the disk refuses is not the caller's mistake and not a bug: the
person can act on it (free some space, remount, fix a permission) and the
next call then works. Every writer of the server's own files (the notebook
store's atomic writes, a notebook's history, its checkpoints) turns those
``OSError`` numbers into the same three codes here, with a message naming
the file system, what was not written and what to do, instead of letting the
exception escape as an "Error executing tool" with no code and no cause.
"""

from __future__ import annotations

import errno
import os

from jupyter_mcp_server._errors import DISK_FULL, PERMISSION_DENIED, READ_ONLY, ToolFailure

#: errno -> (code, what the file system said, what to do).
_STORAGE_REASONS: dict[int, tuple[str, str, str]] = {
    errno.ENOSPC: (DISK_FULL, "the file system is full", "Free some space on it, then call again"),
    errno.EDQUOT: (
        DISK_FULL,
        "the disk quota is used up",
        "Free some space within the quota (or have it raised), then call again",
    ),
    errno.EROFS: (
        READ_ONLY,
        "the file system is mounted read-only",
        "Remount it read-write (or work on a copy elsewhere), then call again",
    ),
    errno.EACCES: (
        PERMISSION_DENIED,
        "permission was denied",
        "Give the server's user write access to it, then call again",
    ),
    errno.EPERM: (
        PERMISSION_DENIED,
        "the operation is not permitted (an immutable or append-only file?)",
        "Fix the file's attributes or permissions, then call again",
    ),
}

STORAGE_ERRNOS = frozenset(_STORAGE_REASONS)
#: The codes a refused write carries.
STORAGE_CODES = frozenset({DISK_FULL, READ_ONLY, PERMISSION_DENIED})


def is_storage_error(error: BaseException) -> bool:
    """Whether `error` is the file system refusing a write (full, quota, read-only, forbidden)."""
    return isinstance(error, OSError) and error.errno in _STORAGE_REASONS


def storage_failure(
    error: OSError, what: str, where: str | os.PathLike[str], kept: str
) -> ToolFailure | None:
    """The coded failure of writing `what` under `where` that `error` stopped; None when `error`
    is not one of the file system's refusals. `kept` says what is still as it was."""
    reason = _STORAGE_REASONS.get(error.errno or 0)
    if reason is None:
        return None
    code, said, next_step = reason
    return ToolFailure(
        code,
        f"{what} could not be written: {said} ({os.fspath(where)}; {error.strerror or error}). "
        f"{kept} {next_step}.",
        errno=errno.errorcode.get(error.errno or 0, str(error.errno)),
        location=os.fspath(where),
    )
