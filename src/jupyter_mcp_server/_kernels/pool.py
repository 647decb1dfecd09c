"""Kernels started before anybody asks for them (the ``kernel.prestart`` capability).

A kernel takes about half a second to start, and the first call on a new
notebook would wait for it. The pool keeps one kernel of the default
kernelspec started and warmed, launched a little after it is needed so the
launch never competes with the calls being answered. The manager decides
when to refill it and whether the capability allows it; this module only
holds the kernels and knows how to start, hand out and stop them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_mcp_server._kernels.kernel import Kernel

logger = logging.getLogger(__name__)

#: What a prestarted kernel runs before anybody asks for it (see `WarmPool._prestart`).
WARM_UP = "get_ipython().display_formatter.format(0) and None"


@dataclass(eq=False)
class _Prestart:
    """A kernel being started for the pool, and the way to skip the rest of its delay."""

    task: asyncio.Task[Kernel] = field(init=False)
    #: Set to the kernel as soon as it is up, before its warm-up.
    started: asyncio.Future[Kernel] = field(init=False)
    #: The kernelspec it starts.
    kernel_name: str = ""
    hurry: asyncio.Event = field(default_factory=asyncio.Event)
    launched: bool = False


class WarmPool:
    """At most one kernel started ahead, handed to the first caller who needs one."""

    def __init__(
        self,
        launch: Callable[[str], Coroutine[Any, Any, Kernel]],
        shut_down: Callable[[Kernel], Coroutine[Any, Any, None]],
        warm_up: str = WARM_UP,
    ) -> None:
        self._launch = launch
        self._shut_down = shut_down
        self._warm_up = warm_up
        self._waiting: list[_Prestart] = []

    def fill(self, delay: float, kernel_name: str, *, warm: bool = True) -> None:
        """Start a kernel of `kernel_name` after ``delay`` seconds, unless one is already on
        its way; one of another name (the default changed) is let go. `warm`: run the
        Python warm-up on it."""
        if self._waiting and self._waiting[0].kernel_name == kernel_name:
            return
        self.discard()
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to start it on
            loop = asyncio.get_running_loop()
            prestart = _Prestart(kernel_name=kernel_name)
            prestart.started = loop.create_future()
            prestart.task = loop.create_task(self._prestart(prestart, delay, warm))
            self._waiting.append(prestart)

    async def take(self, kernel_name: str) -> Kernel | None:
        """The pooled kernel of `kernel_name` as soon as it is up (without the rest of its
        delay, nor its warm-up); None when there is none alive.

        A warm-up still running is left to the kernel: the caller's first request
        queues behind it there, paying what its own first execution would have paid,
        and is never kept waiting here for a reply that is not its own.
        """
        if self._waiting and self._waiting[0].kernel_name != kernel_name:
            return None
        while self._waiting:
            prestart = self._waiting.pop(0)
            prestart.hurry.set()  # somebody is waiting: no more delay
            await asyncio.wait(
                {prestart.started, prestart.task}, return_when=asyncio.FIRST_COMPLETED
            )
            if not prestart.started.done():
                with contextlib.suppress(asyncio.CancelledError):
                    if (error := prestart.task.exception()) is not None:
                        logger.warning("A prestarted kernel failed to start", exc_info=error)
                continue
            kernel = prestart.started.result()
            if not prestart.task.done():
                prestart.task.cancel()  # stop reading replies: the caller reads its own from now on
                await asyncio.wait({prestart.task})
            if await kernel.is_alive():
                return kernel
            await self._shut_down(kernel)
        return None

    def discard(self) -> None:
        """Empty the pool now; kernels still starting are stopped once started."""
        waiting, self._waiting = self._waiting, []
        for prestart in waiting:
            prestart.task.add_done_callback(self._shut_down_when_started)
            if not prestart.launched:
                prestart.task.cancel()

    async def stop(self) -> None:
        """Empty the pool and stop its kernels (the server is stopping)."""
        waiting, self._waiting = self._waiting, []

        async def stop_one(prestart: _Prestart) -> None:
            if not prestart.launched:  # still waiting out its delay: nothing to stop
                prestart.task.cancel()
                return
            try:
                kernel = await prestart.task
            except BaseException:
                return
            await self._shut_down(kernel)

        await asyncio.gather(*(stop_one(prestart) for prestart in waiting), return_exceptions=True)

    def _shut_down_when_started(self, task: asyncio.Task[Kernel]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(self._shut_down(task.result()))

    async def _prestart(self, prestart: _Prestart, delay: float, warm: bool = True) -> Kernel:
        """A kernel for the pool, launched after `delay` and run once.

        The delay keeps the launch (imports, a process spawn, a kernel booting
        on a core) off the calls just being answered: the handshake at server
        start, the call that just took the pooled kernel and its first
        execution. Whoever needs the kernel meanwhile cuts the delay short.
        The warm-up run pays the kernel's own first-execution costs here, not
        in the first cell a caller runs: the non-silent execution path and the
        display formatters. It counts nothing, stores nothing in the kernel's
        history and displays nothing (its value is None: a ``;`` would not do,
        IPython looks for it in the history), so ``_``, ``In`` and ``Out`` are
        as a fresh kernel has them.
        """
        if delay > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(prestart.hurry.wait(), delay)
        prestart.launched = True
        kernel = await self._launch(prestart.kernel_name)
        prestart.started.set_result(kernel)
        if not warm:
            return kernel
        try:
            msg_id = kernel.client.execute(
                self._warm_up, silent=False, store_history=False, allow_stdin=False
            )
            deadline = time.monotonic() + 10
            while (wait := deadline - time.monotonic()) > 0:
                reply = await kernel.client.get_shell_msg(timeout=wait)
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    break
        except Exception:  # a kernel that cannot run it fails its first real call instead
            logger.debug("Warming a prestarted kernel failed", exc_info=True)
        return kernel
