"""Real Python environments for the tests: made with uv (a test dependency), packages from PyPI.

uv keeps what it downloaded in its cache and links it into each new
environment, so after the first one (seconds, the download) an environment
with ipykernel costs about a second: every test makes its own, inside its own
workspace, rather than sharing one it could change.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: A small pure-Python package from PyPI that the server's own environment lacks.
EXTRA = "inflection"
#: Another, installed by install_packages during the tests.
LATER = "termcolor"


def uv() -> str:
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.is_file() else shutil.which("uv")
    if found is None:
        pytest.skip("uv is not installed (scripts/install test installs it)")
    return found


def base_python() -> str:
    """The interpreter the server's own virtualenv was made from."""
    return getattr(sys, "_base_executable", None) or sys.executable


def make_env(prefix: Path, *packages: str, seed: bool = False) -> Path:
    """A virtualenv at `prefix` with `packages` (``seed``: with pip too); its interpreter."""
    command = [uv(), "venv", "-q", "--python", base_python(), str(prefix)]
    if seed:
        command.insert(3, "--seed")
    _run(command)
    python = prefix / "bin" / "python"
    if packages:
        _run([uv(), "pip", "install", "-q", "--python", str(python), *packages])
    return python


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )


def server_lacks(module: str) -> None:
    import importlib.util

    assert importlib.util.find_spec(module) is None, (
        f"the server's environment has {module}: pick another package"
    )
