"""Local kernels whose every process ends with them, and with the server.

`jupyter_client` starts a kernel in a session of its own and, to stop it,
SIGKILLs that process group. What the kernel started outside the group
(``start_new_session=True``, a daemon that ``setsid()``s) survives a
shutdown, a restart, a culling; and when the server is SIGKILLed nothing is
signalled at all: the kernel exits by itself, and all its children run on
under init. On Linux, :class:`TreeKernelManager` has the server's one
:mod:`~jupyter_mcp_server._kernels.keeper` start each kernel, which holds
every kernel's whole tree and ends it when told to, when the kernel exits,
or when the server dies. Elsewhere it is `jupyter_client`'s own manager,
process groups and all.

`jupyter_client`'s LocalProvisioner has no seam for how its process starts:
it calls the module-level ``launch_kernel`` it imported, looked up at each
call. So that name is replaced, once, by one that asks the keeper when the
launch is a :class:`TreeKernelManager`'s (a context variable set around it)
and is `jupyter_client`'s own for any other caller. A provisioner built on
LocalProvisioner (a kernelspec may name one) is kept the same way.

A kernelspec may name a kernel provisioner that starts its kernel elsewhere (over SSH, in a
container, on a cluster). Such a kernel has no process here to keep: it is not started by the
keeper. Stopping it is its provisioner's, through signals it relays; a relayed signal can
be lost, and a lost poll then reads as an ended kernel, so once stopped, such a kernel is
asked after again and killed again while it still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import sys
from typing import Any

from jupyter_client.manager import AsyncKernelManager

from jupyter_mcp_server._kernels.keeper_client import KEEPER, KeptKernelProcess, KernelKeeper

logger = logging.getLogger(__name__)

#: How long the keeper gets to end a tree before `jupyter_client` SIGKILLs the
#: process group (a little longer than the keeper itself tries).
TAKE_DOWN_WAIT = 6.0
#: How long a kernel started elsewhere is asked after, and killed again, once stopped.
REMOTE_CONFIRM_WAIT = 12.0
#: The pause before each of those questions, so that it is not one of a quick succession.
REMOTE_CONFIRM_PAUSE = 0.25

#: The keeper a launch in progress goes through: set around a TreeKernelManager's launch.
_launching_through: contextvars.ContextVar[KernelKeeper | None] = contextvars.ContextVar(
    "launching_through", default=None
)


def trees_can_be_kept() -> bool:
    """Only Linux has the child subreaper and the parent-death signal the keeper needs
    (and the keeper must be a file to run: not so in a zipped install)."""
    return sys.platform.startswith("linux") and os.path.isfile(KEEPER)


def _launch_through_the_keeper() -> None:
    """Replace LocalProvisioner's ``launch_kernel`` (once) by one that asks the keeper when a
    TreeKernelManager launches, and is `jupyter_client`'s own otherwise."""
    from jupyter_client.provisioning import local_provisioner

    own = local_provisioner.launch_kernel
    if getattr(own, "asks_the_keeper", False):
        return

    def launch_kernel(
        cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None, **kw: Any
    ) -> Any:
        keeper = _launching_through.get()
        if keeper is None:
            return own(cmd, env=env, cwd=cwd, **kw)
        # stdin, stdout, stderr, independent: a kept kernel reads nothing from the server
        # and writes where the server's stderr goes, as it always did here.
        return keeper.start_kernel(cmd, env, cwd)

    launch_kernel.asks_the_keeper = True  # type: ignore[attr-defined]
    local_provisioner.launch_kernel = launch_kernel  # type: ignore[assignment]


class TreeKernelManager(AsyncKernelManager):
    """`jupyter_client`'s kernel manager, whose kernels take their whole process tree with them."""

    #: The server's keeper (its local backend's), which starts kernels that keep their tree.
    keeper: KernelKeeper | None = None

    @property
    def keeps_its_tree(self) -> bool:
        """Whether the running kernel was started by the keeper."""
        return isinstance(getattr(self.provisioner, "process", None), KeptKernelProcess)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        # A provisioner that starts the kernel elsewhere yet calls launch_kernel there
        # would have the keeper start it here: only local provisioners go through it.
        if self.keeper is None or self.runs_elsewhere or not trees_can_be_kept():
            await super()._async_launch_kernel(kernel_cmd, **kw)
            return
        _launch_through_the_keeper()
        token = _launching_through.set(self.keeper)
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            _launching_through.reset(token)

    # Like shutdown_kernel below: a coroutine here, typed as the blocking one upstream.
    async def is_alive(self) -> bool:  # type: ignore[override]
        """The kernel process itself is alive, not only the tree it leaves.

        The keeper tells of a kernel's exit once what it left is gone too;
        asked in between, that alone would say the kernel lives, and a call
        would be sent to a dead kernel instead of being told.
        """
        if not await super().is_alive():
            return False
        process = getattr(self.provisioner, "process", None)
        return not (isinstance(process, KeptKernelProcess) and process.kernel_exited())

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
            # The whole tree, and waited for: jupyter_client's kill reaches only the group.
            await self.end_the_tree()
        await super().shutdown_kernel(now=now, restart=restart)
        if elsewhere is not None:
            await self._confirm_ended(elsewhere)

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
        if not isinstance(process, KeptKernelProcess) or process.poll() is not None:
            return
        process.end_tree()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TAKE_DOWN_WAIT
        while process.poll() is None and loop.time() < deadline:
            await asyncio.sleep(0.02)
