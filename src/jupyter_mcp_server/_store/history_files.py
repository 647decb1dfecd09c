"""How a notebook's history reads and writes its files (:mod:`.history`).

Small files, written without ``fsync`` (the history is reconciled with the
notebook when read, docs/history.md): each replaced whole through a
temporary file, or appended in whole writes; its folder made when missing,
which is asked of the disk only then; content compressed as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import zlib
from pathlib import Path
from typing import Any


def opened(path: str, flags: int, mode: int) -> int:
    """``os.open`` of a file of the history, its folder made first when missing (the folder's
    first file, or a folder someone removed): asked of the disk only then, not every time."""
    try:
        return os.open(path, flags, mode)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, flags, mode)


def packed(value: Any) -> bytes:
    return zlib.compress(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"), 1)


def unpacked(data: bytes) -> Any:
    return json.loads(zlib.decompress(data).decode("utf-8", "surrogatepass"))


def files_in(folder: str | Path) -> list[os.DirEntry[str]]:
    """The files directly in ``folder`` (none when it is missing)."""
    try:
        with os.scandir(folder) as entries:
            return [entry for entry in entries if entry.is_file(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def replace_whole(path: Path | str, data: bytes) -> None:
    """``path`` replaced by ``data`` at once (a reader sees the old file or the new)."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = opened(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        # A full or read-only disk: the history is off for now, but leaves no litter behind.
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
