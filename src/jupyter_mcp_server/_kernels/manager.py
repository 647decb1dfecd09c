"""Which notebook has which kernel: bound, shared, lost, restarted.

One kernel per notebook unless a caller shares one on purpose by passing its
`kernel_id`, over the kernels the fleet starts and stops (:mod:`.fleet`). This module
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
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_mcp_server._errors import KERNEL_GONE, ToolFailure
from jupyter_mcp_server._kernels.backends import KernelBackend
from jupyter_mcp_server._kernels.execution import KernelDied, ended_meanwhile
from jupyter_mcp_server._kernels.fleet import KernelFleet
from jupyter_mcp_server._kernels.kernel import (
    AUTO_RESTART,
    RESTART_UNRESPONSIVE,
    Kernel,
    gone_message,
    restarted_unresponsive_note,
)
from jupyter_mcp_server._kernels.records import RunRecords

logger = logging.getLogger(__name__)

#: The kernelspec a notebook names, or how to find it out when it is needed.
MetadataKernel = str | Callable[[], Awaitable[str | None]] | None


@dataclass(frozen=True)
class Attachment:
    """The kernel a call runs on, and whether it replaced a lost one to get it."""

    kernel: Kernel
    replaced: bool = False
    #: What the caller must be told about how it got this kernel, when the
    #: wording is not the lost kernel's (a stuck kernel restarted for it).
    note: str | None = None


class KernelManager(KernelFleet):
    """Which notebook has which kernel, over the fleet that starts, reaps and stops them."""

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
        super().__init__(
            workspace_root=workspace_root,
            max_kernels=max_kernels,
            idle_timeout=idle_timeout,
            capability=capability,
            kernel_source=kernel_source,
            backend=backend,
        )
        #: Seconds a kernel still running code after its interrupt went unanswered
        #: gets to finish before ``kernel.restart-unresponsive`` restarts it.
        self.unresponsive_grace = unresponsive_grace
        self._bindings: dict[str, str] = {}
        self._binding_locks: dict[str, asyncio.Lock] = {}
        #: Notebooks whose kernel disappeared; the next call is told so.
        self._lost: set[str] = set()
        #: What ran of each notebook, on which kernel, in which order (staleness, display ids).
        self.records = RunRecords()

    # --- What is bound -----------------------------------------------------------

    def kernel_id_of(self, notebook: str) -> str | None:
        return self._bindings.get(notebook)

    def is_lost(self, notebook: str) -> bool:
        """Whether `notebook`'s kernel disappeared (died, was reaped) and nothing replaced it."""
        return notebook in self._lost

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
            kernel = self.find(kernel_id) or await self.adopt(kernel_id) or self.get(kernel_id)
            if current is not None and current != kernel_id:
                await self.detach(notebook)
            kernel.notebooks.add(notebook)
            self._bindings[notebook] = kernel.kernel_id
            self._lost.discard(notebook)
            kernel.last_used = time.monotonic()
            await self._bind_session(kernel, notebook)
            return kernel
        bound = self.find(current)
        if bound is not None:
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
        if kernel_id is None or self.find(kernel_id) is not None:
            return kernel_id
        return kernel_id if await self.adopt(kernel_id) is not None else None

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
        kernel = self.find(kernel_id)
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
        old = self.find(kernel_id)
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
        kernel = self.find(kernel_id)
        if kernel is not None:
            kernel.notebooks.discard(notebook)
            if not kernel.notebooks:
                await self._stop(kernel)
        return kernel_id

    def ensure_room(self, notebook: str) -> None:
        """Refuse now, before anything is created, if `notebook` would need a new
        kernel and --max-kernels allows none."""
        bound = self._bindings.get(notebook)
        if self.find(bound) is not None:
            return
        if self.full:
            raise self.limit_reached()

    def _leaving(self, kernel: Kernel, *, lost: bool) -> None:
        for notebook in kernel.notebooks:
            if self._bindings.get(notebook) == kernel.kernel_id:
                del self._bindings[notebook]
        if lost:
            self._lost.update(kernel.notebooks)
