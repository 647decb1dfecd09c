"""A running sandbox: the one interface every variant's sandboxes share.

The kernel layer of the server takes a sandbox as a kernel (`manager` with
``is_alive()`` and ``interrupt_kernel()``, a started `client`, a `lock`
shared with everything else that runs code on it), so a sandbox selected for
a notebook and the same sandbox running `execute_code` are one kernel, used
in turn. What differs between variants is where it runs and how it ends.

Once a sandbox is found gone (its process exited, its server forgot it) it
stays gone: it is never handed back, never run on, and says why.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jupyter_mcp_sandboxes.limits import Limits
from jupyter_mcp_sandboxes.spec import SandboxSpec

RUNNING = "running"
GONE = "gone"
TERMINATED = "terminated"


@dataclass(frozen=True)
class SandboxInfo:
    """What `list_sandboxes` and `launch_sandbox` say about one sandbox."""

    sandbox_name: str
    variant: str
    state: str
    where: str
    kernel_id: str
    active: bool
    busy: bool
    #: Started for a notebook's kernel rather than by launch_sandbox.
    ephemeral: bool
    started: str
    pid: int | None = None
    directory: str | None = None
    limits: dict[str, int] | None = None
    server_url: str | None = None


class Sandbox(abc.ABC):
    """One launched sandbox, whatever runs it."""

    #: The kernel's language, for the kernel layer's `kernel_name`.
    kernel_name = "python3"

    def __init__(self, spec: SandboxSpec, *, kernel_id: str, manager: Any, client: Any) -> None:
        self.spec = spec
        self.kernel_id = kernel_id
        self.manager = manager
        self.client = client
        #: Every execution on this sandbox holds it, whichever path it came by.
        self.lock = asyncio.Lock()
        #: Set by a deliberate interrupt, so its KeyboardInterrupt reads as one.
        self.interrupted = asyncio.Event()
        self.started = time.time()
        self.state = RUNNING
        self.gone_reason: str | None = None
        #: What the registry does when the kernel layer lets go of this sandbox.
        self.on_release: Callable[[Sandbox], Awaitable[None]] | None = None

    # --- What it is ------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def variant(self) -> str:
        return self.spec.variant

    @property
    @abc.abstractmethod
    def where(self) -> str:
        """Where code runs, in words: the process and directory, or the server."""

    @property
    def origin(self) -> str:
        """What the server's kernel layer shows as this kernel's origin."""
        return f"sandbox '{self.name}' ({self.variant}): {self.where}"

    @property
    def pid(self) -> int | None:
        return None

    @property
    def directory(self) -> str | None:
        return None

    @property
    def limits(self) -> Limits | None:
        return None

    @property
    def server_url(self) -> str | None:
        return None

    def caveats(self) -> tuple[str, ...]:
        """What this sandbox does not protect against, said plainly."""
        return ()

    def info(self, *, active: bool) -> SandboxInfo:
        limits = self.limits
        return SandboxInfo(
            sandbox_name=self.name,
            variant=self.variant,
            state=self.state,
            where=self.where,
            kernel_id=self.kernel_id,
            active=active,
            busy=self.lock.locked(),
            ephemeral=self.spec.ephemeral,
            started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            pid=self.pid,
            directory=self.directory,
            limits=limits.as_dict() if limits else None,
            server_url=self.server_url,
        )

    # --- Liveness ---------------------------------------------------------------

    @property
    def gone(self) -> bool:
        return self.state != RUNNING

    def mark_gone(self, reason: str) -> None:
        if self.state == RUNNING:
            self.state = GONE
            self.gone_reason = reason

    async def is_alive(self) -> bool:
        """Whether code can run here; a sandbox found dead is never alive again."""
        if self.gone:
            return False
        try:
            alive = await self._alive()
        except Exception as error:  # a liveness check that fails is a failed check
            alive = False
            self.mark_gone(f"its liveness check failed ({type(error).__name__})")
        if not alive:
            self.mark_gone(self._gone_reason())
        return alive

    async def interrupt(self) -> None:
        await self.manager.interrupt_kernel()

    async def release(self) -> None:
        """Called by the server's kernel layer when no notebook uses this kernel any more."""
        if self.on_release is not None:
            await self.on_release(self)

    # --- Ending -----------------------------------------------------------------

    async def terminate(self) -> None:
        """Stop it and remove what it left; safe to call again."""
        if self.state == TERMINATED:
            return
        self.state = TERMINATED
        await self._terminate()

    def terminate_now(self) -> None:
        """Stop it without an event loop (the server is exiting); safe to call again."""
        if self.state == TERMINATED:
            return
        self.state = TERMINATED
        self._terminate_now()

    # --- What a variant implements ----------------------------------------------

    @abc.abstractmethod
    async def _alive(self) -> bool: ...

    def _gone_reason(self) -> str:
        return "its kernel exited"

    @abc.abstractmethod
    async def _terminate(self) -> None: ...

    @abc.abstractmethod
    def _terminate_now(self) -> None: ...
