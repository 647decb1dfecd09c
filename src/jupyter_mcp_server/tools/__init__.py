"""The notebooks tools: what a model calls to read, edit and run notebooks.

Each tool is an ordinary async function declared here with its title and
annotations (read-only, destructive, idempotent, open-world as they truly
are); ``core_tools.CoreToolsExtension`` offers them as contributions, so the
server's own tools arrive by the same mechanism as any extension's.
"""

from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server.calls.detached import task_support
from jupyter_mcp_server.tools import (
    cells,
    detaching,
    editing,
    environments,
    history,
    inspecting,
    notebooks,
    outline,
    output_pages,
    running,
    runs,
    search,
    verify,
    workspace_tools,
)


@dataclass(frozen=True)
class NotebookTool:
    """One tool as this package declares it."""

    handler: Any
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    #: The toolset it belongs to (declared by ``core_tools.CoreToolsExtension``).
    toolset: str = "notebooks"
    #: ``_meta`` of its spec (task support: ``detached.task_support``).
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.handler.__name__


#: Declared twice below: in the default toolset without detach, in runs with it.
_EXECUTION_TOOLS = (
    (running.execute_cell, "Execute Cell"),
    (running.insert_execute_code_cell, "Insert and Execute Code Cell"),
    (running.execute_code, "Execute Code"),
)

NOTEBOOK_TOOLS: tuple[NotebookTool, ...] = (
    NotebookTool(workspace_tools.list_files, "List Files", True, False, True, False),
    NotebookTool(workspace_tools.list_kernels, "List Kernels", True, False, True, False),
    NotebookTool(notebooks.use_notebook, "Use Notebook", False, False, True, False),
    NotebookTool(notebooks.list_notebooks, "List Notebooks", True, False, True, False),
    NotebookTool(notebooks.restart_notebook, "Restart Notebook Kernel", False, True, False, False),
    NotebookTool(notebooks.unuse_notebook, "Release Notebook", False, True, True, False),
    NotebookTool(outline.outline, "Outline Notebook", True, False, True, False),
    NotebookTool(search.search_notebooks, "Search Notebooks", True, False, True, False),
    NotebookTool(notebooks.read_notebook, "Read Notebook", True, False, True, False),
    NotebookTool(
        notebooks.get_notebook_revision, "Get Notebook Revision", True, False, True, False
    ),
    NotebookTool(cells.insert_cell, "Insert Cell", False, False, False, False),
    NotebookTool(cells.overwrite_cell_source, "Overwrite Cell Source", False, True, True, False),
    NotebookTool(cells.edit_cell_source, "Edit Cell Source", False, True, False, False),
    NotebookTool(cells.move_cell, "Move Cell", False, False, False, False),
    NotebookTool(cells.delete_cell, "Delete Cells", False, True, False, False),
    NotebookTool(cells.clear_cell_output, "Clear Cell Output", False, True, True, False),
    NotebookTool(cells.read_cell, "Read Cell", True, False, True, False),
    NotebookTool(output_pages.read_output, "Read Output", True, False, True, False),
    *(
        NotebookTool(
            detaching.without_detach(handler), title, False, True, False, True, meta=task_support()
        )
        for handler, title in _EXECUTION_TOOLS
    ),
    NotebookTool(running.interrupt_kernel, "Interrupt Kernel", False, True, True, False),
    NotebookTool(
        running.interrupt_notebook_session, "Interrupt Notebook Session", False, True, True, False
    ),
    NotebookTool(
        notebooks.connect_to_jupyter, "Connect to Jupyter Server", False, True, True, True
    ),
    # Opt-in (core_tools.CoreToolsExtension.toolsets): they change nothing, but every tool costs context.
    NotebookTool(
        inspecting.list_variables,
        "List Variables",
        True,
        False,
        True,
        False,
        inspecting.INTROSPECTION_TOOLSET,
    ),
    NotebookTool(
        inspecting.describe_variable,
        "Describe Variable",
        True,
        False,
        True,
        False,
        inspecting.INTROSPECTION_TOOLSET,
    ),
    NotebookTool(
        inspecting.complete,
        "Complete or Inspect Code",
        True,
        False,
        True,
        False,
        inspecting.INTROSPECTION_TOOLSET,
    ),
    NotebookTool(
        inspecting.debug_error,
        "Debug Last Error",
        True,
        False,
        True,
        False,
        inspecting.INTROSPECTION_TOOLSET,
    ),
    NotebookTool(
        inspecting.kernel_history,
        "Kernel History",
        True,
        False,
        True,
        False,
        inspecting.INTROSPECTION_TOOLSET,
    ),
    # Opt-in: installing changes an environment the person may share with other work.
    NotebookTool(
        environments.install_packages,
        "Install Packages",
        False,
        True,
        True,
        True,
        environments.ENVIRONMENTS_TOOLSET,
    ),
    NotebookTool(
        environments.list_packages,
        "List Packages",
        True,
        False,
        True,
        False,
        environments.ENVIRONMENTS_TOOLSET,
    ),
    # Opt-in: whole-notebook runs, stale cells, detached runs.
    NotebookTool(
        runs.run_cells, "Run Cells", False, True, False, True, runs.RUNS_TOOLSET, task_support()
    ),
    NotebookTool(runs.clear_outputs, "Clear Outputs", False, True, True, False, runs.RUNS_TOOLSET),
    # With runs on, the execution tools take detach=true (they replace the default ones by name).
    *(
        NotebookTool(handler, title, False, True, False, True, runs.RUNS_TOOLSET, task_support())
        for handler, title in _EXECUTION_TOOLS
    ),
    NotebookTool(detaching.get_run, "Get Run", True, False, True, False, runs.RUNS_TOOLSET),
    NotebookTool(detaching.cancel_run, "Cancel Run", False, True, True, False, runs.RUNS_TOOLSET),
    # Runs the notebook's code (whatever it does to files) in a kernel of its own: not read-only.
    NotebookTool(
        verify.verify_notebook,
        "Verify Notebook",
        False,
        True,
        False,
        True,
        runs.RUNS_TOOLSET,
        task_support(),
    ),
    # Opt-in: batches, history, diffs and restores.
    NotebookTool(
        editing.apply_edits, "Apply Edits", False, True, False, False, editing.HISTORY_TOOLSET
    ),
    NotebookTool(
        editing.set_cell_metadata,
        "Set Cell Metadata",
        False,
        False,
        True,
        False,
        editing.HISTORY_TOOLSET,
    ),
    NotebookTool(
        history.notebook_history,
        "Notebook History",
        True,
        False,
        True,
        False,
        editing.HISTORY_TOOLSET,
    ),
    NotebookTool(
        history.diff_notebook,
        "Diff Notebook Revisions",
        True,
        False,
        True,
        False,
        editing.HISTORY_TOOLSET,
    ),
    NotebookTool(
        history.restore_notebook,
        "Restore Notebook Revision",
        False,
        True,
        False,
        False,
        editing.HISTORY_TOOLSET,
    ),
    NotebookTool(
        history.checkpoint,
        "Checkpoint Notebook",
        False,
        False,
        True,
        False,
        editing.HISTORY_TOOLSET,
    ),
)
