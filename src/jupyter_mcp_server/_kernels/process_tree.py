"""Local kernels whose every process ends with them, and with the server.

`jupyter_client` starts a kernel in a session of its own and, to stop it,
SIGKILLs that process group. What the kernel started outside the group
(``start_new_session=True``, a daemon that ``setsid()``s) survives a
shutdown, a restart, a culling; and when the server is SIGKILLed nothing is
signalled at all: the kernel exits by itself, and all its children run on
under init. On Linux, :class:`TreeKernelManager` runs each kernel under
:mod:`~jupyter_mcp_server._kernels.keeper`, which holds the kernel's whole
tree and ends it when told to, when the kernel exits, or when the server
dies. It does so through `jupyter_client`'s public seams: the kernel's
command (``format_kernel_cmd``) and ``shutdown_kernel``. Elsewhere it is
`jupyter_client`'s own manager, process groups and all.

A kernelspec may name a kernel provisioner that starts its kernel elsewhere (over SSH, in a
container, on a cluster). Such a kernel has no process here to keep: it is not run under the
keeper. Stopping it is its provisioner's, through signals it relays; a relayed signal can
be lost, and a lost poll then reads as an ended kernel, so once stopped, such a kernel is
asked after again and killed again while it still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import signal
import sys
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

from jupyter_mcp_server._kernels.keeper import process_stats

logger = logging.getLogger(__name__)

KEEPER = str(Path(__file__).with_name("keeper.py"))
#: How long the keeper gets to end the tree before `jupyter_client` SIGKILLs the
#: process group (a little longer than the keeper itself tries).
TAKE_DOWN_WAIT = 6.0
#: How long a kernel started elsewhere is asked after, and killed again, once stopped.
REMOTE_CONFIRM_WAIT = 12.0
#: The pause before each of those questions, so that it is not one of a quick succession.
REMOTE_CONFIRM_PAUSE = 0.25
#: ``_kernel_handle`` where the kernel process cannot be watched by pidfd.
NO_HANDLE = -1


def trees_can_be_kept() -> bool:
    """Only Linux has the child subreaper and the parent-death signal the keeper needs
    (and the keeper must be a file to run: not so in a zipped install)."""
    return sys.platform.startswith("linux") and os.path.isfile(KEEPER)


def kept(command: list[str]) -> list[str]:
    """`command` run under the keeper, tied to this process."""
    # -I -S: the keeper needs only the standard library, and starts in milliseconds.
    return [sys.executable, "-I", "-S", KEEPER, str(os.getpid()), "--", *command]


def _oldest_child_of(parent: int) -> int | None:
    """The first process `parent` started that is still its child: under a keeper, the
    kernel (what is re-parented to the keeper later descends from the kernel, so is younger)."""
    oldest: tuple[int, int] | None = None
    for pid, fields in process_stats():
        if int(fields[1]) == parent and (oldest is None or int(fields[19]) < oldest[0]):
            oldest = (int(fields[19]), pid)
    return oldest[1] if oldest else None


def _has_exited(handle: int) -> bool:
    """Whether the process behind a pidfd has exited (the pidfd turns readable)."""
    watched = select.poll()
    watched.register(handle, select.POLLIN)
    return bool(watched.poll(0))


class TreeKernelManager(AsyncKernelManager):
    """`jupyter_client`'s kernel manager, whose kernels take their whole process tree with them."""

    #: Whether the running kernel was started under the keeper.
    keeps_its_tree = False
    #: A pidfd of the kernel process below the keeper, once it has been found;
    #: NO_HANDLE where there can be none (then the keeper answers alone).
    _kernel_handle: int | None = None

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command: list[str] = super().format_kernel_cmd(extra_arguments)
        # A provisioner that starts the kernel elsewhere yet asks for the command: the keeper
        # would run there, find no server of its own, and start nothing.
        self.keeps_its_tree = trees_can_be_kept() and not self.runs_elsewhere
        return kept(command) if self.keeps_its_tree else command

    # Like shutdown_kernel below: a coroutine here, typed as the blocking one upstream.
    async def is_alive(self) -> bool:  # type: ignore[override]
        """The kernel process itself is alive, not only its keeper.

        The keeper exits right after its kernel, having ended the rest of the
        tree; asked in between, the keeper alone would say the kernel lives,
        and a call would be sent to a dead kernel instead of being told.
        """
        if not await super().is_alive():
            return False
        if not self.keeps_its_tree:
            return True
        if self._kernel_handle is None:
            self._kernel_handle = self._open_kernel_handle()
        if self._kernel_handle in (None, NO_HANDLE):
            return True
        return not _has_exited(self._kernel_handle)

    def _open_kernel_handle(self) -> int | None:
        keeper = getattr(self.provisioner, "pid", None)
        kernel = _oldest_child_of(keeper) if keeper else None
        if kernel is None:
            return None  # not forked yet: looked for again next time
        if sys.platform != "linux":
            return NO_HANDLE  # pidfds are Linux's
        try:
            return os.pidfd_open(kernel)
        except ProcessLookupError:
            return None  # reaped already: its keeper is about to exit
        except (AttributeError, OSError):  # no pidfds here (Linux < 5.3)
            return NO_HANDLE

    @property
    def runs_elsewhere(self) -> bool:
        """Whether the kernel was started by a provisioner other than jupyter_client's local
        one (its process is wherever that provisioner put it)."""
        from jupyter_client.provisioning import LocalProvisioner

        return self.provisioner is not None and not isinstance(self.provisioner, LocalProvisioner)

    # AsyncKernelManager's shutdown_kernel is a coroutine; jupyter_client types the blocking one.
    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:  # type: ignore[override]
        elsewhere = self.provisioner if self.runs_elsewhere else None
        if now and elsewhere is not None:
            # Its provisioner's kill first, alone: jupyter_client's would follow an interrupt
            # at once, one relayed signal too many for gateway-provisioners (_confirm_ended).
            with contextlib.suppress(Exception):
                await elsewhere.kill()
        if now and self.keeps_its_tree:
            # jupyter_client's kill SIGKILLs the process group at once, keeper
            # included, which would orphan whatever left the group.
            await self.end_the_tree()
        await super().shutdown_kernel(now=now, restart=restart)
        if elsewhere is not None:
            await self._confirm_ended(elsewhere)
        if self._kernel_handle not in (None, NO_HANDLE):
            with contextlib.suppress(OSError):
                os.close(self._kernel_handle)
            self._kernel_handle = None

    async def _confirm_ended(self, provisioner: Any) -> None:
        """Ask `provisioner` again, once its kernel was stopped, and kill the kernel again while
        it still answers. jupyter_client stops a kernel with signals in quick succession
        (interrupt, poll, terminate); gateway-provisioners relays each over a connection its
        listener must accept within 10 ms, one at a time, so one can be lost, and the poll that
        follows a lost one reads as an ended kernel, which then runs on. Asked apart, it answers."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + REMOTE_CONFIRM_WAIT
        while loop.time() < deadline:
            await asyncio.sleep(REMOTE_CONFIRM_PAUSE)
            try:
                if await provisioner.poll() is not None:
                    return
                await provisioner.kill()
            except Exception:
                logger.debug(
                    "Asking the provisioner of %s again failed", self.kernel_id, exc_info=True
                )
                return

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
