"""Which notebook and which cell a call means.

A notebook is named by a name given to ``use_notebook`` on this connection,
or by a path relative to the workspace; omitted, it is the connection's
current notebook. A cell is named by exactly one of ``cell_index`` or
``cell_id``. Every ambiguity is refused with a message saying how to say it.
"""

from typing import Any

from mcp.server.mcpserver import Context

from jupyter_mcp_server._calls.callers import remembered_connection
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
