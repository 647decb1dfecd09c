"""The workspace a stdio client's roots choose, when the command line chose none.

Without ``--workspace-root`` the workspace is the current directory, which
for a server an editor starts is rarely the folder its person works in. A
client that offers roots says which folders those are: when one connects
over stdio (its initialization done) and whenever it sends
``notifications/roots/list_changed``, the server asks ``roots/list`` and
makes the first ``file://`` root that is a directory the workspace, says so
in the log and in ``capabilities://`` (``workspace.source: client-roots``).

Only over stdio: the workspace is the server's, and over HTTP several
clients share one server, so one client's roots would move the others'
notebooks under them; there the workspace stays the server's. A change of
roots while notebooks of the current workspace have kernels is not followed
(their paths would name other files), and the log says why; it is followed
on the next change once they are released. The ``workspace.client-roots``
capability turns all this off.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from jupyter_mcp_server._calls.connections import STDIO_CONNECTION, session_of
from jupyter_mcp_server._state import ServerState

logger = logging.getLogger(__name__)

CLIENT_ROOTS_CAPABILITY = "workspace.client-roots"
CLIENT_ROOTS = "client-roots"
#: The notifications after which the client's roots are asked for.
ASKING_AFTER = frozenset({"notifications/initialized", "notifications/roots/list_changed"})
#: Seconds the client has to answer roots/list.
ANSWER_WITHIN = 10.0


def directory_of(uri: str) -> Path | None:
    """The local directory a ``file://`` root names, or None."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parts.path))
    return path.resolve() if path.is_absolute() and path.is_dir() else None


class FollowClientRoots:
    """Middleware: after a stdio client's initialization and each roots change, its first root
    becomes the workspace."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._asking: set[asyncio.Task[None]] = set()

    def applies(self, ctx: Any) -> bool:
        state = self.state
        if state.config.workspace_root_given or not state.capabilities.enabled(
            CLIENT_ROOTS_CAPABILITY
        ):
            return False
        if session_of(ctx) != STDIO_CONNECTION:
            return False
        capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
        return getattr(capabilities, "roots", None) is not None

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if getattr(ctx, "method", None) in ASKING_AFTER and self.applies(ctx):
            # Not awaited here: a notification is handled inline, and the answer to
            # roots/list could not be read until this returns.
            task = asyncio.ensure_future(self.follow(ctx.session))
            self._asking.add(task)
            task.add_done_callback(self._asking.discard)
        return result

    async def follow(self, session: Any) -> None:
        from mcp.types import ListRootsRequest, ListRootsResult

        try:
            # The request itself, not the SDK's list_roots: that one warns (SEP-2577) on the
            # server's stderr, and roots/list is what this (2025-11-25) connection defines.
            answered = await asyncio.wait_for(
                session.send_request(ListRootsRequest(), ListRootsResult), ANSWER_WITHIN
            )
        except Exception as error:
            logger.warning(
                "The client offers roots but roots/list failed (%s); the workspace stays %s",
                error or type(error).__name__,
                self.state.workspace.root,
            )
            return
        for root in answered.roots:
            directory = directory_of(str(root.uri))
            if directory is None:
                continue
            if directory == self.state.workspace.root:
                self.state.workspace_chosen_by(CLIENT_ROOTS)
                return
            refused = self.state.use_workspace(directory, CLIENT_ROOTS)
            if refused:
                logger.warning("The client's root %s is not the workspace: %s", directory, refused)
            else:
                logger.warning("The workspace is now %s, the client's first root", directory)
            return
        logger.info(
            "The client's roots name no local directory; the workspace stays %s",
            self.state.workspace.root,
        )
