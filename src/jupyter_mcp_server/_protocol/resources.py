"""The resources every built server serves.

``capabilities://`` and ``jupymcp://capabilities`` say what this server can
do (docs/capabilities.md, docs/protocol.md); ``notebook:///{path}`` is a notebook, addressed
by an RFC 3986 path decoded strictly before any file is touched.

One cell and one output have their own URIs, so a large output or an image is
read on demand rather than inlined in every result:

- ``notebook-cell:///{path}?cell=ID``: the cell as nbformat JSON
  (``application/vnd.jupyter.cell+json``);
- ``notebook-output:///{path}?cell=ID&output=N``: output ``N`` (0-based) of
  that cell, one content per representation it has, each with its own MIME
  type: ``image/png`` and ``image/jpeg`` as blobs, text types as text, a
  stream as ``text/plain``, an error as its ``text/plain`` traceback.

A model may read any of them, so their outputs read as a model reads them, without the
colour codes the notebook keeps (``plain_output``, docs/protocol.md).

A fragment (``notebook:///a.ipynb#cell=ID``) would be the obvious spelling, but
a fragment is never sent to a server; a query is, and the SDK's RFC 6570
matcher separates ``{+path}`` from ``{?cell,output}`` at the ``?``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from mcp.server.mcpserver import Context
from mcp.types import BlobResourceContents, TextResourceContents

from jupyter_mcp_server._calls.scratch import SCRATCH_SCHEME
from jupyter_mcp_server._errors import INVALID_ARGUMENT, INVALID_PATH, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.outputs import plain_output
from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._version import __version__
from jupyter_mcp_server._workspace.notebook_uris import OUTPUT_SCHEME, path_of_uri

if TYPE_CHECKING:
    from mcp.shared.exceptions import MCPError

CAPABILITIES_URI = "capabilities://"
SELF_DESCRIPTION_URI = "jupymcp://capabilities"
#: The people beside the agent in JupyterLab and where they are; subscribers hear it change.
PRESENCE_URI = "presence://"
NOTEBOOK_TEMPLATE = "notebook:///{+path}"
NOTEBOOK_MIME = "application/x-ipynb+json"
CELL_SCHEME = "notebook-cell"
CELL_TEMPLATE = CELL_SCHEME + ":///{+path}{?cell}"
OUTPUT_TEMPLATE = OUTPUT_SCHEME + ":///{+path}{?cell,output}"
SCRATCH_TEMPLATE = SCRATCH_SCHEME + ":///{key}{?output}"
CELL_MIME = "application/vnd.jupyter.cell+json"
#: An output resource answers with one content per representation, of
#: different types, so the template declares the type that says so.
OUTPUT_MIME = "multipart/mixed"
SERVER_NAME = "jupyter-mcp-server"
#: The schemes of the resources read from the workspace.
OUR_SCHEMES = frozenset({"notebook", CELL_SCHEME, OUTPUT_SCHEME})


def self_description(state: ServerState) -> dict[str, Any]:
    """The schema 1.0 self-description (docs/protocol.md), with values true of this server."""
    config = state.config
    return {
        "schema_version": "1.0",
        "output_schema_version": "1.0",
        "server": {"name": SERVER_NAME, "version": __version__},
        "limits": config.limits,
        "notebook_formats": ["ipynb", "py:percent"],
        "transports": {
            "active": config.transport,
            "supported": ["stdio", "streamable-http", "json-lines"],
        },
        "sessions": {
            "kernel_per_notebook": True,
            "shared_kernels": "pass the same kernel_id to use_notebook",
            "idle_timeout_seconds": config.idle_timeout,
            "auto_restart": state.capabilities.enabled("kernel.auto-restart"),
            # HTTP: an idle session expires (--session-timeout); what the connections chose is
            # kept only while they last.
            "http_session_timeout_seconds": config.session_timeout,
            "connections_kept": state.connections_kept(),
        },
        "cancellation": {
            "mcp_request": True,
            "interrupts_kernel": state.capabilities.enabled("execution.cancel-interrupts"),
            "explicit_interrupt_tools": ["interrupt_kernel", "interrupt_notebook_session"],
        },
        "kernelspecs": state.kernels.kernelspecs(),
    }


def feature(state: ServerState) -> Feature:
    """The capabilities, the self-description, notebooks, cells and outputs served as
    resources; an output read whole (every representation), and refused reads coded."""
    return Feature(
        "resources",
        registers=lambda server: _register(server, state),
        wraps=(
            Wrapped("resources/read", lambda _server, handler: _refusals_coded(handler)),
            Wrapped("resources/read", _outputs_whole),
        ),
    )


def _register(server: Any, state: ServerState) -> None:
    """The resources, through the server's own decorators."""

    @server.resource(
        CAPABILITIES_URI,
        name="capabilities",
        title="Server capabilities",
        description="Which switchable behaviours this server has on, and every one it knows.",
        mime_type="application/json",
    )
    def capabilities() -> str:
        return json.dumps(described_capabilities(state), indent=2)

    @server.resource(
        SELF_DESCRIPTION_URI,
        name="jupymcp-capabilities",
        title="Server self-description",
        description="Output schema version, limits, notebook formats, transports, sessions, cancellation and kernelspecs.",
        mime_type="application/json",
    )
    def described() -> str:
        return json.dumps(self_description(state), indent=2)

    @server.resource(
        PRESENCE_URI,
        name="presence",
        title="People in JupyterLab",
        description="Each person in JupyterLab: the notebook in front of them, the selected cell and text.",
        mime_type="application/json",
    )
    async def presence() -> str:
        # On the event loop, not in a worker thread: Jupyter's file ids are a SQLite
        # database that answers only the thread that opened it.
        return json.dumps({"people": [person.as_json() for person in state.people()]}, indent=2)

    @server.resource(
        NOTEBOOK_TEMPLATE,
        name="notebook",
        title="Notebook",
        description="A notebook in the workspace, as nbformat JSON. The path is RFC 3986 percent-encoded.",
        mime_type=NOTEBOOK_MIME,
        security=_no_sdk_path_policy(),
    )
    async def notebook(path: str, ctx: Context) -> str:
        return await read_notebook_resource(ctx)

    @server.resource(
        CELL_TEMPLATE,
        name="notebook-cell",
        title="Notebook cell",
        description="One cell of a notebook, by its stable id, as nbformat JSON (source, outputs, metadata).",
        mime_type=CELL_MIME,
        security=_no_sdk_path_policy(),
    )
    async def cell(path: str, ctx: Context, cell: str | None = None) -> str:
        uri = str((ctx.request_context.params or {}).get("uri", ""))
        _, _, found = await _cell_of_uri(state_of(ctx), uri, CELL_SCHEME)
        return json.dumps(plain_cell(found), ensure_ascii=False, indent=1)

    @server.resource(
        OUTPUT_TEMPLATE,
        name="notebook-output",
        title="Cell output",
        description=(
            "Output N (0-based) of a cell, whole: one content per representation, each with its MIME "
            "type (images as image/png or image/jpeg blobs, text as text). Execution results link "
            "here instead of inlining an image or text too large for the context."
        ),
        mime_type=OUTPUT_MIME,
        security=_no_sdk_path_policy(),
    )
    async def output(
        path: str, ctx: Context, cell: str | None = None, output: str | None = None
    ) -> str | bytes:
        uri = str((ctx.request_context.params or {}).get("uri", ""))
        first = (await output_contents(state_of(ctx), uri))[0]
        return (
            first.text if isinstance(first, TextResourceContents) else base64.b64decode(first.blob)
        )

    @server.resource(
        SCRATCH_TEMPLATE,
        name="scratch-output",
        title="Scratch code output",
        description=(
            "Output N of a recent execute_code call, whole, as notebook-output: gives a cell's. "
            "Kept for a limited time; results that cut an output link here."
        ),
        mime_type=OUTPUT_MIME,
    )
    async def scratch(key: str, ctx: Context, output: str | None = None) -> str | bytes:
        uri = str((ctx.request_context.params or {}).get("uri", ""))
        first = scratch_contents(state_of(ctx), uri)[0]
        return (
            first.text if isinstance(first, TextResourceContents) else base64.b64decode(first.blob)
        )


def _no_sdk_path_policy() -> Any:
    """The SDK's decoded-value checks are replaced by the workspace's strict ones."""
    from mcp.server.mcpserver.resources.templates import ResourceSecurity

    return ResourceSecurity(exempt_params=frozenset({"path"}))


async def read_notebook_resource(ctx: Any) -> str:
    """Read a notebook by the URI exactly as the client sent it."""
    uri = str((ctx.request_context.params or {}).get("uri", ""))
    state = state_of(ctx)
    try:
        relative = path_of_uri(uri)
        view = await state.store.read(state.locate(relative))
    except ToolFailure as error:
        raise _resource_error(error.code, error.message, uri) from None
    notebook = {**view.notebook, "cells": [plain_cell(cell) for cell in view.notebook.cells]}
    return json.dumps(notebook, ensure_ascii=False, indent=1)


def plain_cell(cell: Any) -> Any:
    """A cell as a model reads it: its outputs without the colour codes the file keeps
    (``plain_output``); still nbformat."""
    outputs = cell.get("outputs") if isinstance(cell, dict) else None
    if not outputs:
        return cell
    return {**cell, "outputs": [plain_output(output) for output in outputs]}


# --- refusals ------------------------------------------------------------------

#: The 2025-11-25 generation's code for a resource that does not exist. The
#: 2026-07-28 generation retired it (never to be reused) for invalid params.
RESOURCE_NOT_FOUND = -32002


def _resource_error(code: str, message: str, uri: str = "") -> MCPError:
    """A refused read: invalid params, the stable code in ``error.data``.

    `refusals_coded` gives a missing resource the generation's own code; raised
    as `MCPError` so the SDK passes it through rather than calling it a crash.
    """
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    data: dict[str, Any] = {"code": code}
    if uri:
        data["uri"] = uri
    return MCPError(INVALID_PARAMS, f"{code}: {message}", data=data)


def _refusals_coded(original: Handler) -> Handler:
    """Every ``resources/read`` refusal with a stable code and the protocol's error code.

    The SDK answers a URI no resource or template matches with invalid params
    and no code of ours; one of our schemes that matched no template is
    malformed (``invalid_path``), any other scheme names nothing here
    (``not_found``).
    """
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    async def read(ctx: Any, params: Any) -> Any:
        try:
            return await original(ctx, params)
        except MCPError as error:
            uri = str(getattr(params, "uri", ""))
            data = error.error.data if isinstance(error.error.data, dict) else {}
            code = data.get("code")
            failure = _failure_under(error)
            if code is None and failure is not None:
                # A resource (an extension's) raised the contract's own failure: the SDK called
                # it a crash (-32603, the message withheld); it is a refusal with its code.
                code = failure.code
                error = _resource_error(code, failure.message, uri)
            elif code is None and error.error.code == INVALID_PARAMS:
                code = INVALID_PATH if uri.split(":", 1)[0] in OUR_SCHEMES else NOT_FOUND
                message = (
                    f"{code}: {uri!r} is not a notebook:///, notebook-cell:/// or notebook-output:/// URI "
                    "this server can read; percent-encode the workspace-relative path after the three slashes."
                    if code == INVALID_PATH
                    else f"{code}: no resource {uri!r}; resources/list and resources/templates/list say what exists."
                )
                error = MCPError(INVALID_PARAMS, message, data={**data, "code": code, "uri": uri})
            if code == NOT_FOUND and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                raise MCPError(
                    RESOURCE_NOT_FOUND, error.error.message, data=error.error.data
                ) from None
            raise error from None

    return read


def _failure_under(error: BaseException) -> ToolFailure | None:
    """The ToolFailure a resource raised, under the SDK's ResourceError and the MCPError it made of it."""
    seen: BaseException | None = error
    for _ in range(4):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if isinstance(seen, ToolFailure):
            return seen
    return None


class MalformedReadsCoded:
    """Middleware: a ``resources/read`` whose params are not even a URI (none, a number) is
    refused by the SDK before any handler, as bare invalid params; it gets its code too."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        from pydantic import ValidationError

        if getattr(ctx, "method", None) != "resources/read":
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except ValidationError:
            raise _resource_error(
                INVALID_ARGUMENT,
                "resources/read needs params.uri, a URI string such as 'notebook:///analysis.ipynb'; "
                "resources/list and resources/templates/list say what exists.",
            ) from None


# --- cells and outputs ----------------------------------------------------------


def parse_part_uri(uri: str, scheme: str) -> tuple[str, dict[str, str]]:
    """The notebook path and the query of a cell or output URI, both checked strictly."""

    prefix = scheme + ":"
    if not uri.startswith(prefix):
        raise _resource_error(INVALID_PATH, f"{uri!r} is not a {scheme}: URI.", uri)
    rest, _, query = uri[len(prefix) :].partition("?")
    if "#" in query or "#" in rest:
        raise _resource_error(
            INVALID_PATH, f"{uri!r} has a fragment; address the cell with ?cell=ID.", uri
        )
    try:
        path = path_of_uri("notebook:" + rest)
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ToolFailure as error:
        raise _resource_error(error.code, error.message, uri) from None
    except ValueError:
        raise _resource_error(
            INVALID_PATH, f"{uri!r} has a malformed query; write ?cell=ID&output=N.", uri
        ) from None
    return path, dict(pairs)


async def _cell_of_uri(
    state: ServerState, uri: str, scheme: str
) -> tuple[str, dict[str, str], Any]:
    """The path, the query and the cell a cell or output URI names."""

    path, query = parse_part_uri(uri, scheme)
    cell_id = query.get("cell")
    if not cell_id:
        raise _resource_error(
            INVALID_ARGUMENT, f"{uri!r} names no cell; add ?cell=ID (see read_notebook).", uri
        )
    try:
        relative = state.locate(path)
        view = await state.store.read(relative)
    except ToolFailure as error:
        raise _resource_error(error.code, error.message, uri) from None
    for cell in view.notebook.cells:
        if cell.get("id") == cell_id:
            return relative, query, cell
    raise _resource_error(
        NOT_FOUND,
        f"'{relative}' has no cell with id {cell_id!r}; read_notebook lists the ids.",
        uri,
    )


async def output_contents(
    state: ServerState, uri: str
) -> list[TextResourceContents | BlobResourceContents]:
    """Every representation of one output, each as a content with its own MIME type."""
    relative, query, cell = await _cell_of_uri(state, uri, OUTPUT_SCHEME)
    raw = query.get("output", "")
    if not raw.isdigit():
        raise _resource_error(
            INVALID_ARGUMENT, f"{uri!r} needs &output=N, the output's 0-based index.", uri
        )
    outputs = list(cell.get("outputs") or [])
    index = int(raw)
    if index >= len(outputs):
        raise _resource_error(
            NOT_FOUND,
            f"Cell {cell.get('id')} of '{relative}' has {len(outputs)} outputs; output {index} does not exist.",
            uri,
        )
    return representations(uri, outputs[index])


def scratch_contents(
    state: ServerState, uri: str
) -> list[TextResourceContents | BlobResourceContents]:
    """Every representation of one output of recent scratch code."""
    rest, _, query = uri[len(SCRATCH_SCHEME) + 1 :].partition("?")
    key = rest.removeprefix("///")
    raw = dict(parse_qsl(query, keep_blank_values=True)).get("output", "")
    if not raw.isdigit():
        raise _resource_error(
            INVALID_ARGUMENT, f"{uri!r} needs ?output=N, the output's 0-based index.", uri
        )
    outputs = state.scratch.get(key)
    if outputs is None:
        raise _resource_error(
            NOT_FOUND,
            f"The scratch outputs {key!r} are gone (only recent ones are kept); run the code again.",
            uri,
        )
    if int(raw) >= len(outputs):
        raise _resource_error(
            NOT_FOUND,
            f"That execution has {len(outputs)} outputs; output {raw} does not exist.",
            uri,
        )
    return representations(uri, outputs[int(raw)])


def representations(uri: str, output: Any) -> list[TextResourceContents | BlobResourceContents]:
    """An nbformat output as resource contents, one per MIME type it carries; its text
    without the colour codes the notebook keeps (``plain_output``), as a model reads it."""
    output = plain_output(output)
    kind = output.get("output_type")
    if kind == "stream":
        return [
            TextResourceContents(
                uri=uri, mime_type="text/plain", text=_joined(output.get("text", ""))
            )
        ]
    if kind == "error":
        lines = output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]
        return [
            TextResourceContents(uri=uri, mime_type="text/plain", text="\n".join(map(str, lines)))
        ]
    contents: list[TextResourceContents | BlobResourceContents] = []
    for mime, value in (output.get("data") or {}).items():
        if mime in BINARY_TYPES:
            contents.append(
                BlobResourceContents(uri=uri, mime_type=mime, blob=_joined(value).replace("\n", ""))
            )
        elif isinstance(value, str | list) and not mime.endswith("json"):
            contents.append(TextResourceContents(uri=uri, mime_type=mime, text=_joined(value)))
        else:
            contents.append(
                TextResourceContents(
                    uri=uri, mime_type=mime, text=json.dumps(value, ensure_ascii=False)
                )
            )
    return contents or [TextResourceContents(uri=uri, mime_type="text/plain", text="")]


#: Representations nbformat stores base64-encoded.
BINARY_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"})


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _outputs_whole(server: Any, original: Handler) -> Handler:
    """``resources/read`` of an output answers with every representation, not just one.

    A template function returns one value with the template's one MIME type;
    an output has several. The read handler is wrapped (the low-level server's
    public request-handler API) so output URIs are answered with all of them.
    """
    from mcp.types import ReadResourceResult

    async def read(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        if uri.startswith(OUTPUT_SCHEME + ":"):
            return ReadResourceResult(contents=await output_contents(state_of(ctx), uri))
        if uri.startswith(SCRATCH_SCHEME + ":"):
            return ReadResourceResult(contents=scratch_contents(state_of(ctx), uri))
        return await original(ctx, params)

    return read


def described_capabilities(state: ServerState) -> dict[str, Any]:
    """``capabilities://`` and ``server/discover``'s capabilities extension: the capabilities,
    the workspace with who chose it (``cli``, ``cwd``, ``client-roots``), and whether the
    notebooks' history is kept."""
    return {
        **state.capabilities.describe(),
        "workspace": state.describe_workspace(),
        "history": described_history(state),
    }


def described_history(state: ServerState) -> dict[str, Any]:
    """``{"on", "directory", "off"}``: whether changes are kept in their notebooks' history now;
    ``off`` says why not (the last change's failure, none configured, or a directory that
    cannot be written, tried now)."""
    store = state.store
    histories = store.recorder.histories if store.recorder is not None else None
    root = histories.root if histories is not None else None
    off = store.history_off or (
        histories.off if histories is not None else "this store keeps no history"
    )
    if off is None and root is not None:
        off = _unwritable(root)
    described: dict[str, Any] = {
        "on": off is None,
        "directory": str(root) if root is not None else None,
    }
    if off is not None:
        described["off"] = off
    return described


def _unwritable(root: Path) -> str | None:
    """Why no history could be written under `root` now (a file made and removed where it
    would go; nothing is created that a write would not create), or None."""
    import tempfile

    where = root
    while not where.exists() and where.parent != where:
        where = (
            where.parent
        )  # the history makes the missing folders: the first that exists must take them
    try:
        if not where.is_dir():
            raise NotADirectoryError(20, "Not a directory", str(where))
        with tempfile.TemporaryFile(dir=where, prefix=".probe-"):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        return (
            f"the history directory {root} cannot be written ({reason}); changes are made but not kept in "
            "their history, so restore_notebook cannot undo them."
        )
    return None
