"""Which notebook and which cell a call means.

A notebook is named by a name given to ``use_notebook`` on this connection,
or by a path relative to the workspace; omitted, it is the connection's
current notebook. What "this connection" is, is :func:`remembered_by`'s: the
stdio peer or the HTTP session; on a stateless 2026-07-28 request the agent
handle it carries, else its identified caller (the person and the client); an
anonymous stateless request remembers nothing, and is told to name the
notebook on every call. A cell is named by exactly one of ``cell_index`` or
``cell_id``. Every ambiguity is refused with a message saying how to say it.
"""

from typing import Any

from mcp.server.mcpserver import Context

from jupyter_mcp_server._calls.callers import (
    BY_CALLER,
    BY_HANDLE,
    NOWHERE,
    caller_of,
    remembered_by,
    remembered_connection,
)
from jupyter_mcp_server._errors import (
    INVALID_ARGUMENT,
    INVALID_PATH,
    NO_NOTEBOOK,
    NOT_FOUND,
    ToolFailure,
)
from jupyter_mcp_server._state import ConnectionState, ServerState, serving_connection, state_of

NOTEBOOK_SUFFIXES = (".ipynb", ".py")


def connection_of(ctx: Context | None) -> ConnectionState:
    """This call's connection state; a call without a connection remembers nothing."""
    if ctx is None:
        # Called without its context (an extension narrowing a tool and calling it with
        # only its arguments): the connection of the request being served.
        return state_of(None).connection(serving_connection())
    return state_of(ctx).connection(remembered_connection(ctx))


def notebook_path(ctx: Context | None, notebook_name: str | None) -> str:
    """The workspace-relative path a call acts on."""
    state = connection_of(ctx)
    if notebook_name is None or notebook_name == "":
        if state.current is None:
            if ctx is not None and remembered_by(ctx)[1] == NOWHERE:
                raise ToolFailure(NO_NOTEBOOK, FORGOTTEN + " Pass notebook_name on this call.")
            raise ToolFailure(
                NO_NOTEBOOK,
                "No notebook is selected on this connection. Call use_notebook first, or "
                "pass notebook_name (a name given to use_notebook or a path such as "
                "'analysis.ipynb').",
            )
        return state.current
    if notebook_name in state.names:
        return state.names[notebook_name]
    return checked_path(state_of(ctx), notebook_name)


#: What a request that can remember nothing is told, instead of being promised a current notebook.
FORGOTTEN = (
    "This request is stateless (protocol 2026-07-28 over HTTP, no session) and anonymous (no "
    "sign-in, no --mcp-token, no agent handle), so the server remembers no notebook between "
    "calls: name it on every call with notebook_name (a path such as 'analysis.ipynb')."
)


def current_notebook_said(ctx: Context | None, path: str) -> str:
    """How ``use_notebook`` says where `path` is now the current notebook: honestly, for the
    way this request's choices are remembered (:func:`remembered_by`)."""
    if ctx is None:
        return "It is now this connection's current notebook."
    _, how = remembered_by(ctx)
    if how == BY_HANDLE:
        return (
            "It is now the current notebook of the agent handle this request carried "
            "(_meta['io.jupyter-mcp/agent']): later calls carrying it use it when they name "
            "no notebook."
        )
    if how == BY_CALLER:
        caller = caller_of(ctx)
        return (
            f"It is now the current notebook of {caller.display} on this server: later calls "
            "from this client that name no notebook use it, on any connection (every agent "
            "of this client signed in as the same person shares it; pass notebook_name, or "
            "send back the agent handle this result carries, to keep agents apart)."
        )
    if how == NOWHERE:
        return f"It is not remembered: {FORGOTTEN} Here: notebook_name='{path}'."
    return "It is now this connection's current notebook."


def checked_path(state: ServerState, path: str) -> str:
    """A notebook path inside the workspace, normalised to its relative form."""
    relative = state.locate(path)
    if not path.endswith(NOTEBOOK_SUFFIXES):
        raise ToolFailure(
            INVALID_PATH,
            f"'{path}' is not a notebook: notebooks are .ipynb files or .py Jupytext "
            "percent scripts. Pass a path such as 'analysis.ipynb'.",
        )
    return relative


def cell_position(
    notebook: Any,
    cell_index: int | None,
    cell_id: str | None,
    *,
    what: str = "cell",
) -> int:
    """The index of the one cell named by exactly one of `cell_index` or `cell_id`."""
    cells = notebook.cells
    if (cell_index is None) == (cell_id is None):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"Name the {what} with exactly one of cell_index (0-based) or cell_id.",
        )
    if cell_id is not None:
        for index, cell in enumerate(cells):
            if cell.get("id") == cell_id:
                return index
        raise ToolFailure(
            NOT_FOUND,
            f"No cell has id '{cell_id}'. Call read_notebook to see the cells and their ids.",
            cell_id=cell_id,
        )
    assert cell_index is not None
    if not 0 <= cell_index < len(cells):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"cell_index {cell_index} is out of range: the notebook has {len(cells)} cells "
            f"(valid indices 0 to {len(cells) - 1}).",
            cell_count=len(cells),
        )
    return cell_index


def index_of_id(notebook: Any, cell_id: str) -> int | None:
    for index, cell in enumerate(notebook.cells):
        if cell.get("id") == cell_id:
            return index
    return None


def insertion_index(cells: list[Any], cell_index: int) -> int:
    if cell_index == -1:
        return len(cells)
    if not 0 <= cell_index <= len(cells):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"cell_index {cell_index} is out of range for inserting: use 0 to {len(cells)}, or -1 to append.",
            cell_count=len(cells),
        )
    return cell_index
