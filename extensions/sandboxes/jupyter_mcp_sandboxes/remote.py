"""A sandbox that is a kernel on a Jupyter Server.

The REST side and the kernel websocket are the server's own remote kernel
backend (:mod:`jupyter_mcp_server._kernels.remote`): one client, with its
reconnection after a dropped websocket, whether a sandbox or ``--jupyter-url``
started the kernel. The token travels in the ``Authorization`` header only.
"""

from __future__ import annotations

import contextlib
import logging

import httpx

from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_server.api import (
    ArgumentNames,
    KernelWebSocket,
    RemoteKernel,
    open_remote_kernel,
)
from jupyter_mcp_server.api import (
    normalize_url as _normalize_url,
)

logger = logging.getLogger(__name__)

#: The launch_sandbox arguments a failure names.
NAMES = ArgumentNames(url="server_url", token="token")


def normalize_url(server_url: str) -> str:
    """``http(s)://host[:port][/base]`` without a query or trailing slash; anything else is refused."""
    return _normalize_url(server_url, NAMES)


class RemoteSandbox(Sandbox):
    """A sandbox that is a kernel on somebody's Jupyter Server."""

    def __init__(self, spec: SandboxSpec, kernel: RemoteKernel, channels: KernelWebSocket) -> None:
        super().__init__(spec, kernel_id=kernel.kernel_id, manager=kernel, client=channels)
        self.kernel: RemoteKernel = kernel
        self.channels = channels

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


async def connect_remote_sandbox(spec: SandboxSpec, server_url: str) -> Sandbox:
    """Start a kernel on the server and open its websocket; nothing is left behind on failure."""
    kernel, channels = await open_remote_kernel(
        server_url, spec.token, spec.kernel_name or "python3", spec.timeout, NAMES
    )
    return RemoteSandbox(spec, kernel, channels)
