"""Local kernels whose every process ends with them, and with the server.

`jupyter_client` starts a kernel in a session of its own and, to stop it,
SIGKILLs that process group. What the kernel started outside the group
(``start_new_session=True``, a daemon that ``setsid()``s) survives a
shutdown, a restart, a culling; and when the server is SIGKILLed nothing is
signalled at all: the kernel exits by itself, and all its children run on
under init. On Linux, :class:`TreeKernelManager` runs each kernel under
:mod:`~jupyter_mcp_server.kernels.keeper`, which holds the kernel's whole
tree and ends it when told to, when the kernel exits, or when the server
dies. It does so through `jupyter_client`'s public seams: the kernel's
command (``format_kernel_cmd``) and ``shutdown_kernel``. Elsewhere it is
`jupyter_client`'s own manager, process groups and all.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

KEEPER = str(Path(__file__).with_name("keeper.py"))
#: How long the keeper gets to end the tree before `jupyter_client` SIGKILLs the
#: process group (a little longer than the keeper itself tries).
TAKE_DOWN_WAIT = 6.0


def trees_can_be_kept() -> bool:
    """Only Linux has the child subreaper and the parent-death signal the keeper needs."""
    return sys.platform.startswith("linux")


def kept(command: list[str]) -> list[str]:
    """`command` run under the keeper, tied to this process."""
    # -I -S: the keeper needs only the standard library, and starts in milliseconds.
    return [sys.executable, "-I", "-S", KEEPER, str(os.getpid()), "--", *command]


class TreeKernelManager(AsyncKernelManager):
    """`jupyter_client`'s kernel manager, whose kernels take their whole process tree with them."""

    #: Whether the running kernel was started under the keeper.
    keeps_its_tree = False

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command: list[str] = super().format_kernel_cmd(extra_arguments)
        self.keeps_its_tree = trees_can_be_kept()
        return kept(command) if self.keeps_its_tree else command

    # AsyncKernelManager's shutdown_kernel is a coroutine; jupyter_client types the blocking one.
    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:  # type: ignore[override]
        if now and self.keeps_its_tree:
            # jupyter_client's kill SIGKILLs the process group at once, keeper
            # included, which would orphan whatever left the group.
            await self.end_the_tree()
        await super().shutdown_kernel(now=now, restart=restart)

    async def end_the_tree(self) -> None:
        """Have the keeper SIGKILL the kernel and everything below it, and wait until it has."""
        process: Any = getattr(self.provisioner, "process", None)
        if process is None or process.poll() is not None:
            return
        # Popen.send_signal does nothing once the keeper was reaped: never another process's pid.
        process.send_signal(signal.SIGTERM)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TAKE_DOWN_WAIT
        while process.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.02)
