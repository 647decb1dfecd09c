"""One running kernel as the server keeps it, and what a caller is told when it is lost.

The kernel layer's value: who started it, which notebooks are bound to it,
its lock (one execution at a time), and what it is doing (running code, or
stuck in code its interrupt did not stop). :mod:`.manager` decides which
kernel a notebook gets; :mod:`.turns` and :mod:`.execution` run code on one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server._kernels.execution import RunningCode, StillRunning
from jupyter_mcp_server._kernels.widgets import Widgets

AUTO_RESTART = "kernel.auto-restart"
RESTART_UNRESPONSIVE = "kernel.restart-unresponsive"


@dataclass(eq=False)
class Kernel:
    """One running kernel and the notebooks bound to it."""

    kernel_id: str
    kernel_name: str
    manager: Any
    client: Any
    notebooks: set[str] = field(default_factory=set)
    last_used: float = field(default_factory=time.monotonic)
    #: One execution at a time: a notebook's cells run in order.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: Set by a deliberate interrupt, so the KeyboardInterrupt it causes is
    #: reported as an interruption, not as the code's own error.
    interrupted: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set once the running execution's code has begun on the kernel, or it ended: an
    #: interrupt sent before that would be lost (:data:`~.execution.BEGIN_GRACE`).
    began: asyncio.Event = field(default_factory=asyncio.Event)
    busy: bool = False
    #: Started by this manager, and so stopped by it. A kernel an extension
    #: provided (a sandbox) is that extension's to stop.
    owned: bool = True
    #: Where the kernel runs, for a caller who wants to know ("local", or a
    #: sandbox's description).
    origin: str = "local"
    #: For a kernel an extension provided: called when this server lets go of
    #: it (its notebooks released it, it was reaped or lost, the server is
    #: stopping), so the extension can end one it started for this kernel alone.
    release: Callable[[], Awaitable[None]] | None = None
    #: Stopped on purpose (restart, release, reaping), so an execution it ends
    #: was ended by a caller rather than lost.
    stopped: bool = False
    #: The Jupyter Server sessions its notebooks are bound in (a
    #: :class:`~.backends.NotebookSessions`), when its backend keeps them.
    sessions: Any = None
    #: An execution that timed out and went on running after the interrupt: until
    #: it ends, nothing is sent to this kernel (:func:`~.turns.run_in_turn`).
    still_running: StillRunning | None = None
    #: What it runs now, set by :func:`~.turns.run_in_turn` (said to a call refused as busy).
    running: RunningCode | None = None
    #: The sockets questions about it go over (:mod:`.introspection`), once asked; closed with it.
    introspector: Any = None
    #: The folder it was started in (or moved to before its first use), relative to the
    #: workspace root ("": the root); None when this server did not choose it (a kernel
    #: adopted from JupyterLab, or one an extension provided).
    folder: str | None = ""
    #: Its Jupyter widgets (:mod:`.widgets`), kept across its executions; a restart's
    #: fresh kernel starts with none.
    widgets: Widgets = field(default_factory=Widgets)

    async def is_alive(self) -> bool:
        try:
            return bool(await self.manager.is_alive())
        except Exception:
            return False

    async def interrupt(self) -> None:
        await self.manager.interrupt_kernel()

    async def until_its_code_began(self, within: float) -> None:
        """Wait, at most `within` seconds, for the running execution's code to begin."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.began.wait(), within)

    @property
    def lost_because(self) -> str | None:
        """Why its backend lost it, when the backend knows (a remote server that stopped answering)."""
        because = getattr(self.manager, "lost_because", None)
        return because if isinstance(because, str) else None

    @property
    def state(self) -> str:
        return "busy" if self.busy or self.still_running is not None else "idle"


def gone_message(notebook: str, because: str | None = None) -> str:
    """What a caller reads when a notebook's kernel has disappeared (docs/capabilities.md: kernel.auto-restart)."""
    return (
        f"The kernel of '{notebook}' is gone{f' ({because})' if because else ''}, and its session — every variable, "
        "import and definition — went with it. Call restart_notebook to start a fresh "
        f"one, or enable the '{AUTO_RESTART}' capability to have replacements started "
        "automatically."
    )


def restarted_unresponsive_note(notebook: str, waited: float) -> str:
    """What a call reads when its notebook's stuck kernel was restarted for it."""
    return (
        f"Note: the kernel of '{notebook}' was still running an earlier execution {waited:.0f} s after "
        f"it was interrupted (that code ignores or blocks SIGINT), so it was restarted ({RESTART_UNRESPONSIVE}) "
        "and this code ran on a fresh kernel: earlier variables, imports and definitions are not in it."
    )
