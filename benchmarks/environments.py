#!/usr/bin/env python
"""Fresh environments for the servers measured beside ours, built the way their users install them.

    python benchmarks/environments.py [NAME ...]

A benchmark of first contact (start-up, the first read, memory) depends on
what else is installed beside the server: ``jupyter_server`` brings
``jsonschema``'s format checkers, which nbformat's validation then runs. So
every server in ``benchmarks/profiles/`` is measured in its own freshly
installed virtual environment under ``benchmarks/.envs/NAME`` (ignored by
git), made with ``uv`` from PyPI:

- ``plain``: this checkout installed alone, with nothing but its dependencies;
- ``jupyterlab``: this checkout installed beside JupyterLab, as a person who
  already works in JupyterLab has it;
- ``jupymcp``: jupymcp 0.3.2, the lightest local-first peer;
- ``jupymcp-jupyterlab``: the same beside JupyterLab, so that each install of
  ours is compared with the peer installed the same way.

The profiles run the checkout's sources (``PYTHONPATH``) on those
environments' packages, so an environment built once keeps measuring the
current code. Without names, every environment is (re)built.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
ENVS = BENCH / ".envs"

#: What each environment holds, as ``uv pip install`` arguments.
PACKAGES: dict[str, list[str]] = {
    "plain": [str(REPO)],
    "jupyterlab": [str(REPO), "jupyterlab"],
    "jupymcp": ["jupymcp==0.3.2"],
    "jupymcp-jupyterlab": ["jupymcp==0.3.2", "jupyterlab"],
}


def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(found).exists():
        raise SystemExit("uv is needed to build the environments: pip install uv")
    return found


def build(name: str) -> Path:
    target = ENVS / name
    shutil.rmtree(target, ignore_errors=True)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([uv(), "venv", "--quiet", "--python", python, str(target)], check=True)
    subprocess.run(
        # Compiled as pip compiles at install: a server's first start must not pay for it.
        [
            uv(),
            "pip",
            "install",
            "--quiet",
            "--compile-bytecode",
            "--python",
            str(target / "bin" / "python"),
            *PACKAGES[name],
        ],
        check=True,
    )
    return target


def main() -> int:
    names = sys.argv[1:] or list(PACKAGES)
    unknown = [name for name in names if name not in PACKAGES]
    if unknown:
        raise SystemExit(f"unknown environments {unknown}; known: {list(PACKAGES)}")
    for name in names:
        print(f"building {name} in {build(name)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
