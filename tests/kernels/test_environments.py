"""The user's environments: found, chosen, run, refused with the fixing command.

Real virtualenvs made inside the test's workspace (uv, packages from PyPI),
the real server over stdio, the official client and real kernels: a notebook
of a workspace with its own environment imports what that environment has
and the server's own does not; a notebook elsewhere does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ok, refused, serve, server_command, text_of
from environments_support import EXTRA, make_env, server_lacks

from jupyter_mcp_server._kernels.environments import Environment
from jupyter_mcp_server._kernels.kernel_choice import choose
from jupyter_mcp_server._schemas.models import NotebookUsed

NO_PRESTART = ("--capability", "kernel.prestart=off")
PRINT_PREFIX = "import sys; print(sys.prefix)"


def env_named(listed: dict, name: str) -> dict:
    found = [env for env in listed["environments"] if env["name"] == name]
    assert found, f"no environment {name!r} in {[env['name'] for env in listed['environments']]}"
    return found[0]


def write_notebook(path: Path, kernelspec: dict | None = None) -> None:
    notebook = nbformat.v4.new_notebook()
    if kernelspec is not None:
        notebook.metadata["kernelspec"] = kernelspec
    nbformat.write(notebook, path)


async def test_a_workspace_environment_is_found_and_its_packages_import(
    workspace: Path, tmp_path: Path
) -> None:
    server_lacks(EXTRA)
    python = make_env(workspace / ".venv", "ipykernel", EXTRA)
    async with serve(workspace, *NO_PRESTART) as client:
        listed = await ok(client, "list_kernels")
        venv = env_named(listed, ".venv")
        assert venv["kind"] == "virtualenv" and venv["found_in"] == ["workspace"]
        assert venv["interpreter"] == str(python) and venv["language"] == "python"
        assert venv["has_ipykernel"] is True and venv["ready"] is True and venv["python_version"]
        assert ".venv" in listed["kernelspecs"] and "python3" in listed["kernelspecs"]
        assert listed["default_kernel"]["kernel_name"] == ".venv"
        assert "only Python environment" in listed["default_kernel"]["reason"]
        assert env_named(listed, "python3")["server_environment"] is True

        created = await client.call_tool(
            "use_notebook", {"notebook_name": "analysis.ipynb", "mode": "create"}
        )
        used = created.structured_content
        assert used["kernel_name"] == ".venv" and "only Python environment" in used["kernel_reason"]
        assert "Kernel: .venv: '.venv' is the workspace's only Python environment." in text_of(
            created
        )
        ran = await client.call_tool("execute_code", {"code": f"import {EXTRA}; {PRINT_PREFIX}"})
        assert not ran.is_error, text_of(ran)
        assert Path(text_of(ran).strip()) == workspace / ".venv"
        stored = json.loads((workspace / "analysis.ipynb").read_text())
        assert stored["metadata"]["kernelspec"]["name"] == ".venv"
        assert stored["metadata"]["kernelspec"]["language"] == "python"

        # The same server, the server's own Python asked for: not there.
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "own.ipynb", "mode": "create", "kernel_name": "python3"},
        )
        missing = await client.call_tool("execute_code", {"code": f"import {EXTRA}"})
        assert missing.is_error and "ModuleNotFoundError" in text_of(missing)

        # Opened again later, the notebook's metadata keeps it on its environment.
        await ok(client, "unuse_notebook", {"notebook_name": "analysis.ipynb"})
        reopened = await ok(client, "use_notebook", {"notebook_name": "analysis.ipynb"})
        assert (
            reopened["kernel_name"] == ".venv"
            and reopened["kernel_reason"] == "the notebook's metadata names '.venv'"
        )

    # A kernelspec made on the fly lives in the server's own runtime directory, never in Jupyter's paths.
    from jupyter_core.paths import jupyter_path

    for directory in jupyter_path("kernels"):
        assert not (Path(directory) / ".venv").exists()

    # Another workspace, without the environment: the package is not there.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with serve(elsewhere, *NO_PRESTART) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "plain.ipynb", "mode": "create"})
        assert used["kernel_name"] == "python3"
        missing = await client.call_tool("execute_code", {"code": f"import {EXTRA}"})
        assert missing.is_error and "ModuleNotFoundError" in text_of(missing)


async def test_the_prestarted_kernel_is_the_workspace_environments(workspace: Path) -> None:
    make_env(workspace / ".venv", "ipykernel")
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        ran = await client.call_tool("execute_code", {"code": PRINT_PREFIX})
        assert Path(text_of(ran).strip()) == workspace / ".venv"


async def test_an_environment_without_ipykernel_is_refused_with_the_command_that_fixes_it(
    workspace: Path,
) -> None:
    python = make_env(workspace / ".venv")
    async with serve(workspace, *NO_PRESTART) as client:
        listed = await ok(client, "list_kernels")
        venv = env_named(listed, ".venv")
        assert venv["has_ipykernel"] is False and venv["ready"] is False
        assert "ipykernel" in venv["problem"]
        refusal = await refused(
            client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"}, "unsupported"
        )
        text = text_of(refusal)
        details = refusal.meta["io.jupyter-mcp/error"]
        # A uv environment has no pip: the command is uv's.
        assert details["fix_command"].endswith(f"pip install --python {python} ipykernel"), details
        assert (
            details["fix_command"] in text and "'.venv'" in text and "kernel_name='python3'" in text
        )
        assert details["environment"] == ".venv"
        assert not (workspace / "n.ipynb").exists() or json.loads(
            (workspace / "n.ipynb").read_text()
        )
        # Nothing was installed behind the caller's back.
        assert not list((workspace / ".venv").glob("lib/python*/site-packages/ipykernel"))
        # The server's own Python is still there for the asking.
        used = await ok(
            client,
            "use_notebook",
            {"notebook_name": "m.ipynb", "mode": "create", "kernel_name": "python3"},
        )
        assert used["kernel_name"] == "python3"


async def test_pip_environments_get_the_pip_command(workspace: Path) -> None:
    python = make_env(workspace / "env", seed=True)
    async with serve(workspace, *NO_PRESTART, env={"JUPYTER_MCP_INSTALLER": "pip"}) as client:
        refusal = await refused(
            client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"}, "unsupported"
        )
        assert (
            refusal.meta["io.jupyter-mcp/error"]["fix_command"]
            == f"{python} -m pip install ipykernel"
        )


async def test_launcher_and_configured_environments(tmp_path: Path, workspace: Path) -> None:
    launcher = tmp_path / "launcher-env"
    make_env(launcher, "ipykernel")
    configured = tmp_path / "configured"
    configured_python = make_env(configured, "ipykernel", EXTRA)
    # VIRTUAL_ENV alone: the environment the server was launched from is the default.
    async with serve(workspace, *NO_PRESTART, env={"VIRTUAL_ENV": str(launcher)}) as client:
        listed = await ok(client, "list_kernels")
        env = env_named(listed, "launcher-env")
        assert env["found_in"] == ["VIRTUAL_ENV"] and env["ready"]
        assert listed["default_kernel"]["kernel_name"] == "launcher-env"
        assert "VIRTUAL_ENV" in listed["default_kernel"]["reason"]
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        ran = await client.call_tool(
            "execute_code", {"code": "import os, sys; print(sys.prefix, os.environ['VIRTUAL_ENV'])"}
        )
        assert text_of(ran).split() == [str(launcher), str(launcher)]
    # --python (a directory stands for its interpreter) outranks the launcher's.
    async with serve(
        workspace, *NO_PRESTART, "--python", str(configured), env={"VIRTUAL_ENV": str(launcher)}
    ) as client:
        listed = await ok(client, "list_kernels")
        env = env_named(listed, "configured")
        assert env["found_in"] == ["--python"] and env["interpreter"] == str(configured_python)
        assert listed["default_kernel"]["kernel_name"] == "configured"
        await ok(client, "use_notebook", {"notebook_name": "c.ipynb", "mode": "create"})
        assert not (await client.call_tool("execute_code", {"code": f"import {EXTRA}"})).is_error
    # --kernel outranks both; the workspace's only environment outranks --kernel.
    async with serve(
        workspace, *NO_PRESTART, "--python", str(configured), "--kernel", "python3"
    ) as client:
        listed = await ok(client, "list_kernels")
        assert listed["default_kernel"] == {
            "kernel_name": "python3",
            "reason": "--kernel python3 is the configured default",
        }
    make_env(workspace / ".venv", "ipykernel")
    async with serve(workspace, *NO_PRESTART, "--kernel", "python3") as client:
        listed = await ok(client, "list_kernels")
        assert listed["default_kernel"]["kernel_name"] == ".venv"


async def test_a_notebook_in_a_language_no_kernel_runs_is_refused_listing_what_is_installed(
    workspace: Path,
) -> None:
    write_notebook(workspace / "r.ipynb", {"name": "ir", "display_name": "R", "language": "R"})
    async with serve(workspace, *NO_PRESTART) as client:
        refusal = await refused(client, "use_notebook", {"notebook_name": "r.ipynb"}, "not_found")
        text = text_of(refusal)
        assert "runs R" in text and "python3 (python)" in text and "kernel_name" in text
        assert refusal.meta["io.jupyter-mcp/error"]["language"] == "R"
        # Asked to run it on Python anyway: it does.
        used = await ok(
            client, "use_notebook", {"notebook_name": "r.ipynb", "kernel_name": "python3"}
        )
        assert used["kernel_name"] == "python3"


def _cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    from rpc import environment

    return subprocess.run(
        server_command(workspace, *args),
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(),
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_bad_python_and_kernel_settings_stop_the_server(workspace: Path, tmp_path: Path) -> None:
    text_file = tmp_path / "notes.txt"
    text_file.write_text("hello")
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\necho 'I am not Python'\n")
    script.chmod(0o755)
    cases = [
        (("--python", str(tmp_path / "nowhere" / "python")), "does not exist"),
        (("--python", str(text_file)), "is not an executable file"),
        (("--python", str(tmp_path)), "no Python interpreter in it"),
        (("--python", str(script)), "is not a Python interpreter"),
        (("--python", "/bin/ls"), "is not a Python interpreter"),
        (("--kernel", "no-such-kernel"), "Known: python3"),
    ]
    for args, said in cases:
        done = _cli(workspace, *args)
        assert done.returncode == 2, (args, done.returncode, done.stderr)
        assert said in done.stderr, (args, done.stderr)


def test_the_choice_in_order() -> None:
    def env(
        name: str, *found_in: str, language: str = "python", ready: bool = True, own: bool = False
    ) -> Environment:
        kind = "kernelspec" if found_in == ("jupyter",) else "virtualenv"
        return Environment(
            name=name,
            kind=kind,
            language=language,
            display_name=name,
            found_in=found_in,
            ready=ready,
            server_environment=own,
        )

    python3 = env("python3", "jupyter", own=True)
    bash = env("bash", "jupyter", language="bash")
    venv = env(".venv", "workspace")
    other = env("env", "workspace")
    launcher = env("proj", "VIRTUAL_ENV")
    configured = env("ds", "--python")
    everything = [python3, bash, venv, launcher, configured]

    def chosen(metadata, listed, **kwargs) -> str:
        return choose(metadata, listed, **kwargs).kernel_name

    assert chosen({"kernelspec": {"name": "bash"}}, everything) == "bash"
    assert chosen({"kernelspec": {"name": ".venv"}}, [*everything, other]) == ".venv"
    # python3 is every Jupyter's generic name: the workspace's own environment is more particular.
    assert chosen({"kernelspec": {"name": "python3"}}, everything) == ".venv"
    assert chosen(None, everything) == ".venv"
    assert chosen(None, [*everything, other], configured_kernel="bash") == "bash"
    assert chosen(None, [python3, launcher, configured]) == "ds"
    assert chosen(None, [python3, launcher]) == "proj"
    assert chosen(None, [python3, bash]) == "python3"
    several = choose(None, [python3, venv, other])
    assert several.kernel_name == "python3" and "pass kernel_name" in several.reason
    # Not installed: its language decides, or the refusal says what is there.
    assert (
        chosen({"kernelspec": {"name": "calysto_bash", "language": "bash"}}, everything) == "bash"
    )
    assert chosen({"kernelspec": {"name": "gone", "language": "python"}}, [python3]) == "python3"
    with pytest.raises(Exception, match=r"runs julia.*python3 \(python\), bash \(bash\)"):
        choose({"kernelspec": {"name": "julia-1.10", "language": "julia"}}, [python3, bash])
    with pytest.raises(Exception, match="runs R"):
        choose({"kernelspec": {"name": "ir"}, "language_info": {"name": "R"}}, [python3])


def test_the_result_model_says_which_kernel() -> None:
    assert {"kernel_name", "kernel_reason"} <= set(NotebookUsed.model_json_schema()["properties"])


@pytest.mark.skipif(sys.platform != "linux", reason="conda-meta layout read off Linux paths")
async def test_a_conda_environment_in_the_workspace_is_found(workspace: Path) -> None:
    # A conda environment is a prefix with conda-meta/: made here by hand around a real interpreter.
    prefix = workspace / "env"
    make_env(prefix, "ipykernel")
    (prefix / "pyvenv.cfg").unlink()
    (prefix / "conda-meta").mkdir()
    (prefix / "conda-meta" / "python-3.11.7-h1234_0.json").write_text("{}")
    async with serve(workspace, *NO_PRESTART) as client:
        listed = await ok(client, "list_kernels")
        env = env_named(listed, "env")
        assert env["kind"] == "conda" and env["python_version"] == "3.11.7"
        assert listed["default_kernel"]["kernel_name"] == "env"
    assert os.path.isdir(prefix)


async def test_changing_an_open_notebooks_kernel(workspace: Path) -> None:
    make_env(workspace / ".venv", "ipykernel", EXTRA)
    async with serve(workspace, *NO_PRESTART) as client:
        first = await ok(
            client,
            "use_notebook",
            {"notebook_name": "n.ipynb", "mode": "create", "kernel_name": "python3"},
        )
        assert (
            json.loads((workspace / "n.ipynb").read_text())["metadata"]["kernelspec"]["name"]
            == "python3"
        )
        await ok(client, "execute_code", {"code": "x = 1"})
        changed = await client.call_tool(
            "use_notebook", {"notebook_name": "n.ipynb", "kernel_name": ".venv"}
        )
        assert not changed.is_error, text_of(changed)
        now = changed.structured_content
        assert now["kernel_name"] == ".venv" and now["kernel_id"] != first["kernel_id"]
        said = text_of(changed)
        assert (
            "changed from python3 to .venv" in said and "gone" in said and "was shut down" in said
        )
        # The metadata changed in the revision the answer carries, and nothing else did.
        assert now["revision"] != first["revision"]
        assert (await ok(client, "get_notebook_revision"))["revision"] == now["revision"]
        stored = json.loads((workspace / "n.ipynb").read_text())
        assert stored["metadata"]["kernelspec"]["name"] == ".venv"
        kernels = (await ok(client, "list_kernels"))["kernels"]
        assert [k["kernel_id"] for k in kernels] == [now["kernel_id"]]
        gone = await client.call_tool("execute_code", {"code": "x"})
        assert gone.is_error and "NameError" in text_of(gone)
        assert not (await client.call_tool("execute_code", {"code": f"import {EXTRA}"})).is_error
        # Asked again for the kernel it runs on: nothing changes.
        same = await ok(
            client, "use_notebook", {"notebook_name": "n.ipynb", "kernel_name": ".venv"}
        )
        assert same["kernel_id"] == now["kernel_id"] and same["revision"] == now["revision"]


def _transport_and_log(workspace: Path, log: Path, *args: str) -> str:
    from rpc import RawServer
    from rpc import text_of as raw_text

    server = RawServer(workspace, *NO_PRESTART, *args, stderr=log)
    try:
        server.ok("use_notebook", {"notebook_name": f"t{len(args)}.ipynb", "mode": "create"})
        ran = server.call(
            "execute_code",
            {
                "code": "import json; from ipykernel.connect import get_connection_info\n"
                "info = json.loads(get_connection_info()); print(info['transport'], info['ip'])"
            },
        )
        transport = raw_text(ran).strip()
    finally:
        assert server.close() == 0
    return transport


def test_local_kernels_speak_over_unix_sockets_and_the_log_has_no_tcp_warning(
    workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    transport, where = _transport_and_log(workspace, log).split()
    assert transport == "ipc", (transport, where)
    private = Path(where).parent
    assert private.name.startswith("jmcp-") and not private.exists(), (
        "the private runtime directory outlived the server"
    )
    text = log.read_text(errors="replace")
    assert "without encryption" not in text, text[-2000:]
    # The capability switches back to TCP, and ipykernel says what it says about it.
    tcp_log = tmp_path / "tcp.log"
    transport, where = _transport_and_log(
        workspace, tcp_log, "--capability", "kernel.ipc=off"
    ).split()
    assert transport == "tcp" and where == "127.0.0.1"
    import ipykernel

    if int(ipykernel.__version__.split(".")[0]) >= 7:
        assert "without encryption" in tcp_log.read_text(errors="replace")
