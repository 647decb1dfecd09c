"""More than Python: bash_kernel from PyPI through every execution tool.

bash_kernel is installed into a virtualenv of its own and its kernelspec into
a directory the server finds through JUPYTER_PATH, as a user would have it:
outputs, errors, an interrupt, a timeout, a notebook whose metadata names it
(or names another bash kernelspec), and a notebook in a language nothing runs.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from conftest import ok, refused, serve, text_of
from environments_support import make_env

NO_PRESTART = ("--capability", "kernel.prestart=off")


@pytest.fixture
def bash_kernel(tmp_path: Path) -> dict[str, str]:
    """bash_kernel from PyPI, its kernelspec on a Jupyter path of its own; the server's environment."""
    python = make_env(tmp_path / "bash-env", "bash_kernel")
    prefix = tmp_path / "jupyter-prefix"
    subprocess.run(
        [str(python), "-m", "bash_kernel.install", "--prefix", str(prefix)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return {"JUPYTER_PATH": str(prefix / "share" / "jupyter")}


async def test_bash_kernel_end_to_end(workspace: Path, bash_kernel: dict[str, str]) -> None:
    async with serve(workspace, *NO_PRESTART, env=bash_kernel) as client:
        listed = await ok(client, "list_kernels")
        bash = [env for env in listed["environments"] if env["name"] == "bash"]
        assert (
            bash
            and bash[0]["language"] == "bash"
            and bash[0]["ready"]
            and bash[0]["has_ipykernel"] is None
        )
        used = await ok(
            client,
            "use_notebook",
            {"notebook_name": "s.ipynb", "mode": "create", "kernel_name": "bash"},
        )
        assert used["kernel_name"] == "bash"
        assert (
            json.loads((workspace / "s.ipynb").read_text())["metadata"]["kernelspec"]["language"]
            == "bash"
        )

        ran = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "X=41; echo $((X + 1)); pwd"},
        )
        assert not ran.is_error, text_of(ran)
        assert text_of(ran).split() == ["42", str(workspace)]
        cell = await ok(client, "read_cell", {"cell_index": 0})
        assert cell["outputs"] and "42" in json.dumps(cell["outputs"])
        assert (await client.call_tool("execute_code", {"code": "echo $X"})).content[
            0
        ].text.strip() == "41"

        failed = await client.call_tool("execute_code", {"code": "ls /no/such/dir"})
        assert failed.is_error and "No such file" in text_of(failed), text_of(failed)

        timed_out = await client.call_tool("execute_code", {"code": "sleep 60", "timeout": 2})
        assert timed_out.is_error and timed_out.structured_content["status"] == "timeout", text_of(
            timed_out
        )
        assert (
            text_of(await client.call_tool("execute_code", {"code": "echo after"})).strip()
            == "after"
        )

        running = asyncio.ensure_future(client.call_tool("execute_code", {"code": "sleep 60"}))
        await asyncio.sleep(1.5)
        await ok(client, "interrupt_notebook_session", {"notebook_name": "s.ipynb"})
        interrupted = await asyncio.wait_for(running, 30)
        assert interrupted.is_error and interrupted.structured_content["status"] == "interrupted", (
            text_of(interrupted)
        )
        assert text_of(await client.call_tool("execute_code", {"code": "echo $X"})).strip() == "41"

        # A notebook whose metadata names bash runs on it; one naming another bash kernel too.
        for name, spec in [("b.ipynb", "bash"), ("c.ipynb", "calysto_bash")]:
            notebook = nbformat.v4.new_notebook()
            notebook.metadata["kernelspec"] = {
                "name": spec,
                "display_name": "Bash",
                "language": "bash",
            }
            nbformat.write(notebook, workspace / name)
            opened = await ok(client, "use_notebook", {"notebook_name": name})
            assert opened["kernel_name"] == "bash", opened

        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {
            "name": "julia-1.10",
            "display_name": "Julia",
            "language": "julia",
        }
        nbformat.write(notebook, workspace / "j.ipynb")
        refusal = await refused(client, "use_notebook", {"notebook_name": "j.ipynb"}, "not_found")
        assert "bash (bash)" in text_of(refusal) and "python3 (python)" in text_of(refusal)
