"""The agent's edits, made in the notebooks people have open in JupyterLab.

Inside Jupyter Server with JupyterLab's collaboration package
(``jupyter-collaboration``: its server extension ``jupyter_server_ydoc``), a
notebook open in JupyterLab is a shared Y document (a ``YNotebook``) in a
room, and every browser showing it is a client of that room. The document,
not the file, holds what the person sees and types: their keystrokes reach
the file only when the extension saves the document, a second or so later.

So an edit of a notebook that a room holds is made in the document, never
in the file alone. Writing the file and copying it into the document would
lose work twice over: the copy replaces every cell the person typed in
since the last save with the file's older text, and the extension, finding
a file it did not write, reloads it over the document on its next poll
("Out-of-band changes"), dropping whatever was typed meanwhile.

:class:`LiveStore` wraps the notebook store. When a room holds the notebook,
an edit takes the document as it is now (the person's unsaved typing
included), applies the change to it, and sets it back in the same step,
with no ``await`` in between, so no keystroke can slip between the read and
the write. ``jupyter_ydoc`` keeps every cell that did not change (by cell
id), so people's cursors stay where they are. Then the document is saved
through the room's own file loader (``maybe_save_content``), the path the
extension itself saves by, so it knows the new modification time and sees
nothing out of band. Revisions stay what they are everywhere else: the
SHA-256 of the file's bytes, read back after the save.

When no room holds the notebook, the store writes the file as usual.
Nothing here imports the collaboration packages at module import: it calls
the extension app Jupyter Server already loaded, and does nothing when
there is none.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from jupyter_mcp_server._calls.callers import serving_caller
from jupyter_mcp_server._calls.people import PersonFocus
from jupyter_mcp_server._errors import INVALID_PATH, REVISION_CONFLICT, ToolFailure
from jupyter_mcp_server._jupyter.focus import people_in
from jupyter_mcp_server._jupyter.presence import GLOBAL_AWARENESS_ROOM, Presence
from jupyter_mcp_server._store.store import revision_conflict

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The collaboration package's server extension.
YDOC_EXTENSION = "jupyter_server_ydoc"


class LiveDocuments:
    """The collaboration extension's open notebooks, in the Jupyter Server this runs in."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self._locks: dict[str, asyncio.Lock] = {}
        self._warned = False
        #: The agent, shown to the people in the rooms it works in.
        self.presence = Presence(self._global_awareness)

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

    def _global_awareness(self) -> Any:
        """The awareness of JupyterLab's global room (its collaborators panel), or None."""
        extension = self._extension()
        server = getattr(extension, "ywebsocket_server", None)
        room = getattr(server, "rooms", {}).get(GLOBAL_AWARENESS_ROOM)
        return getattr(room, "awareness", None)

    def available(self) -> bool:
        return self._extension() is not None

    def people(self) -> list[PersonFocus]:
        """Everyone in JupyterLab's rooms and where they are (none without the extension)."""
        extension = self._extension()
        rooms = getattr(getattr(extension, "ywebsocket_server", None), "rooms", None)
        file_ids = self.serverapp.web_app.settings.get("file_id_manager")
        if not rooms or file_ids is None:
            return []

        def path_of(file_id: str) -> str | None:
            try:
                return file_ids.get_path(file_id)  # type: ignore[no-any-return]
            except Exception:
                return None

        return people_in(rooms, path_of)

    async def room(self, path: str) -> OpenRoom | None:
        """The open document of `path` and the file loader that saves it, or None."""
        try:
            return await self._room(path)
        except Exception as error:  # no room found is the plain store's case, never a failure
            if not self._warned:
                self._warned = True
                logger.warning(
                    "Could not find JupyterLab's open document of %s (%s: %s); editing the file",
                    path,
                    type(error).__name__,
                    error,
                )
            return None

    async def _room(self, path: str) -> OpenRoom | None:
        extension = self._extension()
        if extension is None:
            return None
        file_ids = self.serverapp.web_app.settings.get("file_id_manager")
        if file_ids is None:
            return None
        file_id = file_ids.get_id(path)
        if file_id is None:
            return None  # never opened collaboratively: there is no room to find
        document = await extension.get_document(
            path=path, content_type="notebook", file_format="json", copy=False, create=False
        )
        if document is None or file_id not in extension.file_loaders:
            return None
        return OpenRoom(document, extension.file_loaders[file_id], path)

    def lock(self, path: str) -> asyncio.Lock:
        return self._locks.setdefault(path, asyncio.Lock())


@dataclass(frozen=True)
class OpenRoom:
    """A notebook's shared document and the collaboration extension's loader of its file."""

    document: Any
    loader: Any
    path: str

    def ycell(self, cell_id: str | None) -> Any:
        """The document's cell of this id, or None."""
        if cell_id is None:
            return None
        return next((ycell for ycell in self.document.ycells if ycell.get("id") == cell_id), None)

    def notebook(self) -> Any:
        """The document as an nbformat notebook, every cell with its id."""
        import nbformat

        content = self.document.get(deduplicate=False)
        cells = content["cells"]
        if any("id" not in cell for cell in cells):
            # Below format 4.5 the document hides the ids it keeps; the store
            # writes 4.5 with ids, and so does an edit made here.
            for cell, ycell in zip(cells, self.document.ycells, strict=True):
                cell.setdefault("id", str(ycell.get("id") or uuid.uuid4().hex[:8]))
            content["nbformat"], content["nbformat_minor"] = 4, max(5, content["nbformat_minor"])
        return nbformat.from_dict(content)

    async def save(self, notebook: Any) -> bool:
        """Save through the extension's loader; False if the file changed behind its back."""
        from jupyter_server_ydoc.loaders import OutOfBandChanges

        try:
            saved = await self.loader.maybe_save_content(
                {"format": "json", "type": "notebook", "content": notebook}
            )
        except OutOfBandChanges:
            return False
        if saved is None:
            raise ToolFailure(
                INVALID_PATH,
                f"{self.loader.path} is not writable: the edit shows in JupyterLab but could not "
                "be saved. Make the file writable, then save it from JupyterLab.",
                path=self.loader.path,
            )
        return True

    async def take_file(self) -> None:
        """Load the file into the document, as the extension does for a change it did not make."""
        model = await self.loader.load_content("json", "notebook")
        if self.document.get() != model["content"]:
            self.document.set(model["content"])


class LiveExecution:
    """A cell running for the agent, shown in the open document as JupyterLab shows its own:
    marked running, its outputs arriving one by one. The final outputs are stored by the
    edit that ends the run, which replaces what was shown here."""

    def __init__(self, room: OpenRoom, cell_id: str) -> None:
        self.cell = room.ycell(cell_id)
        self.room = room

    def start(self) -> None:
        if self.cell is None:
            return
        with self.room.document.ydoc.transaction():
            self.cell["execution_state"] = "running"
            self.cell["execution_count"] = None
            outputs = self.cell.get("outputs")
            if outputs is not None:
                outputs.clear()

    def show(self, output: dict[str, Any]) -> None:
        from pycrdt import Map, Text

        if self.cell is None or "outputs" not in self.cell:
            return
        outputs = self.cell["outputs"]
        last = outputs[len(outputs) - 1] if len(outputs) else None
        if (
            output.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
            and isinstance(last.get("text"), Text)
        ):
            text = last["text"]
            text.insert(len(text), "".join(output.get("text", "")))
            return
        shown = dict(output)
        if shown.get("output_type") == "stream":
            shown["text"] = Text("".join(shown.get("text", "")))
        outputs.append(Map(shown))

    def end(self) -> None:
        if self.cell is not None:
            self.cell["execution_state"] = "idle"


def _looks(cell: Any) -> tuple[Any, ...]:
    """What changes in a cell when it is written or run (cheap to take of every cell)."""
    return cell.get("source"), cell.get("execution_count"), len(cell.get("outputs") or ())


class LiveStore:
    """The notebook store; a notebook open in JupyterLab is edited in its shared document."""

    def __init__(self, store: Any, live: LiveDocuments) -> None:
        self._store = store
        self.live = live

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @property
    def inner(self) -> Any:
        return self._store

    async def shows_runs_live(self, path: str) -> bool:
        """A notebook open in JupyterLab shows a run's outputs in its cell as they arrive."""
        return await self.live.room(self._store.files.locate(path)) is not None

    @contextlib.asynccontextmanager
    async def executing(
        self, path: str, cell_id: str
    ) -> AsyncIterator[Callable[[dict[str, Any]], None] | None]:
        room = await self.live.room(self._store.files.locate(path))
        if room is None:
            yield None
            return
        running = LiveExecution(room, cell_id)
        try:
            running.start()
        except Exception:  # the page is a courtesy; the run and the file are what count
            logger.debug("Could not mark %s running in its open document", cell_id, exc_info=True)
            yield None
            return

        def show(output: dict[str, Any]) -> None:
            try:
                running.show(output)
            except Exception:
                logger.debug(
                    "Could not show an output of %s in its open document", cell_id, exc_info=True
                )

        try:
            with self.live.presence.holding(
                room.document.awareness, room.path, running.cell, serving_caller()
            ):
                yield show
        finally:
            with contextlib.suppress(Exception):
                running.end()

    async def mutate(
        self, path: str, change: Callable[[Any], T], expected_revision: str | None = None
    ) -> tuple[T, Any]:
        key = self._store.files.locate(path)
        room = await self.live.room(key)
        if room is None:
            return await self._store.mutate(key, change, expected_revision)  # type: ignore[no-any-return]
        async with self.live.lock(key):
            for _attempt in range(3):
                before = await self._store.read(key)
                if expected_revision is not None and expected_revision != before.revision:
                    raise revision_conflict(key, expected_revision, before.revision)
                note = await self._store.before_outside_write(before)
                # From reading the document to setting it, nothing awaits: no keystroke
                # can arrive in between and be overwritten.
                notebook = room.notebook()
                looked = {cell.get("id"): _looks(cell) for cell in notebook.cells}
                result = change(notebook)
                note = note or self._store.intend_outside_write(before)
                if room.document.get() != notebook:
                    room.document.set(notebook)
                    # The person sees who changed it, and where: the first cell written.
                    written = next(
                        (
                            cell.get("id")
                            for cell in notebook.cells
                            if looked.get(cell.get("id")) != _looks(cell)
                        ),
                        None,
                    )
                    self.live.presence.show(
                        room.document.awareness, key, room.ycell(written), serving_caller()
                    )
                if await room.save(notebook):
                    view = await self._store.read(key)
                    note = self._store.history_said(
                        note or self._store.after_outside_write(view, before.revision)
                    )
                    self._store.announce_write(key, view.revision)
                    view = dataclasses.replace(
                        view, previous_revision=before.revision, history_off=note
                    )
                    if before.older_format is not None and view.older_format is None:
                        view = dataclasses.replace(view, upgraded_from=before.older_format)
                    return result, view
                # Another program wrote the file: take it, as the extension would, and redo.
                await room.take_file()
            current = await self._store.read(key)
            raise ToolFailure(
                REVISION_CONFLICT,
                f"{key} kept changing on disk while it was open in JupyterLab; its current "
                f"revision is {current.revision}. Read it again and retry with "
                f"expected_revision={current.revision}.",
                path=key,
                current_revision=current.revision,
            )
