"""Which notebook files nbformat's schema already found valid, kept under the bytes' digest.

Validating a notebook against the 4.5 schema is most of what reading it
costs (measured on a 2,000-cell notebook: JSON 3 %, building the document
20-25 %, the schema 55-60 % of ``nbformat.read``), and a notebook is read
again and again: by each new server, after each restart, by each search.
The verdict depends only on the bytes and on the validator, so a file found
valid is remembered under the SHA-256 of its bytes, in a folder named after
the validator (nbformat's and fastjsonschema's versions, the validator
chosen with ``NBFORMAT_VALIDATOR``): the same bytes are valid again without
running the schema, and anything else, one byte changed or another
nbformat, is validated afresh. Only "valid" is kept; an invalid file is
validated every time, so that its refusal always names its problem.

The verdicts live in the user's cache directory beside the generated
validator (one empty file each, at most ``MAX_KEPT``, the oldest removed
first), so that they outlive the process. Whoever can write there can
already write the user's notebooks. Nothing here ever fails a read: a cache
that cannot be read or written is a cache that remembers nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from pathlib import Path

from .schema_validator import cache_dir

logger = logging.getLogger(__name__)

#: Verdicts kept on disk at most; past it the oldest half is removed.
MAX_KEPT = 20_000
#: Verdicts kept in memory at most (digests of 64 characters).
MAX_IN_MEMORY = 4096
_lock = threading.Lock()
_in_memory: dict[str, None] = {}
_folder: list[Path] = []  # the validator's folder, once found
_written = [0]


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _validator_folder() -> Path:
    if _folder:
        return _folder[0]
    import fastjsonschema  # lazy: nbformat and its validator are imported at the first read
    import nbformat
    from nbformat.json_compat import get_current_validator

    identity = f"{nbformat.__version__}|{fastjsonschema.VERSION}|{get_current_validator().__name__}"
    name = hashlib.sha256(identity.encode()).hexdigest()[:16]
    folder = cache_dir().parent / "verdicts" / name
    _folder.append(folder)
    return folder


def known_valid(digest: str) -> bool:
    """Whether bytes of this digest were found valid by this validator before."""
    if digest in _in_memory:
        return True
    try:
        found = (_validator_folder() / digest).exists()
    except Exception:
        logger.debug("The notebook verdicts could not be read", exc_info=True)
        return False
    if found:
        _keep_in_memory(digest)
    return found


def remember_valid(digest: str) -> None:
    """Keep that bytes of this digest are valid (best effort)."""
    _keep_in_memory(digest)
    try:
        folder = _validator_folder()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(folder / digest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        with _lock:
            _written[0] += 1
            prune = _written[0] % 512 == 0
        if prune:
            _prune(folder)
    except Exception:
        logger.debug("A notebook verdict could not be kept", exc_info=True)


def _keep_in_memory(digest: str) -> None:
    with _lock:
        _in_memory[digest] = None
        while len(_in_memory) > MAX_IN_MEMORY:
            del _in_memory[next(iter(_in_memory))]


def _prune(folder: Path) -> None:
    entries = []
    with os.scandir(folder) as scan:
        for entry in scan:
            with contextlib.suppress(OSError):
                entries.append((entry.stat().st_mtime_ns, entry.path))
    if len(entries) <= MAX_KEPT:
        return
    entries.sort()
    for _mtime, path in entries[: len(entries) - MAX_KEPT // 2]:
        with contextlib.suppress(OSError):
            os.remove(path)
