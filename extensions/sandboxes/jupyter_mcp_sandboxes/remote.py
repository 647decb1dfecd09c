"""A kernel on a Jupyter Server, reached over its REST API and kernel websocket.

Started with ``POST /api/kernels``, checked with ``GET /api/kernels/{id}``,
interrupted with ``POST .../interrupt``, ended with ``DELETE``; code runs over
``/api/kernels/{id}/channels`` (:mod:`jupyter_mcp_sandboxes.websocket`). The
token travels in the ``Authorization`` header only: it is never put in a URL,
a message or a log line, so an error about it cannot repeat it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_sandboxes.websocket import KernelWebSocket
from jupyter_mcp_server.errors import INVALID_ARGUMENT, NOT_FOUND, TIMEOUT, ToolFailure

logger = logging.getLogger(__name__)

#: How long a liveness check or an interrupt may take.
REQUEST_TIMEOUT = 10.0


def normalize_url(server_url: str) -> str:
    """``http(s)://host[:port][/base]`` without a query or trailing slash; anything else is refused."""
    parts = urlsplit(server_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"server_url must be an http:// or https:// URL of a Jupyter Server, like http://127.0.0.1:8888; "
            f"got {urlunsplit((parts.scheme, parts.netloc, parts.path, '', ''))!r}.",
            argument="server_url",
        )
    if parts.query or "@" in parts.netloc:
        raise ToolFailure(
            INVALID_ARGUMENT,
            "server_url must not carry credentials or a query (pass the token as `token`).",
            argument="server_url",
        )
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


class RemoteKernel:
    """The REST side of one kernel: what the kernel layer calls its `manager`."""

    def __init__(self, server_url: str, token: str | None, kernel_id: str) -> None:
        self.server_url = server_url
        self.kernel_id = kernel_id
        self._headers = {"Authorization": f"token {token}"} if token else {}

    @property
    def kernel_url(self) -> str:
        return f"{self.server_url}/api/kernels/{quote(self.kernel_id)}"

    @property
    def channels_url(self) -> str:
        scheme = "wss" if self.server_url.startswith("https") else "ws"
        return f"{scheme}{self.kernel_url[self.kernel_url.index(':'):]}/channels"

    @property
    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    @classmethod
    async def start(cls, server_url: str, token: str | None, kernel_name: str, timeout: float) -> RemoteKernel:
        """A new kernel on the server; every failure names what to fix, never the token."""
        headers = {"Authorization": f"token {token}"} if token else {}
        async with httpx.AsyncClient(timeout=timeout, headers=headers) as http:
            specs = await _request(http, "GET", f"{server_url}/api/kernelspecs", server_url, timeout)
            try:
                known = sorted(specs.json()["kernelspecs"])
            except (ValueError, KeyError, TypeError):
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    f"{server_url} answered GET /api/kernelspecs with something that is not a Jupyter Server's answer.",
                    argument="server_url",
                ) from None
            if kernel_name not in known:
                raise ToolFailure(
                    NOT_FOUND,
                    f"The Jupyter Server at {server_url} has no kernel named '{kernel_name}'. It has: {', '.join(known) or 'none'}.",
                    argument="kernel_name",
                    known=known,
                )
            created = await _request(http, "POST", f"{server_url}/api/kernels", server_url, timeout, json={"name": kernel_name})
        try:
            kernel_id = str(created.json()["id"])
        except (ValueError, KeyError, TypeError):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{server_url} answered POST /api/kernels without a kernel id; is it a Jupyter Server?",
                argument="server_url",
            ) from None
        return cls(server_url, token, kernel_id)

    async def is_alive(self) -> bool:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.get(self.kernel_url, headers=self._headers)
        if response.status_code == 404:
            return False
        response.raise_for_status()
        return response.json().get("execution_state") != "dead"

    async def interrupt_kernel(self) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.post(f"{self.kernel_url}/interrupt", headers=self._headers)
        response.raise_for_status()

    async def shutdown(self) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.delete(self.kernel_url, headers=self._headers)
        if response.status_code not in (204, 200, 404):
            response.raise_for_status()

    def shutdown_now(self) -> None:
        with httpx.Client(timeout=REQUEST_TIMEOUT) as http:
            http.delete(self.kernel_url, headers=self._headers)


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
            return "its websocket to the Jupyter Server closed"
        return "the Jupyter Server no longer has its kernel"

    async def _terminate(self) -> None:
        self.channels.stop_channels()
        try:
            await self.kernel.shutdown()
        except Exception as error:
            logger.warning("Deleting kernel %s on %s failed: %s", self.kernel_id, self.kernel.server_url, type(error).__name__)

    def _terminate_now(self) -> None:
        self.channels.stop_channels()
        with contextlib.suppress(Exception):
            self.kernel.shutdown_now()


async def connect_remote_sandbox(spec: SandboxSpec, server_url: str) -> Sandbox:
    """Start a kernel on the server and open its websocket; nothing is left behind on failure."""
    kernel = await RemoteKernel.start(server_url, spec.token, spec.kernel_name or "python3", spec.timeout)
    channels = KernelWebSocket(kernel.channels_url, kernel.headers)
    try:
        await channels.connect(spec.timeout)
        await channels.wait_for_ready(spec.timeout)
    except BaseException as error:
        channels.stop_channels()
        # Synchronous, so a cancelled launch deletes its kernel too.
        with contextlib.suppress(Exception):
            kernel.shutdown_now()
        if not isinstance(error, Exception):
            raise
        if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
            raise ToolFailure(
                TIMEOUT,
                f"The kernel started on {server_url} did not answer within {spec.timeout:g}s; it was deleted.",
            ) from None
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"Could not open the kernel's websocket on {server_url} ({type(error).__name__}: "
            f"{_without(str(error), spec.token)}); the kernel was deleted.",
        ) from None
    return RemoteSandbox(spec, kernel, channels)


def _without(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


async def _request(http: httpx.AsyncClient, method: str, url: str, server_url: str, timeout: float, **kwargs: object) -> httpx.Response:
    """One REST call whose failures say what to do (and never carry the token)."""
    try:
        response = await http.request(method, url, **kwargs)  # type: ignore[arg-type]
    except httpx.TimeoutException:
        raise ToolFailure(TIMEOUT, f"The Jupyter Server at {server_url} did not answer within {timeout:g}s.") from None
    except httpx.HTTPError as error:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"Could not reach a Jupyter Server at {server_url} ({type(error).__name__}). "
            "Check server_url and that the server is running.",
            argument="server_url",
        ) from None
    if response.status_code in (401, 403):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"The Jupyter Server at {server_url} refused the token (HTTP {response.status_code}). "
            "Pass the token that server was started with.",
            argument="token",
        )
    if response.status_code >= 400:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"The Jupyter Server at {server_url} answered {method} {url[len(server_url):]} with HTTP {response.status_code}.",
        )
    return response
