"""stdin and stdout read and written on the event loop, when both are pipes.

The SDK's stdio transport reads each line in a worker thread and writes each
message with two more thread hand-offs (write, flush): three trips between
threads per request and answer, a measurable part of a warm call's round trip
on a busy machine. When stdin and stdout are pipes (as they are when a
desktop host spawns the server), they are served here by asyncio's own
pipe transports instead, with the SDK's framing (one JSON-RPC message per
line, UTF-8, invalid bytes replaced) and the SDK's claim of the descriptors:
while serving, fd 0 reads the null device and fd 1 writes to stderr, so a
stray ``print`` or a child process never corrupts the protocol stream.

Anything else (a terminal, a regular file, a socket) goes through the SDK's
transport: making a terminal non-blocking would leak into the shell that owns
it, and see :func:`can_serve` for sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

logger = logging.getLogger(__name__)

#: A single message may be large (a notebook written in one call): only a
#: line longer than this (1 GiB) ends the reader, with an error.
_READ_LIMIT = 1 << 30

#: How long buffered answers get to reach the client once serving ends.
_FLUSH_GRACE = 5.0


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def can_serve() -> bool:
    """Whether stdin and stdout are both pipes.

    Not sockets: asyncio's write-pipe transport takes a socket becoming
    readable for its peer going away, and a socket that is both stdin and
    stdout becomes readable with every request.
    """
    return _is_pipe(0) and _is_pipe(1)


@contextlib.contextmanager
def _claimed_std_descriptors() -> Any:
    """Private duplicates of fd 0 and 1; meanwhile fd 0 reads /dev/null and fd 1 goes to stderr.

    Each duplicate is for a transport to own and close; on the way out the
    wire is made blocking again (asyncio made it non-blocking, and that flag
    belongs to the pipe, not to a descriptor) and put back on fd 0 and 1.
    """
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield (
            fcntl.fcntl(wire_in, fcntl.F_DUPFD_CLOEXEC, 3),
            fcntl.fcntl(wire_out, fcntl.F_DUPFD_CLOEXEC, 3),
        )
    finally:
        for wire, fd in ((wire_in, 0), (wire_out, 1)):
            with contextlib.suppress(OSError):
                os.set_blocking(wire, True)
                os.dup2(wire, fd)
            os.close(wire)


class _Output(asyncio.streams.FlowControlMixin):
    """stdout's protocol: a client that closes its end of stdout stops the server as closing stdin does."""

    def __init__(self, input_transport: asyncio.ReadTransport) -> None:
        super().__init__()
        self._input = input_transport

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self._input.is_closing():
            logger.info("The client closed its end of stdout; stopping")
            self._input.close()


@contextlib.asynccontextmanager
async def pipe_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``(read_stream, write_stream)`` pair over stdin and stdout pipes, without threads."""
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    loop = asyncio.get_running_loop()
    with _claimed_std_descriptors() as (wire_in, wire_out):
        reader = asyncio.StreamReader(limit=_READ_LIMIT)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
        )
        write_transport, write_protocol = await loop.connect_write_pipe(
            lambda: _Output(read_transport), os.fdopen(wire_out, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)  # type: ignore[arg-type]

        read_stream_writer, read_stream = anyio.create_memory_object_stream[Any](0)
        write_stream, write_stream_reader = anyio.create_memory_object_stream[Any](0)

        async def stdin_reader() -> None:
            async with read_stream_writer:
                while line := await reader.readline():
                    text = line.decode("utf-8", errors="replace")
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(
                            text, by_name=False
                        )
                    except Exception as problem:
                        await read_stream_writer.send(problem)
                        continue
                    await read_stream_writer.send(SessionMessage(message))

        async def stdout_writer() -> None:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    if write_transport.is_closing():
                        continue  # the client is gone (see _Output): answers go nowhere
                    text = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    writer.write(text.encode("utf-8") + b"\n")
                    with contextlib.suppress(ConnectionError):
                        await writer.drain()

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stdin_reader)
                tasks.start_soon(stdout_writer)
                yield read_stream, write_stream
                tasks.cancel_scope.cancel()
        finally:
            read_transport.close()
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), _FLUSH_GRACE)
