"""Recent outputs of scratch code, kept a while so what a result left out stays reachable.

``execute_code`` stores nothing in a notebook, yet its result may carry only
the head and tail of a long output. The outputs are kept here, under a random
key, for ``scratch-output:///{key}?output=N`` and ``read_output``: a few
executions, a bounded number of bytes, for a limited time. The oldest go
first; an expired key reads as not found, which says to run the code again.

Outputs are kept as compressed JSON (zlib's fastest level): printed text
compresses several times over, so the bound is on the bytes really held,
and an execution whose result cut nothing is not kept at all (the caller
puts outputs only when a result links to them).

The store belongs to one :class:`~jupyter_mcp_server._state.ServerState`, so
two servers in one process never see each other's outputs.
"""

from __future__ import annotations

import json
import secrets
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SCRATCH_SCHEME = "scratch-output"

#: How many executions' outputs are kept at once.
MAX_EXECUTIONS = 32
#: The most compressed bytes kept over all of them (each execution is already
#: bounded by --max-output-bytes; this bounds the sum).
MAX_BYTES = 16 * 1024 * 1024
#: Seconds an execution's outputs stay readable.
TTL_SECONDS = 3600.0


@dataclass
class _Entry:
    compressed: bytes
    expires: float


class ScratchOutputs:
    """A bounded, expiring map from key to one execution's outputs."""

    def __init__(
        self,
        max_executions: int = MAX_EXECUTIONS,
        max_bytes: int = MAX_BYTES,
        ttl_seconds: float = TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_executions = max_executions
        self.max_bytes = max_bytes
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0

    def put(self, outputs: list[dict[str, Any]]) -> str:
        """Keep `outputs`; answer their key."""
        self._expire()
        key = secrets.token_hex(8)
        data = json.dumps(outputs, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
        compressed = zlib.compress(data, 1)
        self._entries[key] = _Entry(compressed, self._clock() + self.ttl_seconds)
        self._bytes += len(compressed)
        # The newest is kept even alone above max_bytes: it is what the result
        # being answered links to, and it is bounded by --max-output-bytes.
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_executions or self._bytes > self.max_bytes
        ):
            self._drop_oldest()
        return key

    def get(self, key: str) -> list[dict[str, Any]] | None:
        """The outputs kept under `key`, or None when they expired or never were."""
        self._expire()
        entry = self._entries.get(key)
        if entry is None:
            return None
        outputs: list[dict[str, Any]] = json.loads(
            zlib.decompress(entry.compressed).decode("utf-8", "surrogatepass")
        )
        return outputs

    def __len__(self) -> int:
        self._expire()
        return len(self._entries)

    def _expire(self) -> None:
        now = self._clock()
        while self._entries and next(iter(self._entries.values())).expires <= now:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, entry = self._entries.popitem(last=False)
        self._bytes -= len(entry.compressed)


def scratch_uri(key: str, index: int) -> str:
    """``scratch-output:///{key}?output=N``."""
    return f"{SCRATCH_SCHEME}:///{key}?output={index}"
