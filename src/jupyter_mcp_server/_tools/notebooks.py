"""The tools that choose, list, read and release notebooks and their kernels."""

from collections.abc import Callable
from dataclasses import replace
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.approvals import RELEASE_KERNEL, RESTART_KERNEL, approve
from jupyter_mcp_server._calls.people import focus_line
from jupyter_mcp_server._errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.kernel_choice import KernelChoice
from jupyter_mcp_server._kernels.staleness import states_of
from jupyter_mcp_server._kernels.widgets import widget_models
from jupyter_mcp_server._rendering.budget import allot, head_and_tail
from jupyter_mcp_server._rendering.content import (
    BINARY_TYPES,
    InlineLimits,
    OutputLink,
    bounded_outputs,
    cell_heading,
    source_preview,
    upgrade_ahead,
)
from jupyter_mcp_server._rendering.headings import headings_line, headings_of
from jupyter_mcp_server._rendering.model_text import output_text
from jupyter_mcp_server._runs.executions import metadata_kernel
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.addressing import (
    checked_path,
    connection_of,
    current_notebook_said,
    notebook_path,
)
from jupyter_mcp_server._tool_calls.arguments import NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._workspace.notebook_uris import output_uri


def kernelspec_metadata(server: ServerState, kernel_name: str) -> dict[str, str]:
    spec = server.kernels.kernelspec(kernel_name)
    if spec is None:
        known = server.kernels.kernelspecs()
        raise ToolFailure(
            NOT_FOUND,
            f"No kernelspec named '{kernel_name}'. Installed: {', '.join(known)}.",
            known=known,
        )
    return {"name": kernel_name, "display_name": spec["display_name"], "language": spec["language"]}


def kernel_change(server: ServerState, kernel_name: str) -> Callable[[Any], bool]:
    """A change that makes the notebook's metadata name `kernel_name` (its kernelspec);
    answers whether anything changed."""
    spec = kernelspec_metadata(server, kernel_name)

    def change(notebook: Any) -> bool:
        current = dict(notebook.metadata.get("kernelspec") or {})
        if current == spec:
            return False
        notebook.metadata["kernelspec"] = spec
        info = notebook.metadata.get("language_info")
        if isinstance(info, dict) and info.get("name") not in (None, spec["language"]):
            # The old language's details (version, file extension) describe another kernel now.
            notebook.metadata["language_info"] = {"name": spec["language"]}
        return True

    return change


@tool_handler("use_notebook")
async def use_notebook(
    notebook_name: Annotated[
        str, Field(description="The name to call this notebook by on this connection, or its path.")
    ],
    notebook_path: Annotated[
        str | None,
        Field(
            description="Workspace-relative path (.ipynb or .py percent script). Omitted: notebook_name is the path."
        ),
    ] = None,
    mode: Literal["connect", "create"] = "connect",  # the description says which does what
    kernel_id: Annotated[
        str | None,
        Field(
            description="Share this already running kernel (see list_kernels) instead of starting one."
        ),
    ] = None,
    kernel_name: Annotated[
        str | None,
        Field(
            description="Kernelspec or environment (see list_kernels). Default: the notebook's own, else the workspace's environment."
        ),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.NotebookUsed]:
    """Open (mode="connect") or create (mode="create") a notebook with a kernel, and make it this connection's current notebook, which later tools default to.

    Each notebook gets its own kernel (or kernel_id's); kernel_name on an open notebook changes its kernel."""
    server = state_of(ctx)
    state = connection_of(ctx)
    if notebook_path is None and mode == "connect" and notebook_name in state.names:
        path = state.names[notebook_name]  # a name this connection gave: switch back to it
    else:
        path = checked_path(server, notebook_path or notebook_name)
    # Looked up here only for a new notebook; on an existing one, attach also adopts a kernel the
    # Jupyter Server runs that this server did not start (a person's).
    shared = server.kernels.get(kernel_id) if kernel_id is not None and mode == "create" else None
    before_id = server.kernels.kernel_id_of(path)
    before = server.kernels.kernels_by_id().get(before_id) if before_id else None
    before_name = before.kernel_name if before is not None else None
    if before is not None and (
        (kernel_id is not None and kernel_id != before.kernel_id)
        or (kernel_id is None and kernel_name is not None and kernel_name != before.kernel_name)
    ):
        # Moving to another kernel releases this one, as unuse_notebook does.
        wanted = (
            f"the running kernel {kernel_id}"
            if kernel_id is not None
            else f"a new {kernel_name} kernel"
        )
        await approve(
            ctx,
            RELEASE_KERNEL,
            f"Move '{path}' from its kernel {before.kernel_id} ({before.kernel_name}) to {wanted}: the old kernel is "
            "shut down unless another notebook shares it, and the variables it holds are lost.",
        )
    if mode == "create":
        # A refused kernel must not leave behind a notebook the caller cannot
        # "create" again once the kernel question is settled.
        if kernel_id is None:
            server.kernels.ensure_room(path)
        choice = (
            KernelChoice(shared.kernel_name, f"the running kernel {shared.kernel_id} was asked for")
            if shared is not None
            else KernelChoice(kernel_name, "kernel_name asked for it")
            if kernel_name is not None
            else server.kernels.choose(None)
        )
        spec = kernelspec_metadata(server, choice.kernel_name)
        view = await server.store.create(path, spec)
    else:
        view = await server.store.read(path)
    try:
        if kernel_id is not None:
            kernel = await server.kernels.attach(path, kernel_id=kernel_id)
            choice = KernelChoice(
                kernel.kernel_name, f"the running kernel {kernel.kernel_id} was asked for"
            )
        elif kernel_name is not None:
            choice = KernelChoice(kernel_name, "kernel_name asked for it")
            kernel = await server.kernels.attach(path, kernel_name=kernel_name)
        elif before is not None and not server.kernels.is_lost(path):
            choice = KernelChoice(before.kernel_name, "the kernel it already runs on")
            kernel = (
                await server.kernels.live_kernel_of(
                    path, metadata_kernel=metadata_kernel(server, view.notebook)
                )
            ).kernel
        else:
            if mode != "create":
                choice = server.kernels.choose(view.notebook.get("metadata"))
            kernel = (
                await server.kernels.live_kernel_of(path, metadata_kernel=choice.kernel_name)
            ).kernel
    except ToolFailure as failure:
        if mode == "create":
            # Refused where the kernel runs (a gateway's own limit, say), after the file was made.
            failure.message += (
                f" The notebook {path!r} was created all the same: open it with "
                'use_notebook(mode="connect") once a kernel can start.'
            )
            failure.args = (failure.message,)
        raise
    changed = ""
    if (
        kernel_name is not None
        and kernel_id is None
        and mode != "create"
        and server.kernels.kernelspec(kernel.kernel_name)
    ):
        # Asked for: the notebook says so too, in the same write as nothing else.
        wrote, view = await server.store.mutate(path, kernel_change(server, kernel.kernel_name))
        if before_name is not None and before_name != kernel.kernel_name:
            gone = (
                "was shut down"
                if before_id not in server.kernels.kernels_by_id()
                else "still runs for the notebooks that share it"
            )
            changed = (
                f" Its kernel changed from {before_name} to {kernel.kernel_name}: this is a new kernel, and every "
                f"variable, import and definition of the old session is gone (the old kernel {gone})."
            )
        if wrote:
            changed += f" Its metadata now names the kernelspec '{kernel.kernel_name}'."
    state.names[notebook_name] = path
    state.current = path
    upgraded, said = upgrade_ahead(view)
    changed += elsewhere(server, kernel, path)
    result = models.NotebookUsed(
        notebook_name=notebook_name,
        notebook_path=path,
        cell_count=len(view.notebook.cells),
        kernel_id=kernel.kernel_id,
        kernel_name=kernel.kernel_name,
        kernel_reason=choice.reason if choice.kernel_name == kernel.kernel_name else "",
        revision=view.revision,
        format_upgraded=upgraded,
    )
    verb = "Created" if mode == "create" else "Opened"
    why = f": {result.kernel_reason}" if result.kernel_reason else ""
    return answer(
        result.model_dump(),
        f"{verb} '{path}' ({result.cell_count} cells, revision {view.revision}) as '{notebook_name}' "
        f"on kernel {kernel.kernel_id}. {current_notebook_said(ctx, path)}{said}{changed}\n"
        f"Kernel: {kernel.kernel_name}{why}.",
    )


def elsewhere(server: Any, kernel: Any, path: str) -> str:
    """What a notebook sharing a kernel started for a notebook in another folder must know:
    a kernel has one working folder, as in Jupyter, and relative paths resolve there."""
    here = server.kernels.folder_for(path)
    if kernel.folder is None or kernel.folder == here:
        return ""
    return (
        f" Kernel {kernel.kernel_id} runs in the folder '{kernel.folder or '.'}' (it was started for another "
        f"notebook), not in '{here or '.'}' where this notebook is: relative paths resolve there."
    )


@tool_handler("list_notebooks")
async def list_notebooks(
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.NotebookList]:
    """List the notebooks this connection named with use_notebook and those with a kernel, marking the current one."""
    server = state_of(ctx)
    state = connection_of(ctx)
    entries: dict[str, models.NotebookEntry] = {}
    for name, path in state.names.items():
        entries[path] = models.NotebookEntry(
            notebook_name=name,
            notebook_path=path,
            current=path == state.current,
            kernel_id=server.kernels.kernel_id_of(path),
        )
    for kernel in server.kernels.kernels:
        for path in sorted(kernel.notebooks):
            entries.setdefault(
                path,
                models.NotebookEntry(
                    notebook_name=path,
                    notebook_path=path,
                    current=path == state.current,
                    kernel_id=kernel.kernel_id,
                ),
            )
    listed = models.NotebookList(notebooks=sorted(entries.values(), key=lambda e: e.notebook_path))
    lines = [
        f"{'* ' if e.current else '  '}{e.notebook_name} -> {e.notebook_path} (kernel {e.kernel_id or 'none'})"
        for e in listed.notebooks
    ]
    return answer(
        listed.model_dump(),
        "\n".join(lines) or "No notebooks are in use. Call use_notebook to open one.",
    )


@tool_handler("unuse_notebook")
async def unuse_notebook(
    notebook_name: Annotated[str, Field(description="use_notebook name or path.")],
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.Released]:
    """Release a notebook: forget its name here and stop its kernel unless another notebook shares it. The file is unchanged."""
    server = state_of(ctx)
    path = notebook_path(ctx, notebook_name)
    attached = server.kernels.kernel_id_of(path)
    if attached is not None:
        await approve(
            ctx,
            RELEASE_KERNEL,
            f"Release '{path}' from its kernel {attached}: the kernel is shut down unless another notebook "
            "shares it, and the variables it holds are lost.",
        )
    kernel_id = await server.kernels.detach(path)
    state = connection_of(ctx)
    for name in [n for n, p in state.names.items() if p == path]:
        del state.names[name]
    if state.current == path:
        state.current = None
    released = models.Released(notebook_name=notebook_name, notebook_path=path, kernel_id=kernel_id)
    return answer(
        released.model_dump(),
        f"Released '{path}'" + (f" and its kernel {kernel_id}." if kernel_id else "."),
    )


@tool_handler("restart_notebook")
async def restart_notebook(
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.KernelRestarted]:
    """Start a fresh kernel for the notebook, losing everything the old one held: when the kernel is gone or its state is broken."""
    server = state_of(ctx)
    path = notebook_path(ctx, notebook_name)
    view = await server.store.read(path)
    attached = server.kernels.kernel_id_of(path)
    if attached is not None:
        await approve(
            ctx,
            RESTART_KERNEL,
            f"Restart the kernel of '{path}' (kernel {attached}): every variable it holds is lost.",
        )
    kernel = await server.kernels.restart(
        path, metadata_kernel=metadata_kernel(server, view.notebook)
    )
    result = models.KernelRestarted(kernel_id=kernel.kernel_id, revision=view.revision)
    return answer(
        result.model_dump(),
        f"'{path}' now runs on a fresh kernel {kernel.kernel_id}; its previous session is gone.",
    )


@tool_handler("get_notebook_revision")
async def get_notebook_revision(
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.Revisioned]:
    """Get the notebook's current revision, to pass as expected_revision so an edit never overwrites a newer version."""
    path = notebook_path(ctx, notebook_name)
    revision = await state_of(ctx).store.revision(path)
    return answer({"revision": revision}, f"'{path}' is at revision {revision}.")


def _page_outputs(
    cells: Any, start: int, stop: int, widgets: dict[str, Any]
) -> list[tuple[int, int, str, str]]:
    """(cell index, output number, label, text) of each output of cells start..stop-1 a model
    reads: its text (a table as Markdown, a traceback folded, what a saved widget holds), an
    image named, never inlined."""
    found: list[tuple[int, int, str, str]] = []
    for index in range(start, stop):
        cell = cells[index]
        if cell.get("cell_type") != "code":
            continue
        for number, output in enumerate(cell.get("outputs") or []):
            kind = output.get("output_type", "output")
            label = "error output" if kind == "error" else f"output {number}: {kind}"
            text = output_text(output, widgets)
            images = [m for m in (output.get("data") or {}) if m in BINARY_TYPES]
            if images:
                named = ", ".join(images)
                note = f"({named}: read_cell shows it as an image)"
                text = f"{text}\n{note}" if text else note
            if text is not None:
                found.append((index, number, label, text))
    return found


@tool_handler("read_notebook")
async def read_notebook(
    notebook_name: NotebookName = None,
    response_format: Annotated[
        Literal["brief", "detailed"],
        Field(
            description="brief: ids, types and the first line of each cell; detailed: full sources and outputs."
        ),
    ] = "brief",
    start_index: Annotated[int, Field(description="First cell to return (0-based).", ge=0)] = 0,
    limit: Annotated[
        int, Field(description="Cells to return (0: all from start_index).", ge=0)
    ] = 20,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.NotebookRead]:
    """Read a page of the notebook's cells: ids, types, sources and (detailed) outputs. In a large notebook, outline and search_notebooks first, then read_cell."""
    path = notebook_path(ctx, notebook_name)
    view = await state_of(ctx).store.read(path)
    cells = view.notebook.cells
    if start_index > len(cells):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"start_index {start_index} is past the end: the notebook has {len(cells)} cells.",
        )
    stop = len(cells) if limit == 0 else min(len(cells), start_index + limit)
    detailed = response_format == "detailed"
    summaries = []
    shown = f"cells {start_index}-{stop - 1}:" if stop > start_index else "no cells in this page."
    upgraded, said = upgrade_ahead(view)
    lines = [f"'{path}': {len(cells)} cells, revision {view.revision}; {shown}"]
    if said:
        lines.insert(0, said.strip())
    server = state_of(ctx)
    limits = InlineLimits.of(server.config)
    states = states_of(server.kernels, path, view.notebook)
    # Every output of the page, as the text a model reads, shares one budget: in the text
    # (each under its cell) and in the structured cells (each cell's outputs within the
    # shares of its own), so neither part of a page carries more than a result may.
    shown_outputs = (
        _page_outputs(cells, start_index, stop, widget_models(view.notebook.get("metadata")))
        if detailed
        else []
    )
    shares = allot([len(text) for *_, text in shown_outputs], limits.budget_chars)
    cell_budget: dict[int, int] = {}
    for (index, _, _, _), share in zip(shown_outputs, shares, strict=True):
        cell_budget[index] = cell_budget.get(index, 0) + share
    texts: dict[int, list[str]] = {}
    limits_by_share: dict[int, InlineLimits] = {}  # most cells of a page get the same share
    for (index, number, label, text), share in zip(shown_outputs, shares, strict=True):
        if len(text) > share:  # the uri only where the marker names it
            text = head_and_tail(text, share, output_uri(path, cells[index].get("id", ""), number))
        texts.setdefault(index, []).append(f"[{label}]\n" + text)
    for index in range(start_index, stop):
        cell = cells[index]
        source = cell.get("source", "")
        state = states.state_of(index)
        outputs, cuts = None, None
        if detailed and cell.get("cell_type") == "code":
            # Cut as the text of a result is: a page of cells with 50 MiB of
            # outputs would otherwise be 50 MiB of structuredContent, and the
            # server's memory would keep the high-water mark of encoding it.
            # A floor, so that a cell whose outputs a model reads as nothing keeps their heads.
            cell_share = max(cell_budget.get(index, 0), 256)
            own = limits_by_share.get(cell_share) or limits_by_share.setdefault(
                cell_share, replace(limits, budget_chars=cell_share)
            )
            outputs, cut = bounded_outputs(
                list(cell.get("outputs", [])), _output_link(path, cell.get("id", "")), own
            )
            cuts = [models.OutputCut(**each) for each in cut] or None
        summaries.append(
            models.cell_summary(
                index=index,
                cell_id=cell.get("id", ""),
                cell_type=cell.get("cell_type"),
                source=source if detailed else source_preview(source),
                execution_count=cell.get("execution_count"),
                execution_state=state,
                outputs=outputs,
                outputs_cut=cuts,
            )
        )
        lines.append(cell_heading(index, cell) + (f", {state}" if state else ""))
        lines.append(source if detailed else source_preview(source))
        lines.extend(texts.get(index, ()))
    if (headings := headings_line(headings_of(cells[start_index:stop], start_index))) is not None:
        lines.insert(1 + bool(said), headings)
    if (people := focus_line(server.people(), path)) is not None:
        lines.insert(1 + bool(said), people)
    result = models.NotebookRead(
        cell_count=len(cells),
        start_index=start_index,
        cells=[],
        revision=view.revision,
        format_upgraded=upgraded,
    ).model_dump()
    result["cells"] = summaries  # in its place among the keys
    if stop < len(cells):
        lines.append(f"… {len(cells) - stop} more cells: call again with start_index={stop}.")
    return answer(result, "\n".join(lines))


def _output_link(path: str, cell_id: str) -> OutputLink:
    def link(index: int) -> str:
        return output_uri(path, cell_id, index)

    return link


@tool_handler("connect_to_jupyter")
async def connect_to_jupyter(
    jupyter_url: Annotated[
        str,
        Field(
            description="The server's URL with its base URL, like http://127.0.0.1:8888 (no token)."
        ),
    ],
    jupyter_token: Annotated[
        str | None,
        Field(
            description="Its token (after ?token= in `jupyter server list`); omit if it has none."
        ),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.JupyterConnected]:
    """Start later kernels on the Jupyter Server at jupyter_url (a GPU box, JupyterHub, a colleague's JupyterLab).

    Checked first (reachable, token accepted); nothing changes on failure. Running kernels stay where they are."""
    from jupyter_mcp_server._kernels.remote import (
        JupyterServerBackend,  # lazy: httpx only for remote kernels
    )

    backend = await JupyterServerBackend.connect(jupyter_url, jupyter_token)
    state_of(ctx).use_jupyter_server(backend)
    result = models.JupyterConnected(
        jupyter_url=backend.url, version=backend.version or "", kernelspecs=backend.kernelspecs()
    )
    return answer(
        result.model_dump(),
        f"Connected to the Jupyter Server {result.version} at {result.jupyter_url}; kernels started from now on "
        f"run there. Kernelspecs: {', '.join(result.kernelspecs) or 'none'}. Running kernels stay where they are.",
    )
