"""The tools that look around: files in the workspace and the kernels running."""

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._schemas import models
from jupyter_mcp_server._state import state_of
from jupyter_mcp_server._tool_calls.results import answer, tool_handler


@tool_handler("list_files")
async def list_files(
    path: Annotated[
        str, Field(description="Directory relative to the workspace root ('' is the root).")
    ] = "",
    max_depth: Annotated[int, Field(description="Levels to descend, 1-3.", ge=0, le=3)] = 1,
    start_index: Annotated[int, Field(description="First entry to return, for paging.", ge=0)] = 0,
    limit: Annotated[int, Field(description="Entries to return (0: all).", ge=0)] = 25,
    pattern: Annotated[str, Field(description="Glob to filter by, such as '*.ipynb'.")] = "",
    ctx: Context | None = None,
) -> Annotated[CallToolResult, models.FileList]:
    """List files and directories in the workspace (paths relative to its root), to find notebooks to open."""
    if not 0 <= max_depth <= 3:
        raise ToolFailure(INVALID_ARGUMENT, f"max_depth must be 0 to 3, not {max_depth}.")
    entries = await state_of(ctx).store.list_files(path, max_depth, pattern)
    page = entries[start_index:] if limit == 0 else entries[start_index : start_index + limit]
    listed = models.FileList(
        files=[models.FileEntry.model_validate(e) for e in page], total=len(entries)
    )
    lines = [f"{e['type']:9} {e['size']:>10}  {e['path']}" for e in page]
    if start_index + len(page) < len(entries):
        lines.append(
            f"… {len(entries) - start_index - len(page)} more: call again with start_index={start_index + len(page)}."
        )
    return answer(listed.model_dump(), "\n".join(lines) or "No files match.")


@tool_handler("list_kernels")
async def list_kernels(ctx: Context | None = None) -> Annotated[CallToolResult, models.KernelList]:
    """List running kernels (id, kernelspec, state, notebooks), installed kernelspecs and the Python environments a notebook can run in (the workspace's, the launcher's) with whether ipykernel is there: names for use_notebook's kernel_name."""
    server = state_of(ctx)
    kernels = server.kernels
    environments = kernels.backend.listed()
    default = kernels.choose(None)
    listed = models.KernelList(
        kernels=[
            models.KernelEntry(
                kernel_id=k.kernel_id,
                kernel_name=k.kernel_name,
                state=k.state,
                notebooks=sorted(k.notebooks),
            )
            for k in kernels.kernels
        ],
        kernelspecs=kernels.kernelspecs(),
        environments=[
            models.EnvironmentEntry.model_validate(env.as_dict()) for env in environments
        ],
        default_kernel=models.KernelChoiceModel(
            kernel_name=default.kernel_name, reason=default.reason
        ),
    )
    lines = [
        f"{k.kernel_id} {k.kernel_name} {k.state} {', '.join(k.notebooks) or '(no notebook)'}"
        for k in listed.kernels
    ]
    lines.append(f"Kernelspecs: {', '.join(listed.kernelspecs)}")
    if environments:
        lines.append("Environments:")
        lines.extend(f"  {env.line()}" for env in environments)
    lines.append(f"New notebooks run on {default.kernel_name}: {default.reason}.")
    return answer(listed.model_dump(), "\n".join(lines))
