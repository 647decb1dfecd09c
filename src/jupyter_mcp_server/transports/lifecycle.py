"""What every transport does around serving: start the background work, and
on the way out stop every kernel and every extension, whatever ended it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jupyter_mcp_server.workspace import Workspace

logger = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def running_server() -> AsyncIterator[None]:
    from jupyter_mcp_server.context import ServerContext
    from jupyter_mcp_server.server import extension_manager

    context = ServerContext.get_instance()
    # A crash's leftovers (temporary files, kernel connection files) are
    # clutter, never read: the walk of what may be a home directory happens
    # beside serving, not before the handshake, in a daemon thread that never
    # holds up the exit.
    threading.Thread(target=_sweep, args=(context.workspace,), name="sweep", daemon=True).start()
    context.kernels.start_background()
    # Off the handshake: the imports the first notebook call would otherwise
    # pay happen while the client settles in.
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, lambda: loop.run_in_executor(None, _warm_up))
    try:
        yield
    finally:
        # Shielded: a cancelled server must still stop what it started.
        await asyncio.shield(context.kernels.shutdown_all())
        extension_manager.stop()


def _sweep(workspace: Workspace) -> None:
    from jupyter_mcp_server.kernels.connection_files import remove_orphaned_connection_files

    for what, sweep in (
        ("temporary files", workspace.remove_stale_temp_files),
        ("kernel connection files", remove_orphaned_connection_files),
    ):
        try:
            removed = sweep()
        except Exception:
            logger.warning("Looking for %s left by a crash failed", what, exc_info=True)
            continue
        if removed:
            logger.info("Removed %d %s left by an earlier crash", removed, what)


def _warm_up() -> None:
    from jupyter_mcp_server.store import warm_up

    try:
        warm_up()
    except Exception:
        logger.debug("Warming up the notebook format failed", exc_info=True)
