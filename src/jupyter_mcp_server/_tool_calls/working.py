"""The cell an agent is working on: the last cell its connection edited or ran, per notebook.

The notebook view (``ui://jupyter-mcp/notebook``) marks it, so the person sees where the
agent is without reading the conversation. It is the connection's, as ``use_notebook``'s
choice is (:class:`jupyter_mcp_server._state.ConnectionState`): two agents never share
one, and a stateless call without an agent handle remembers none. The tools that edit or
run one cell say so here (:func:`worked_on`); a run the person starts from the view does
not, since it is not the agent's.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from jupyter_mcp_server._state import WorkingCell
from jupyter_mcp_server._tool_calls.addressing import connection_of

#: Notebooks remembered per connection (the least recently worked on go first).
MAX_NOTEBOOKS = 64
EDITED = "edited"
RAN = "ran"


def worked_on(ctx: Context | None, path: str, cell_id: str, doing: str) -> None:
    """This call's agent just edited, or is running, `cell_id` of `path`."""
    working = connection_of(ctx).working
    working[path] = WorkingCell(cell_id=cell_id, doing=doing)
    working.move_to_end(path)
    while len(working) > MAX_NOTEBOOKS:
        working.popitem(last=False)


def working_on(ctx: Context | None, path: str) -> WorkingCell | None:
    """The cell this call's agent last edited or ran in `path`, if any."""
    return connection_of(ctx).working.get(path)
