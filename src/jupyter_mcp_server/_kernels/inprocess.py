"""Kernels inside Jupyter Server: the server extension's backend.

When this server runs as a Jupyter Server extension, its kernels are started
by Jupyter Server's own kernel manager (``serverapp.kernel_manager``), so a
kernel the agent starts is in ``/api/kernels`` and JupyterLab, and a kernel
the person started can be shared by passing its id. The client is an
ordinary `jupyter_client` client on the kernel's ZMQ channels, on the same
event loop as Jupyter Server.

This module is handed the kernel manager; it imports nothing of Jupyter
Server itself.
"""

from __future__ import annotations

import inspect
import logging
import os
from pathlib import Path
from typing import Any

from jupyter_core.utils import ensure_async

from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._kernels.backends import (
    READY_TIMEOUT,
    BackendParts,
    KernelBackend,
    NotebookSessions,
    StartedKernel,
    unknown_kernelspec,
)

logger = logging.getLogger(__name__)


class ServerKernel:
    """One kernel of Jupyter Server's kernel manager, as the kernel layer's `manager`."""

    def __init__(self, multi: Any, kernel_id: str) -> None:
        self.multi = multi
        self.kernel_id = kernel_id

    async def is_alive(self) -> bool:
        if self.kernel_id not in self.multi:
            return False
        return bool(await ensure_async(self.multi.get_kernel(self.kernel_id).is_alive()))

    async def interrupt_kernel(self) -> None:
        await ensure_async(self.multi.interrupt_kernel(self.kernel_id))

    async def shutdown_kernel(self, now: bool = False) -> None:
        if self.kernel_id in self.multi:
            await ensure_async(self.multi.shutdown_kernel(self.kernel_id, now=now))

    def cleanup_connection_file(self) -> None:
        """Jupyter Server's kernel manager cleans up after its kernels."""


class ServerSessions(NotebookSessions):
    """Jupyter Server's session manager, called directly: what ``/api/sessions`` lists."""

    #: In-process a session can be moved to another kernel without stopping the first.
    can_rebind = True

    def __init__(self, session_manager: Any) -> None:
        super().__init__()
        self.session_manager = session_manager

    async def _create(self, path: str, kernel_id: str, kernel_name: str) -> tuple[str, str]:
        manager = self.session_manager
        if await ensure_async(manager.session_exists(path=path)):
            model = await ensure_async(manager.get_session(path=path))
        else:
            model = await ensure_async(
                manager.create_session(
                    path=path,
                    kernel_id=kernel_id,
                    kernel_name=kernel_name,
                    name=path.rsplit("/", 1)[-1],
                    type="notebook",
                )
            )
        return str(model["id"]), str(model["kernel"]["id"])

    async def _delete(self, session_id: str) -> None:
        await ensure_async(self.session_manager.delete_session(session_id))

    async def _kernel_of_existing(self, path: str) -> str | None:
        manager = self.session_manager
        if not await ensure_async(manager.session_exists(path=path)):
            return None
        model = await ensure_async(manager.get_session(path=path))
        kernel = model.get("kernel") or {}
        return str(kernel["id"]) if kernel.get("id") else None

    async def _rebind(self, session_id: str, kernel_id: str) -> None:
        await ensure_async(self.session_manager.update_session(session_id, kernel_id=kernel_id))


class ServerAppBackend(KernelBackend):
    """Kernels started by Jupyter Server's kernel manager, in the server's process."""

    name = "jupyter-server-extension"

    @classmethod
    def build(cls, parts: BackendParts) -> ServerAppBackend:
        """Jupyter Server's own kernel, kernelspec and session managers (the server extension's)."""
        serverapp = parts.serverapp
        if serverapp is None:
            raise ToolFailure(
                INVALID_ARGUMENT,
                "The jupyter-server-extension kernel backend runs only inside Jupyter Server.",
            )
        return cls(
            serverapp.kernel_manager,
            serverapp.kernel_spec_manager,
            parts.config.workspace_root,
            serverapp.session_manager,
        )

    def __init__(
        self,
        kernel_manager: Any,
        kernel_spec_manager: Any,
        root_dir: str | os.PathLike[str],
        session_manager: Any = None,
    ) -> None:
        self.kernel_manager = kernel_manager
        self.kernel_spec_manager = kernel_spec_manager
        self.root_dir = Path(root_dir).resolve()
        #: Each notebook's kernel bound in Jupyter Server's sessions, for JupyterLab.
        self.sessions = ServerSessions(session_manager) if session_manager is not None else None
        #: A gateway's kernelspecs (``--GatewayClient.url``), as last asked: its spec manager
        #: answers only asynchronously, and what it inherits synchronously is this machine's.
        self._remote_specs: dict[str, dict[str, str]] = {}

    @property
    def remote_specs(self) -> bool:
        """Whether the kernelspecs are somewhere else (a gateway's), asked asynchronously."""
        return inspect.iscoroutinefunction(getattr(self.kernel_spec_manager, "get_all_specs", None))

    async def refresh(self) -> None:
        """Ask a gateway for its kernelspecs (nothing to do for this machine's)."""
        if not self.remote_specs:
            return
        specs = await self.kernel_spec_manager.get_all_specs()
        self._remote_specs = {
            name: {
                "name": name,
                "display_name": str(((entry or {}).get("spec") or {}).get("display_name") or name),
                "language": str(((entry or {}).get("spec") or {}).get("language") or ""),
            }
            for name, entry in (specs or {}).items()
        }

    def kernelspecs(self) -> list[str]:
        if self.remote_specs:
            return sorted(self._remote_specs)
        found = self.kernel_spec_manager.find_kernel_specs()
        if inspect.isawaitable(
            found
        ):  # an async spec manager of another kind: not asked synchronously
            getattr(found, "close", lambda: None)()
            return []
        return sorted(found)

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        if self.remote_specs:
            if not self._remote_specs:  # not asked yet: the gateway decides when the kernel starts
                return {"name": kernel_name, "display_name": kernel_name, "language": ""}
            known = self._remote_specs.get(kernel_name)
            return dict(known) if known else None
        try:
            spec = self.kernel_spec_manager.get_kernel_spec(kernel_name)
        except Exception:
            return None
        if inspect.isawaitable(spec):
            getattr(spec, "close", lambda: None)()
            return None
        return {"name": kernel_name, "display_name": spec.display_name, "language": spec.language}

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "root_dir": str(self.root_dir)}

    def origin(self) -> str:
        return "jupyter-server"

    def _relative(self, cwd: Path) -> str:
        try:
            relative = Path(cwd).resolve().relative_to(self.root_dir).as_posix()
        except ValueError:
            return ""
        return "" if relative == "." else relative

    async def start(self, kernel_name: str, cwd: Path, folder: str = "") -> StartedKernel:
        if self.remote_specs:
            try:
                await self.refresh()
            except Exception as error:  # the start below says what is wrong with the gateway
                logger.debug("Could not ask the gateway for its kernelspecs: %s", error)
        known = self.kernelspecs()
        if known and kernel_name not in known:
            raise unknown_kernelspec(kernel_name, known, " in this Jupyter Server")
        kernel_id = await ensure_async(
            self.kernel_manager.start_kernel(kernel_name=kernel_name, path=self._relative(cwd))
        )
        return await self._connect(str(kernel_id), kernel_name)

    async def adopt(self, kernel_id: str) -> tuple[StartedKernel, str] | None:
        """A kernel somebody else started in this Jupyter Server (JupyterLab), to share it."""
        if kernel_id not in self.kernel_manager:
            return None
        name = str(
            getattr(self.kernel_manager.get_kernel(kernel_id), "kernel_name", "") or "python3"
        )
        return await self._connect(kernel_id, None), name

    async def _connect(self, kernel_id: str, kernel_name: str | None) -> StartedKernel:
        kernel = self.kernel_manager.get_kernel(kernel_id)
        if type(kernel).__module__.startswith("jupyter_server.gateway"):
            return await self._connect_through_gateway(kernel_id, kernel_name)
        client = kernel.client()
        try:
            # A gateway's client opens its websocket asynchronously; a local one, at once.
            await ensure_async(client.start_channels())
            await client.wait_for_ready(timeout=READY_TIMEOUT)
        except Exception as error:
            client.stop_channels()
            if kernel_name is not None:
                await ensure_async(self.kernel_manager.shutdown_kernel(kernel_id, now=True))
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"Kernel '{kernel_name or kernel_id}' did not become ready: {error}",
            ) from error
        return StartedKernel(kernel_id, ServerKernel(self.kernel_manager, kernel_id), client)

    async def _connect_through_gateway(
        self, kernel_id: str, kernel_name: str | None
    ) -> StartedKernel:
        """A kernel on the gateway of ``--GatewayClient.url``, reached over its websocket as
        the remote backend reaches one, with the gateway's own URL and headers (Jupyter
        Server's gateway kernel client sends no credentials on its websocket)."""
        # Lazy: only a server behind a gateway needs its client and the websocket.
        from jupyter_server.gateway.gateway_client import GatewayClient
        from tornado.escape import url_escape

        from jupyter_mcp_server._kernels.websocket import KernelWebSocket

        gateway = GatewayClient.instance()
        base = (gateway.ws_url or "").rstrip("/")
        url = f"{base}/{gateway.kernels_endpoint.strip('/')}/{url_escape(kernel_id)}/channels"
        headers = dict(gateway.load_connection_args().get("headers") or {})
        channels = KernelWebSocket(url, headers)
        try:
            await channels.connect(READY_TIMEOUT)
            await channels.wait_for_ready(READY_TIMEOUT)
        except Exception as error:
            channels.stop_channels()
            if kernel_name is not None:
                await ensure_async(self.kernel_manager.shutdown_kernel(kernel_id, now=True))
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"Kernel '{kernel_name or kernel_id}' on the gateway at {gateway.url} did not become ready: "
                f"{type(error).__name__}",
            ) from error
        return StartedKernel(kernel_id, ServerKernel(self.kernel_manager, kernel_id), channels)
