"""A sandbox that is a kernel on a Jupyter Server.

The kernel is opened through the server this extension runs in
(``ServerAccess.open_remote_kernel``): the same REST client and kernel websocket,
with its reconnection after a dropped websocket, as a kernel ``--jupyter-url``
started. The token travels in the ``Authorization`` header only.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import httpx

from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_server.api import ServerAccess

logger = logging.getLogger(__name__)


class RemoteSandbox(Sandbox):
    """A sandbox that is a kernel on somebody's Jupyter Server."""

    def __init__(self, spec: SandboxSpec, kernel: Any) -> None:
        super().__init__(spec, kernel_id=kernel.kernel_id, manager=kernel, client=kernel.channels)
        #: What ``ServerAccess.open_remote_kernel`` answered: the kernel's REST side.
        self.kernel = kernel
        #: Its websocket: the kernel client code runs through.
        self.channels = kernel.channels

    @property
    def where(self) -> str:
        return f"kernel {self.kernel_id} on the Jupyter Server at {self.kernel.server_url}"

    @property
    def server_url(self) -> str:
        return self.kernel.server_url

    async def _alive(self) -> bool:
        if self.channels.closed:
            return False
        try:
            return await self.kernel.is_alive()
        except httpx.HTTPError:
            # The server did not answer this once; the open websocket says the kernel is there.
            return not self.channels.closed

    def _gone_reason(self) -> str:
        if self.channels.closed:
            return self.channels.ended_because or "its websocket to the Jupyter Server closed"
        return "the Jupyter Server no longer has its kernel"

    async def _terminate(self) -> None:
        self.channels.stop_channels()
        try:
            await self.kernel.shutdown()
        except Exception as error:
            logger.warning(
                "Deleting kernel %s on %s failed: %s",
                self.kernel_id,
                self.kernel.server_url,
                type(error).__name__,
            )

    def _terminate_now(self) -> None:
        self.channels.stop_channels()
        with contextlib.suppress(Exception):
            self.kernel.shutdown_now()


async def connect_remote_sandbox(
    spec: SandboxSpec, server_url: str, server: ServerAccess
) -> Sandbox:
    """Start a kernel on the server and open its websocket; nothing is left behind on failure."""
    kernel = await server.open_remote_kernel(
        server_url,
        spec.token,
        spec.kernel_name or "python3",
        timeout=spec.timeout,
        url_argument="server_url",
        token_argument="token",
    )
    return RemoteSandbox(spec, kernel)
