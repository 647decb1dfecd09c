"""The kernels this server starts, and which notebook each one belongs to.

Kernels started by a backend (:mod:`.backends`: local processes through
`jupyter_client` by default, or a Jupyter Server's), one session per notebook
unless a caller shares one on purpose by passing its `kernel_id`. This module
also owns every way a kernel can disappear behind somebody's back (a killed
process, a crash, idle reaping, a Jupyter Server deleting it), and sends all
of them through one decision: :meth:`KernelManager.live_kernel_of`, which
either reports the loss or, when the ``kernel.auto-restart`` capability is on,
starts a replacement and says that it did. A kernel that is alive but stuck
in code it was interrupted out of goes through the same decision: refused
(in :mod:`.turns`), or, with ``kernel.restart-unresponsive``, restarted once
it has had a grace period to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_mcp_server._errors import (
    KERNEL_GONE,
    KERNEL_LIMIT,
    NOT_FOUND,
    ToolFailure,
)
from jupyter_mcp_server._kernels.backends import KernelBackend, LocalBackend, takes_a_folder
from jupyter_mcp_server._kernels.environments import KernelChoice
from jupyter_mcp_server._kernels.execution import (
    KernelDied,
    ended_meanwhile,
)
from jupyter_mcp_server._kernels.folders import existing_folder, folder_of, moved
from jupyter_mcp_server._kernels.kernel import (
    AUTO_RESTART,
    RESTART_UNRESPONSIVE,
    Kernel,
    gone_message,
    restarted_unresponsive_note,
)
from jupyter_mcp_server._kernels.pool import WarmPool
from jupyter_mcp_server._kernels.records import RunRecords

logger = logging.getLogger(__name__)

#: The kernelspec a notebook names, or how to find it out when it is needed.
MetadataKernel = str | Callable[[], Awaitable[str | None]] | None

#: Seconds after the server starts before the first kernel is prestarted, unless the
#: client completes the MCP handshake sooner (`handshake_done`): the handshake is
#: answered first, and a first call right after it finds the kernel already booting.
PRESTART_DELAY = 0.2
#: Seconds after the pooled kernel is taken before the next one is launched,
#: so the caller's next calls (typically the first execution) do not share
#: the CPU with a kernel booting. A caller who needs a kernel sooner cuts it short.
REFILL_DELAY = 1.0


@dataclass(frozen=True)
class Attachment:
    """The kernel a call runs on, and whether it replaced a lost one to get it."""

    kernel: Kernel
    replaced: bool = False
    #: What the caller must be told about how it got this kernel, when the
    #: wording is not the lost kernel's (a stuck kernel restarted for it).
    note: str | None = None


class KernelManager:
    """Starts, binds, reaps and stops this server's kernels."""

    def __init__(
        self,
        *,
        workspace_root: Path,
        max_kernels: int,
        idle_timeout: float,
        unresponsive_grace: float,
        capability: Callable[[str], bool] = lambda name: False,
        kernel_source: Callable[[str], Any] | None = None,
        backend: KernelBackend | None = None,
    ) -> None:
        self.workspace_root = workspace_root
        #: Where kernels this manager starts itself run (local by default);
        #: :meth:`use_backend` switches it for the kernels started later.
        self.backend: KernelBackend = backend or LocalBackend()
        self.max_kernels = max_kernels
        self.idle_timeout = idle_timeout
        #: Seconds a kernel still running code after its interrupt went unanswered
        #: gets to finish before ``kernel.restart-unresponsive`` restarts it.
        self.unresponsive_grace = unresponsive_grace
        #: Asked, never cached: the capability registry decides.
        self.capability = capability
        #: Asked first when a kernel is needed (the extensions'
        #: `create_code_sandbox`); None means start a local one.
        self.kernel_source = kernel_source
        self._kernels: dict[str, Kernel] = {}
        self._bindings: dict[str, str] = {}
        self._binding_locks: dict[str, asyncio.Lock] = {}
        #: Notebooks whose kernel disappeared; the next call is told so.
        self._lost: set[str] = set()
        self._pool = WarmPool(self._launch, self._shutdown_quietly)
        self._background: asyncio.Task[None] | None = None
        self._first_prestart: asyncio.Task[None] | None = None
        self._handshake_done = asyncio.Event()
        self._start_lock = asyncio.Lock()
        #: What ran of each notebook, on which kernel, in which order (staleness, display ids).
        self.records = RunRecords()

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

    def kernel_id_of(self, notebook: str) -> str | None:
        return self._bindings.get(notebook)

    def is_lost(self, notebook: str) -> bool:
        """Whether `notebook`'s kernel disappeared (died, was reaped) and nothing replaced it."""
        return notebook in self._lost

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

    # --- Binding notebooks -------------------------------------------------------

    async def attach(
        self,
        notebook: str,
        *,
        kernel_id: str | None = None,
        kernel_name: str | None = None,
        metadata_kernel: str | None = None,
    ) -> Kernel:
        """Bind `notebook` to a kernel: `kernel_id`, else a new `kernel_name`,
        else the notebook's own kernelspec, else the default.

        Attaching for the first time is never refused by a capability: there
        was no session to lose.
        """
        async with self._binding_lock(notebook):
            return await self._attach(
                notebook,
                kernel_id=kernel_id,
                kernel_name=kernel_name,
                metadata_kernel=metadata_kernel,
            )

    def _binding_lock(self, notebook: str) -> asyncio.Lock:
        """One decision at a time about a notebook's kernel: ten clients opening
        the same notebook at once must bind it to one kernel, not start ten and
        leak nine."""
        return self._binding_locks.setdefault(notebook, asyncio.Lock())

    async def _attach(
        self,
        notebook: str,
        *,
        kernel_id: str | None = None,
        kernel_name: str | None = None,
        metadata_kernel: str | None = None,
    ) -> Kernel:
        current = self._bindings.get(notebook)
        if kernel_id is None and current is None and kernel_name is None:
            # A person has the notebook open on a kernel of this Jupyter Server: the
            # agent's code runs there too, so each sees the other's variables.
            kernel_id = await self._kernel_of_open_notebook(notebook)
        if kernel_id is not None:
            kernel = (
                self._kernels.get(kernel_id) or await self._adopt(kernel_id) or self.get(kernel_id)
            )
            if current is not None and current != kernel_id:
                await self.detach(notebook)
            kernel.notebooks.add(notebook)
            self._bindings[notebook] = kernel.kernel_id
            self._lost.discard(notebook)
            kernel.last_used = time.monotonic()
            await self._bind_session(kernel, notebook)
            return kernel
        if current is not None and current in self._kernels:
            bound = self._kernels[current]
            if kernel_name is None or kernel_name == bound.kernel_name:
                return bound
            # Asked for another kernelspec: like changing a notebook's kernel in
            # Jupyter, the notebook moves to a new kernel of that spec.
            await self.detach(notebook)
        kernel = await self.start(
            kernel_name or metadata_kernel or self.default_kernel_name(),
            folder=self.folder_for(notebook),
        )
        kernel.notebooks.add(notebook)
        self._bindings[notebook] = kernel.kernel_id
        self._lost.discard(notebook)
        # A prestarted kernel may have waited in the pool for longer than the
        # idle timeout; its session starts now, not when its process did.
        kernel.last_used = time.monotonic()
        await self._bind_session(kernel, notebook)
        return kernel

    async def _kernel_of_open_notebook(self, notebook: str) -> str | None:
        sessions = self.backend.sessions
        if sessions is None:
            return None
        kernel_id = await sessions.kernel_of(notebook)
        if kernel_id is None or kernel_id in self._kernels:
            return kernel_id
        return kernel_id if await self._adopt(kernel_id) is not None else None

    async def _bind_session(self, kernel: Kernel, notebook: str) -> None:
        """Bind `notebook` to `kernel` in the Jupyter Server's sessions, where there are some."""
        if kernel.sessions is not None:
            await kernel.sessions.bind(notebook, kernel.kernel_id, kernel.kernel_name)

    async def live_kernel_of(
        self,
        notebook: str,
        *,
        metadata_kernel: MetadataKernel = None,
        to_run_code: bool = False,
    ) -> Attachment:
        """The notebook's kernel, alive: the one decision about lost kernels.

        Never bound: a first attachment. Bound and alive: that kernel. Lost
        (killed, crashed, reaped): `kernel_gone`, unless ``kernel.auto-restart``
        is on, in which case a replacement is started and the answer says so.
        ``metadata_kernel``, the kernelspec the notebook names, may be a
        coroutine function: it is asked only when a kernel has to be started,
        so a call on a bound kernel need not read the notebook. A caller about
        to run code (`to_run_code`) on a kernel still running an interrupted
        execution gets it restarted when ``kernel.restart-unresponsive`` is on
        and the grace period passes; anybody else gets the kernel as it is.
        """
        async with self._binding_lock(notebook):
            attachment = await self._live_kernel_of(notebook, metadata_kernel=metadata_kernel)
        stuck = attachment.kernel.still_running is not None
        if to_run_code and stuck and self.capability(RESTART_UNRESPONSIVE):
            return await self._restarted_if_still_running(notebook, attachment, metadata_kernel)
        return attachment

    async def _restarted_if_still_running(
        self, notebook: str, attachment: Attachment, metadata_kernel: MetadataKernel
    ) -> Attachment:
        """`attachment`'s kernel once its stuck execution has ended, or, when the grace
        period passes first, a fresh kernel for `notebook` (``kernel.restart-unresponsive``).

        The wait holds the kernel's lock (it reads the kernel's messages), not the
        notebook's: a restart_notebook meanwhile is not held up.
        """
        kernel = attachment.kernel
        async with kernel.lock:
            stuck = kernel.still_running
            if stuck is None:  # another call saw it end
                return attachment
            if not kernel.stopped:
                remaining = stuck.since + self.unresponsive_grace - time.monotonic()
                with contextlib.suppress(KernelDied):  # stopped under the look: decided below
                    if await ended_meanwhile(kernel.client, stuck.msg_id, wait=max(remaining, 0.0)):
                        kernel.still_running = None
                        return attachment
        async with self._binding_lock(notebook):
            if self._bindings.get(notebook) != kernel.kernel_id or kernel.stopped:
                # Restarted or released meanwhile: the notebook's kernel now is whatever that left.
                return await self._live_kernel_of(notebook, metadata_kernel=metadata_kernel)
            waited = time.monotonic() - stuck.since
            logger.warning(
                "Kernel of %s still runs an execution %.0f s after its interrupt; restarting it (%s)",
                notebook,
                waited,
                RESTART_UNRESPONSIVE,
            )
            fresh = await self._restart(notebook)
        return Attachment(fresh, replaced=True, note=restarted_unresponsive_note(notebook, waited))

    async def _live_kernel_of(
        self, notebook: str, *, metadata_kernel: MetadataKernel
    ) -> Attachment:
        kernel_id = self._bindings.get(notebook)
        kernel = self._kernels.get(kernel_id) if kernel_id else None
        if kernel is not None and await kernel.is_alive():
            return Attachment(kernel)
        if callable(metadata_kernel):
            metadata_kernel = await metadata_kernel()
        if kernel is None and notebook not in self._lost:
            return Attachment(await self._attach(notebook, metadata_kernel=metadata_kernel))
        name = kernel.kernel_name if kernel else (metadata_kernel or self.default_kernel_name())
        if kernel is not None:
            await self._forget(kernel)
            self._lost.add(notebook)
        if not self.capability(AUTO_RESTART):
            because = kernel.lost_because if kernel is not None else None
            raise ToolFailure(KERNEL_GONE, gone_message(notebook, because), notebook=notebook)
        logger.warning(
            "Kernel of %s is gone; starting a replacement (kernel.auto-restart)", notebook
        )
        return Attachment(await self._attach(notebook, kernel_name=name), replaced=True)

    async def mark_lost(self, kernel: Kernel) -> None:
        """A kernel died under a call: every notebook bound to it has lost its session."""
        self._lost.update(kernel.notebooks)
        await self._forget(kernel)

    async def restart(self, notebook: str, *, metadata_kernel: MetadataKernel = None) -> Kernel:
        """A fresh kernel for `notebook`, asked for by the caller: never blocked."""
        async with self._binding_lock(notebook):
            return await self._restart(notebook, metadata_kernel=metadata_kernel)

    async def _restart(self, notebook: str, *, metadata_kernel: MetadataKernel = None) -> Kernel:
        kernel_id = self._bindings.get(notebook)
        old = self._kernels.get(kernel_id) if kernel_id else None
        if old is None and callable(metadata_kernel):
            metadata_kernel = await metadata_kernel()
        elif callable(metadata_kernel):
            metadata_kernel = None  # the old kernel's name is kept
        name = old.kernel_name if old else (metadata_kernel or self.default_kernel_name())
        if old is not None and old.notebooks == {notebook}:
            await self._stop(old)
        elif old is not None:
            old.notebooks.discard(notebook)
        self._bindings.pop(notebook, None)
        self._lost.discard(notebook)
        return await self._attach(notebook, kernel_name=name)

    def bound_notebooks(self) -> list[str]:
        """The notebooks that have a kernel now."""
        return sorted(self._bindings)

    async def detach(self, notebook: str) -> str | None:
        """Release `notebook`'s kernel; the kernel stops when its last notebook goes."""
        self._lost.discard(notebook)
        kernel_id = self._bindings.pop(notebook, None)
        kernel = self._kernels.get(kernel_id) if kernel_id else None
        if kernel is not None:
            kernel.notebooks.discard(notebook)
            if not kernel.notebooks:
                await self._stop(kernel)
        return kernel_id

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
            if len(self._kernels) >= self.max_kernels:
                raise self._limit_reached()
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

    def ensure_room(self, notebook: str) -> None:
        """Refuse now, before anything is created, if `notebook` would need a new
        kernel and --max-kernels allows none."""
        bound = self._bindings.get(notebook)
        if bound is not None and bound in self._kernels:
            return
        if len(self._kernels) >= self.max_kernels:
            raise self._limit_reached()

    def _limit_reached(self) -> ToolFailure:
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

    async def _adopt(self, kernel_id: str) -> Kernel | None:
        """A kernel the backend has but this manager did not start (one the person
        started in JupyterLab), shared by id; it is never stopped from here."""
        if not self.backend.shares_kernels:
            return None
        async with self._start_lock:
            if kernel_id in self._kernels:
                return self._kernels[kernel_id]
            if len(self._kernels) >= self.max_kernels:
                raise self._limit_reached()
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

    async def _forget(self, kernel: Kernel) -> None:
        for notebook in kernel.notebooks:
            if self._bindings.get(notebook) == kernel.kernel_id:
                del self._bindings[notebook]
        self._kernels.pop(kernel.kernel_id, None)
        await self._shutdown_quietly(kernel)

    async def _stop(self, kernel: Kernel) -> None:
        kernel.stopped = True
        for notebook in list(kernel.notebooks):
            self._bindings.pop(notebook, None)
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
            self._lost.update(kernel.notebooks)
            await self._stop(kernel)
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
        self._bindings.clear()
        # All at once: a client gives a server only a few seconds to exit.
        await asyncio.gather(
            self._pool.stop(),
            *(self._shutdown_quietly(k) for k in kernels),
            return_exceptions=True,
        )
