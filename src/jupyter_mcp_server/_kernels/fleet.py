"""The kernels this server runs, started and stopped within its capacity: their lifecycle.

A kernel comes from an extension that provides one (a sandbox), the warm pool
(prestarted before anybody asked, :mod:`.pool`), or the backend (:mod:`.backends`:
local processes through `jupyter_client` by default, or a Jupyter Server's); one a
person started is adopted to be shared. Every kernel counts against
``--max-kernels`` while it lives, is reaped when idle past ``--idle-timeout``, and
is shut down quietly whichever way it goes. Which notebook has which kernel is not
this module's idea: :class:`~.manager.KernelManager` builds that on top, and hears of
each kernel that leaves (:meth:`KernelFleet._leaving`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from jupyter_mcp_server._errors import KERNEL_GONE, KERNEL_LIMIT, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.backends import KernelBackend, LocalBackend, takes_a_folder
from jupyter_mcp_server._kernels.execution import BEGIN_GRACE
from jupyter_mcp_server._kernels.folders import existing_folder, folder_of, moved
from jupyter_mcp_server._kernels.kernel import Kernel
from jupyter_mcp_server._kernels.kernel_choice import KernelChoice
from jupyter_mcp_server._kernels.pool import WarmPool

logger = logging.getLogger(__name__)

#: Seconds after the server starts before the first kernel is prestarted, unless the
#: client completes the MCP handshake sooner (`handshake_done`): the handshake is
#: answered first, and a first call right after it finds the kernel already booting.
PRESTART_DELAY = 0.2
#: Seconds after the pooled kernel is taken before the next one is launched,
#: so the caller's next calls (typically the first execution) do not share
#: the CPU with a kernel booting. A caller who needs a kernel sooner cuts it short.
REFILL_DELAY = 1.0


class KernelFleet:
    """Starts, counts, reaps and stops this server's kernels."""

    def __init__(
        self,
        *,
        workspace_root: Path,
        max_kernels: int,
        idle_timeout: float,
        capability: Callable[[str], bool] = lambda name: False,
        kernel_source: Callable[[str], Any] | None = None,
        backend: KernelBackend | None = None,
    ) -> None:
        self.workspace_root = workspace_root
        #: Where kernels this fleet starts itself run (local by default);
        #: :meth:`use_backend` switches it for the kernels started later.
        self.backend: KernelBackend = backend or LocalBackend()
        self.max_kernels = max_kernels
        self.idle_timeout = idle_timeout
        #: Asked, never cached: the capability registry decides.
        self.capability = capability
        #: Asked first when a kernel is needed (the extensions'
        #: `create_code_sandbox`); None means start one with the backend.
        self.kernel_source = kernel_source
        self._kernels: dict[str, Kernel] = {}
        self._pool = WarmPool(self._launch, self._shutdown_quietly)
        self._background: asyncio.Task[None] | None = None
        self._first_prestart: asyncio.Task[None] | None = None
        self._handshake_done = asyncio.Event()
        self._start_lock = asyncio.Lock()

    # --- What exists -----------------------------------------------------------

    @property
    def kernels(self) -> list[Kernel]:
        return list(self._kernels.values())

    def get(self, kernel_id: str) -> Kernel:
        kernel = self._kernels.get(kernel_id)
        if kernel is None:
            known = ", ".join(sorted(self._kernels)) or "none"
            raise ToolFailure(
                NOT_FOUND,
                f"No kernel '{kernel_id}' is running. Running kernels: {known}. "
                "Call list_kernels to see them.",
                known=sorted(self._kernels),
            )
        return kernel

    def kernels_by_id(self) -> dict[str, Kernel]:
        return dict(self._kernels)

    def find(self, kernel_id: str | None) -> Kernel | None:
        """The running kernel of that id, or None."""
        return self._kernels.get(kernel_id) if kernel_id else None

    def kernelspecs(self) -> list[str]:
        """The kernelspecs the backend can start (local: looked up on disk at every call)."""
        return self.backend.kernelspecs()

    def kernelspec(self, kernel_name: str) -> dict[str, str] | None:
        """``{"name", "display_name", "language"}`` of a kernelspec the backend has, or None."""
        return self.backend.kernelspec(kernel_name)

    def choose(self, metadata: Mapping[str, Any] | None = None) -> KernelChoice:
        """The kernel a notebook with this metadata gets (None: a new notebook), and why; a
        notebook in a language no installed kernel runs is refused (``not_found``)."""
        return self.backend.choose(metadata)

    def default_kernel_name(self) -> str:
        """The kernelspec a notebook that names none gets."""
        return self.choose(None).kernel_name

    def use_backend(self, backend: KernelBackend) -> None:
        """Start later kernels with `backend`; running ones stay where they are.

        The warm pool is emptied: a prestarted kernel belongs to the old backend.
        """
        self.backend = backend
        self._pool.discard()
        self._refill_pool()

    # --- Starting and stopping ---------------------------------------------------

    def folder_for(self, notebook: str) -> str:
        """The folder `notebook`'s kernel runs in, relative to the workspace root: the notebook's
        own (:mod:`.folders`), where the backend's kernels see the notebooks' files; else the root."""
        if not self.backend.sees_notebooks:
            return ""
        if self.backend.folders_are_local:
            return existing_folder(self.workspace_root, folder_of(notebook))[1]
        return folder_of(notebook)

    async def start(self, kernel_name: str | None = None, *, folder: str = "") -> Kernel:
        """A started kernel (by default, of the default choice) working in `folder` (relative to the
        workspace root), from the warm pool when it has one of this name."""
        kernel_name = kernel_name or self.default_kernel_name()
        async with self._start_lock:
            if self.full:
                raise self.limit_reached()
            kernel = (
                await self._provided(kernel_name)
                or await self._take_pooled(kernel_name, folder)
                or await self._launch(kernel_name, folder)
            )
            self._kernels[kernel.kernel_id] = kernel
        self._refill_pool()
        return kernel

    @contextlib.asynccontextmanager
    async def throwaway(
        self, kernel_name: str | None = None, *, folder: str = ""
    ) -> AsyncIterator[Kernel]:
        """A kernel bound to no notebook, for one call (``verify_notebook``, in the notebook's
        `folder`): counted against --max-kernels while it lives, stopped on the way out whatever happens."""
        kernel = await self.start(kernel_name, folder=folder)
        try:
            yield kernel
        finally:
            await self._stop(kernel)

    @property
    def full(self) -> bool:
        """Whether --max-kernels allows no other kernel now."""
        return len(self._kernels) >= self.max_kernels

    def limit_reached(self) -> ToolFailure:
        return ToolFailure(
            KERNEL_LIMIT,
            f"This server runs at most {self.max_kernels} kernels (--max-kernels) and "
            "all are in use. Free one with unuse_notebook, or restart the server with a "
            "higher --max-kernels.",
            max_kernels=self.max_kernels,
            kernels=sorted(self._kernels),
        )

    async def _launch(self, kernel_name: str, folder: str = "") -> Kernel:
        backend = self.backend
        cwd = self.workspace_root / folder
        if takes_a_folder(backend):
            started = await backend.start(kernel_name, cwd, folder)
        else:
            # A backend published before `folder` was part of the seam still starts kernels.
            started = await backend.start(kernel_name, cwd)  # type: ignore[call-arg]
        return Kernel(
            kernel_id=started.kernel_id,
            kernel_name=kernel_name,
            manager=started.manager,
            client=started.client,
            origin=backend.origin(),
            sessions=backend.sessions,
            folder=folder,
        )

    async def adopt(self, kernel_id: str) -> Kernel | None:
        """A kernel the backend has but this manager did not start (one the person
        started in JupyterLab), shared by id; it is never stopped from here."""
        if not self.backend.shares_kernels:
            return None
        async with self._start_lock:
            if kernel_id in self._kernels:
                return self._kernels[kernel_id]
            if self.full:
                raise self.limit_reached()
            adopted = await self.backend.adopt(kernel_id)
            if adopted is None:
                return None
            started, kernel_name = adopted
            client = started.client

            async def let_go() -> None:
                client.stop_channels()

            kernel = Kernel(
                kernel_id=started.kernel_id,
                kernel_name=kernel_name,
                manager=started.manager,
                client=client,
                owned=False,
                origin=self.backend.origin(),
                release=let_go,
                sessions=self.backend.sessions,
                folder=None,  # wherever whoever started it chose
            )
            self._kernels[kernel.kernel_id] = kernel
        return kernel

    async def _provided(self, kernel_name: str) -> Kernel | None:
        """A kernel an extension provides (a sandbox), if one does."""
        if self.kernel_source is None:
            return None
        provided = self.kernel_source(kernel_name)
        if inspect.isawaitable(provided):
            provided = await provided
        if provided is None:
            return None
        return Kernel(
            kernel_id=getattr(provided, "kernel_id", None) or str(uuid.uuid4()),
            kernel_name=getattr(provided, "kernel_name", None) or kernel_name,
            manager=provided.manager,
            client=provided.client,
            lock=getattr(provided, "lock", None) or asyncio.Lock(),
            owned=False,
            origin=str(getattr(provided, "origin", "sandbox")),
            release=getattr(provided, "release", None),
            folder=None,  # its own filesystem, perhaps: the provider's to say
        )

    async def _take_pooled(self, kernel_name: str, folder: str = "") -> Kernel | None:
        """The prestarted kernel, in `folder`: it was started in the workspace root, before
        anybody knew which notebook would take it, so it is moved there first (Python kernels;
        another language's is left in the pool for a notebook in the root)."""
        if folder and not self._can_move(kernel_name):
            return None
        if self._first_prestart is not None and not self._first_prestart.done():
            self._handshake_done.set()  # somebody needs a kernel: no more waiting
            await asyncio.wait({self._first_prestart})
        kernel = await self._pool.take(kernel_name)
        if kernel is None or not folder or kernel.folder == folder:
            return kernel
        # A local kernel is told the absolute folder; a remote one, the folder relative to the
        # server's root it started in (the same for a kernel that has run nothing of anybody's).
        target = str(self.workspace_root / folder) if self.backend.folders_are_local else folder
        if await moved(kernel, target):
            logger.debug(
                "The prestarted kernel %s moved to %r for its notebook", kernel.kernel_id, folder
            )
            kernel.folder = folder
            return kernel
        logger.warning(
            "The prestarted kernel could not change to %r; starting another there", folder
        )
        await self._shutdown_quietly(kernel)
        return None

    def _can_move(self, kernel_name: str) -> bool:
        """Whether a kernel of `kernel_name` can be moved to another folder (Python: os.chdir)."""
        try:
            language = str((self.backend.kernelspec(kernel_name) or {}).get("language", "")).lower()
        except Exception:
            return False
        return language == "python"

    def _refill_pool(self, delay: float | None = None) -> None:
        """Start the next kernel, of the default choice, before anybody asks (the
        ``kernel.prestart`` capability); not one that could not start."""
        if not (self.capability("kernel.prestart") and len(self._kernels) + 1 <= self.max_kernels):
            return
        try:
            name = self.default_kernel_name()
            if not self.backend.can_start(name):
                self._pool.discard()
                return
            language = str((self.backend.kernelspec(name) or {}).get("language", "python"))
        except Exception:
            logger.debug("Choosing the kernel to prestart failed", exc_info=True)
            return
        self._pool.fill(
            REFILL_DELAY if delay is None else delay, name, warm=language.lower() == "python"
        )

    def _leaving(self, kernel: Kernel, *, lost: bool) -> None:
        """`kernel` leaves the fleet (stopped, reaped, or gone): whoever keeps track of what it
        served lets go of it here; `lost` when it went without being asked to (reaped)."""

    async def _forget(self, kernel: Kernel) -> None:
        self._leaving(kernel, lost=False)
        self._kernels.pop(kernel.kernel_id, None)
        await self._shutdown_quietly(kernel)

    async def _stop(self, kernel: Kernel, *, lost: bool = False) -> None:
        kernel.stopped = True
        self._leaving(kernel, lost=lost)
        kernel.notebooks.clear()
        self._kernels.pop(kernel.kernel_id, None)
        await self._shutdown_quietly(kernel)
        self._refill_pool()

    async def _shutdown_quietly(self, kernel: Kernel) -> None:
        if kernel.introspector is not None:
            kernel.introspector.close()
        if not kernel.owned:
            if kernel.sessions is not None:  # a session holds its kernel: left to whoever owns it
                await kernel.sessions.release(kernel.kernel_id, stopped=False)
            if kernel.release is not None:
                try:
                    await kernel.release()
                except Exception:
                    logger.warning(
                        "Releasing provided kernel %s failed", kernel.kernel_id, exc_info=True
                    )
            return
        with contextlib.suppress(Exception):
            kernel.client.stop_channels()
        try:
            await kernel.manager.shutdown_kernel(now=True)
        except Exception:
            logger.debug("Kernel %s did not shut down cleanly", kernel.kernel_id, exc_info=True)
        if kernel.sessions is not None:
            # After the kernel: deleting a session shuts its kernel down, gently and slowly.
            await kernel.sessions.release(kernel.kernel_id, stopped=True)
        with contextlib.suppress(Exception):
            kernel.manager.cleanup_connection_file()

    async def interrupt(self, kernel: Kernel) -> bool:
        """Interrupt `kernel`; answers whether it was running anything to interrupt."""
        if not await kernel.is_alive():
            raise ToolFailure(
                KERNEL_GONE,
                f"Kernel '{kernel.kernel_id}' is gone; there is nothing to interrupt. "
                "Call restart_notebook to start a fresh one.",
            )
        if kernel.busy:
            kernel.interrupted.set()
            # A SIGINT the kernel ignores (its execution not begun yet) would stop nothing.
            await kernel.until_its_code_began(BEGIN_GRACE)
        await kernel.interrupt()
        # Still running code a timeout's interrupt did not stop is running all the same.
        return kernel.busy or kernel.still_running is not None

    # --- Background work ---------------------------------------------------------

    def start_background(self) -> None:
        """Prestart a kernel and reap idle sessions, from inside the running loop."""
        loop = asyncio.get_running_loop()
        if self._first_prestart is None:
            self._first_prestart = loop.create_task(self._prestart_after_the_handshake())
        if self._background is None:
            self._background = loop.create_task(self._reap_forever())

    def handshake_done(self) -> None:
        """The client has completed the MCP handshake: prestart the first kernel now."""
        self._handshake_done.set()

    async def _prestart_after_the_handshake(self) -> None:
        # Even choosing the kernel (reading the kernelspecs imports jupyter_client) waits:
        # nothing of it may stand between a client and the answer to its initialize.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._handshake_done.wait(), PRESTART_DELAY)
        self._refill_pool(0)

    async def _reap_forever(self) -> None:
        interval = max(0.5, min(30.0, self.idle_timeout / 4))
        while True:
            await asyncio.sleep(interval)
            await self.reap_idle()

    async def reap_idle(self) -> list[str]:
        """Release notebooks idle past `--idle-timeout`; their sessions are lost."""
        now = time.monotonic()
        reaped: list[str] = []
        for kernel in list(self._kernels.values()):
            if kernel.busy or kernel.lock.locked() or now - kernel.last_used < self.idle_timeout:
                continue
            reaped.extend(kernel.notebooks)
            await self._stop(kernel, lost=True)
        if reaped:
            logger.info("Reaped idle notebook sessions: %s", ", ".join(sorted(reaped)))
        return reaped

    async def shutdown_all(self) -> None:
        """Stop every kernel this server started, the warm pool included."""
        if self._background is not None:
            self._background.cancel()
            self._background = None
        if self._first_prestart is not None:
            self._first_prestart.cancel()
            self._first_prestart = None
        kernels, self._kernels = list(self._kernels.values()), {}
        for kernel in kernels:
            self._leaving(kernel, lost=False)
        # All at once: a client gives a server only a few seconds to exit.
        await asyncio.gather(
            self._pool.stop(),
            *(self._shutdown_quietly(k) for k in kernels),
            return_exceptions=True,
        )
