"""The agent's edits, live in the notebooks people have open in JupyterLab.

Inside Jupyter Server with JupyterLab's collaboration package
(``jupyter-collaboration``: its server extension ``jupyter_server_ydoc``), a
notebook open in JupyterLab is a shared Y document (a ``YNotebook``) in a
room, and every browser showing it is a client of that room. A program that
only writes the file is noticed when the extension next polls the file (every
second by default, or never, as configured), and then the whole document is
replaced.

:class:`LiveStore` wraps the notebook store: after each edit it writes (an
inserted, changed, moved or deleted cell, outputs after an execution), the
open document of that notebook, if there is one, is made to match the file
right away, through the extension's public ``get_document(...,
copy=False)``, before the tool answers. The document is set from the
notebook exactly as the contents manager reads it, which is what the
extension itself would load, and ``jupyter_ydoc`` keeps every cell that did
not change (by cell id) and edits the others in place, so people's cursors,
scroll positions and the cells they are in stay where they are.

The file stays the truth, and so revisions stay what they are everywhere
else: the SHA-256 of the file's bytes as the agent wrote them. When the
extension later saves the document (its ``document_save_delay``), it saves
the same content, so the same bytes and the same revision. What a person
typed in JupyterLab reaches the file only when the extension saves it, about
a second later: until then the agent does not see it, and an agent's edit in
that second is applied to the file as it was, then the open document is made
to match the file, as the extension itself does for any program writing the
file.

Nothing here imports the collaboration packages: it calls the extension app
Jupyter Server already loaded, and does nothing when there is none.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The collaboration package's server extension.
YDOC_EXTENSION = "jupyter_server_ydoc"


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class LiveDocuments:
    """The collaboration extension's open notebooks, in the Jupyter Server this runs in."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self._locks: dict[str, asyncio.Lock] = {}
        self._warned = False

    def _extension(self) -> Any:
        """The loaded collaboration extension app, or None (looked up each time: it may load after this one)."""
        manager = getattr(self.serverapp, "extension_manager", None)
        if manager is None:
            return None
        apps = manager.extension_apps.get(YDOC_EXTENSION) or set()
        for app in apps:
            if hasattr(app, "get_document"):
                return app
        return None

    def available(self) -> bool:
        return self._extension() is not None

    async def document(self, path: str) -> Any:
        """The shared document of the notebook at `path` while a room holds it, else None."""
        extension = self._extension()
        if extension is None:
            return None
        file_ids = self.serverapp.web_app.settings.get("file_id_manager")
        if file_ids is None or file_ids.get_id(path) is None:
            return None  # never opened collaboratively: there is no room to find
        return await extension.get_document(
            path=path, content_type="notebook", file_format="json", copy=False, create=False
        )

    async def mirror(self, path: str) -> bool:
        """Make the open document of `path` match the file; whether there was one."""
        lock = self._locks.setdefault(path, asyncio.Lock())
        async with lock:
            try:
                document = await self.document(path)
                if document is None:
                    return False
                model = await _settled(
                    self.serverapp.contents_manager.get(path, type="notebook", format="json", content=True)
                )
                content = model["content"]
                # One transaction, no await inside: nothing else edits the document half-way.
                if document.get() != content:
                    document.set(content)
                return True
            except Exception as error:  # the file is written; a live view is a courtesy
                if not self._warned:
                    self._warned = True
                    logger.warning(
                        "Could not show an edit of %s live in JupyterLab (%s: %s); it is saved to the file",
                        path,
                        type(error).__name__,
                        error,
                    )
                else:
                    logger.debug("Mirroring %s into its shared document failed", path, exc_info=True)
                return False


class LiveStore:
    """The notebook store, each edit also shown in the notebook's open shared document."""

    def __init__(self, store: Any, live: LiveDocuments) -> None:
        self._store = store
        self.live = live

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @property
    def inner(self) -> Any:
        return self._store

    async def mutate(
        self, path: str, change: Callable[[Any], T], expected_revision: str | None = None
    ) -> tuple[T, Any]:
        result, view = await self._store.mutate(path, change, expected_revision)
        await self.live.mirror(view.path)
        return result, view
