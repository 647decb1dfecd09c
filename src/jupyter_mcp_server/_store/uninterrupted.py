"""A blocking call made in a worker thread, which the caller's cancellation cannot cut short.

A durable write blocks: two ``fsync`` calls, and a directory lock that
another server process may hold for a while. Made on the event loop, it held
every other agent's call for as long (measured with many agents at once: the
loop's longest waits were all inside them). Made in a worker thread, it
frees the loop; but a caller cancelled while it runs (a client cancelling
its request) would then return before the write has ended, while the write
goes on: the store would no longer know what the file holds, and the next
write to that file could start before this one is done.

So :func:`run_to_the_end` waits for the call to end whatever happens, and
only then lets a cancellation that arrived meanwhile go on up: the caller
then handles it as a write that may or may not have landed (the store reads
the file again, its history reconciles the revision it meant to write, as
after a crash), but never while the write is still going.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def run_to_the_end(call: Callable[[], T]) -> T:
    """``call()`` in the loop's default executor, awaited to its end (see the module)."""
    future = asyncio.get_running_loop().run_in_executor(None, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        while not future.done():
            # Cancelled again while waiting (a cancel scope repeats its cancellation): the
            # call still has to end before the first one goes on up. Its own failure, if
            # any, gives way to the cancellation, as its success does.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(future)
        if not future.cancelled():
            future.exception()  # retrieved: asyncio does not log it as never seen
        raise
