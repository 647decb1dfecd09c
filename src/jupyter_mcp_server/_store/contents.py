"""Notebooks kept by a Jupyter Server: its contents API, or its contents manager.

A :class:`~.store.NotebookStore` over :class:`ContentsFiles` keeps
notebooks that are not files under this server's workspace root: they are
read and written through a Jupyter Server's contents, with the same
revisions (the SHA-256 of the file's bytes), the same in-memory documents
and the same guarantee before a save: the file's ``last_modified`` and size
are compared with what the document was read from, and then its bytes'
hash; a file somebody else saved meanwhile is read again, and with
``expected_revision`` that is a ``revision_conflict``. Neither the REST API
nor a contents manager offers a conditional save, so the window between that
last check and the save is one round trip, not zero.

Files are moved as text (``type=file``, ``format=text``), so a notebook's
bytes, and so its revision, are exactly what the server stores, and
``.py`` percent scripts work as they do locally.

Two ways to reach the contents:

- :class:`RemoteContents`: a Jupyter Server's ``/api/contents`` over HTTP
  (``--jupyter-url … --jupyter-contents``), the token in a header;
- :class:`ManagerContents`: the contents manager of the Jupyter Server this
  process runs inside (the server extension), called directly.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timezone
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from jupyter_core.utils import ensure_async

from jupyter_mcp_server._workspace.path_names import problem_with

from .._errors import ALREADY_EXISTS, INVALID_ARGUMENT, INVALID_PATH, NOT_FOUND, ToolFailure
from .._text.timestamps import iso_utc
from .._workspace import MAX_LIST_DEPTH, ChangedMeanwhile
from .files import Fingerprint, Snapshot, revision_of

if TYPE_CHECKING:
    pass


def _nanoseconds(last_modified: Any) -> int:
    if isinstance(last_modified, datetime):
        moment = last_modified
    else:
        text = str(last_modified or "").replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _iso(last_modified: Any) -> str:
    return iso_utc(_nanoseconds(last_modified) / 1e9)


#: How often a Jupyter Server's contents are asked whether a subscribed notebook changed.
POLL_SECONDS = 1.0


class ContentsFiles:
    """A Jupyter Server's contents, as the store's files. Subclasses move the models."""

    #: Said in messages: where the files are.
    where = "the Jupyter Server"

    @property
    def missing_where(self) -> str:
        return f"on {self.where}"

    @property
    def identity(self) -> str:
        """Which contents these are, for what outlives the process (a notebook's history)."""
        return self.where

    @property
    def changing_where(self) -> str:
        return f"on {self.where} while it was being edited (somebody else is saving it)"

    async def _get(self, path: str, *, content: bool) -> dict[str, Any] | None:
        """The model at `path` (a file's as text when `content`); None when nothing is there."""
        raise NotImplementedError

    async def _put(self, path: str, model: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def create_checkpoint(self, key: str) -> dict[str, Any]:
        """A checkpoint of the file through Jupyter's own checkpoints API (``id``,
        ``last_modified``), the one JupyterLab's "Revert to checkpoint" offers."""
        raise NotImplementedError

    # --- Paths ----------------------------------------------------------------------

    def locate(self, path: str) -> str:
        """The canonical relative path: the workspace's rules, without a local disk to resolve on."""
        if not isinstance(path, str):
            raise ToolFailure(
                INVALID_PATH,
                f"Paths are strings relative to the root of {self.where}; got {path!r}.",
            )
        problem = problem_with(path)
        if problem:
            raise ToolFailure(
                INVALID_PATH,
                f"Paths are relative to the root of {self.where}; {path!r} {problem}. "
                "Pass a path such as 'notebook.ipynb'.",
                path=path,
            )
        return "/".join(part for part in path.split("/") if part not in ("", "."))

    # --- What the store asks ----------------------------------------------------------

    async def stat(self, key: str) -> Fingerprint | None:
        model = await self._get(key, content=False)
        if model is None:
            return None
        if model.get("type") == "directory":
            raise ToolFailure(
                INVALID_PATH, f"{key!r} is a directory on {self.where}, not a notebook.", path=key
            )
        return Fingerprint(_nanoseconds(model.get("last_modified")), int(model.get("size") or 0))

    def being_saved(self, key: str) -> bool:
        return False  # the server reads its own files: a read sees a save whole, or not at all

    async def read_with_fingerprint(self, key: str) -> tuple[bytes, Fingerprint] | None:
        fingerprint = await self.stat(key)  # first: bytes never older than it
        if fingerprint is None:
            return None
        return await self.read_bytes(key), fingerprint

    async def read_bytes(self, key: str) -> bytes:
        model = await self._get(key, content=True)
        if model is None:
            raise ToolFailure(
                NOT_FOUND,
                f"{key!r} does not exist on {self.where}. Use list_files to see what is there.",
                path=key,
            )
        content = model.get("content")
        if model.get("format") == "base64" or not isinstance(content, str):
            raise ToolFailure(
                INVALID_PATH, f"{key!r} on {self.where} is not a text file.", path=key
            )
        return content.encode("utf-8")

    async def changes(
        self, wanted: Callable[[], set[str]], stop: asyncio.Event, debounce_ms: int
    ) -> AsyncIterator[set[str]]:
        """Polled: a contents API tells nobody about changes. Each wanted file's status is
        asked for once a second at most, and a change is what makes it differ."""
        seen: dict[str, Fingerprint | None] = {}
        interval = max(debounce_ms / 1000, POLL_SECONDS)
        while not stop.is_set():
            changed = set()
            for key in sorted(wanted()):
                try:
                    now = await self.stat(key)
                except ToolFailure:
                    now = None
                if key in seen and seen[key] != now:
                    changed.add(key)
                seen[key] = now
            if changed:
                yield changed
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)

    def trusts(self, snapshot: Snapshot) -> bool:
        """A file whose ``last_modified`` and size are as read is taken as read."""
        return True

    def still_holds(self, key: str, snapshot: Snapshot) -> bool | None:
        """Not told without a request to the server: its history records what it read."""
        return None

    def others_held_back(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Nothing to hold: the contents API has no lock, so a retry relies on its pauses alone."""
        return contextlib.nullcontext()

    async def write(
        self,
        key: str,
        data: bytes,
        *,
        exclusive: bool = False,
        unchanged_since: Snapshot | None = None,
    ) -> Fingerprint:
        """As the store's files write; ``unchanged_since`` compares ``last_modified``, size and
        then the bytes' hash, one round trip before the save (no conditional save exists)."""
        if unchanged_since is not None:
            status = await self.stat(key)
            if status is None or status != unchanged_since.fingerprint:
                raise ChangedMeanwhile(key)
            if revision_of(await self.read_bytes(key)) != unchanged_since.revision:
                raise ChangedMeanwhile(key)
        if exclusive and await self._get(key, content=False) is not None:
            raise ToolFailure(
                ALREADY_EXISTS,
                f"{key!r} already exists on {self.where}. Choose another name, or open the existing file instead.",
                path=key,
            )
        await self._make_parents(key)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(
                INVALID_ARGUMENT, f"{key!r}: only UTF-8 text is saved to {self.where}."
            ) from None
        saved = await self._put(key, {"type": "file", "format": "text", "content": text})
        if saved.get("last_modified") is not None and saved.get("size") is not None:
            return Fingerprint(_nanoseconds(saved["last_modified"]), int(saved["size"]))
        status = await self.stat(key)
        if status is None:
            raise ToolFailure(
                NOT_FOUND, f"{key!r} was saved to {self.where} but is not there.", path=key
            )
        return status

    async def _make_parents(self, key: str) -> None:
        parts = key.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directory = "/".join(parts[:depth])
            model = await self._get(directory, content=False)
            if model is None:
                await self._put(directory, {"type": "directory"})
            elif model.get("type") != "directory":
                raise ToolFailure(
                    INVALID_PATH,
                    f"{directory!r} on {self.where} is a file, not a directory.",
                    path=key,
                )

    async def list_files(
        self, path: str = "", max_depth: int = 1, pattern: str = ""
    ) -> list[dict[str, Any]]:
        if type(max_depth) is not int or not 0 <= max_depth <= MAX_LIST_DEPTH:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"max_depth is {max_depth!r}; pass an integer from 0 (the path itself) to {MAX_LIST_DEPTH}.",
            )
        base = self.locate(path) if path else ""
        root = await self._get(base, content=True)
        if root is None:
            raise ToolFailure(
                NOT_FOUND,
                f"{path!r} does not exist on {self.where}. Use list_files to see what is there.",
                path=path,
            )
        if root.get("type") != "directory":
            name = base.rsplit("/", 1)[-1]
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{path!r} is a file, not a directory. List its parent directory and pass pattern={name!r} to see it.",
                path=path,
            )
        entries: list[dict[str, Any]] = []

        async def visit(model: dict[str, Any], relative: str, depth: int) -> None:
            name = relative.rsplit("/", 1)[-1]
            is_directory = model.get("type") == "directory"
            listed = depth > 0 or max_depth == 0
            matches = fnmatchcase(relative, pattern) or fnmatchcase(name, pattern)
            if listed and (not pattern or matches):
                kind = "notebook" if name.lower().endswith(".ipynb") else "file"
                entries.append(
                    {
                        "path": relative,
                        "type": "directory" if is_directory else kind,
                        "size": 0 if is_directory else int(model.get("size") or 0),
                        "last_modified": _iso(model.get("last_modified")),
                    }
                )
            if is_directory and depth < max_depth:
                children = model.get("content")
                if children is None:
                    children = ((await self._get(relative, content=True)) or {}).get(
                        "content"
                    ) or []
                for child in children:
                    child_name = str(child.get("name", ""))
                    if not child_name or child_name.startswith("."):
                        continue
                    await visit(
                        child, f"{relative}/{child_name}" if relative else child_name, depth + 1
                    )

        await visit(root, base, 0)
        return sorted(entries, key=lambda entry: entry["path"])


class RemoteContents(ContentsFiles):
    """A Jupyter Server's ``/api/contents``, over HTTP, the token in a header."""

    def __init__(self, server_url: str, token: str | None, timeout: float = 30.0) -> None:
        self.server_url = server_url
        self.where = f"the Jupyter Server at {server_url}"
        self._headers = {"Authorization": f"token {token}"} if token else {}
        self._timeout = timeout

    def __repr__(self) -> str:  # never the token
        return f"RemoteContents({self.server_url!r})"

    def _url(self, path: str) -> str:
        return f"{self.server_url}/api/contents/{quote(path)}"

    async def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self._timeout, headers=self._headers) as http:
                return await http.request(method, self._url(path), **kwargs)
        except httpx.HTTPError as error:
            raise ToolFailure(
                NOT_FOUND,
                f"Could not reach {self.where} ({type(error).__name__}) to {method} {path!r}. "
                "Check that the server is running.",
                path=path,
            ) from None

    def _refused(self, response: Any, method: str, path: str) -> ToolFailure:
        if response.status_code in (401, 403):
            return ToolFailure(
                INVALID_ARGUMENT,
                f"{self.where} refused the token (HTTP {response.status_code}) for {method} {path!r}.",
                path=path,
            )
        try:
            reason = str(response.json().get("message") or "")
        except Exception:
            reason = ""
        return ToolFailure(
            INVALID_ARGUMENT,
            f"{self.where} answered {method} {path!r} with HTTP {response.status_code}"
            + (f": {reason}" if reason else "."),
            path=path,
        )

    async def _get(self, path: str, *, content: bool) -> dict[str, Any] | None:
        params = {"content": "1", "type": "file", "format": "text"} if content else {"content": "0"}
        response = await self._call("GET", path, params=params)
        if content and response.status_code == 400:
            # A directory asked for as a file: ask for it as what it is.
            response = await self._call("GET", path, params={"content": "1"})
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._refused(response, "GET", path)
        model: dict[str, Any] = response.json()
        return model

    async def _put(self, path: str, model: dict[str, Any]) -> dict[str, Any]:
        response = await self._call("PUT", path, json=model)
        if response.status_code not in (200, 201):
            raise self._refused(response, "PUT", path)
        saved: dict[str, Any] = response.json()
        return saved

    async def create_checkpoint(self, key: str) -> dict[str, Any]:
        response = await self._call("POST", f"{key}/checkpoints")
        if response.status_code not in (200, 201):
            raise self._refused(response, "POST", f"{key}/checkpoints")
        created: dict[str, Any] = response.json()
        return created


class ManagerContents(ContentsFiles):
    """The contents manager of the Jupyter Server this process runs inside."""

    where = "this Jupyter Server"

    def __init__(self, manager: Any) -> None:
        self.manager = manager

    @property
    def identity(self) -> str:
        return f"jupyter-server:{getattr(self.manager, 'root_dir', '')}"

    async def _get(self, path: str, *, content: bool) -> dict[str, Any] | None:
        from tornado.web import HTTPError

        try:
            if content:
                is_directory = await ensure_async(self.manager.dir_exists(path))
                if is_directory:
                    return dict(await ensure_async(self.manager.get(path, content=True)))
                return dict(
                    await ensure_async(
                        self.manager.get(path, content=True, type="file", format="text")
                    )
                )
            return dict(await ensure_async(self.manager.get(path, content=False)))
        except HTTPError as error:
            if error.status_code == 404:
                return None
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{self.where} could not read {path!r}: {error.log_message or error}",
                path=path,
            ) from None

    async def _put(self, path: str, model: dict[str, Any]) -> dict[str, Any]:
        from tornado.web import HTTPError

        try:
            return dict(await ensure_async(self.manager.save(model, path)))
        except HTTPError as error:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{self.where} could not save {path!r}: {error.log_message or error}",
                path=path,
            ) from None

    async def create_checkpoint(self, key: str) -> dict[str, Any]:
        from tornado.web import HTTPError

        try:
            return dict(await ensure_async(self.manager.create_checkpoint(key)))
        except HTTPError as error:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{self.where} could not checkpoint {key!r}: {error.log_message or error}",
                path=key,
            ) from None
