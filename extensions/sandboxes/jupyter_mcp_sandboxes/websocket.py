"""A Jupyter Server kernel's websocket, as the client the server's `run_code` drives.

`run_code` needs four things of a kernel client: ``execute()`` returning the
request's id, ``get_iopub_msg(timeout)`` and ``get_shell_msg(timeout)``
raising ``queue.Empty`` when nothing came, and nothing else. Jupyter Server
multiplexes every channel over ``/api/kernels/{id}/channels``, each message
a JSON text frame carrying its ``channel`` (the legacy protocol, which every
Jupyter Server speaks); this reads them in the background into one queue per
channel. The binary frame of a message with buffers is decoded too, its
buffers dropped: nothing run_code reads carries any.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import uuid
from datetime import datetime, timezone
from typing import Any

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "5.3"
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


def decode_frame(frame: str | bytes) -> dict[str, Any]:
    """One websocket frame as a message (legacy protocol)."""
    if isinstance(frame, str):
        return json.loads(frame)
    count = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 + 4 * i : 8 + 4 * i], "big") for i in range(count)]
    end = offsets[1] if count > 1 else len(frame)
    return json.loads(frame[offsets[0] : end].decode("utf-8"))


class KernelWebSocket:
    """The channels of one kernel on a Jupyter Server, over its websocket."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.session = uuid.uuid4().hex
        self.url = f"{url}?session_id={self.session}"
        self._headers = headers
        self._socket: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._queues: dict[str, asyncio.Queue[dict[str, Any]]] = {
            "iopub": asyncio.Queue(),
            "shell": asyncio.Queue(),
            "control": asyncio.Queue(),
        }
        self.closed = False

    async def connect(self, timeout: float) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        request = HTTPRequest(self.url, headers=self._headers, connect_timeout=timeout, request_timeout=timeout)
        self._socket = await asyncio.wait_for(
            websocket_connect(request, max_message_size=MAX_MESSAGE_BYTES), timeout
        )
        self._reader = asyncio.get_running_loop().create_task(self._read_forever())

    async def _read_forever(self) -> None:
        try:
            while True:
                frame = await self._socket.read_message()
                if frame is None:
                    break
                try:
                    message = decode_frame(frame)
                except (ValueError, IndexError):
                    logger.warning("Ignored a kernel websocket frame that is not a message")
                    continue
                channel = self._queues.get(message.get("channel", ""))
                if channel is not None:
                    channel.put_nowait(message)
        finally:
            self.closed = True

    # --- What run_code uses ----------------------------------------------------

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool = False,
        stop_on_error: bool = True,
    ) -> str:
        return self.send(
            "shell",
            "execute_request",
            {
                "code": code,
                "silent": silent,
                "store_history": store_history,
                "user_expressions": user_expressions or {},
                "allow_stdin": allow_stdin,
                "stop_on_error": stop_on_error,
            },
        )

    async def get_iopub_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._next("iopub", timeout)

    async def get_shell_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._next("shell", timeout)

    # --- The rest ----------------------------------------------------------------

    def send(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        if self._socket is None or self.closed:
            raise ConnectionError("the kernel's websocket is closed")
        msg_id = uuid.uuid4().hex
        message = {
            "header": {
                "msg_id": msg_id,
                "msg_type": msg_type,
                "username": "jupyter-mcp-server",
                "session": self.session,
                "date": datetime.now(timezone.utc).isoformat(),
                "version": PROTOCOL_VERSION,
            },
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": channel,
            "buffers": [],
        }
        written = self._socket.write_message(json.dumps(message))
        written.add_done_callback(_log_failed_write)
        return msg_id

    async def _next(self, channel: str, timeout: float | None) -> dict[str, Any]:
        waiting = self._queues[channel]
        if self.closed and waiting.empty():
            raise queue.Empty
        try:
            return await asyncio.wait_for(waiting.get(), timeout)
        except asyncio.TimeoutError:
            raise queue.Empty from None

    async def wait_for_ready(self, timeout: float) -> None:
        """Ask for kernel_info until the kernel answers (it may still be starting)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (left := deadline - loop.time()) > 0:
            msg_id = self.send("shell", "kernel_info_request", {})
            try:
                while True:
                    reply = await self.get_shell_msg(timeout=min(left, 2.0))
                    if reply.get("parent_header", {}).get("msg_id") == msg_id:
                        self._drain("iopub")
                        return
            except queue.Empty:
                if self.closed:
                    raise ConnectionError("the kernel's websocket closed before the kernel answered") from None
                continue
        raise TimeoutError(f"the kernel did not answer kernel_info within {timeout:g}s")

    def _drain(self, channel: str) -> None:
        waiting = self._queues[channel]
        while not waiting.empty():
            waiting.get_nowait()

    def stop_channels(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(Exception):
                self._socket.close()
        if self._reader is not None:
            self._reader.cancel()
        self.closed = True


def _log_failed_write(future: Any) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        error = future.exception()
        if error is not None:
            logger.warning("Writing to a kernel websocket failed: %s", error)
