"""The environments a kernel can run in, found rather than configured.

A notebook belongs to a project, and the project's packages live in its own
Python environment, not in the server's. :class:`Environments` looks, at
every call (it costs a few ``stat``s), at

- the kernelspecs installed on the Jupyter paths (``python3`` among them: the
  server's own Python);
- the workspace's environments: each directory directly under the workspace
  root that holds a ``pyvenv.cfg`` (a virtualenv: ``.venv``, ``venv``,
  ``env``, a uv project's ``.venv``) or a ``conda-meta`` directory (a conda
  environment). Symlinked directories are not followed;
- the environment that launched the server (``VIRTUAL_ENV``, ``CONDA_PREFIX``,
  read by :mod:`jupyter_mcp_server._config`);
- ``--python PATH``, and ``--kernel NAME`` as the configured default.

Whether an environment can run a kernel (ipykernel present) is read off its
site-packages directories, without starting its interpreter; only an
interpreter outside any recognisable environment (a system Python named by a
kernelspec) is asked once, and the answer kept while the file is unchanged.

An environment without a kernelspec runs through one made on the fly
(:meth:`Environments.kernelspec_dir`), in the server's private runtime
directory (:mod:`.runtime`), never in the user's Jupyter paths. Every
Python kernel, whichever environment it runs in (one of these, the server's
own, ``--python``'s, an installed kernelspec's), runs with that environment
activated as a shell would (:func:`.activation.activated`: ``VIRTUAL_ENV`` or
``CONDA_PREFIX`` set, its ``bin`` first on ``PATH``), so ``!pip`` and
subprocesses in a cell find the environment's tools.

Which of them a notebook gets is :mod:`.kernel_choice`'s to decide.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jupyter_mcp_server._kernels.interpreters import (
    NotAnInterpreter,
    conda_python_version,
    environment_prefix,
    has_ipykernel,
    interpreter_in,
    probe_interpreter,
    read_pyvenv_cfg,
    same_directory,
    the_servers_prefix,
)

logger = logging.getLogger(__name__)

#: The kernelspec ipykernel installs everywhere: "some Python 3", not a particular environment.
GENERIC_PYTHON = "python3"
#: How many entries of the workspace root are looked at for environments.
MAX_ROOT_ENTRIES = 5000
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Environment:
    """Somewhere a kernel can run: an installed kernelspec, or a Python environment."""

    #: What to pass as ``kernel_name``; the kernelspec name a notebook's metadata gets.
    name: str
    #: ``kernelspec`` (installed on the Jupyter paths), ``virtualenv``, ``conda`` or ``python``
    #: (an interpreter outside any environment).
    kind: str
    language: str
    display_name: str
    #: Where it was found: ``jupyter`` (the Jupyter paths), ``workspace``, ``VIRTUAL_ENV``,
    #: ``CONDA_PREFIX``, ``--python``.
    found_in: tuple[str, ...]
    #: The Python interpreter it runs, where it is a Python one.
    interpreter: str | None = None
    #: The environment's directory (``sys.prefix``), where known.
    prefix: str | None = None
    python_version: str | None = None
    #: Whether ipykernel is installed there; None for a kernel that is not ipykernel.
    has_ipykernel: bool | None = None
    #: Whether a kernel can be started on it now.
    ready: bool = True
    #: Why it cannot, when it cannot.
    problem: str | None = None
    #: The server's own Python (installing into it is refused unless allowed).
    server_environment: bool = False
    #: Made by uv (``uv venv``), which installs with ``uv pip``.
    made_by_uv: bool = False
    #: The workspace-relative directory of a workspace environment.
    path: str | None = None
    #: The kernel provisioner an installed kernelspec names (``metadata.kernel_provisioner``)
    #: where it is not jupyter_client's local one: its kernel runs where that provisioner puts
    #: it (another host, a container, a cluster), so nothing of it is looked for here.
    provisioner: str | None = None

    @property
    def is_python(self) -> bool:
        return self.language.lower() == "python"

    @property
    def needs_a_kernelspec(self) -> bool:
        """Runs through a kernelspec made on the fly (it has none installed)."""
        return self.kind != "kernelspec"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "language": self.language,
            "display_name": self.display_name,
            "found_in": list(self.found_in),
            "interpreter": self.interpreter,
            "prefix": self.prefix,
            "python_version": self.python_version,
            "has_ipykernel": self.has_ipykernel,
            "ready": self.ready,
            "problem": self.problem,
            "server_environment": self.server_environment,
            "provisioner": self.provisioner,
        }

    def line(self) -> str:
        """One line for a model to read."""
        where = self.path or self.prefix or self.interpreter or ""
        version = f" {self.python_version}" if self.python_version else ""
        state = "ready" if self.ready else f"NOT READY: {self.problem}"
        own = ", the server's own Python" if self.server_environment else ""
        if self.provisioner:
            where = f"started by the kernel provisioner {self.provisioner!r}"
        return f"{self.name}: {self.language}{version}, {self.kind} ({', '.join(self.found_in)}{own}) {where} [{state}]"


# --- Discovery ------------------------------------------------------------------------


def safe_name(text: str) -> str:
    """A name a kernelspec may have (letters, digits, ``.``, ``_``, ``-``)."""
    return _SAFE_NAME.sub("-", text).strip("-").lower() or "env"


def _python_environment(
    prefix: Path,
    name: str,
    found_in: str,
    *,
    path: str | None = None,
    interpreter: Path | None = None,
) -> Environment:
    conda = (prefix / "conda-meta").is_dir() and not (prefix / "pyvenv.cfg").is_file()
    cfg = read_pyvenv_cfg(prefix)
    interpreter = interpreter or interpreter_in(prefix)
    version = (
        cfg.get("version_info")
        or cfg.get("version")
        or (conda_python_version(prefix) if conda else None)
    )
    own = same_directory(prefix, the_servers_prefix())
    if interpreter is None:
        return Environment(
            name=name,
            kind="conda" if conda else "virtualenv",
            language="python",
            display_name=f"Python ({name})",
            found_in=(found_in,),
            prefix=str(prefix),
            path=path,
            python_version=version,
            has_ipykernel=False,
            ready=False,
            problem=f"no Python interpreter in {prefix} (bin/python is missing)",
        )
    ipykernel = has_ipykernel(str(interpreter), prefix)
    return Environment(
        name=name,
        kind="conda" if conda else "virtualenv",
        language="python",
        display_name=f"Python {version or ''} ({name})".replace("  ", " "),
        found_in=(found_in,),
        interpreter=str(interpreter),
        prefix=str(prefix),
        python_version=version,
        has_ipykernel=ipykernel,
        ready=ipykernel,
        problem=None if ipykernel else "ipykernel is not installed in it",
        server_environment=own,
        made_by_uv="uv" in cfg,
        path=path,
    )


def workspace_environments(root: Path) -> list[Environment]:
    """The Python environments directly under the workspace root, by name."""
    found: list[Environment] = []
    try:
        with os.scandir(root) as entries:
            candidates = []
            for index, entry in enumerate(entries):
                if index >= MAX_ROOT_ENTRIES:
                    break
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        candidates.append(entry.name)
    except OSError:
        return found
    for name in sorted(candidates):
        prefix = root / name
        if (prefix / "pyvenv.cfg").is_file() or (prefix / "conda-meta").is_dir():
            found.append(_python_environment(prefix, safe_name(name), "workspace", path=name))
    return found


def _kernelspec_interpreter(argv: list[str]) -> str | None:
    """The interpreter an installed kernelspec runs, where it runs ipykernel or another Python kernel."""
    if not argv:
        return None
    first = argv[0]
    # jupyter_client runs "python", "python3" and "python3.X" with its own interpreter.
    if first in {
        "python",
        f"python{sys.version_info[0]}",
        "python{}.{}".format(*sys.version_info[:2]),
    }:
        return sys.executable
    if os.path.isabs(first):
        return first
    return shutil.which(first)


def _provisioner_elsewhere(spec: dict[str, Any]) -> str | None:
    """The kernel provisioner a kernelspec names, unless it is jupyter_client's local one (a
    process here, like a kernelspec that names none)."""
    metadata = spec.get("metadata") or {}
    named = (metadata.get("kernel_provisioner") or {}) if isinstance(metadata, dict) else {}
    name = named.get("provisioner_name") if isinstance(named, dict) else None
    return str(name) if name and name != "local-provisioner" else None


def kernelspec_manager(ipython_dir: str | None) -> Any:
    """A KernelSpecManager over the folders jupyter_client would search, given: left to
    itself it imports all of IPython (65 ms and 10 MiB of this process, before the first
    kernel starts) only to learn where ``~/.ipython`` is. Building one computes the Jupyter
    search path (most of a lookup's cost); its lookups still list the disk."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_core.paths import jupyter_path

    ipython_kernels = Path(ipython_dir or "~/.ipython").expanduser() / "kernels"
    return KernelSpecManager(kernel_dirs=[*jupyter_path("kernels"), str(ipython_kernels)])


def installed_kernelspecs(specs: Any) -> list[Environment]:
    """The kernelspecs on the Jupyter paths (`specs`: a KernelSpecManager), by name."""
    found: list[Environment] = []
    try:
        everything = specs.get_all_specs()
    except Exception:
        logger.warning("Listing the installed kernelspecs failed", exc_info=True)
        return found
    for name in sorted(everything):
        spec = everything[name].get("spec") or {}
        argv = [str(part) for part in spec.get("argv") or []]
        language = str(spec.get("language") or "")
        display = str(spec.get("display_name") or name)
        provisioner = _provisioner_elsewhere(spec)
        if provisioner is not None:
            # Its argv runs where the provisioner starts it: not an interpreter of this machine.
            found.append(
                Environment(
                    name=name,
                    kind="kernelspec",
                    language=language,
                    display_name=display,
                    found_in=("jupyter",),
                    provisioner=provisioner,
                )
            )
            continue
        runs_ipykernel = any("ipykernel" in part for part in argv)
        interpreter = _kernelspec_interpreter(argv)
        prefix = environment_prefix(interpreter) if interpreter else None
        ready, problem, ipykernel = True, None, None
        if interpreter is None:
            ready, problem = False, f"its program {argv[0] if argv else '(none)'!r} is not found"
        elif runs_ipykernel:
            ipykernel = has_ipykernel(interpreter, prefix)
            ready, problem = (
                ipykernel,
                None if ipykernel else f"ipykernel is not installed for {interpreter}",
            )
        version = read_pyvenv_cfg(prefix).get("version_info") if prefix else None
        found.append(
            Environment(
                name=name,
                kind="kernelspec",
                language=language,
                display_name=display,
                found_in=("jupyter",),
                interpreter=interpreter
                if (runs_ipykernel or language.lower() == "python")
                else None,
                prefix=str(prefix) if prefix else None,
                python_version=version,
                has_ipykernel=ipykernel,
                ready=ready,
                problem=problem,
                server_environment=bool(
                    interpreter
                    and (
                        interpreter == sys.executable
                        or same_directory(prefix, the_servers_prefix())
                    )
                ),
            )
        )
    return found


@dataclass(frozen=True)
class Sources:
    """Where environments are looked for besides the Jupyter paths (from the configuration)."""

    workspace_root: Path
    #: ``--python``: an interpreter's path.
    python: str | None = None
    #: ``--kernel``: a kernelspec or environment name.
    kernel: str | None = None
    virtual_env: str | None = None
    conda_prefix: str | None = None
    #: ``IPYTHONDIR``, where IPython's own kernelspecs folder is.
    ipython_dir: str | None = None


@dataclass
class Environments:
    """Every environment a local kernel can run in, looked up at each call."""

    sources: Sources
    #: Where kernelspecs made on the fly are written (the server's private runtime directory),
    #: asked for when first needed.
    kernels_dir: Callable[[], Path] | None = None
    _made: dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def specs(self) -> Any:
        """The KernelSpecManager (jupyter_client's) for the installed kernelspecs, built when
        first needed: building it imports jupyter_client, which the handshake need not wait for."""
        return kernelspec_manager(self.sources.ipython_dir)

    def found(self) -> list[Environment]:
        """Installed kernelspecs, then the workspace's environments, then the launcher's and
        ``--python``'s; one entry per environment directory, names unique."""
        listed: list[Environment] = installed_kernelspecs(self.specs)
        taken = {env.name for env in listed}
        prefixes: list[Environment] = []

        def add(env: Environment, prefix_on_clash: str) -> None:
            for index, known in enumerate(listed):
                if known.kind != "kernelspec" and same_directory(known.prefix, env.prefix):
                    listed[index] = replace(known, found_in=known.found_in + env.found_in)
                    return
            name = env.name
            if name in taken:
                name = f"{prefix_on_clash}-{name}"
            base, number = name, 2
            while name in taken:
                name, number = f"{base}-{number}", number + 1
            taken.add(name)
            listed.append(
                replace(
                    env,
                    name=name,
                    display_name=env.display_name.replace(f"({env.name})", f"({name})"),
                )
            )
            prefixes.append(env)

        for env in workspace_environments(self.sources.workspace_root):
            add(env, "workspace")
        launched = (
            ("VIRTUAL_ENV", self.sources.virtual_env),
            ("CONDA_PREFIX", self.sources.conda_prefix),
        )
        for variable, value in launched:
            if not value or not Path(value).is_dir():
                continue
            prefix = Path(value)
            if same_directory(prefix, the_servers_prefix()):
                continue  # the server's own: the python3 kernelspec
            add(_python_environment(prefix, safe_name(prefix.name), variable), "launcher")
        if self.sources.python:
            add(self._configured_python(self.sources.python), "python")
        return listed

    def _configured_python(self, interpreter: str) -> Environment:
        prefix = environment_prefix(interpreter)
        if prefix is not None:
            return _python_environment(
                prefix, safe_name(prefix.name), "--python", interpreter=Path(interpreter)
            )
        try:
            facts = probe_interpreter(interpreter)
        except NotAnInterpreter as error:
            return Environment(
                name="python",
                kind="python",
                language="python",
                display_name="Python (--python)",
                found_in=("--python",),
                interpreter=interpreter,
                has_ipykernel=False,
                ready=False,
                problem=str(error),
            )
        return Environment(
            name=safe_name(Path(interpreter).name),
            kind="python",
            language="python",
            display_name=f"Python {facts.version} ({interpreter})",
            found_in=("--python",),
            interpreter=interpreter,
            prefix=facts.prefix,
            python_version=facts.version,
            has_ipykernel=facts.has_ipykernel,
            ready=facts.has_ipykernel,
            problem=None if facts.has_ipykernel else "ipykernel is not installed in it",
            server_environment=same_directory(facts.prefix, the_servers_prefix()),
        )

    def find(self, name: str, listed: list[Environment] | None = None) -> Environment | None:
        for env in listed if listed is not None else self.found():
            if env.name == name:
                return env
        return None

    # --- Kernelspecs made on the fly ------------------------------------------------------

    def kernelspec_dir(self, env: Environment) -> Path:
        """A directory holding ``<name>/kernel.json`` for `env`, written when it changed."""
        if self.kernels_dir is None:
            raise RuntimeError("no directory for kernelspecs made on the fly")
        assert env.interpreter is not None
        directory = self.kernels_dir()
        spec = made_kernelspec(env)
        text = json.dumps(spec, indent=1)
        if self._made.get(env.name) != text:
            target = directory / env.name
            target.mkdir(mode=0o700, exist_ok=True)
            (target / "kernel.json").write_text(text, encoding="utf-8")
            self._made[env.name] = text
        return directory


def made_kernelspec(env: Environment) -> dict[str, Any]:
    """The kernelspec of a Python environment that has none: ipykernel on its interpreter
    (activated when it starts, :func:`.activation.activated`, as every Python kernel is)."""
    assert env.interpreter is not None
    return {
        "argv": [env.interpreter, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": env.display_name,
        "language": "python",
        "metadata": {
            "jupyter_mcp_server": {"environment": env.name, "found_in": list(env.found_in)}
        },
    }


def find_uv() -> str | None:
    """uv, on the PATH or beside the server's interpreter (``pip install uv`` puts it there)."""
    beside = Path(sys.executable).parent / ("uv.exe" if os.name == "nt" else "uv")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("uv")
