"""The four sandbox tools, built over one registry.

The handlers are made inside :func:`build_tools` so they close over the
extension's own :class:`~jupyter_mcp_sandboxes.registry.CodeSandboxManager`;
each wears the server's `tool_handler`, so a call fires the same hook pair
as a core tool and a `ToolFailure` becomes a coded error. The annotations
are the seed's, for the reasons it gives.

(No ``from __future__ import annotations`` here: the server reads these
signatures, ``Annotated`` metadata included, to publish the schemas.)
"""

from dataclasses import asdict
from typing import Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from jupyter_mcp_sandboxes.models import (
    SandboxList,
    SandboxModel,
    SandboxSelection,
    SandboxTermination,
)
from jupyter_mcp_sandboxes.registry import CodeSandboxManager
from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_server.api import (
    Toolset,
    ToolSpec,
    answer,
    tool_handler,
)

TOOLSET = "sandboxes"

#: The toolset, as every distribution adding sandbox tools declares it: one
#: name for one subject, opt-in over HTTP (``/mcp?sandboxes``).
SANDBOXES_TOOLSET = Toolset(
    name=TOOLSET,
    title="Sandboxes",
    description="Launch, use and terminate code sandboxes.",
    instructions=(
        "Sandboxes: launch_sandbox starts a separate place to run code (variant 'local' by default); "
        "use_sandbox(name) makes execute_code run there, and every result says where it ran; "
        "use_sandbox() with no name goes back to the notebook's kernel; terminate_sandbox when done."
    ),
    default=False,
)

#: Each call costs another sandbox, and what it starts runs arbitrary code.
LAUNCH_SANDBOX_ANNOTATIONS = ToolAnnotations(
    title="Launch Sandbox",
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=False,
    open_world_hint=True,
)
LIST_SANDBOXES_ANNOTATIONS = ToolAnnotations(
    title="List Sandboxes",
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)
#: Selecting the same one again leaves the same selection.
USE_SANDBOX_ANNOTATIONS = ToolAnnotations(
    title="Use Sandbox",
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)
#: Terminating one already gone leaves it gone: safe to retry after a timeout.
TERMINATE_SANDBOX_ANNOTATIONS = ToolAnnotations(
    title="Terminate Sandbox",
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)

SandboxName = Annotated[
    str,
    Field(description="The sandbox's name: 1-40 letters, digits, '.', '_' or '-'."),
]


def describe(sandbox: Sandbox, active: str | None) -> dict[str, Any]:
    """A sandbox as its output schema says."""
    info = sandbox.info(active=sandbox.name == active)
    model = SandboxModel(**asdict(info), caveats=list(sandbox.caveats()))
    return model.model_dump()


def build_tools(manager: CodeSandboxManager) -> list[ToolSpec]:
    """`launch_sandbox`, `list_sandboxes`, `use_sandbox` and `terminate_sandbox` over `manager`."""

    @tool_handler("launch_sandbox")
    async def launch_sandbox(
        sandbox_name: SandboxName,
        variant: Annotated[
            str | None,
            Field(
                description="Where it runs: 'local' (a separate kernel process with its own directory, "
                "environment and resource limits; the default), 'confined' (the same under bubblewrap: no "
                "network, read-only system) or 'jupyter-server' (a kernel on the Jupyter Server at "
                "server_url). list_sandboxes names the variants this server has."
            ),
        ] = None,
        timeout: Annotated[
            float, Field(description="Seconds to wait for it to be ready (at most 600).")
        ] = 60,
        memory_mb: Annotated[
            int | None, Field(description="local/confined: memory limit in MiB (default 1024).")
        ] = None,
        cpu_seconds: Annotated[
            int | None,
            Field(
                description="local/confined: CPU seconds it may use in its lifetime (default 1800)."
            ),
        ] = None,
        open_files: Annotated[
            int | None, Field(description="local/confined: open-file limit (default 256).")
        ] = None,
        processes: Annotated[
            int | None,
            Field(description="local/confined: process/thread limit of its user (RLIMIT_NPROC)."),
        ] = None,
        server_url: Annotated[
            str | None,
            Field(description="jupyter-server: the server's URL, like http://127.0.0.1:8888."),
        ] = None,
        token: Annotated[
            str | None, Field(description="jupyter-server: the server's token.")
        ] = None,
        kernel_name: Annotated[
            str | None,
            Field(description="jupyter-server: the kernelspec to start (default python3)."),
        ] = None,
    ) -> Annotated[CallToolResult, SandboxModel]:
        """Launch a sandbox: a separate place to run code that is not the notebook's kernel.

        It starts empty (no variables, its own working directory outside the workspace). Nothing runs in it until you call use_sandbox with its name: from then on execute_code runs there. Terminate it with terminate_sandbox when done; every sandbox costs a running kernel.
        """
        spec = manager.spec_for(
            sandbox_name,
            variant,
            timeout=timeout,
            memory_mb=memory_mb,
            cpu_seconds=cpu_seconds,
            open_files=open_files,
            processes=processes,
            server_url=server_url,
            token=token,
            kernel_name=kernel_name,
        )
        sandbox = await manager.launch(spec)
        described = describe(sandbox, manager.active_name)
        text = (
            f"Launched sandbox '{sandbox.name}' ({sandbox.variant}): {sandbox.where}. "
            f"Call use_sandbox(sandbox_name='{sandbox.name}') to run execute_code in it."
        )
        if described["caveats"]:
            text += " Note: " + " ".join(described["caveats"])
        return answer(described, text)

    @tool_handler("list_sandboxes")
    async def list_sandboxes() -> Annotated[CallToolResult, SandboxList]:
        """List the sandboxes this server launched, which one execute_code runs in (active), and the variants available."""
        for sandbox in manager.sandboxes:
            await sandbox.is_alive()
        active = manager.active_name
        listed = [describe(sandbox, active) for sandbox in manager.sandboxes]
        structured = SandboxList(
            sandboxes=[SandboxModel(**entry) for entry in listed],
            active=active,
            variants=manager.variants.names,
        ).model_dump()
        if not listed:
            text = "No sandboxes. Launch one with launch_sandbox."
        else:
            lines = [
                f"{'* ' if entry['active'] else '  '}{entry['sandbox_name']} ({entry['variant']}, {entry['state']}): {entry['where']}"
                for entry in listed
            ]
            text = "\n".join(lines) + (
                "" if active else "\nNone is selected: execute_code runs on the notebook's kernel."
            )
        return answer(structured, text)

    @tool_handler("use_sandbox")
    async def use_sandbox(
        sandbox_name: Annotated[
            str | None,
            Field(
                description="The sandbox execute_code should run in from now on; omit (null) to go back to the notebook's kernel."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, SandboxSelection]:
        """Select the sandbox execute_code runs in, or clear the selection (no name) to run on the notebook's kernel again.

        A sandbox that is gone cannot be selected. The selection is the server's, shared by every client.
        """
        previous, sandbox = await manager.select(sandbox_name)
        structured = SandboxSelection(
            active=manager.active_name,
            previous=previous,
            sandbox=SandboxModel(**describe(sandbox, manager.active_name)) if sandbox else None,
        ).model_dump()
        if sandbox is None:
            text = "No sandbox is selected: execute_code runs on the notebook's kernel."
        else:
            text = f"execute_code now runs in sandbox '{sandbox.name}' ({sandbox.variant}: {sandbox.where})."
        return answer(structured, text)

    @tool_handler("terminate_sandbox")
    async def terminate_sandbox(
        sandbox_name: SandboxName,
    ) -> Annotated[CallToolResult, SandboxTermination]:
        """Stop a sandbox and delete its directory; its variables and files are lost.

        Terminating one that is already gone succeeds and says so, so it is safe to retry. If it was selected, execute_code goes back to the notebook's kernel.
        """
        done = await manager.terminate(sandbox_name)
        structured = SandboxTermination(
            sandbox_name=done.sandbox_name,
            terminated=done.stopped,
            already_gone=done.already_gone,
            was_active=done.was_active,
            active=manager.active_name,
        ).model_dump()
        if done.stopped:
            text = f"Terminated sandbox '{sandbox_name}'."
        else:
            text = f"Sandbox '{sandbox_name}' was already gone ({done.reason or 'terminated'}); nothing left to stop."
        if done.was_active:
            text += " It was selected: execute_code runs on the notebook's kernel again."
        return answer(structured, text)

    return [
        ToolSpec(
            name="launch_sandbox",
            handler=launch_sandbox,
            title="Launch Sandbox",
            toolset=TOOLSET,
            annotations=LAUNCH_SANDBOX_ANNOTATIONS,
        ),
        ToolSpec(
            name="list_sandboxes",
            handler=list_sandboxes,
            title="List Sandboxes",
            toolset=TOOLSET,
            annotations=LIST_SANDBOXES_ANNOTATIONS,
        ),
        ToolSpec(
            name="use_sandbox",
            handler=use_sandbox,
            title="Use Sandbox",
            toolset=TOOLSET,
            annotations=USE_SANDBOX_ANNOTATIONS,
        ),
        ToolSpec(
            name="terminate_sandbox",
            handler=terminate_sandbox,
            title="Terminate Sandbox",
            toolset=TOOLSET,
            annotations=TERMINATE_SANDBOX_ANNOTATIONS,
        ),
    ]
