"""Which kernel a notebook gets, and why, in one line a caller can read.

:func:`choose` takes a notebook's metadata and the environments and
kernelspecs found (:mod:`.environments`), and decides in a fixed order: the
kernelspec the metadata names, the workspace's only environment, ``--kernel``,
``--python``, the environment that launched the server, the server's own
Python. A notebook in a language no installed kernel runs is refused with
what is installed and how to install one (:func:`no_kernel_for`), and an
environment without ipykernel with the command that fixes it
(:func:`not_ready`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_mcp_server._errors import NOT_FOUND, UNSUPPORTED, ToolFailure
from jupyter_mcp_server._kernels.environments import GENERIC_PYTHON, Environment


@dataclass(frozen=True)
class KernelChoice:
    """The kernel a notebook gets, and why, in words a caller can read."""

    kernel_name: str
    reason: str


def choose(
    metadata: Mapping[str, Any] | None,
    listed: list[Environment],
    *,
    configured_kernel: str | None = None,
) -> KernelChoice:
    """A notebook's kernel: the kernelspec its metadata names when that exists (``python3``,
    which every Jupyter names, only when nothing more particular does); else the workspace's
    environment when there is exactly one; else ``--kernel``; else ``--python``; else the
    environment that launched the server; else the server's own Python.

    A notebook in another language whose kernelspec is not installed runs on an installed
    kernel of that language, or is refused (``not_found``) naming what is installed.
    """
    names = {env.name for env in listed}
    spec = dict((metadata or {}).get("kernelspec") or {})
    named = str(spec.get("name") or "")
    said = ""
    if named and named in names and named != GENERIC_PYTHON:
        return KernelChoice(named, f"the notebook's metadata names '{named}'")
    if named and named not in names:
        language = str(
            spec.get("language") or ((metadata or {}).get("language_info") or {}).get("name") or ""
        )
        if language and language.lower() != "python":
            same = [
                env.name for env in listed if env.language.lower() == language.lower() and env.ready
            ]
            if same:
                return KernelChoice(
                    same[0],
                    f"the notebook names '{named}', which is not installed; '{same[0]}' runs its language, {language}",
                )
            raise no_kernel_for(language, named, listed)
        said = f"the notebook names '{named}', which is not installed here; "
    elif named == GENERIC_PYTHON:
        said = "the notebook names the generic python3; "
    workspace = [env for env in listed if "workspace" in env.found_in and env.is_python]
    if len(workspace) == 1:
        return KernelChoice(
            workspace[0].name,
            f"{said}'{workspace[0].name}' is the workspace's only Python environment",
        )
    several = (
        f"; the workspace has {len(workspace)} environments ({', '.join(env.name for env in workspace)}): "
        "pass kernel_name to pick one"
        if workspace
        else ""
    )
    if configured_kernel and configured_kernel in names:
        return KernelChoice(
            configured_kernel,
            f"{said}--kernel {configured_kernel} is the configured default{several}",
        )
    for source in ("--python", "VIRTUAL_ENV", "CONDA_PREFIX"):
        for env in listed:
            if source in env.found_in and env.is_python:
                why = (
                    "--python names it"
                    if source == "--python"
                    else f"the server was launched in it ({source})"
                )
                return KernelChoice(env.name, f"{said}'{env.name}': {why}{several}")
    own = (
        ", the server's own Python"
        if any(e.name == GENERIC_PYTHON and e.server_environment for e in listed)
        else ""
    )
    if named == GENERIC_PYTHON:
        return KernelChoice(GENERIC_PYTHON, f"the notebook's metadata names python3{own}{several}")
    if GENERIC_PYTHON in names or not listed:
        return KernelChoice(
            GENERIC_PYTHON,
            f"{said}python3{own} (nothing more particular in the workspace or the configuration){several}",
        )
    # A kernel of this machine before one a provisioner starts elsewhere, unless named.
    pythons = sorted(
        (env for env in listed if env.is_python and env.ready),
        key=lambda env: bool(env.provisioner),
    )
    python = pythons[0].name if pythons else listed[0].name
    return KernelChoice(python, f"{said}'{python}', the first Python kernelspec installed{several}")


def no_kernel_for(language: str, named: str, listed: list[Environment]) -> ToolFailure:
    installed = ", ".join(f"{env.name} ({env.language or '?'})" for env in listed) or "none"
    hint = (
        "pip install bash_kernel && python -m bash_kernel.install --sys-prefix"
        if language.lower() == "bash"
        else f"install a {language} kernel (its kernelspec must be on the Jupyter paths)"
    )
    return ToolFailure(
        NOT_FOUND,
        f"The notebook runs {language} (kernelspec '{named}'), and no installed kernel runs {language}. "
        f"Installed: {installed}. To run it, {hint}; or pass kernel_name to run it on one of these.",
        language=language,
        kernelspec=named,
        known=[env.name for env in listed],
    )


def not_ready(env: Environment, command: str) -> ToolFailure:
    """An environment that cannot run a kernel: said with the command that fixes it
    (``packages.fix_command``)."""
    if env.interpreter is None or env.has_ipykernel is None:
        return ToolFailure(
            UNSUPPORTED,
            f"The kernel '{env.name}' cannot start: {env.problem}.",
            environment=env.name,
        )
    return ToolFailure(
        UNSUPPORTED,
        f"The environment '{env.name}' ({env.prefix or env.interpreter}) cannot run a kernel: ipykernel is not "
        f"installed in it. Install it with:\n    {command}\nor call install_packages(packages=['ipykernel'], "
        f"environment='{env.name}') (the environments toolset); or pass kernel_name='{GENERIC_PYTHON}' to use the "
        "server's own Python.",
        environment=env.name,
        interpreter=env.interpreter,
        fix_command=command,
    )
