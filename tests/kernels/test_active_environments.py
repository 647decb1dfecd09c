"""Every kernel's environment is active, as a shell that activated it would have it.

Whichever environment a Python kernel runs in (the server's own, the workspace's
``.venv``, one named with ``--python``), its ``bin`` comes first on the kernel's ``PATH``
and ``VIRTUAL_ENV`` names it, so ``!python``, ``!pip`` and subprocesses use it. The
server here is started as a client's configuration starts it, by its interpreter's path,
with no ``bin`` of its own on ``PATH``: before, ``!python`` in its ``python3`` kernel ran
whatever Python the ``PATH`` had (the system's), where ``!pip install`` would land.
Real server over stdio, the official client, real kernels.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from conftest import ok, serve, text_of
from environments_support import make_env

NO_PRESTART = ("--capability", "kernel.prestart=off")
#: What the kernel sees: its PATH's first entry, VIRTUAL_ENV, the prefix of the `python`
#: and the `pip` a shell escape runs, and its own prefix.
PROBE = "\n".join(
    [
        "import os, sys",
        "shell_python = !python -c 'import sys; print(sys.prefix)'",
        "shell_pip = !pip --version",
        "print(os.environ['PATH'].split(os.pathsep)[0])",
        "print(os.environ.get('VIRTUAL_ENV'))",
        "print(shell_python[-1])",
        "print(shell_pip[-1])",
        "print(sys.prefix)",
    ]
)


def without(directory: Path) -> str:
    """The tests' PATH without `directory` on it (a server started by its full path)."""
    return os.pathsep.join(
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != directory.resolve()
    )


async def probe(client, notebook: str, kernel_name: str | None = None) -> list[str]:
    arguments = {"notebook_name": notebook, "mode": "create"}
    if kernel_name is not None:
        arguments["kernel_name"] = kernel_name
    await ok(client, "use_notebook", arguments)
    ran = await client.call_tool("execute_code", {"code": PROBE})
    assert not ran.is_error, text_of(ran)
    return text_of(ran).strip().splitlines()


async def test_the_servers_own_environment_is_active_in_its_kernel(
    workspace: Path, tmp_path: Path
) -> None:
    own_bin = Path(sys.executable).parent
    own_prefix = Path(sys.prefix)
    assert (own_prefix / "pyvenv.cfg").is_file(), "the tests run the server from a virtualenv"
    # A launcher's VIRTUAL_ENV the python3 kernel does not run in must not point it elsewhere.
    launcher = tmp_path / "launcher"
    launcher.mkdir()
    (launcher / "pyvenv.cfg").write_text("home = /nowhere\n")
    environ = {"PATH": without(own_bin), "VIRTUAL_ENV": str(launcher)}
    async with serve(workspace, *NO_PRESTART, "--kernel", "python3", env=environ) as client:
        first, virtual_env, shell_python, shell_pip, prefix = await probe(client, "own.ipynb")
        assert Path(prefix) == own_prefix
        assert Path(first) == own_bin
        assert Path(virtual_env) == own_prefix
        # `!python` and `!pip` are the kernel's own: a `!pip install` lands where it imports.
        assert Path(shell_python) == own_prefix
        assert str(own_prefix) in shell_pip, shell_pip

        # A restarted kernel is launched the same way.
        await ok(client, "restart_notebook", {})
        ran = await client.call_tool("execute_code", {"code": PROBE})
        assert text_of(ran).strip().splitlines()[:3] == [first, virtual_env, shell_python]


async def test_workspace_and_python_environments_are_active_in_their_kernels(
    workspace: Path, tmp_path: Path
) -> None:
    python = make_env(workspace / ".venv", "ipykernel", seed=True)
    configured = tmp_path / "configured"
    configured_python = make_env(configured, "ipykernel", seed=True)
    own_bin = Path(sys.executable).parent
    environ = {"PATH": without(own_bin)}
    async with serve(workspace, *NO_PRESTART, "--python", str(configured), env=environ) as client:
        first, virtual_env, shell_python, shell_pip, prefix = await probe(client, "ws.ipynb")
        venv = workspace / ".venv"
        assert Path(prefix) == venv and Path(first) == python.parent
        assert Path(virtual_env) == venv and Path(shell_python) == venv
        assert str(venv) in shell_pip, shell_pip
        # The bin is on PATH once, not once per activation.
        said = await client.call_tool(
            "execute_code", {"code": "import os; print(os.environ['PATH'])"}
        )
        entries = text_of(said).strip().split(os.pathsep)
        assert [Path(entry) for entry in entries].count(python.parent) == 1, entries

        first, virtual_env, shell_python, shell_pip, prefix = await probe(
            client, "configured.ipynb", kernel_name="configured"
        )
        assert Path(prefix) == configured and Path(first) == configured_python.parent
        assert Path(virtual_env) == configured and Path(shell_python) == configured
        assert str(configured) in shell_pip, shell_pip
