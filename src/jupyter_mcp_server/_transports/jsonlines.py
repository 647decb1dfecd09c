"""The JSON-lines transport: one JSON request per line on stdin, one JSON line per answer on stdout.

For programs that drive notebooks without speaking MCP (an editor plugin, a
script, a test harness). It works on the notebook store and the kernels
with the operations the MCP tools use (paths, cell addressing, timeouts, the
execution result, storing outputs), on a working copy. The message shapes are in
docs/json-lines.md; in short::

    -> {"id": 1, "method": "open", "params": {"path": "a.ipynb"}}
    <- {"id": 1, "result": {"path": "a.ipynb", "revision": "…", "cells": […], …}}
    -> {"id": 2, "method": "execute", "params": {"path": "a.ipynb", "cell_id": "…"}}
    <- {"event": "output", "id": 2, "output": {"output_type": "stream", …}}
    <- {"id": 2, "result": {"schema_version": "1.0", "status": "ok", …}}
    -> {"id": 3, "method": "save", "params": {"path": "a.ipynb", "revision": "…"}}
    <- {"id": 3, "result": {"path": "a.ipynb", "revision": "…"}}

Requests are read while earlier ones run, so an ``interrupt`` reaches a
kernel in the middle of an ``execute``; answers carry the request's ``id``
and may come in any order. ``open`` gives a working copy of the notebook:
``execute`` of a cell puts its outputs there, and ``save`` writes the copy
(or a notebook the client sends) only when ``params.revision`` is the file's
current revision, so it never overwrites a change it has not seen. Nothing
but these lines is written to stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jupyter_mcp_server._calls.approvals import (
    RESTART_KERNEL,
    SHELL_CODE,
    shell_lines,
    without_asking,
)
from jupyter_mcp_server._errors import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    NOT_PERMITTED,
    UNSUPPORTED,
    ToolFailure,
)
from jupyter_mcp_server._kernels.widgets import store_widget_state
from jupyter_mcp_server._policy.profiles import EDIT, FULL, READ_ONLY, WHAT_IT_ALLOWS, rank
from jupyter_mcp_server._protocol.masking import redaction_on
from jupyter_mcp_server._protocol.profile_guard import server_profile
from jupyter_mcp_server._runs.displays import display_writes
from jupyter_mcp_server._runs.executions import (
    effective_timeout,
    execution_fields,
    metadata_kernel,
    store_outputs,
)
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._tool_calls.addressing import cell_position, checked_path

if TYPE_CHECKING:
    from jupyter_mcp_server._app import Application
from jupyter_mcp_server._store import WRITTEN_VERSION

METHODS = ("open", "status", "execute", "save", "interrupt", "restart", "shutdown")
#: The narrowest profile (jupyter_mcp_server._policy.profiles) each method is allowed under.
NEEDS_PROFILE = {
    "open": READ_ONLY,
    "status": READ_ONLY,
    "shutdown": READ_ONLY,
    "save": EDIT,
    "interrupt": EDIT,
    "restart": EDIT,
    "execute": FULL,
}
#: The most bytes one request line may have.
MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass
class OpenNotebook:
    """A notebook opened on this connection: the working copy and the revision it is based on."""

    path: str
    notebook: Any
    revision: str
    format: str
    dirty: bool = False
    executing: int = 0


class JsonLinesServer:
    """One connection over a pair of byte streams."""

    def __init__(self, state: ServerState, write: Callable[[bytes], None]) -> None:
        self.state = state
        self._write = write
        self.open: dict[str, OpenNotebook] = {}
        self.stopping = asyncio.Event()
        self._running: set[asyncio.Task[None]] = set()

    # -- the wire ---------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if redaction_on(self.state):
            message = self.state.redactor.value(message)
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
        self._write(line.encode("utf-8") + b"\n")

    def dispatch(self, line: bytes) -> None:
        """Start handling one request line; its answer is sent when it is done."""
        if not line.strip():
            return
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
        except ValueError as error:
            self.send(
                _error(None, ToolFailure(INVALID_ARGUMENT, f"Not a JSON request object: {error}."))
            )
            return
        task = asyncio.ensure_future(self.answer(request))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def answer(self, request: dict[str, Any]) -> None:
        request_id = request.get("id")
        method = request.get("method")
        params = request.get("params") or {}
        handler: Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]] | None = (
            getattr(self, f"do_{method}", None) if method in METHODS else None
        )
        try:
            if handler is None:
                raise ToolFailure(
                    UNSUPPORTED,
                    f"Unknown method {method!r}; the methods are {', '.join(METHODS)}.",
                    methods=list(METHODS),
                )
            if not isinstance(params, dict):
                raise ToolFailure(INVALID_ARGUMENT, "params must be a JSON object.")
            profile = server_profile(self.state)
            if rank(NEEDS_PROFILE[str(method)]) > rank(profile):
                raise ToolFailure(
                    NOT_PERMITTED,
                    f"{method} is not permitted under the '{profile}' profile, which allows {WHAT_IT_ALLOWS[profile]}.",
                    profile=profile,
                )
            result = await handler(request_id, params)
        except asyncio.CancelledError:
            message = "The server is shutting down; this request was stopped."
            self.send(_error(request_id, ToolFailure(UNSUPPORTED, message)))
            raise
        except ToolFailure as failure:
            self.send(_error(request_id, failure))
        except Exception as error:  # a bug must still answer, saying what
            self.send(
                _error(
                    request_id, ToolFailure(INVALID_ARGUMENT, f"{type(error).__name__}: {error}")
                )
            )
        else:
            self.send({"id": request_id, "result": result})
            if method == "shutdown":
                self.stopping.set()

    async def drain(self) -> None:
        """Wait for the requests still running (after stdin closed)."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    async def stop(self) -> None:
        """After ``shutdown``: stop what still runs, each request answered as stopped."""
        for task in list(self._running):
            task.cancel()
        await self.drain()

    # -- the methods ------------------------------------------------------------

    def _path(self, params: dict[str, Any]) -> str:
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise ToolFailure(
                INVALID_ARGUMENT, "params.path is required: the notebook's path in the workspace."
            )
        return checked_path(self.state, path)

    def _opened(self, params: dict[str, Any]) -> OpenNotebook:
        path = self._path(params)
        opened = self.open.get(path)
        if opened is None:
            raise ToolFailure(
                NOT_FOUND, f"{path!r} is not open on this connection; send open first.", path=path
            )
        return opened

    async def do_open(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        path = self._path(params)
        store, kernels = self.state.store, self.state.kernels
        if params.get("create"):
            name = params.get("kernel_name")
            spec = {"name": name, "display_name": name} if isinstance(name, str) else None
            with contextlib.suppress(ToolFailure):
                await store.create(path, spec)
        view = await store.read(path)
        opened = OpenNotebook(path, copy.deepcopy(view.notebook), view.revision, view.format)
        self.open[path] = opened
        attachment = await kernels.live_kernel_of(
            path, metadata_kernel=metadata_kernel(self.state, view.notebook)
        )
        answer: dict[str, Any] = {
            "path": path,
            "revision": view.revision,
            "format": view.format,
            "kernel_id": attachment.kernel.kernel_id,
            "cells": [
                _cell_summary(index, cell) for index, cell in enumerate(opened.notebook.cells)
            ],
        }
        if view.older_format is not None:
            # The first save writes it in the newer version: said before, not after.
            answer["format_upgraded"] = {"from": view.older_format, "to": WRITTEN_VERSION}
        elif view.newer_format is not None:  # 4.99: kept in its own version
            answer["format_upgraded"] = {"from": view.newer_format, "to": view.newer_format}
        return answer

    async def do_status(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        chosen = [self._opened(params)] if params.get("path") else list(self.open.values())
        notebooks = []
        for opened in chosen:
            kernel_id = self.state.kernels.kernel_id_of(opened.path)
            state = "none"
            if kernel_id is not None:
                try:
                    kernel = self.state.kernels.get(kernel_id)
                    state = kernel.state if await kernel.is_alive() else "gone"
                except ToolFailure:
                    state = "gone"
            try:
                on_disk: str | None = await self.state.store.revision(opened.path)
            except ToolFailure:
                on_disk = None
            notebooks.append(
                {
                    "path": opened.path,
                    "revision": opened.revision,
                    "disk_revision": on_disk,
                    "dirty": opened.dirty,
                    "executing": opened.executing > 0,
                    "kernel_id": kernel_id,
                    "kernel_state": state,
                    "cell_count": len(opened.notebook.cells),
                }
            )
        return {"notebooks": notebooks}

    async def do_execute(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        opened = self._opened(params)
        timeout = self._timeout(params.get("timeout"))
        cell = None
        if "code" in params:
            code = params["code"]
            if not isinstance(code, str) or any(k in params for k in ("cell_id", "cell_index")):
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    "Give code (a string), or one of cell_id / cell_index, not both.",
                )
        else:
            cell_index, cell_id = params.get("cell_index"), params.get("cell_id")
            if cell_index is not None and (
                isinstance(cell_index, bool) or not isinstance(cell_index, int)
            ):
                raise ToolFailure(
                    INVALID_ARGUMENT, f"cell_index must be an integer, not {cell_index!r}."
                )
            cell = opened.notebook.cells[cell_position(opened.notebook, cell_index, cell_id)]
            if cell.get("cell_type") != "code":
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    f"Cell {cell.get('id')} is a {cell.get('cell_type')} cell; only code cells run.",
                )
            code = cell.get("source", "")
        lines = shell_lines(code)
        if lines:
            without_asking(
                self.state,
                SHELL_CODE,
                f"Run code in '{opened.path}' that runs shell commands: {'; '.join(lines[:8])}.",
                "JSON lines has no way to ask",
            )
        attachment = await self.state.kernels.live_kernel_of(
            opened.path,
            metadata_kernel=metadata_kernel(self.state, opened.notebook),
            to_run_code=True,
        )

        def forward(output: dict[str, Any]) -> None:
            self.send({"event": "output", "id": request_id, "output": output})

        opened.executing += 1
        try:
            outcome = await self._run(attachment.kernel, code, timeout, opened.path, forward)
        finally:
            opened.executing -= 1
        result: dict[str, Any] = {**execution_fields(outcome), "outputs": outcome.outputs.outputs}
        if attachment.note:
            result["note"] = attachment.note
        elif attachment.replaced:
            result["note"] = (
                "The kernel was gone and a replacement was started (kernel.auto-restart)."
            )
        if cell is not None:
            # Recorded as any cell run (execution states, display ids), and its display
            # updates shown in the earlier cells of this copy of the notebook.
            cell_id, kernel_id = str(cell.get("id", "")), attachment.kernel.kernel_id
            runs = self.state.kernels.records.of(opened.path)
            runs.ran(cell_id, code, kernel_id, outcome.status)
            displays = display_writes(runs, kernel_id, cell_id, outcome)
            store_outputs(cell, outcome)
            store_widget_state(opened.notebook, outcome.widgets)
            if displays is not None:
                displays(opened.notebook)
            opened.dirty = True
            result["cell_id"] = cell.get("id")
        return result

    def _timeout(self, value: Any) -> float:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ToolFailure(
                INVALID_ARGUMENT, f"timeout must be a number of seconds, not {value!r}."
            )
        return effective_timeout(self.state, None if value is None else float(value))

    async def _run(
        self,
        kernel: Any,
        code: str,
        timeout: float,
        notebook: str,
        on_output: Callable[[dict[str, Any]], None],
    ) -> Any:
        """Run code on a kernel in order with every other call on it; a death is reported."""
        return await self.state.run_in_turn(kernel, code, timeout, notebook, on_output)

    async def do_save(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        opened = self._opened(params)
        revision = params.get("revision")
        if not isinstance(revision, str) or not revision:
            raise ToolFailure(
                INVALID_ARGUMENT,
                "save needs params.revision, the revision open (or the last save) returned; without it the "
                "file could be overwritten with changes you have not seen, so the save is refused.",
                current_revision=await self.state.store.revision(opened.path),
            )
        source = opened.notebook
        if params.get("notebook") is not None:
            source = _checked_notebook(params["notebook"])

        def replace(notebook: Any) -> None:
            notebook.cells[:] = copy.deepcopy(list(source.cells))
            notebook.metadata.clear()
            notebook.metadata.update(copy.deepcopy(dict(source.metadata)))

        _, view = await self.state.store.mutate(opened.path, replace, expected_revision=revision)
        opened.notebook, opened.revision, opened.dirty = (
            copy.deepcopy(view.notebook),
            view.revision,
            False,
        )
        if view.upgraded_from is not None or view.newer_format is not None:
            return {
                "path": opened.path,
                "revision": view.revision,
                "format_upgraded": {"from": view.upgraded_from, "to": WRITTEN_VERSION}
                if view.upgraded_from is not None
                else {"from": view.newer_format, "to": view.newer_format},
            }
        return {"path": opened.path, "revision": view.revision}

    async def do_interrupt(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        path = self._opened(params).path
        kernel_id = self.state.kernels.kernel_id_of(path)
        if kernel_id is None:
            raise ToolFailure(NOT_FOUND, f"{path!r} has no kernel; nothing is running.", path=path)
        was_busy = await self.state.kernels.interrupt(self.state.kernels.get(kernel_id))
        return {"path": path, "kernel_id": kernel_id, "was_busy": was_busy}

    async def do_restart(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        opened = self._opened(params)
        if self.state.kernels.kernel_id_of(opened.path) is not None:
            without_asking(
                self.state,
                RESTART_KERNEL,
                f"Restart the kernel of '{opened.path}'.",
                "JSON lines has no way to ask",
            )
        kernel = await self.state.kernels.restart(
            opened.path, metadata_kernel=metadata_kernel(self.state, opened.notebook)
        )
        return {"path": opened.path, "kernel_id": kernel.kernel_id}

    async def do_shutdown(self, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
        # Answered first; then the rest is stopped and every kernel shut down.
        return {"shutdown": True, "unsaved": sorted(p for p, o in self.open.items() if o.dirty)}


def _error(request_id: Any, failure: ToolFailure) -> dict[str, Any]:
    return {
        "id": request_id,
        "error": {"code": failure.code, "message": failure.message, **failure.details},
    }


def _cell_summary(index: int, cell: Any) -> dict[str, Any]:
    return {
        "index": index,
        "cell_id": cell.get("id"),
        "cell_type": cell.get("cell_type"),
        "source": cell.get("source", ""),
        "execution_count": cell.get("execution_count"),
    }


def _checked_notebook(value: Any) -> Any:
    import nbformat

    try:
        notebook = nbformat.from_dict(value)
        nbformat.validate(notebook)
    except Exception as error:
        raise ToolFailure(
            INVALID_ARGUMENT, f"params.notebook is not a valid nbformat 4 notebook: {error}"
        ) from None
    return notebook


async def serve_async(application: Application) -> None:
    loop = asyncio.get_running_loop()
    stdout = sys.stdout.buffer

    def write(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), sys.stdin)
    task = asyncio.current_task()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, task.cancel if task else lambda: None)
    async with application.running():
        server = JsonLinesServer(application.state, write)

        async def read_lines() -> None:
            while not server.stopping.is_set():
                try:
                    line = await reader.readline()
                except ValueError:
                    server.send(
                        _error(None, ToolFailure(INVALID_ARGUMENT, "A request line is too long."))
                    )
                    continue
                if not line:
                    return
                server.dispatch(line)

        reading = asyncio.ensure_future(read_lines())
        stopping = asyncio.ensure_future(server.stopping.wait())
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
        reading.cancel()
        stopping.cancel()
        if server.stopping.is_set():
            await server.stop()
        else:
            await server.drain()  # stdin closed: let what was asked finish


def serve(application: Application) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_async(application))
