"""Serving over stdio, for a desktop client that starts the server itself.

Nothing but the protocol goes to stdout, and a request the SDK cannot read
but whose id is known is answered with JSON-RPC's -32600 rather than dropped. The server stops when stdin closes,
on SIGTERM, SIGHUP or Ctrl-C, and in every case shuts its kernels down and
calls each extension's `on_stop` first.

The SDK reads stdin in a worker thread that no cancellation reaches: a
signal cannot make that read return while the client keeps stdin open. So a
signal does not wait for it: the request loop is cancelled, kernels and
extensions are stopped, and the process exits without joining that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jupyter_mcp_server._protocol.handlers import lowlevel
from jupyter_mcp_server._transports.pipes import can_serve, pipe_streams

if TYPE_CHECKING:
    from jupyter_mcp_server._app import Application

#: Seconds the request loop gets to end after a signal before it is left behind.
STOP_GRACE = 1.0


def refusal_of(problem: Exception) -> Any:
    """The error answer a line the SDK could not read deserves, when it has an id to answer.

    JSON-RPC says an invalid request is answered with -32600; the SDK's stdio
    reader drops such a line instead (``params`` not an object, a method that
    is not a string, another ``jsonrpc`` version), and a client waiting on
    its id waits for ever. A line with no usable id (not JSON at all, a
    response, a notification) has nobody waiting, and is left alone.
    """
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError
    from pydantic import ValidationError

    if not isinstance(problem, ValidationError):
        return None
    for error in problem.errors():
        message = error.get("input")
        if isinstance(message, str):
            # Not even parsed (nested too deep for the parser): find the id by hand.
            keys = _top_level_members(message)
            if "method" not in keys:
                continue
            request_id = keys.get("id")
        elif isinstance(message, dict) and "method" in message:
            request_id = message.get("id")
        else:
            continue
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return None
        reasons = (
            f"{'.'.join(map(str, e['loc'][1:])) or 'message'}: {e['msg']}" for e in problem.errors()
        )
        what = "; ".join(dict.fromkeys(reasons))[:500]
        return SessionMessage(
            JSONRPCError(
                jsonrpc="2.0",
                id=request_id,
                error=ErrorData(code=INVALID_REQUEST, message=f"Invalid request ({what})"),
            )
        )
    return None


_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[{}\[\]:,]|true|false|null|\s+|.'
)


def _top_level_members(text: str) -> dict[str, Any]:
    """The string and integer members of a JSON object's top level, scanned without
    recursion (for a line too deeply nested to parse); other members map to None."""
    members: dict[str, Any] = {}
    depth, key, expecting_value = 0, None, False
    for token in _TOKEN.finditer(text[:1_000_000]):
        value = token.group()
        if value.isspace():
            continue
        if value in "{[":
            if depth == 1 and expecting_value and key is not None:
                members[key] = None
            depth += 1
            expecting_value = False
        elif value in "}]":
            depth -= 1
        elif depth != 1:
            continue
        elif value == ":":
            expecting_value = True
        elif value == ",":
            key, expecting_value = None, False
        elif expecting_value and key is not None:
            try:
                members[key] = json.loads(value)
            except ValueError:
                members[key] = None
            expecting_value = False
        elif value.startswith('"'):
            try:
                key = json.loads(value)
            except ValueError:
                key = None
    return members


def completes_the_handshake(item: Any) -> bool:
    """Whether a message read is the client's ``notifications/initialized``."""
    message = getattr(item, "message", None)
    return getattr(message, "method", None) == "notifications/initialized" and not hasattr(
        message, "id"
    )


async def serve_stdio(mcp: Any, on_handshake: Callable[[], None] = lambda: None) -> None:
    """`MCPServer.run_stdio_async`, answering the invalid requests it would drop; `on_handshake`
    is called when the client completes the handshake."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = lowlevel(mcp)
    streams = pipe_streams() if can_serve() else stdio_server()
    async with streams as (read_stream, write_stream):
        screened_send, screened = anyio.create_memory_object_stream[Any](0)

        async def screen() -> None:
            async with screened_send:
                async for item in read_stream:
                    refusal = refusal_of(item) if isinstance(item, Exception) else None
                    if refusal is not None:
                        await write_stream.send(refusal)
                        continue
                    if completes_the_handshake(item):
                        on_handshake()
                    await screened_send.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(screen)
            await server.run(screened, write_stream, server.create_initialization_options())
            tasks.cancel_scope.cancel()


async def serve_async(application: Application) -> None:
    mcp = application.build_configured().server
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
    left_behind = False
    async with application.running():
        serving = asyncio.ensure_future(serve_stdio(mcp, application.handshake_done))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if serving.done():
            with contextlib.suppress(asyncio.CancelledError):
                serving.result()
        else:
            serving.cancel()
            await asyncio.wait({serving}, timeout=STOP_GRACE)
            left_behind = not serving.done()
    if left_behind:
        # Kernels and extensions are stopped; only the blocked stdin read is left.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)


def serve(application: Application) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_async(application))
