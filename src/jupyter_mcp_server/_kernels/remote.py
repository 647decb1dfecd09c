"""Kernels on a Jupyter Server, reached over its REST API and kernel websocket.

Started with ``POST /api/kernels``, checked with ``GET /api/kernels/{id}``,
interrupted with ``POST .../interrupt``, ended with ``DELETE``; code runs over
``/api/kernels/{id}/channels`` (:mod:`jupyter_mcp_server._kernels.websocket`).
The token travels in the ``Authorization`` header only: it is never put in a
URL, a message or a log line, so an error about it cannot repeat it.

:class:`JupyterServerBackend` is the kernel backend for
``--jupyter-url`` / ``connect_to_jupyter``; :class:`RemoteKernel` and
:class:`KernelWebSocket` are also what the sandboxes extension's
``jupyter-server`` variant is made of.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from jupyter_mcp_server._errors import (
    INVALID_ARGUMENT,
    KERNEL_LIMIT,
    NOT_FOUND,
    TIMEOUT,
    ToolFailure,
)
from jupyter_mcp_server._jupyter_urls import TOOL_ARGUMENTS, ArgumentNames, normalize_url
from jupyter_mcp_server._kernels.backends import (
    READY_TIMEOUT,
    BackendParts,
    JupyterServerAddress,
    KernelBackend,
    NotebookSessions,
    StartedKernel,
    unknown_kernelspec,
)
from jupyter_mcp_server._kernels.websocket import KernelWebSocket

__all__ = [
    "ArgumentNames",
    "JupyterServerBackend",
    "KernelWebSocket",
    "RemoteKernel",
    "RemoteSessions",
    "check_contents",
    "check_server",
    "normalize_url",
    "open_remote_kernel",
    "redact",
]

logger = logging.getLogger(__name__)

#: How long a liveness check, an interrupt or a look at the server may take.
REQUEST_TIMEOUT = 10.0
#: A kernel whose websocket is open and that answered this recently is not asked again.
ALIVE_CACHE_SECONDS = 1.0


def redact(text: str, secret: str | None) -> str:
    """`text` without `secret` in it, for messages built from somebody else's error."""
    return text.replace(secret, "***") if secret else text


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"token {token}"} if token else {}


#: What a kernel gateway says when it refuses a kernel for its own limit: Kernel Gateway's
#: "Resource Limit" (``--KernelGatewayApp.max_kernels``), Enterprise Gateway's "A max kernels
#: per user limit has been set to N ..." (``max_kernels_per_user``).
_LIMIT_WORDS = re.compile(r"\blimit|max(imum)?[ _-]kernels|too many kernels", re.IGNORECASE)
#: What Enterprise Gateway says when it refuses a kernel for the user it is started for
#: (``KERNEL_USERNAME``; root is refused unless its operator allows it).
_USER_WORDS = re.compile(r"\bKERNEL_USERNAME\b|not authorized to start kernel", re.IGNORECASE)
#: What tornado says for a bare 403: no more than that the request was refused.
_BARE_REASONS = frozenset({"", "forbidden", "unauthorized"})


def server_message(response: httpx.Response, token: str | None = None) -> str:
    """What the server said about a refusal (its JSON ``message``, else ``reason``), short,
    never the token; "" when it said nothing beyond the status."""
    try:
        body = response.json()
        said = (
            str(body.get("message") or body.get("reason") or "") if isinstance(body, dict) else ""
        )
    except ValueError:
        said = ""
    said = " ".join(redact(said, token).split())
    return said if len(said) <= 300 else said[:297] + "..."


def kernel_env() -> dict[str, str]:
    """The ``KERNEL_*`` variables of this process, sent with each kernel start, as Jupyter
    Server's own gateway client does: a gateway passes them to the kernel (Enterprise
    Gateway reads ``KERNEL_USERNAME``, ``KERNEL_NAMESPACE``, ``KERNEL_IMAGE`` ... from them)."""
    return {name: value for name, value in os.environ.items() if name.startswith("KERNEL_")}


async def request(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    server_url: str,
    timeout: float,
    names: ArgumentNames = TOOL_ARGUMENTS,
    **kwargs: Any,
) -> httpx.Response:
    """One REST call whose failures say what to do (and never carry the token)."""
    try:
        response = await http.request(method, url, **kwargs)
    except httpx.TimeoutException:
        raise ToolFailure(
            TIMEOUT, f"The Jupyter Server at {server_url} did not answer within {timeout:g}s."
        ) from None
    except httpx.HTTPError as error:
        raise ToolFailure(
            NOT_FOUND,
            f"Could not reach a Jupyter Server at {server_url} ({type(error).__name__}). "
            f"Check {names.url} and that the server is running.",
            argument=names.url,
        ) from None
    said = server_message(response)
    if response.status_code == 429 or (response.status_code == 403 and _LIMIT_WORDS.search(said)):
        # A gateway at its kernel limit: the token was fine, and another kernel is not.
        raise ToolFailure(
            KERNEL_LIMIT,
            f"The server at {server_url} refused {method} {url[len(server_url) :]} for its own limit "
            f"(HTTP {response.status_code}: {said or 'too many requests'}). Free a kernel there "
            "(unuse_notebook here, or shut one down on that server), or ask its operator to raise "
            "the limit (Kernel Gateway: --KernelGatewayApp.max_kernels; Enterprise Gateway: "
            "--EnterpriseGatewayApp.max_kernels_per_user).",
            http_status=response.status_code,
            server_message=said,
        )
    if response.status_code == 403 and _USER_WORDS.search(said):
        # The token was fine: the gateway does not start kernels for this user.
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"The server at {server_url} refused to start a kernel for this user (HTTP 403: "
            f"{said}). It starts kernels for the user KERNEL_USERNAME names in this server's "
            "environment (sent with each start): set it to a user the gateway allows, or ask its "
            "operator to allow this one (Enterprise Gateway: --EnterpriseGatewayApp.authorized_users "
            "and unauthorized_users, which holds root by default).",
            http_status=response.status_code,
            server_message=said,
        )
    if response.status_code in (401, 403):
        explained = f": {said}" if said.lower() not in _BARE_REASONS else ""
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"The Jupyter Server at {server_url} refused the token (HTTP {response.status_code}{explained}). "
            f"Pass the token that server was started with as {names.token} "
            "(it is printed when the server starts, or see `jupyter server list`; behind JupyterHub, "
            "a token of that user's with the access:servers scope).",
            argument=names.token,
        )
    if response.status_code >= 400:
        raise ToolFailure(
            NOT_FOUND if response.status_code == 404 else INVALID_ARGUMENT,
            f"The Jupyter Server at {server_url} answered {method} {url[len(server_url) :]} "
            f"with HTTP {response.status_code}. Is {names.url} the server's URL (with its base URL)?",
            argument=names.url,
        )
    return response


def _kernelspecs_of(
    response: httpx.Response, server_url: str, names: ArgumentNames
) -> dict[str, dict[str, str]]:
    try:
        specs = response.json()["kernelspecs"]
        return {
            name: {
                "name": name,
                "display_name": str((entry.get("spec") or {}).get("display_name") or name),
                "language": str((entry.get("spec") or {}).get("language") or ""),
            }
            for name, entry in specs.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ToolFailure(
            NOT_FOUND,
            f"{server_url} answered GET /api/kernelspecs with something that is not a Jupyter Server's answer. "
            f"Is {names.url} the server's URL (with its base URL)?",
            argument=names.url,
        ) from None


async def check_server(
    server_url: str,
    token: str | None,
    *,
    timeout: float = REQUEST_TIMEOUT,
    names: ArgumentNames = TOOL_ARGUMENTS,
) -> tuple[str, dict[str, dict[str, str]]]:
    """``(version, kernelspecs)`` of the Jupyter Server at `server_url`, or a failure saying what to fix.

    ``GET /api`` answers without a token, so ``GET /api/kernelspecs`` is what
    proves the token.
    """
    async with httpx.AsyncClient(timeout=timeout, headers=auth_headers(token)) as http:
        answered = await request(http, "GET", f"{server_url}/api", server_url, timeout, names)
        try:
            version = str(answered.json()["version"])
        except (ValueError, KeyError, TypeError):
            raise ToolFailure(
                NOT_FOUND,
                f"{server_url}/api did not answer like a Jupyter Server. Is {names.url} the server's URL "
                "(with its base URL)?",
                argument=names.url,
            ) from None
        specs = await request(
            http, "GET", f"{server_url}/api/kernelspecs", server_url, timeout, names
        )
    return version, _kernelspecs_of(specs, server_url, names)


async def check_contents(
    server_url: str,
    token: str | None,
    *,
    timeout: float = REQUEST_TIMEOUT,
    names: ArgumentNames = TOOL_ARGUMENTS,
) -> None:
    """That the server at `server_url` keeps notebooks (``GET /api/contents``): a kernel
    gateway serves kernels only, and notebooks cannot be kept there."""
    url = f"{server_url}/api/contents?content=0"
    async with httpx.AsyncClient(timeout=timeout, headers=auth_headers(token)) as http:
        try:
            response = await http.get(url)
        except httpx.HTTPError:
            response = None
        if response is not None and response.status_code in (404, 405):
            raise ToolFailure(
                NOT_FOUND,
                f"The server at {server_url} has no contents API (GET /api/contents answered HTTP "
                f"{response.status_code}): it runs kernels only, as a kernel gateway does, and cannot "
                "keep notebooks. Run without --jupyter-contents (notebooks stay under --workspace-root "
                f"and code runs there), or give {names.url} a Jupyter Server's URL.",
                argument=names.url,
            )
        if response is None or response.status_code != 200:
            await request(http, "GET", url, server_url, timeout, names)  # says what went wrong


class RemoteKernel:
    """The REST side of one kernel: what the kernel layer calls its `manager`."""

    def __init__(self, server_url: str, token: str | None, kernel_id: str) -> None:
        self.server_url = server_url
        self.kernel_id = kernel_id
        self._headers = auth_headers(token)
        #: The kernel's websocket, once open: a connection given up on means a lost kernel.
        self.channels: KernelWebSocket | None = None
        self._alive_at = 0.0

    def __repr__(self) -> str:  # never the headers
        return f"RemoteKernel({self.server_url!r}, kernel_id={self.kernel_id!r})"

    @property
    def lost_because(self) -> str | None:
        """Why its websocket was given up, when it was (the server refused connections, ...)."""
        return self.channels.ended_because if self.channels is not None else None

    @property
    def kernel_url(self) -> str:
        return f"{self.server_url}/api/kernels/{quote(self.kernel_id)}"

    @property
    def channels_url(self) -> str:
        scheme = "wss" if self.server_url.startswith("https") else "ws"
        return f"{scheme}{self.kernel_url[self.kernel_url.index(':') :]}/channels"

    @property
    def headers(self) -> dict[str, str]:
        return dict(self._headers)

    @classmethod
    async def start(
        cls,
        server_url: str,
        token: str | None,
        kernel_name: str,
        timeout: float,
        names: ArgumentNames = TOOL_ARGUMENTS,
        path: str | None = None,
    ) -> RemoteKernel:
        """A new kernel on the server; every failure names what to fix, never the token."""
        async with httpx.AsyncClient(timeout=timeout, headers=auth_headers(token)) as http:
            specs = await request(
                http, "GET", f"{server_url}/api/kernelspecs", server_url, timeout, names
            )
            known = sorted(_kernelspecs_of(specs, server_url, names))
            if kernel_name not in known:
                raise ToolFailure(
                    NOT_FOUND,
                    f"The Jupyter Server at {server_url} has no kernel named '{kernel_name}'. It has: {', '.join(known) or 'none'}.",
                    argument="kernel_name",
                    known=known,
                )
            body: dict[str, Any] = {"name": kernel_name}
            if path is not None:
                body["path"] = path
            env = kernel_env()
            if env:
                body["env"] = env
            created = await request(
                http, "POST", f"{server_url}/api/kernels", server_url, timeout, names, json=body
            )
        try:
            kernel_id = str(created.json()["id"])
        except (ValueError, KeyError, TypeError):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{server_url} answered POST /api/kernels without a kernel id; is it a Jupyter Server?",
                argument=names.url,
            ) from None
        return cls(server_url, token, kernel_id)

    async def is_alive(self) -> bool:
        """Whether the server still has the kernel, and this side can still reach it.

        A server that does not answer right now is not a dead kernel while its
        websocket is still being restored; one that says 404 is.
        """
        channels = self.channels
        if channels is not None and (channels.gone or channels.closed or channels.shutting_down):
            return False
        now = time.monotonic()
        if (
            channels is not None
            and channels.connected
            and now - self._alive_at < ALIVE_CACHE_SECONDS
        ):
            return True
        try:
            async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
                response = await http.get(self.kernel_url, headers=self._headers)
        except httpx.HTTPError:
            return channels is not None and not channels.closed
        if response.status_code == 404:
            return False
        if response.status_code >= 400:
            return channels is not None and not channels.closed
        try:
            alive = response.json().get("execution_state") != "dead"
        except (ValueError, AttributeError):
            alive = True
        if alive:
            self._alive_at = now
        return alive

    async def interrupt_kernel(self) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.post(f"{self.kernel_url}/interrupt", headers=self._headers)
        if response.status_code == 404:
            raise ConnectionError("the Jupyter Server no longer has the kernel")
        response.raise_for_status()

    async def shutdown(self) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            response = await http.delete(self.kernel_url, headers=self._headers)
        if response.status_code not in (204, 200, 404):
            response.raise_for_status()

    async def shutdown_kernel(self, now: bool = False) -> None:
        await self.shutdown()

    def shutdown_now(self) -> None:
        with httpx.Client(timeout=REQUEST_TIMEOUT) as http:
            http.delete(self.kernel_url, headers=self._headers)

    def cleanup_connection_file(self) -> None:
        """Nothing to clean: a remote kernel's connection file is the server's."""


async def open_remote_kernel(
    server_url: str,
    token: str | None,
    kernel_name: str,
    timeout: float,
    names: ArgumentNames = TOOL_ARGUMENTS,
    path: str | None = None,
) -> tuple[RemoteKernel, KernelWebSocket]:
    """Start a kernel on the server and open its websocket; nothing is left behind on failure."""
    kernel = await RemoteKernel.start(server_url, token, kernel_name, timeout, names, path)
    channels = KernelWebSocket(kernel.channels_url, kernel.headers)
    try:
        await channels.connect(timeout)
        await channels.wait_for_ready(timeout)
    except BaseException as error:
        channels.stop_channels()
        # Synchronous, so a cancelled start deletes its kernel too.
        with contextlib.suppress(Exception):
            kernel.shutdown_now()
        if not isinstance(error, Exception):
            raise
        if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
            raise ToolFailure(
                TIMEOUT,
                f"The kernel started on {server_url} did not answer within {timeout:g}s; it was deleted.",
            ) from None
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"Could not open the kernel's websocket on {server_url} ({type(error).__name__}: "
            f"{redact(str(error), token)}); the kernel was deleted.",
        ) from None
    kernel.channels = channels
    return kernel, channels


class RemoteSessions(NotebookSessions):
    """A Jupyter Server's ``/api/sessions``, over HTTP, the token in a header."""

    def __init__(self, server_url: str, token: str | None) -> None:
        super().__init__()
        self.server_url = server_url
        self._headers = auth_headers(token)

    def __repr__(self) -> str:  # never the token
        return f"RemoteSessions({self.server_url!r})"

    async def _create(self, path: str, kernel_id: str, kernel_name: str) -> tuple[str, str]:
        body = {
            "path": path,
            "type": "notebook",
            "name": path.rsplit("/", 1)[-1],
            "kernel": {"id": kernel_id},
        }
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, headers=self._headers) as http:
            response = await http.post(f"{self.server_url}/api/sessions", json=body)
        response.raise_for_status()
        model = response.json()
        return str(model["id"]), str(model["kernel"]["id"])

    async def _delete(self, session_id: str) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, headers=self._headers) as http:
            response = await http.delete(f"{self.server_url}/api/sessions/{quote(session_id)}")
        if response.status_code not in (204, 200, 404):
            response.raise_for_status()

    async def _kernel_of_existing(self, path: str) -> str | None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, headers=self._headers) as http:
            response = await http.get(f"{self.server_url}/api/sessions")
        response.raise_for_status()
        for model in response.json():
            if model.get("path") == path and (model.get("kernel") or {}).get("id"):
                return str(model["kernel"]["id"])
        return None


class JupyterServerBackend(KernelBackend):
    """Kernels on a Jupyter Server: ``--jupyter-url`` / ``connect_to_jupyter``."""

    name = "jupyter-server"

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        version: str | None = None,
        kernelspecs: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.url = normalize_url(url)
        self._token = token
        self.version = version
        self._specs: dict[str, dict[str, str]] = dict(kernelspecs or {})
        #: That server's sessions, when the notebooks are on it too (``--jupyter-contents``):
        #: a notebook path means nothing to a server that does not keep the notebook.
        self.sessions: RemoteSessions | None = None

    def __repr__(self) -> str:  # never the token
        return f"JupyterServerBackend({self.url!r})"

    def reached_at(self) -> JupyterServerAddress:
        """This server, for whoever else talks to it (the contents store); the token never shown."""
        return JupyterServerAddress(self.url, self._token)

    @classmethod
    async def connect(cls, url: str, token: str | None) -> JupyterServerBackend:
        """Check the server first (reachable, a Jupyter Server, the token accepted)."""
        url = normalize_url(url)
        version, specs = await check_server(url, token)
        return cls(url, token, version=version, kernelspecs=specs)

    @classmethod
    def build(cls, parts: BackendParts) -> JupyterServerBackend:
        """The server of ``--jupyter-url``, checked before anything serves (reachable, a Jupyter
        Server, the token accepted; with ``--jupyter-contents``, one that keeps notebooks), so
        that a wrong URL or token stops the server rather than failing every call."""
        import asyncio

        config = parts.config
        if not config.jupyter_url:
            raise ToolFailure(
                INVALID_ARGUMENT,
                "The jupyter-server kernel backend needs --jupyter-url (or JUPYTER_URL).",
            )
        names = ArgumentNames("--jupyter-url", "--jupyter-token")
        version, specs = asyncio.run(
            check_server(config.jupyter_url, config.jupyter_token, names=names)
        )
        if config.jupyter_contents:
            asyncio.run(check_contents(config.jupyter_url, config.jupyter_token, names=names))
        return cls(config.jupyter_url, config.jupyter_token, version=version, kernelspecs=specs)

    async def refresh(self) -> None:
        self.version, self._specs = await check_server(self.url, self._token)

    def kernelspecs(self) -> list[str]:
        return sorted(self._specs)

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        spec = self._specs.get(kernel_name)
        return dict(spec) if spec else None

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "jupyter_url": self.url, "version": self.version}

    def origin(self) -> str:
        return f"jupyter-server {self.url}"

    def bind_sessions(self) -> None:
        """Bind each notebook's kernel in this server's sessions (its notebooks are kept there)."""
        self.sessions = RemoteSessions(self.url, self._token)

    async def adopt(self, kernel_id: str) -> tuple[StartedKernel, str] | None:
        """A kernel already running on the server (somebody's JupyterLab), to share it."""
        kernel = RemoteKernel(self.url, self._token, kernel_id)
        async with httpx.AsyncClient(
            timeout=REQUEST_TIMEOUT, headers=auth_headers(self._token)
        ) as http:
            try:
                response = await http.get(kernel.kernel_url)
            except httpx.HTTPError:
                return None
        if response.status_code != 200:
            return None
        try:
            name = str(response.json().get("name") or "python3")
        except (ValueError, AttributeError):
            return None
        channels = KernelWebSocket(kernel.channels_url, kernel.headers)
        try:
            await channels.connect(READY_TIMEOUT)
            await channels.wait_for_ready(READY_TIMEOUT)
        except Exception:
            channels.stop_channels()
            return None
        kernel.channels = channels
        return StartedKernel(kernel_id, kernel, channels), name

    @property
    def sees_notebooks(self) -> bool:
        """Whether its kernels see the notebooks' files: only when the notebooks are kept on
        the same server (``--jupyter-contents``); a local folder means nothing there."""
        return self.sessions is not None

    async def start(self, kernel_name: str, cwd: Path, folder: str = "") -> StartedKernel:
        # In the notebook's folder on the server (Jupyter Server's `path`, relative to its root)
        # when the notebooks are kept there; else in its root: a local path means nothing there.
        if self._specs and kernel_name not in self._specs:
            with contextlib.suppress(ToolFailure):
                await self.refresh()
            if kernel_name not in self._specs:
                raise unknown_kernelspec(
                    kernel_name, self.kernelspecs(), f" on the Jupyter Server at {self.url}"
                )
        # path "" is the server's root directory (without it, wherever the server process runs).
        path = folder if self.sees_notebooks else ""
        kernel, channels = await open_remote_kernel(
            self.url, self._token, kernel_name, READY_TIMEOUT, path=path
        )
        return StartedKernel(kernel.kernel_id, kernel, channels)
