"""Packages in an environment: which installer, what may be asked, installing, listing.

An environment is installed into with the installer it is used with: ``uv
pip`` where uv is found (on the PATH or beside the server's interpreter),
else the environment's own ``pip``; conda's own installer for a conda
environment where ``conda`` (or ``mamba``) is found. ``JUPYTER_MCP_INSTALLER``
can pin one.

What a caller asks for is checked before anything runs and passed as
arguments, never through a shell: a package is a requirement specifier
(``pandas``, ``pandas>=2``, ``requests[socks]==2.32.3``), and options, URLs
and paths are refused unless the ``packages.any-source`` capability allows
them. The installer runs in a process group of its own, bounded by a
timeout (the whole group is killed then), its output heard line by line.

What is installed is read off the environment's ``*.dist-info`` directories,
without starting its interpreter.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jupyter_mcp_server._errors import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    TIMEOUT,
    UNSUPPORTED,
    ToolFailure,
)
from jupyter_mcp_server._kernels.environments import Environment, find_uv
from jupyter_mcp_server._kernels.interpreters import has_pip, site_packages

#: The most packages one call installs.
MAX_PACKAGES = 50
MAX_SPEC_LENGTH = 200
#: Characters of the installer's output a result or an error keeps (its end).
OUTPUT_TAIL = 4000
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_VERSION = r"[A-Za-z0-9.*+!_-]+"
_OPERATOR = r"(?:===|==|!=|~=|<=|>=|<|>)"
#: A requirement specifier without a URL or an environment marker: name, extras, versions.
_SPECIFIER = re.compile(
    rf"(?P<name>{_NAME})\s*(?:\[\s*{_NAME}(?:\s*,\s*{_NAME})*\s*\])?"
    rf"\s*(?:{_OPERATOR}\s*{_VERSION}(?:\s*,\s*{_OPERATOR}\s*{_VERSION})*)?"
)
_DIST_INFO = re.compile(r"(?P<name>.+?)-(?P<version>[^-]+?)\.(?:dist-info|egg-info)")


def normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- Which installer ----------------------------------------------------------------


def _conda() -> str | None:
    for name in ("conda", "mamba", "micromamba"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass(frozen=True)
class Installer:
    """The command that installs into one environment, up to the packages."""

    name: str
    argv: tuple[str, ...]

    def command(self, packages: list[str]) -> list[str]:
        return [*self.argv, *packages]


def installer_for(env: Environment, setting: str = "auto") -> Installer:
    """The installer `env` is installed into with (`setting`: ``JUPYTER_MCP_INSTALLER``);
    ``unsupported`` where none can be."""
    if env.interpreter is None:
        raise ToolFailure(
            UNSUPPORTED,
            f"'{env.name}' is not a Python environment (it runs {env.language or 'an unknown language'}): "
            "packages cannot be installed into it from here.",
            environment=env.name,
        )
    prefix = Path(env.prefix) if env.prefix else None
    if env.kind == "conda" and setting in ("auto", "conda") and prefix is not None:
        conda = _conda()
        if conda is not None:
            return Installer("conda", (conda, "install", "--yes", "--prefix", str(prefix)))
    if setting == "conda":
        raise ToolFailure(
            UNSUPPORTED,
            f"JUPYTER_MCP_INSTALLER=conda, but {'conda is not found' if env.kind == 'conda' else f'{env.name} is not a conda environment'}.",
            environment=env.name,
        )
    uv = find_uv() if setting in ("auto", "uv") else None
    if uv is not None:
        return Installer("uv", (uv, "pip", "install", "--python", env.interpreter))
    if setting == "uv":
        raise ToolFailure(
            UNSUPPORTED, "JUPYTER_MCP_INSTALLER=uv, but uv is not found (pip install uv)."
        )
    if prefix is not None and not has_pip(prefix) and site_packages(prefix):
        raise ToolFailure(
            UNSUPPORTED,
            f"'{env.name}' has no pip, and uv is not found. Add pip with `{shlex.quote(env.interpreter)} -m ensurepip`, "
            "or install uv (pip install uv) where the server can find it.",
            environment=env.name,
        )
    return Installer(
        "pip", (env.interpreter, "-m", "pip", "install", "--disable-pip-version-check")
    )


def fix_command(env: Environment, setting: str = "auto") -> str:
    """The exact command that installs ipykernel into `env`."""
    try:
        installer = installer_for(env, setting)
    except ToolFailure:
        assert env.interpreter is not None
        python = shlex.quote(env.interpreter)
        return f"{python} -m ensurepip && {python} -m pip install ipykernel"
    argv = [part for part in installer.argv if part != "--disable-pip-version-check"]
    return shlex.join([*argv, "ipykernel"])


# --- What may be asked ----------------------------------------------------------------


def _looks_like_a_path(text: str) -> bool:
    return (
        text.startswith((".", "/", "~", "\\"))
        or "/" in text
        or "\\" in text
        or text.endswith((".whl", ".tar.gz", ".zip", ".tar.bz2", ".conda"))
    )


def checked_packages(
    packages: list[str], *, any_source: bool, workspace_root: Path
) -> tuple[list[str], list[str]]:
    """The arguments to pass and the requirement names they name; ``invalid_argument``
    naming what cannot be passed. With `any_source`, options, URLs and paths pass too (a
    relative path is the workspace's, and must exist)."""
    if not packages:
        raise ToolFailure(
            INVALID_ARGUMENT,
            "packages is empty: name at least one, like ['pandas'] or ['pandas>=2'].",
        )
    if len(packages) > MAX_PACKAGES:
        raise ToolFailure(
            INVALID_ARGUMENT, f"At most {MAX_PACKAGES} packages at once, not {len(packages)}."
        )
    arguments: list[str] = []
    names: list[str] = []
    for given in packages:
        text = given.strip()
        if not text or len(text) > MAX_SPEC_LENGTH or any(ord(c) < 32 for c in text):
            raise ToolFailure(
                INVALID_ARGUMENT, f"{given!r} is not a package specification.", package=given
            )
        match = _SPECIFIER.fullmatch(text)
        if match is not None:
            arguments.append(text)
            names.append(normalized(match.group("name")))
            continue
        kind = (
            "an installer option"
            if text.startswith("-")
            else "a URL"
            if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text) or " @ " in text
            else "a path"
            if _looks_like_a_path(text)
            else None
        )
        if kind is None:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{given!r} is not a package specification: give a name with optional extras and versions, "
                "like 'pandas', 'pandas>=2,<3' or 'requests[socks]==2.32.3' (no environment markers, shell "
                "syntax or spaces between packages: one package per list entry).",
                package=given,
            )
        if not any_source:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"{given!r} is {kind}, and this server installs packages by name and version only. Ask the "
                "person running it to enable the packages.any-source capability to allow options, URLs and paths.",
                package=given,
                capability="packages.any-source",
            )
        if kind == "a path" and not text.startswith("-"):
            path = Path(os.path.expanduser(text))
            path = path if path.is_absolute() else workspace_root / path
            if not path.exists():
                raise ToolFailure(NOT_FOUND, f"{given!r}: there is no {path}.", package=given)
            text = str(path)
        arguments.append(text)
    return arguments, names


# --- What is installed ----------------------------------------------------------------


def installed(env: Environment) -> dict[str, tuple[str, str]]:
    """``{normalized name: (name, version)}`` of the distributions in `env`'s site-packages."""
    found: dict[str, tuple[str, str]] = {}
    if not env.prefix:
        return found
    for directory in site_packages(Path(env.prefix)):
        with contextlib.suppress(OSError):
            for entry in os.scandir(directory):
                match = _DIST_INFO.fullmatch(entry.name)
                if match is not None:
                    name = match.group("name")
                    found.setdefault(
                        normalized(name), (name.replace("_", "-"), match.group("version"))
                    )
    return found


_ASK_INSTALLED = (
    "import importlib.metadata as m, json; print(json.dumps(sorted({(d.metadata['Name'] or '', d.version) "
    "for d in m.distributions()})))"
)


async def installed_by_asking(
    interpreter: str, timeout: float = 30.0
) -> dict[str, tuple[str, str]]:
    """What an interpreter outside any recognisable environment has installed, asked of it."""
    import json

    process = await asyncio.create_subprocess_exec(
        interpreter,
        "-c",
        _ASK_INSTALLED,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise ToolFailure(
            TIMEOUT, f"{interpreter} did not list its packages within {timeout:g} s."
        ) from None
    try:
        pairs = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        raise ToolFailure(UNSUPPORTED, f"{interpreter} could not list its packages.") from None
    return {normalized(name): (name, version) for name, version in pairs if name}


def top_level_modules(env: Environment, name: str) -> list[str]:
    """The modules a distribution puts at the top of site-packages (``top_level.txt``, else its RECORD)."""
    if not env.prefix:
        return []
    wanted = normalized(name)
    for directory in site_packages(Path(env.prefix)):
        with contextlib.suppress(OSError):
            for entry in os.scandir(directory):
                match = _DIST_INFO.fullmatch(entry.name)
                if match is None or normalized(match.group("name")) != wanted:
                    continue
                info = Path(entry.path)
                with contextlib.suppress(OSError):
                    return [
                        line.strip()
                        for line in (info / "top_level.txt").read_text().splitlines()
                        if line.strip()
                    ]
                modules: set[str] = set()
                with contextlib.suppress(OSError):
                    for line in (info / "RECORD").read_text().splitlines():
                        first = line.split(",", 1)[0].split("/", 1)
                        top = first[0]
                        if top.endswith((".dist-info", ".data")) or top.startswith(".."):
                            continue
                        if len(first) > 1 or top.endswith(".py"):
                            modules.add(top[:-3] if top.endswith(".py") else top)
                return sorted(modules)
    return []


# --- Running the installer ----------------------------------------------------------------


@dataclass
class InstallerRun:
    """What the installer said and how it ended."""

    returncode: int
    output: str
    seconds: float


async def run_installer(
    command: list[str],
    *,
    timeout: float,
    on_line: Callable[[str], None] | None = None,
    cwd: Path | None = None,
) -> InstallerRun:
    """Run `command` (never through a shell) in a process group of its own; every line it
    prints goes to `on_line`; past `timeout` the whole group is killed and ``timeout`` raised."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        cwd=str(cwd) if cwd else None,
    )
    tail: list[str] = []
    kept = 0

    async def read() -> None:
        nonlocal kept
        assert process.stdout is not None
        while True:
            line = await process.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace")
            tail.append(text)
            kept += len(text)
            while kept > OUTPUT_TAIL and len(tail) > 1:
                kept -= len(tail.pop(0))
            if on_line is not None:
                with contextlib.suppress(Exception):
                    on_line(text)
        await process.wait()

    try:
        await asyncio.wait_for(read(), timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError) as stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), 5)
        if isinstance(stopped, asyncio.CancelledError):
            raise
        output = "".join(tail)[-OUTPUT_TAIL:]
        raise ToolFailure(
            TIMEOUT,
            f"The installer did not finish within {timeout:g} s and was stopped ({shlex.join(command[:3])} …); "
            "nothing it had not finished is installed, and the kernel runs on as it was. Its last output:\n"
            + (output or "(none)"),
            timeout=timeout,
            output=output,
        ) from None
    return InstallerRun(
        process.returncode or 0, "".join(tail)[-OUTPUT_TAIL:], time.monotonic() - started
    )
