"""The introspection tools: what is in a notebook's kernel, without running a cell.

A model that wants to know what ``df`` holds would otherwise run
``df.head()`` in a cell: an execution count spent, an ``Out`` entry, a history
line, and, for an object with a slow or huge ``__repr__``, a hung call. These
tools ask the kernel instead (:mod:`jupyter_mcp_server._kernels.introspection`)
and change nothing in it. They are an opt-in toolset (``introspection``):
every tool costs context in every conversation, and most need only the
notebooks tools.

They never start a kernel: a notebook without one has nothing to look at.
"""

import difflib
import re
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._errors import INVALID_ARGUMENT, KERNEL_GONE, NOT_FOUND, ToolFailure
from jupyter_mcp_server._kernels.introspection import ask, run_helper
from jupyter_mcp_server._kernels.kernel import Kernel, gone_message
from jupyter_mcp_server._schemas import kernel_models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler

INTROSPECTION_TOOLSET = "introspection"
#: Seconds one object's __repr__ (or head, stats, dir) may take, and one call in all.
PER_OBJECT_SECONDS = 1.0
PER_CALL_SECONDS = 5.0
MAX_PAGE = 500
MAX_MATCHES = 200
MAX_TEXT = 8000
MAX_HISTORY = 200
MAX_HISTORY_INPUT = 2000
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


async def kernel_of(
    ctx: Context | None, notebook_name: str | None
) -> tuple[ServerState, Kernel, str]:
    """The notebook's running kernel; never one started for the question."""
    server = state_of(ctx)
    path = notebook_path(ctx, notebook_name)
    kernel_id = server.kernels.kernel_id_of(path)
    if kernel_id is None:
        if server.kernels.is_lost(path):
            raise ToolFailure(KERNEL_GONE, gone_message(path), notebook=path)
        raise ToolFailure(
            NOT_FOUND,
            f"'{path}' has no kernel, so there is nothing in it to look at. Call use_notebook to attach "
            "one and run some cells first.",
            notebook=path,
        )
    kernel = server.kernels.get(kernel_id)
    if not await kernel.is_alive():
        await server.kernels.mark_lost(kernel)
        raise ToolFailure(KERNEL_GONE, gone_message(path), notebook=path)
    return server, kernel, path


def where(path: str) -> str:
    return f"The kernel of '{path}'"


@tool_handler("list_variables")
async def list_variables(
    notebook_name: NotebookName = None,
    type_filter: Annotated[
        str | None,
        Field(
            description="Only variables of this type or a subclass: 'DataFrame', 'ndarray', 'int', 'function'."
        ),
    ] = None,
    name_pattern: Annotated[
        str | None, Field(description="Only names matching this glob: 'df_*', 'model?'.")
    ] = None,
    include_modules: Annotated[bool, Field(description="List imported modules too.")] = False,
    offset: Annotated[int, Field(ge=0, description="Skip this many (names are sorted).")] = 0,
    limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="At most this many.")] = 50,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.VariableList]:
    """List the variables a notebook's Python kernel holds: each name's type, a short repr, and cheap sizes (len, shape, dtype, bytes).

    Runs no cell and changes nothing in the kernel (no execution count, no history, no Out); answers while a cell runs when the kernel has subshells. IPython's own names, _private names and modules (unless asked) are left out. A repr that raises or takes over a second is reported instead of shown.
    """
    _, kernel, path = await kernel_of(ctx, notebook_name)
    request = {
        "op": "list",
        "type_filter": type_filter,
        "name_pattern": name_pattern,
        "include_modules": include_modules,
        "offset": offset,
        "limit": limit,
        "repr_chars": 120,
        "per_object": PER_OBJECT_SECONDS,
        "total": PER_CALL_SECONDS,
    }
    listed = await run_helper(kernel, request, where=where(path))
    variables = listed["variables"]
    result = kernel_models.VariableList(
        kernel_id=kernel.kernel_id,
        variables=variables,
        total=listed["total"],
        offset=listed["offset"],
    )
    lines = [f"{len(variables)} of {listed['total']} variables in '{path}' (offset {offset}):"]
    for entry in variables:
        sizes = ", ".join(
            f"{key} {entry[key]}" for key in ("shape", "len", "dtype", "bytes") if key in entry
        )
        shown = entry["repr"] if entry.get("repr") is not None else f"[{entry.get('repr_note')}]"
        lines.append(f"{entry['name']}: {entry['type']}{f' ({sizes})' if sizes else ''} = {shown}")
    return answer(result.model_dump(), "\n".join(lines))


@tool_handler("describe_variable")
async def describe_variable(
    name: Annotated[
        str,
        Field(description="A variable name in the notebook's kernel, as list_variables shows it."),
    ],
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.VariableDescribed]:
    """Describe one variable of a notebook's Python kernel in depth, without running a cell.

    DataFrame: shape, columns with dtypes and non-null counts, the first rows. Array: shape, dtype, min/max/mean/std. Function or class: signature and docstring. Anything else: a bounded repr and its public attribute names. Generators are not advanced. Slow parts are cut after a second each and said so.
    """
    if not name.isidentifier():
        raise ToolFailure(
            INVALID_ARGUMENT, f"'{name}' is not a variable name; pass a name such as 'df'."
        )
    _, kernel, path = await kernel_of(ctx, notebook_name)
    request = {
        "op": "describe",
        "name": name,
        "repr_chars": 2000,
        "per_object": PER_OBJECT_SECONDS,
        "total": PER_CALL_SECONDS,
    }
    described = await run_helper(kernel, request, where=where(path))
    if described.get("missing"):
        close = difflib.get_close_matches(name, described.get("names", []), n=5)
        hint = f" Did you mean {', '.join(repr(n) for n in close)}?" if close else ""
        raise ToolFailure(
            NOT_FOUND,
            f"No variable '{name}' in the kernel of '{path}'.{hint} Call list_variables to see them.",
            close_matches=close,
        )
    result = kernel_models.VariableDescribed(kernel_id=kernel.kernel_id, variable=described)
    return answer(result.model_dump(), _described_text(described))


def _described_text(described: dict[str, Any]) -> str:
    lines = [f"{described['name']}: {described['type']} ({described.get('kind')})"]
    for key in (
        "shape",
        "len",
        "dtype",
        "bytes",
        "signature",
        "non_null",
        "stats",
        "module",
        "note",
    ):
        if described.get(key) is not None:
            lines.append(f"{key}: {described[key]}")
    if described.get("columns"):
        listed = ", ".join(
            f"{c['name']} {c['dtype']}"
            + (f" ({c['non_null']} non-null)" if c.get("non_null") is not None else "")
            for c in described["columns"]
        )
        more = described.get("columns_total", 0) - len(described["columns"])
        lines.append(f"columns: {listed}" + (f" and {more} more" if more > 0 else ""))
    for key in ("head", "doc", "repr"):
        if described.get(key):
            lines.append(f"{key}:\n{described[key]}")
    if described.get("repr_note"):
        lines.append(f"repr: [{described['repr_note']}]")
    if described.get("attributes") is not None:
        lines.append("attributes: " + ", ".join(described["attributes"]))
    for note in described.get("notes", []):
        lines.append(f"[not shown: {note}]")
    return "\n".join(lines)


@tool_handler("complete")
async def complete(
    code: Annotated[str, Field(description="The code, as it would be in a cell.")],
    cursor_pos: Annotated[
        int | None,
        Field(
            description="Where the cursor is, in characters from the start of code. Default: the end."
        ),
    ] = None,
    mode: Annotated[
        Literal["complete", "inspect", "is_complete"],
        Field(
            description="complete: what can be typed at the cursor; inspect: the documentation of the name at the "
            "cursor; is_complete: whether code is a whole statement that would run (or needs more lines)."
        ),
    ] = "complete",
    detail_level: Annotated[
        int, Field(ge=0, le=1, description="inspect: 1 adds the source where it is known.")
    ] = 0,
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.CodeAssisted]:
    """Ask the notebook's kernel (any language) to complete code at a cursor, show a name's documentation (mode="inspect"), or say whether code is complete (mode="is_complete"). Runs nothing: cheaper and safer than executing help() or dir()."""
    if cursor_pos is None:
        cursor_pos = len(code)
    if mode != "is_complete" and not 0 <= cursor_pos <= len(code):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"cursor_pos {cursor_pos} is outside the code (0 to {len(code)} characters). Pass a position "
            "inside it, or omit cursor_pos for the end.",
            code_length=len(code),
        )
    _, kernel, path = await kernel_of(ctx, notebook_name)
    result = kernel_models.CodeAssisted(kernel_id=kernel.kernel_id, mode=mode)
    if mode == "complete":
        reply = await ask(
            kernel, "complete_request", {"code": code, "cursor_pos": cursor_pos}, where=where(path)
        )
        matches = [str(m) for m in reply.get("matches", [])]
        result.matches = matches[:MAX_MATCHES]
        result.cursor_start, result.cursor_end = reply.get("cursor_start"), reply.get("cursor_end")
        more = f" (first {MAX_MATCHES} of {len(matches)})" if len(matches) > MAX_MATCHES else ""
        text = (
            f"{len(result.matches)} completions{more} replacing characters {result.cursor_start}-{result.cursor_end}:\n"
            + "\n".join(result.matches)
        )
    elif mode == "inspect":
        content = {"code": code, "cursor_pos": cursor_pos, "detail_level": detail_level}
        reply = await ask(kernel, "inspect_request", content, where=where(path))
        result.found = bool(reply.get("found"))
        plain = ANSI.sub("", str((reply.get("data") or {}).get("text/plain", "")))
        result.text = plain[:MAX_TEXT] + ("…" if len(plain) > MAX_TEXT else "")
        text = result.text if result.found else "The kernel found nothing to inspect at the cursor."
    else:
        reply = await ask(kernel, "is_complete_request", {"code": code}, where=where(path))
        result.status, result.indent = reply.get("status"), reply.get("indent")
        text = f"is_complete: {result.status}" + (
            f" (indent the next line with {result.indent!r})" if result.indent else ""
        )
    return answer(result.model_dump(), text)


@tool_handler("debug_error")
async def debug_error(
    notebook_name: NotebookName = None,
    context_lines: Annotated[
        int,
        Field(ge=0, le=20, description="Source lines shown before and after each frame's line."),
    ] = 3,
    max_frames: Annotated[
        int,
        Field(
            ge=1,
            le=50,
            description="At most this many frames: the notebook's own cells first (the line that ran among them), then the innermost; the rest folded.",
        ),
    ] = 10,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.ErrorReport]:
    """After a cell raised: the last traceback's frames (cell or file, line, function, source around it) with each frame's local variables as short reprs, read from the Python kernel post mortem. Nothing is run again."""
    server, kernel, path = await kernel_of(ctx, notebook_name)
    request = {
        "op": "debug",
        "context_lines": context_lines,
        "max_frames": max_frames,
        "repr_chars": 200,
    }
    report = await run_helper(kernel, request, where=where(path))
    frames = report.get("frames", [])
    await _place_cells(server, path, frames)
    result = kernel_models.ErrorReport(
        kernel_id=kernel.kernel_id,
        error=report.get("error"),
        frames=frames,
        frames_total=report.get("frames_total", 0),
    )
    if result.error is None:
        return answer(
            result.model_dump(), f"No error has been raised in the kernel of '{path}' yet."
        )
    lines = [f"{result.error['ename']}: {result.error['evalue']}"]
    for frame in frames:
        folded = frame.get("folded_before")
        if folded:
            lines.append(
                f"\n[… {folded['frames']} frame(s) folded: {', '.join(folded['packages'])}]"
            )
        place = (
            f"cell {frame['cell_index']}" if frame.get("cell_index") is not None else frame["file"]
        )
        lines.append(f"\n{place}, line {frame['line']}, in {frame['function']}")
        for number, source in enumerate(frame["source"], start=frame["first_line"]):
            lines.append(f"{'->' if number == frame['line'] else '  '} {number:4} {source}")
        for name, local in (frame.get("locals") or {}).items():
            lines.append(
                f"   {name} = {local['repr'] if local.get('repr') is not None else '[' + str(local.get('repr_note')) + ']'}"
            )
    return answer(result.model_dump(), "\n".join(lines))


async def _place_cells(server: ServerState, path: str, frames: list[dict[str, Any]]) -> None:
    """Name the notebook cell each frame ran in, where its source is one of the notebook's cells."""
    sources: dict[str, tuple[int, str]] = {}
    try:
        notebook = (await server.store.read(path)).notebook
        for index, cell in enumerate(notebook.cells):
            if cell.get("cell_type") == "code":
                sources.setdefault(cell.get("source", "").rstrip(), (index, cell["id"]))
    except ToolFailure:
        pass
    for frame in frames:
        source = frame.pop("cell_source", None)
        if source is not None and source.rstrip() in sources:
            frame["cell_index"], frame["cell_id"] = sources[source.rstrip()]


@tool_handler("kernel_history")
async def kernel_history(
    notebook_name: NotebookName = None,
    limit: Annotated[
        int, Field(ge=1, le=MAX_HISTORY, description="The last this many inputs.")
    ] = 20,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.KernelHistory]:
    """What was executed in the notebook's kernel since it started, oldest first: the kernel's own history, so every client's executions and cells since deleted or edited are there (introspection calls are not)."""
    _, kernel, path = await kernel_of(ctx, notebook_name)
    # This kernel's session only: "tail" would read IPython's history database, every earlier
    # kernel's inputs included. The session is read whole and its end kept: a negative start
    # past its beginning makes IPython index past it.
    content = {
        "output": False,
        "raw": True,
        "hist_access_type": "range",
        "session": 0,
        "start": 1,
        "stop": None,
    }
    reply = await ask(kernel, "history_request", content, where=where(path))
    entries, truncated = [], False
    for item in (reply.get("history") or [])[-limit:]:
        session, line, source = item[0], item[1], str(item[2])
        if len(source) > MAX_HISTORY_INPUT:
            source, truncated = source[:MAX_HISTORY_INPUT] + "…", True
        entries.append({"session": session, "line": line, "input": source})
    result = kernel_models.KernelHistory(
        kernel_id=kernel.kernel_id, entries=entries, truncated=truncated
    )
    text = (
        "\n".join(f"[{e['line']}] {e['input']}" for e in entries)
        or f"Nothing has been executed in the kernel of '{path}'."
    )
    return answer(result.model_dump(), text)
