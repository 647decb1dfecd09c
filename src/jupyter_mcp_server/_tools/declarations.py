"""Every tool of this package, declared once: its title, annotations and toolset.

Each tool is an ordinary async function, declared here with its title and
annotations (read-only, destructive, idempotent, open-world as they truly
are); ``_core_tools.CoreToolsExtension`` offers them as contributions, so the
server's own tools arrive by the same mechanism as any extension's.
"""

from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server._calls.detached import task_support
from jupyter_mcp_server._tools import (
    cells,
    detaching,
    editing,
    environments,
    history,
    inspecting,
    notebooks,
    outline,
    output_pages,
    reviewing,
    running,
    runs,
    search,
    verify,
    viewing,
    workspace_tools,
)


@dataclass(frozen=True)
class Hints:
    """A tool's annotations, as they truly are for it."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


#: Changes nothing.
READS = Hints(read_only=True, destructive=False, idempotent=True, open_world=False)
#: Adds or moves, losing nothing; called again, it does so again.
ADDS = Hints(read_only=False, destructive=False, idempotent=False, open_world=False)
#: Sets something to a given value, losing nothing.
SETS = Hints(read_only=False, destructive=False, idempotent=True, open_world=False)
#: Replaces or removes something with a given value: the same when repeated.
OVERWRITES = Hints(read_only=False, destructive=True, idempotent=True, open_world=False)
#: Changes or removes what is there, differently each time.
CHANGES = Hints(read_only=False, destructive=True, idempotent=False, open_world=False)
#: Runs a notebook's code, which may do anything the person may.
RUNS_CODE = Hints(read_only=False, destructive=True, idempotent=False, open_world=True)
#: Changes what lies beyond the workspace (a Jupyter Server used, an environment).
CHANGES_OUTSIDE = Hints(read_only=False, destructive=True, idempotent=True, open_world=True)


@dataclass(frozen=True)
class NotebookTool:
    """One tool as this package declares it."""

    handler: Any
    title: str
    hints: Hints
    #: The toolset it belongs to (declared by ``_core_tools.CoreToolsExtension``).
    toolset: str = "notebooks"
    #: ``_meta`` of its spec (task support: ``detached.task_support``).
    meta: dict[str, Any] = field(default_factory=dict)
    #: Its structured result holds everything its text says, so no ``rendered`` copy of the
    #: text is added to it (``_protocol/result_parts.py``): a client that hands its model the
    #: JSON reads each thing once.
    structured_says_all: bool = False

    @property
    def name(self) -> str:
        return self.handler.__name__

    @property
    def read_only(self) -> bool:
        return self.hints.read_only

    @property
    def destructive(self) -> bool:
        return self.hints.destructive

    @property
    def idempotent(self) -> bool:
        return self.hints.idempotent

    @property
    def open_world(self) -> bool:
        return self.hints.open_world


#: Declared twice below: in the default toolset without detach, in runs with it.
_EXECUTION_TOOLS = (
    (running.execute_cell, "Execute Cell"),
    (running.insert_execute_code_cell, "Insert and Execute Code Cell"),
    (running.execute_code, "Execute Code"),
)

NOTEBOOK_TOOLS: tuple[NotebookTool, ...] = (
    NotebookTool(workspace_tools.list_files, "List Files", READS),
    NotebookTool(workspace_tools.list_kernels, "List Kernels", READS),
    NotebookTool(notebooks.use_notebook, "Use Notebook", SETS),
    NotebookTool(notebooks.list_notebooks, "List Notebooks", READS),
    NotebookTool(notebooks.restart_notebook, "Restart Notebook Kernel", CHANGES),
    NotebookTool(notebooks.unuse_notebook, "Release Notebook", OVERWRITES),
    NotebookTool(outline.outline, "Outline Notebook", READS, structured_says_all=True),
    NotebookTool(search.search_notebooks, "Search Notebooks", READS),
    NotebookTool(notebooks.read_notebook, "Read Notebook", READS),
    NotebookTool(notebooks.get_notebook_revision, "Get Notebook Revision", READS),
    NotebookTool(cells.insert_cell, "Insert Cell", ADDS),
    NotebookTool(cells.overwrite_cell_source, "Overwrite Cell Source", OVERWRITES),
    NotebookTool(cells.edit_cell_source, "Edit Cell Source", CHANGES),
    NotebookTool(cells.move_cell, "Move Cell", ADDS),
    NotebookTool(cells.delete_cell, "Delete Cells", CHANGES),
    NotebookTool(cells.clear_cell_output, "Clear Cell Output", OVERWRITES),
    NotebookTool(cells.read_cell, "Read Cell", READS),
    NotebookTool(output_pages.read_output, "Read Output", READS),
    *(
        NotebookTool(detaching.without_detach(handler), title, RUNS_CODE, meta=task_support())
        for handler, title in _EXECUTION_TOOLS
    ),
    NotebookTool(running.interrupt_kernel, "Interrupt Kernel", OVERWRITES),
    NotebookTool(running.interrupt_notebook_session, "Interrupt Notebook Session", OVERWRITES),
    NotebookTool(notebooks.connect_to_jupyter, "Connect to Jupyter Server", CHANGES_OUTSIDE),
    # The notebook view's own tools: app-only (_protocol/apps.py lists them, with
    # _meta.ui.visibility ["app"], to clients with apps only; a host keeps them from the model).
    NotebookTool(viewing.view_notebook, "Notebook View Page", READS),
    NotebookTool(viewing.run_cell_from_view, "Run Cell from the Notebook View", RUNS_CODE),
    # Opt-in (core_tools.CoreToolsExtension.toolsets): they change nothing, but every tool costs context.
    NotebookTool(
        inspecting.list_variables, "List Variables", READS, toolset=inspecting.INTROSPECTION_TOOLSET
    ),
    NotebookTool(
        inspecting.describe_variable,
        "Describe Variable",
        READS,
        toolset=inspecting.INTROSPECTION_TOOLSET,
    ),
    NotebookTool(
        inspecting.complete,
        "Complete or Inspect Code",
        READS,
        toolset=inspecting.INTROSPECTION_TOOLSET,
    ),
    NotebookTool(
        inspecting.debug_error, "Debug Last Error", READS, toolset=inspecting.INTROSPECTION_TOOLSET
    ),
    NotebookTool(
        inspecting.kernel_history, "Kernel History", READS, toolset=inspecting.INTROSPECTION_TOOLSET
    ),
    # Opt-in: installing changes an environment the person may share with other work.
    NotebookTool(
        environments.install_packages,
        "Install Packages",
        CHANGES_OUTSIDE,
        toolset=environments.ENVIRONMENTS_TOOLSET,
    ),
    NotebookTool(
        environments.list_packages,
        "List Packages",
        READS,
        toolset=environments.ENVIRONMENTS_TOOLSET,
    ),
    # Opt-in: whole-notebook runs, stale cells, detached runs.
    NotebookTool(
        runs.run_cells, "Run Cells", RUNS_CODE, toolset=runs.RUNS_TOOLSET, meta=task_support()
    ),
    NotebookTool(runs.clear_outputs, "Clear Outputs", OVERWRITES, toolset=runs.RUNS_TOOLSET),
    # With runs on, the execution tools take detach=true (they replace the default ones by name).
    *(
        NotebookTool(handler, title, RUNS_CODE, toolset=runs.RUNS_TOOLSET, meta=task_support())
        for handler, title in _EXECUTION_TOOLS
    ),
    NotebookTool(detaching.get_run, "Get Run", READS, toolset=runs.RUNS_TOOLSET),
    NotebookTool(detaching.cancel_run, "Cancel Run", OVERWRITES, toolset=runs.RUNS_TOOLSET),
    # The output app's own (app-only, as the notebook view's): a detached run followed as it goes.
    NotebookTool(detaching.watch_run, "Watch Run", READS, toolset=runs.RUNS_TOOLSET),
    # Runs the notebook's code (whatever it does to files) in a kernel of its own: not read-only.
    NotebookTool(
        verify.verify_notebook,
        "Verify Notebook",
        RUNS_CODE,
        toolset=runs.RUNS_TOOLSET,
        meta=task_support(),
    ),
    # Opt-in: batches, history, diffs and restores.
    NotebookTool(editing.apply_edits, "Apply Edits", CHANGES, toolset=editing.HISTORY_TOOLSET),
    NotebookTool(
        editing.set_cell_metadata, "Set Cell Metadata", SETS, toolset=editing.HISTORY_TOOLSET
    ),
    NotebookTool(
        history.notebook_history, "Notebook History", READS, toolset=editing.HISTORY_TOOLSET
    ),
    NotebookTool(
        history.diff_notebook, "Diff Notebook Revisions", READS, toolset=editing.HISTORY_TOOLSET
    ),
    NotebookTool(
        history.restore_notebook,
        "Restore Notebook Revision",
        CHANGES,
        toolset=editing.HISTORY_TOOLSET,
    ),
    NotebookTool(history.checkpoint, "Checkpoint Notebook", SETS, toolset=editing.HISTORY_TOOLSET),
    # The review app's Accept and Reject: app-only (_protocol/apps.py lists it, with
    # _meta.ui.visibility ["app"], to clients with apps only; a host keeps it from the model).
    NotebookTool(
        reviewing.review_change,
        "Review Change",
        CHANGES,
        toolset=editing.HISTORY_TOOLSET,
    ),
)
