"""Memory the server freed goes back to the system, so its resident size follows its needs.

glibc keeps freed heap memory for reuse. Two moments leave a lot of it behind:
a large allocation freed (a 5 MB print the server refused to keep), and a
one-off peak of many small ones (compiling the notebook schema's validator
at start: 10 MiB while it compiles, 3 MiB after). Large allocations are
served from ``mmap`` so they are returned when freed; after a known peak,
``malloc_trim`` hands the free pages of every arena back. Elsewhere than
glibc both do nothing.
"""

from __future__ import annotations

import sys
from typing import Any

#: ``mallopt``'s M_MMAP_THRESHOLD: allocations from this size up are mmap'd.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024


def _libc() -> Any:
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_large_allocations_promptly() -> None:
    """Serve large allocations from mmap, so memory a big output freed goes back at once."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def return_free_memory() -> None:
    """Hand the heap's free pages back to the system (after a one-off peak)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
