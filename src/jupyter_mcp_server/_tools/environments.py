"""The environments toolset (opt-in): packages in the environment a notebook's kernel runs in.

``list_kernels`` (a default tool) already lists the environments and which
one a new notebook gets; these tools change and read what is installed in
one: ``install_packages`` and ``list_packages``. The environment is the one
the notebook's kernel runs in (or would, once started), or one named by
``environment``. Installing never restarts a kernel: the result says whether
one had imported a module the install changed, so a restart is needed for
the new version to take effect.
"""

from __future__ import annotations

import ast
import fnmatch
import shlex
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._calls.approvals import INSTALL_PACKAGES, approve
from jupyter_mcp_server._errors import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    NOT_PERMITTED,
    UNSUPPORTED,
    ToolFailure,
)
from jupyter_mcp_server._kernels.environments import Environment
from jupyter_mcp_server._kernels.introspection import ask
from jupyter_mcp_server._kernels.kernel import Kernel
from jupyter_mcp_server._kernels.packages import (
    checked_packages,
    installed,
    installed_by_asking,
    installer_for,
    normalized,
    run_installer,
    top_level_modules,
)
from jupyter_mcp_server._schemas import kernel_models
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import NotebookName
from jupyter_mcp_server._tool_calls.listening import output_listener
from jupyter_mcp_server._tool_calls.results import answer, tool_handler

ENVIRONMENTS_TOOLSET = "environments"
ANY_SOURCE = "packages.any-source"
SERVER_ENVIRONMENT = "packages.server-environment"
#: What a silent execution asks a Python kernel after an install: the modules it has
#: imported, and its import caches emptied, so the next import finds what was installed.
MODULES_EXPRESSION = (
    "__import__('importlib').invalidate_caches() or sorted(__import__('sys').modules)"
)

EnvironmentName = Annotated[
    str | None,
    Field(
        description="An environment or kernelspec name from list_kernels; default: the notebook's kernel's."
    ),
]


async def target(
    ctx: Context | None, notebook_name: str | None, environment: str | None
) -> tuple[ServerState, Environment, Kernel | None, str | None]:
    """The environment asked about, and the notebook's kernel when it runs there."""
    server = state_of(ctx)
    backend = server.local_backend
    listed = backend.listed()
    kernel: Kernel | None = None
    path: str | None = None
    if environment is None or notebook_name is not None:
        path = notebook_path(ctx, notebook_name)
        kernel_id = server.kernels.kernel_id_of(path)
        kernel = server.kernels.kernels_by_id().get(kernel_id) if kernel_id else None
    if environment is None:
        if kernel is not None:
            if kernel.origin != backend.origin() or server.kernels.backend is not backend:
                raise ToolFailure(
                    UNSUPPORTED,
                    f"The kernel of '{path}' runs {kernel.origin}, not in an environment on this machine. Install "
                    "packages there with execute_code, e.g. '%pip install NAME'.",
                )
            environment = kernel.kernel_name
        else:
            assert path is not None
            view = await server.store.read(path)
            environment = server.kernels.choose(view.notebook.get("metadata")).kernel_name
    env = next((each for each in listed if each.name == environment), None)
    if env is None:
        known = [each.name for each in listed]
        raise ToolFailure(
            NOT_FOUND,
            f"No environment named '{environment}'. Known: {', '.join(known) or 'none'} (list_kernels describes them).",
            known=known,
        )
    if kernel is not None and kernel.kernel_name != env.name:
        kernel = None  # the notebook runs elsewhere: its kernel is not affected
    return server, env, kernel, path


async def imported_modules(kernel: Kernel) -> set[str] | None:
    """The modules a Python kernel has imported (its import caches emptied on the way), asked
    without running a cell; None when it cannot be asked now (busy, gone, not Python)."""
    content = {
        "code": "",
        "silent": True,
        "store_history": False,
        "user_expressions": {"modules": MODULES_EXPRESSION},
        "allow_stdin": False,
        "stop_on_error": False,
    }
    try:
        if not await kernel.is_alive():
            return None
        reply = await ask(kernel, "execute_request", content, where=f"kernel {kernel.kernel_id}")
        answered = (reply.get("user_expressions") or {}).get("modules") or {}
        if answered.get("status") != "ok":
            return None
        return set(ast.literal_eval(answered["data"]["text/plain"]))
    except (ToolFailure, KeyError, ValueError, SyntaxError, TypeError):
        return None


def _timeout(server: ServerState, timeout: float | None) -> float:
    config = server.config
    if timeout is None:
        return min(config.install_timeout, config.max_timeout)
    if timeout <= 0:
        raise ToolFailure(INVALID_ARGUMENT, f"timeout must be positive, not {timeout}.")
    if timeout > config.max_timeout:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"timeout {timeout:g}s is above this server's --max-timeout of {config.max_timeout:g}s.",
            max_timeout=config.max_timeout,
        )
    return timeout


@tool_handler("install_packages")
async def install_packages(
    packages: Annotated[
        list[str],
        Field(
            description="Requirement specifiers, one per entry: 'pandas', 'pandas>=2', 'requests[socks]==2.32.3'."
        ),
    ],
    notebook_name: NotebookName = None,
    environment: EnvironmentName = None,
    timeout: Annotated[
        float | None,
        Field(description="Seconds before the installer is stopped; default: the server's."),
    ] = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.PackagesInstalled]:
    """Install Python packages into the environment a notebook's kernel runs in (or a named environment), with that environment's installer (uv, pip, or conda).

    The kernel keeps running; the next import finds a newly installed package without a restart. The result lists what was installed at which version, and whether the kernel had already imported a module the install changed (then restart_notebook for the new version to take effect; nothing is restarted for you). Prefer this to '!pip install' in a cell: it installs where the kernel runs, validates the names, and is bounded by a timeout.
    """
    server, env, kernel, path = await target(ctx, notebook_name, environment)
    if env.interpreter is None:
        raise ToolFailure(
            UNSUPPORTED,
            f"'{env.name}' runs {env.language}, not Python: it has no Python packages to install.",
        )
    if env.server_environment and not server.capabilities.enabled(SERVER_ENVIRONMENT):
        raise ToolFailure(
            NOT_PERMITTED,
            f"'{env.name}' is the server's own Python ({env.prefix or env.interpreter}): a package installed there can "
            "upgrade or break what the server itself runs on, so it is refused. Run the notebook on an environment of "
            "the workspace instead (list_kernels shows them; `uv venv` or `python -m venv .venv` makes one, then "
            f"install_packages(packages=['ipykernel'], environment='.venv')), or ask the person running the server to "
            f"enable the {SERVER_ENVIRONMENT} capability.",
            environment=env.name,
            capability=SERVER_ENVIRONMENT,
        )
    arguments, names = checked_packages(
        packages,
        any_source=server.capabilities.enabled(ANY_SOURCE),
        workspace_root=server.workspace.root,
    )
    seconds = _timeout(server, timeout)
    installer = installer_for(env, server.config.installer)
    before = installed(env)
    listener = output_listener()

    def on_line(line: str) -> None:
        if listener is not None:
            listener({"output_type": "stream", "name": "stdout", "text": line})

    command = installer.command(arguments)
    # Asked once the request is known to be valid, before anything runs: on 2026-07-28 this
    # call is made again from the start with the person's answer.
    await approve(
        ctx,
        INSTALL_PACKAGES,
        f"Install {', '.join(packages)} into the environment '{env.name}' ({env.prefix or env.interpreter}) "
        f"with {installer.name}"
        + (f", which the kernel of '{path}' runs in" if kernel is not None else "")
        + f": `{shlex.join(command)}`.",
    )
    ran = await run_installer(command, timeout=seconds, on_line=on_line, cwd=server.workspace.root)
    if ran.returncode != 0:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{installer.name} could not install {', '.join(packages)} into '{env.name}' (exit status {ran.returncode}); "
            f"nothing changed that it did not finish. Its last output:\n{ran.output.strip() or '(none)'}",
            environment=env.name,
            returncode=ran.returncode,
            output=ran.output,
        )
    after = installed(env)
    changes = [
        kernel_models.InstalledPackage(
            name=name, version=version, previous_version=before[key][1] if key in before else None
        )
        for key, (name, version) in sorted(after.items())
        if before.get(key, (None, None))[1] != version
    ]
    removed = sorted(before[key][0] for key in before.keys() - after.keys())
    stale: list[str] = []
    needs_restart: bool | None = None
    if kernel is not None:
        modules = await imported_modules(kernel)
        if modules is not None:
            for change in changes:
                if change.previous_version is not None:
                    stale.extend(m for m in top_level_modules(env, change.name) if m in modules)
            needs_restart = bool(stale)
    result = kernel_models.PackagesInstalled(
        environment=env.name,
        interpreter=env.interpreter,
        installer=installer.name,
        command=command,
        installed=changes,
        removed=removed,
        already_present=sorted(
            name
            for name in names
            if name in after and not any(normalized(c.name) == name for c in changes)
        ),
        kernel_id=kernel.kernel_id if kernel else None,
        needs_restart=needs_restart,
        stale_modules=sorted(set(stale)),
        seconds=round(ran.seconds, 2),
    )
    return answer(result.model_dump(), _said(result, path))


def _said(result: kernel_models.PackagesInstalled, path: str | None) -> str:
    def version(change: kernel_models.InstalledPackage) -> str:
        return f"{change.name} {change.version}" + (
            f" (was {change.previous_version})" if change.previous_version else " (new)"
        )

    lines = [
        f"Installed into '{result.environment}' with {result.installer} in {result.seconds:g} s: "
        + (", ".join(version(change) for change in result.installed) or "nothing new")
        + "."
    ]
    if result.already_present:
        lines.append(f"Already there, unchanged: {', '.join(result.already_present)}.")
    if result.removed:
        lines.append(f"Removed: {', '.join(result.removed)}.")
    if result.needs_restart:
        lines.append(
            f"The kernel of '{path}' had already imported {', '.join(result.stale_modules)}, which changed: it still runs "
            "the old version. Call restart_notebook for the new one to take effect (its variables will be gone)."
        )
    elif result.needs_restart is False:
        lines.append(
            f"The kernel of '{path}' keeps running and can import them now: no restart needed."
        )
    elif result.kernel_id is None:
        lines.append("No running kernel of this environment was affected.")
    else:
        lines.append(
            "Whether its kernel had imported a changed module could not be asked (it is busy); if so, restart it."
        )
    return "\n".join(lines)


@tool_handler("list_packages")
async def list_packages(
    notebook_name: NotebookName = None,
    environment: EnvironmentName = None,
    pattern: Annotated[
        str,
        Field(description="Only names matching this glob, case-insensitive: 'pandas', 'jupyter*'."),
    ] = "",
    ctx: Context | None = None,
) -> Annotated[CallToolResult, kernel_models.PackageList]:
    """List the Python packages (names and versions) installed in the environment a notebook's kernel runs in, or in a named environment."""
    _, env, _, _ = await target(ctx, notebook_name, environment)
    if env.interpreter is None:
        raise ToolFailure(
            UNSUPPORTED,
            f"'{env.name}' runs {env.language}, not Python: it has no Python packages to list.",
        )
    found: dict[str, tuple[str, str]] = installed(env) or await installed_by_asking(env.interpreter)
    matching: list[Any] = [
        kernel_models.PackageEntry(name=name, version=version)
        for _, (name, version) in sorted(found.items())
        if not pattern
        or fnmatch.fnmatch(name.lower(), pattern.lower())
        or fnmatch.fnmatch(normalized(name), pattern.lower())
    ]
    result = kernel_models.PackageList(
        environment=env.name, interpreter=env.interpreter, packages=matching, total=len(found)
    )
    lines = [
        f"'{env.name}' ({env.interpreter}): {len(matching)} of {len(found)} packages"
        + (f" match {pattern!r}" if pattern else "")
    ]
    lines.extend(f"{entry.name}=={entry.version}" for entry in matching)
    return answer(result.model_dump(), "\n".join(lines))
