"""The output schemas of the four sandbox tools.

Each tool publishes one of these as its ``outputSchema`` and answers
``structuredContent`` matching it, like the server's own tools.
"""

from __future__ import annotations

from pydantic import Field

from jupyter_mcp_server.api import (
    Result,
)


class SandboxLimits(Result):
    memory_mb: int = Field(
        description="Address-space limit of the kernel process, MiB (RLIMIT_AS)."
    )
    cpu_seconds: int = Field(
        description="CPU time the kernel may use in its lifetime (RLIMIT_CPU); past it, it is killed."
    )
    open_files: int = Field(description="Open files per process (RLIMIT_NOFILE).")
    processes: int = Field(description="Processes and threads of the kernel's user (RLIMIT_NPROC).")


class SandboxModel(Result):
    sandbox_name: str
    variant: str
    state: str = Field(description="running, or gone (its kernel exited; it is never used again).")
    where: str = Field(description="Where its code runs, in words.")
    kernel_id: str
    active: bool = Field(
        description="Whether execute_code runs here now (use_sandbox selected it)."
    )
    busy: bool = Field(description="Whether code is running in it now.")
    ephemeral: bool = Field(
        description="Started for a notebook's kernel rather than by launch_sandbox."
    )
    started: str = Field(description="When it was launched, UTC.")
    pid: int | None = Field(
        default=None, description="Its process on this machine, for local and confined."
    )
    directory: str | None = Field(
        default=None, description="Its private working directory (and HOME), outside the workspace."
    )
    limits: SandboxLimits | None = None
    server_url: str | None = Field(
        default=None, description="The Jupyter Server it runs on, for jupyter-server."
    )
    caveats: list[str] = Field(
        default_factory=list, description="What this sandbox does not protect against here."
    )


class SandboxList(Result):
    sandboxes: list[SandboxModel]
    active: str | None = Field(
        description="The selected sandbox's name, or null when execute_code runs on the notebook's kernel."
    )
    variants: list[str] = Field(description="The variants launch_sandbox accepts here.")


class SandboxSelection(Result):
    active: str | None = Field(
        description="The sandbox execute_code now runs in; null: the notebook's kernel."
    )
    previous: str | None = Field(description="The one selected before this call.")
    sandbox: SandboxModel | None = None


class SandboxTermination(Result):
    sandbox_name: str
    terminated: bool = Field(description="True: this call stopped it. False: it was already gone.")
    already_gone: bool
    was_active: bool = Field(
        description="It was selected; execute_code now runs on the notebook's kernel."
    )
    active: str | None
