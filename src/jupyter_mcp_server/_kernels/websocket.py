"""A Jupyter Server kernel's websocket, as the client `run_code` drives.

`run_code` needs three things of a kernel client: ``execute()`` returning the
request's id, and ``get_iopub_msg(timeout)`` / ``get_shell_msg(timeout)``
raising ``queue.Empty`` when nothing came. Jupyter Server multiplexes every
channel over ``/api/kernels/{id}/channels``, each message a JSON text frame
carrying its ``channel`` (the legacy protocol, which every Jupyter Server
speaks); this reads them in the background into one queue per channel. The
binary frame of a message with buffers is decoded too, its buffers dropped:
nothing run_code reads carries any.

A dropped connection is not a dead kernel. When the socket closes without
this side having closed it, it is opened again with the same ``session_id``
for up to :data:`RECONNECT_WINDOW` seconds: Jupyter Server buffers what the
kernel says while a session's websocket is away and replays it to the same
session when it comes back, so an execution running across the gap loses
none of the output the server still has. Messages sent meanwhile wait in an
outbox. Only a server that no longer has the kernel (404), refuses the
token, or stays unreachable for the whole window ends the connection.

A server that refuses the connection outright (nothing listens on its port)
is another matter: its process is gone, and the kernels it ran went with it
(a Jupyter Server restarted on that port does not have them). Refused for
:data:`REFUSED_WINDOW` seconds in a row, the connection is given up and the
kernel counts as gone then, not at the end of the reconnect window, so a call
running on it ends within seconds of the server's death rather than at its
timeout. The short window rides out a proxy or a port being rebound.

The token travels in the ``Authorization`` header only, never in the URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import time
import uuid
from typing import Any

from jupyter_mcp_server._text.timestamps import iso_utc

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "5.3"
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
#: How long a dropped websocket is tried again before the kernel counts as lost.
RECONNECT_WINDOW = 60.0
#: The first pause between attempts; it doubles up to :data:`MAX_RECONNECT_DELAY`.
FIRST_RECONNECT_DELAY = 0.1
MAX_RECONNECT_DELAY = 1.0
#: How long a server may refuse connections before its kernel counts as gone with it.
REFUSED_WINDOW = 2.0


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

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        reconnect_window: float = RECONNECT_WINDOW,
        refused_window: float = REFUSED_WINDOW,
    ) -> None:
        self.session = uuid.uuid4().hex
        self.url = f"{url}?session_id={self.session}"
        self._headers = headers
        self.reconnect_window = reconnect_window
        self.refused_window = refused_window
        self._socket: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._queues: dict[str, asyncio.Queue[dict[str, Any]]] = {
            "iopub": asyncio.Queue(),
            "shell": asyncio.Queue(),
            "control": asyncio.Queue(),
        }
        #: Frames sent while the connection was being restored, in order.
        self._outbox: list[str] = []
        #: For good: stopped, given up on, or the kernel is gone.
        self.closed = False
        #: The server said it no longer has this kernel.
        self.gone = False
        #: Why the connection ended, when it did not end on purpose.
        self.ended_because: str | None = None
        #: How many times a dropped connection was restored.
        #: The kernel announced its shutdown (``shutdown_reply``): whoever asked, it is going away.
        self.shutting_down = False
        self._stopping = False

    @property
    def connected(self) -> bool:
        return self._socket is not None and not self.closed

    async def connect(self, timeout: float) -> None:
        self._socket = await self._open(timeout)
        self._reader = asyncio.get_running_loop().create_task(self._run())

    async def _open(self, timeout: float) -> Any:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        request = HTTPRequest(
            self.url, headers=self._headers, connect_timeout=timeout, request_timeout=timeout
        )
        return await asyncio.wait_for(
            websocket_connect(request, max_message_size=MAX_MESSAGE_BYTES), timeout
        )

    async def _run(self) -> None:
        try:
            while True:
                await self._read_until_closed()
                if self._stopping:
                    return
                self._socket = None
                logger.warning(
                    "The websocket of a remote kernel dropped; reconnecting (%s)", self._where()
                )
                if not await self._reconnect():
                    return
        finally:
            self.closed = True

    async def _read_until_closed(self) -> None:
        socket = self._socket
        while True:
            frame = await socket.read_message()
            if frame is None:
                return
            try:
                message = decode_frame(frame)
            except (ValueError, IndexError):
                logger.warning("Ignored a kernel websocket frame that is not a message")
                continue
            if (
                message.get("msg_type", (message.get("header") or {}).get("msg_type"))
                == "shutdown_reply"
            ):
                # The kernel is being shut down (by whoever asked the server): it is going away.
                self.shutting_down = True
            channel = self._queues.get(message.get("channel", ""))
            if channel is not None:
                channel.put_nowait(message)

    async def _reconnect(self) -> bool:
        from tornado.httpclient import HTTPClientError

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.reconnect_window
        delay = FIRST_RECONNECT_DELAY
        refused_since: float | None = None
        while not self._stopping and (left := deadline - loop.time()) > 0:
            try:
                socket = await self._open(min(10.0, left))
            except ConnectionRefusedError:
                now = loop.time()
                refused_since = now if refused_since is None else refused_since
                if now - refused_since >= self.refused_window:
                    self.gone = True
                    self.ended_because = (
                        f"the Jupyter Server at {self._server()} refused connections for {now - refused_since:.1f}s: "
                        "it is not running, and the kernel ended with it"
                    )
                    logger.warning(
                        "Gave up the websocket of a remote kernel: %s", self.ended_because
                    )
                    return False
                await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
                delay = min(delay * 2, MAX_RECONNECT_DELAY)
                continue
            except HTTPClientError as error:
                if error.code == 404:
                    self.gone = True
                    self.ended_because = "the Jupyter Server no longer has the kernel"
                    return False
                if error.code in (401, 403):
                    self.ended_because = (
                        f"the Jupyter Server refused the token on reconnection (HTTP {error.code})"
                    )
                    return False
            except (OSError, asyncio.TimeoutError, TimeoutError) as error:
                logger.debug("Reconnecting a kernel websocket failed: %s", type(error).__name__)
            except Exception as error:  # tornado's StreamClosedError and kin
                logger.debug("Reconnecting a kernel websocket failed: %s", type(error).__name__)
            else:
                if self._stopping:
                    with contextlib.suppress(Exception):
                        socket.close()
                    return False
                self._socket = socket
                logger.warning("Reconnected the websocket of a remote kernel (%s)", self._where())
                pending, self._outbox = self._outbox, []
                for frame in pending:
                    self._write(frame)
                return True
            refused_since = None  # something answered, or the network is away: not a dead server
            await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
            delay = min(delay * 2, MAX_RECONNECT_DELAY)
        self.ended_because = (
            f"the Jupyter Server could not be reached again within {self.reconnect_window:g}s"
        )
        return False

    def _where(self) -> str:
        return self.url.split("?", 1)[0]

    def _server(self) -> str:
        """The server's address (scheme, host and port), for a message."""
        where = self._where()
        scheme, rest = where.split("://", 1)
        return f"{'https' if scheme == 'wss' else 'http'}://{rest.split('/', 1)[0]}"

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
        if self.closed:
            raise ConnectionError("the kernel's websocket is closed")
        msg_id = uuid.uuid4().hex
        message = {
            "header": {
                "msg_id": msg_id,
                "msg_type": msg_type,
                "username": "jupyter-mcp-server",
                "session": self.session,
                "date": iso_utc(time.time(), precise=True),
                "version": PROTOCOL_VERSION,
            },
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": channel,
            "buffers": [],
        }
        frame = json.dumps(message)
        if self._socket is None:
            self._outbox.append(frame)  # reconnecting: sent once the connection is back
        else:
            self._write(frame)
        return msg_id

    def _write(self, frame: str) -> None:
        try:
            written = self._socket.write_message(frame)
        except Exception:  # closed under us: the reader reconnects, the frame waits
            self._outbox.append(frame)
            return
        written.add_done_callback(_log_failed_write)

    async def _next(self, channel: str, timeout: float | None) -> dict[str, Any]:
        waiting = self._queues[channel]
        if self.closed and waiting.empty():
            raise queue.Empty
        try:
            return await asyncio.wait_for(waiting.get(), timeout)
        except asyncio.TimeoutError:
            raise queue.Empty from None

    async def wait_for_ready(self, timeout: float) -> None:
        """Ask for kernel_info until the kernel answers (it may still be starting).

        A reply to any of the requests sent counts: on a link slower than the
        resend interval, each reply arrives after the next request has gone, and
        waiting for the newest one only would never end.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        asked: set[str] = set()
        while (left := deadline - loop.time()) > 0:
            asked.add(self.send("shell", "kernel_info_request", {}))
            try:
                while True:
                    reply = await self.get_shell_msg(timeout=min(left, 2.0))
                    if reply.get("parent_header", {}).get("msg_id") in asked:
                        self._drain("iopub")
                        return
            except queue.Empty:
                if self.closed:
                    raise ConnectionError(
                        "the kernel's websocket closed before the kernel answered"
                    ) from None
                continue
        raise TimeoutError(f"the kernel did not answer kernel_info within {timeout:g}s")

    def _drain(self, channel: str) -> None:
        waiting = self._queues[channel]
        while not waiting.empty():
            waiting.get_nowait()

    def stop_channels(self) -> None:
        self._stopping = True
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
            logger.warning("Writing to a kernel websocket failed: %s", type(error).__name__)
