"""The server's own tools, offered as an extension like any other.

`CoreToolsExtension` offers the notebooks tools as `ToolSpec` contributions
in the ``notebooks`` toolset (and the opt-in ``introspection``, ``environments``, ``runs`` and ``history`` ones), declared from `_tools.NOTEBOOK_TOOLS` in the first
place rather than read back off a server's private registry. The
composition root always loads it first (`_extensions.load_extensions`): a
distribution cannot be missing its own tools.

The protocol features every built server has besides its tools (resources,
prompts, progress, subscriptions, tasks, logging) are attached by the
composition root, :mod:`jupyter_mcp_server._app`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from mcp.types import ToolAnnotations

from jupyter_mcp_server._extensions import (
    JupyterMCPExtension,
    PluginCompatibility,
    PluginManifest,
    Toolset,
    ToolSpec,
)
from jupyter_mcp_server._tools.declarations import NOTEBOOK_TOOLS
from jupyter_mcp_server._tools.editing import HISTORY_TOOLSET
from jupyter_mcp_server._tools.environments import ENVIRONMENTS_TOOLSET
from jupyter_mcp_server._tools.inspecting import INTROSPECTION_TOOLSET
from jupyter_mcp_server._tools.runs import RUNS_TOOLSET
from jupyter_mcp_server._version import __version__

CORE_TOOLSET = "notebooks"
#: The tools whose structured result holds all their text says: no ``rendered`` copy is added.
STRUCTURED_SAYS_ALL = frozenset(tool.name for tool in NOTEBOOK_TOOLS if tool.structured_says_all)
CORE_EXTENSION = "jupyter-mcp-server"


@cache
def core_tool_specs() -> tuple[ToolSpec, ...]:
    """The notebooks tools as contributions, lifted once."""
    return tuple(
        ToolSpec(
            name=tool.name,
            handler=tool.handler,
            title=tool.title,
            toolset=tool.toolset,
            meta=tool.meta,
            annotations=ToolAnnotations(
                read_only_hint=tool.read_only,
                destructive_hint=tool.destructive,
                idempotent_hint=tool.idempotent,
                open_world_hint=tool.open_world,
            ),
        )
        for tool in NOTEBOOK_TOOLS
    )


class CoreToolsExtension(JupyterMCPExtension):
    """The notebooks tools: read, edit and run notebooks on this server's kernels."""

    #: Each core tool fires the hook pair itself (`_tools.results.tool_handler`).
    fires_hooks = True

    def manifest(self) -> PluginManifest:
        return PluginManifest(
            name=CORE_EXTENSION,
            version=__version__,
            description="Read, edit and run Jupyter notebooks on kernels this server manages.",
            author="jupyter-mcp-server",
            compatibility=PluginCompatibility(api_version="v1"),
        )

    def toolsets(self) -> Sequence[Toolset]:
        return (
            Toolset(
                name=CORE_TOOLSET,
                title="Notebooks",
                description="Read, edit and run Jupyter notebooks in the workspace on kernels the server manages.",
            ),
            Toolset(
                name=INTROSPECTION_TOOLSET,
                title="Kernel introspection",
                description="Look into a notebook's kernel without running a cell: variables, completion, "
                "documentation, the last error's frames and locals, the kernel's history.",
                instructions="The introspection tools change nothing in the kernel: prefer list_variables and "
                "describe_variable to running a cell that prints a variable, and debug_error to re-running a "
                "failed cell with prints.",
                # Opt-in: /mcp?introspection over HTTP, --toolsets introspection over stdio.
                default=False,
            ),
            Toolset(
                name=ENVIRONMENTS_TOOLSET,
                title="Environments and packages",
                description="Install and list Python packages in the environment a notebook's kernel runs in, "
                "with that environment's installer (uv, pip, conda).",
                instructions="list_kernels shows the environments and which one a notebook runs on. Install "
                "packages with install_packages rather than '!pip install' in a cell: it installs where the "
                "kernel runs and says whether a restart is needed.",
                # Opt-in: /mcp?environments over HTTP, --toolsets environments over stdio.
                default=False,
            ),
            Toolset(
                name=RUNS_TOOLSET,
                title="Notebook runs",
                description="Run a whole notebook or a selection of its cells in order (run all, restart and run "
                "all, run the stale cells), clear outputs in one revision.",
                instructions="run_cells covers run all, run a range or ids, restart and run all, and run stale: "
                "pass cells='all', a range '3-7', a list of ids, or 'stale' with up_to_cell. Each cell's outputs "
                "are stored as it ends.",
                # Opt-in: /mcp?runs over HTTP, --toolsets runs over stdio.
                default=False,
            ),
            Toolset(
                name=HISTORY_TOOLSET,
                title="Safe editing and history",
                description="Batches of edits applied as one revision or not at all, each notebook's history of "
                "changes, cell-level diffs between revisions, restore of an earlier revision, named checkpoints.",
                instructions="Prefer apply_edits to several single-cell edits: one revision, one diff, nothing "
                "half-applied. Every change is kept in the notebook's history; restore_notebook undoes by writing "
                "an earlier revision as a new one, so an undo can itself be undone.",
                # Opt-in: /mcp?history over HTTP, --toolsets history over stdio.
                default=False,
            ),
        )

    def tools(self) -> Sequence[ToolSpec]:
        return core_tool_specs()
