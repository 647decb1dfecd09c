"""`confined`: the local variant's kernel, under bubblewrap.

bubblewrap (``bwrap``, Debian's ``bubblewrap`` package) runs the kernel in
new namespaces: no network (only its own loopback), the system mounted
read-only, the workspace, ``/root``, ``/home``, ``/tmp`` and ``/run`` hidden,
no capabilities, and only the sandbox's own directory writable. The server
still talks to it, because the kernel listens on unix sockets in that
directory rather than on TCP. Where ``bwrap`` is missing or cannot create
namespaces (some containers), launching says exactly that.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from jupyter_mcp_sandboxes.directory import SandboxDirectory
from jupyter_mcp_sandboxes.kernel_process import (
    ipykernel_command,
    launcher_command,
    start_kernel_sandbox,
)
from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_sandboxes.variant import LaunchContext, SandboxVariant
from jupyter_mcp_sandboxes.variants.local import LIMIT_OPTIONS
from jupyter_mcp_server.api import (
    UNSUPPORTED,
    ToolFailure,
)

#: Hidden behind an empty, read-only tmpfs (when they exist): other users'
#: files, the server's secrets, other sandboxes' directories.
HIDDEN = ("/tmp", "/var/tmp", "/run", "/root", "/home")


@functools.cache
def probe(bwrap: str) -> str | None:
    """None when `bwrap` can make the namespaces a sandbox needs here; else what it said."""
    try:
        done = subprocess.run(
            [
                bwrap,
                "--unshare-all",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "true",
            ],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"running {bwrap} failed: {error}"
    if done.returncode != 0:
        return f"{bwrap} cannot create the namespaces a sandbox needs here: {(done.stderr or done.stdout).strip() or f'exit status {done.returncode}'}"
    return None


def python_paths() -> list[str]:
    """What the kernel's interpreter needs visible, even where it lives in a hidden directory."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates.add(str(Path(sys.executable).resolve().parent.parent))
    return sorted(path for path in candidates if os.path.isdir(path))


def bwrap_arguments(directory: SandboxDirectory, workspace_root: Path) -> list[str]:
    hidden = [path for path in HIDDEN if os.path.isdir(path)]
    workspace = str(workspace_root.resolve())
    if workspace != "/" and workspace not in hidden:
        hidden.append(workspace)
    arguments = [
        "--die-with-parent",
        "--unshare-all",
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if os.geteuid() == 0:
        arguments += ["--cap-drop", "ALL"]
    for path in hidden:
        arguments += ["--tmpfs", path]
    for path in python_paths():
        arguments += ["--ro-bind", path, path]
    arguments += [
        "--ro-bind",
        str(directory.kernel),
        str(directory.kernel),
        "--bind",
        str(directory.run),
        str(directory.run),
        "--bind",
        str(directory.work),
        str(directory.work),
    ]
    for path in hidden:
        arguments += ["--remount-ro", path]
    # In its pid namespace the kernel's parent is bubblewrap's pid 1, which
    # ipykernel's parent poller reads as "the server exited"; --die-with-parent
    # is what ends it with the server instead.
    arguments += ["--unsetenv", "JPY_PARENT_PID", "--chdir", str(directory.work)]
    return arguments


class ConfinedVariant(SandboxVariant):
    name = "confined"
    description = (
        "The local variant's kernel under bubblewrap: no network, the system read-only, the workspace "
        "and home directories hidden, no capabilities, only the sandbox's own directory writable; with "
        "the same memory, CPU-time, open-file and process limits."
    )
    options = LIMIT_OPTIONS

    def bwrap(self) -> str | None:
        return shutil.which("bwrap")

    def unavailable(self) -> str | None:
        if not sys.platform.startswith("linux"):
            return (
                f"the confined variant needs Linux namespaces (bubblewrap); this is {sys.platform}"
            )
        bwrap = self.bwrap()
        if bwrap is None:
            return (
                "bubblewrap is not installed (no 'bwrap' on PATH); install it (Debian/Ubuntu: "
                "apt-get install bubblewrap) and restart the server"
            )
        return probe(bwrap)

    async def launch(self, spec: SandboxSpec, context: LaunchContext) -> Sandbox:
        missing = self.unavailable()
        bwrap = self.bwrap()
        if missing is not None or bwrap is None:
            raise ToolFailure(
                UNSUPPORTED, f"The confined variant cannot run here: {missing}.", variant=self.name
            )
        limits = spec.limits()
        directory = SandboxDirectory.create(spec.name, context.sandbox_root, context.workspace_root)
        argv = [
            *launcher_command(limits),
            bwrap,
            *bwrap_arguments(directory, context.workspace_root),
            "--",
            *ipykernel_command(),
        ]
        # SIGINT to the process group would reach bubblewrap too and end the
        # sandbox; the kernel interrupts itself when asked on its control channel.
        return await start_kernel_sandbox(
            spec, directory, argv, limits=limits, confined=True, interrupt_mode="message"
        )
