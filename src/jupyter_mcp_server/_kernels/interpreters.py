"""What a Python interpreter or an environment directory is, read off its files (or asked once).

Finding environments (:mod:`.environments`) and installing into them
(:mod:`.packages`) both need the same facts: an environment's interpreter and
site-packages, whether ipykernel or pip is there, which environment an
interpreter belongs to. They are read from disk without starting anything;
only an interpreter outside any recognisable environment is run once to say
what it is, and its answer kept while the file is unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Seconds an interpreter gets to say what it is.
PROBE_TIMEOUT = 15.0
_PROBE = (
    "import importlib.util, json, sys; print(json.dumps({'prefix': sys.prefix, 'base_prefix': "
    "getattr(sys, 'base_prefix', sys.prefix), 'version': '.'.join(map(str, sys.version_info[:3])), "
    "'ipykernel': importlib.util.find_spec('ipykernel') is not None, "
    "'pip': importlib.util.find_spec('pip') is not None, 'executable': sys.executable}))"
)


@dataclass(frozen=True)
class InterpreterFacts:
    """What an interpreter said about itself (:func:`probe_interpreter`)."""

    executable: str
    prefix: str
    base_prefix: str
    version: str
    has_ipykernel: bool
    has_pip: bool


class NotAnInterpreter(ValueError):
    """A path that does not run as a Python interpreter; the message says what happened."""


# --- Reading an environment's files -------------------------------------------------


def read_pyvenv_cfg(prefix: Path) -> dict[str, str]:
    """``pyvenv.cfg``'s keys (lowercased) and values; empty when it cannot be read."""
    values: dict[str, str] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in (prefix / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip().lower()] = value.strip()
    return values


def interpreter_in(prefix: Path) -> Path | None:
    """The Python interpreter of an environment's directory, if it has one."""
    for candidate in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
        path = prefix / candidate
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def site_packages(prefix: Path) -> list[Path]:
    """The site-packages directories of an environment's directory."""
    found: list[Path] = []
    for lib in ("lib", "lib64"):
        with contextlib.suppress(OSError):
            for entry in sorted((prefix / lib).iterdir()):
                if (
                    entry.name.startswith(("python3", "pypy3"))
                    and (entry / "site-packages").is_dir()
                ):
                    found.append(entry / "site-packages")
    windows = prefix / "Lib" / "site-packages"
    if windows.is_dir():
        found.append(windows)
    return list(dict.fromkeys(found))


def has_package(directories: Iterable[Path], module: str) -> bool:
    return any((directory / module / "__init__.py").is_file() for directory in directories)


def environment_prefix(interpreter: str) -> Path | None:
    """The environment an interpreter belongs to, read off the files beside it: the
    directory above its ``bin`` holding ``pyvenv.cfg`` or ``conda-meta``."""
    path = Path(interpreter)
    for parent in (path.parent.parent, path.parent):
        if (parent / "pyvenv.cfg").is_file() or (parent / "conda-meta").is_dir():
            return parent
    return None


def conda_python_version(prefix: Path) -> str | None:
    with contextlib.suppress(OSError):
        for entry in (prefix / "conda-meta").iterdir():
            match = re.fullmatch(r"python-(\d+\.\d+(?:\.\d+)?)-.*\.json", entry.name)
            if match:
                return match.group(1)
    return None


def the_servers_prefix() -> Path:
    return Path(sys.prefix)


def same_directory(one: str | Path | None, other: str | Path | None) -> bool:
    if not one or not other:
        return False
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.abspath(one) == os.path.abspath(other)


@functools.lru_cache(maxsize=64)
def _probe(interpreter: str, mtime_ns: int) -> InterpreterFacts:
    try:
        done = subprocess.run(
            [interpreter, "-c", _PROBE],
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NotAnInterpreter(f"{interpreter} did not answer within {PROBE_TIMEOUT:g} s") from None
    except OSError as error:
        raise NotAnInterpreter(
            f"{interpreter} could not be run: {error.strerror or error}"
        ) from None
    try:
        facts = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        return InterpreterFacts(
            executable=interpreter,
            prefix=str(facts["prefix"]),
            base_prefix=str(facts["base_prefix"]),
            version=str(facts["version"]),
            has_ipykernel=bool(facts["ipykernel"]),
            has_pip=bool(facts["pip"]),
        )
    except (ValueError, KeyError, IndexError, TypeError):
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-300:]
        raise NotAnInterpreter(
            f"{interpreter} is not a Python interpreter (exit status {done.returncode}"
            + (f": {said}" if said else "")
            + ")"
        ) from None


def probe_interpreter(interpreter: str) -> InterpreterFacts:
    """Ask an interpreter what it is (one subprocess, kept while the file is unchanged);
    :class:`NotAnInterpreter` when it is not a Python one."""
    try:
        mtime = os.stat(interpreter).st_mtime_ns
    except OSError as error:
        raise NotAnInterpreter(f"{interpreter} does not exist ({error.strerror})") from None
    return _probe(interpreter, mtime)


def has_ipykernel(interpreter: str, prefix: Path | None = None) -> bool:
    """Whether `interpreter` can import ipykernel: read off its environment's site-packages
    where it has one, else asked once."""
    prefix = prefix or environment_prefix(interpreter)
    if prefix is not None and same_directory(prefix, the_servers_prefix()):
        return importlib.util.find_spec("ipykernel") is not None
    if prefix is not None:
        directories = site_packages(prefix)
        if has_package(directories, "ipykernel"):
            return True
        system = (
            read_pyvenv_cfg(prefix).get("include-system-site-packages", "false").lower() == "true"
        )
        if directories and not system:
            return False
    try:
        return probe_interpreter(interpreter).has_ipykernel
    except NotAnInterpreter:
        return False


def has_pip(prefix: Path) -> bool:
    return has_package(site_packages(prefix), "pip")
