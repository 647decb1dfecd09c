"""`local`: a separate ipykernel process with its own directory, environment and limits.

The default variant. It keeps the sandbox's code out of the server's
process and out of the notebooks' kernels, off the workspace (its working
directory and HOME are a private directory elsewhere), away from the
server's environment (none of its variables are passed on), and under
memory, CPU-time, open-file and process limits. It is separation, not
confinement: the kernel runs as the server's user and can read what that
user can. For a read-only system and no network, use `confined`.
"""

from __future__ import annotations

import sys

from jupyter_mcp_sandboxes.directory import SandboxDirectory
from jupyter_mcp_sandboxes.kernel_process import (
    ipykernel_command,
    launcher_command,
    start_kernel_sandbox,
)
from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_sandboxes.variant import LaunchContext, SandboxVariant

LIMIT_OPTIONS = frozenset({"memory_mb", "cpu_seconds", "open_files", "processes"})


class LocalVariant(SandboxVariant):
    name = "local"
    description = (
        "A separate Python kernel process per sandbox, with its own working directory outside the "
        "workspace, an environment of its own (none of the server's variables) and memory, CPU-time, "
        "open-file and process limits. Separation, not confinement: it runs as the server's user."
    )
    options = LIMIT_OPTIONS

    def unavailable(self) -> str | None:
        if not sys.platform.startswith(("linux", "darwin", "freebsd")):
            return f"the local variant needs a POSIX system with resource limits; this is {sys.platform}"
        return None

    async def launch(self, spec: SandboxSpec, context: LaunchContext) -> Sandbox:
        limits = spec.limits()
        directory = SandboxDirectory.create(spec.name, context.sandbox_root, context.workspace_root)
        argv = [*launcher_command(limits), *ipykernel_command()]
        return await start_kernel_sandbox(spec, directory, argv, limits=limits, confined=False)
