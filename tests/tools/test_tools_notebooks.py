"""Choosing, listing, reading and releasing notebooks and their kernels, end to end.

The real server over stdio, the official client, real kernels. Kernels are
per notebook unless a caller shares one by `kernel_id`, and a notebook's own
`metadata.kernelspec.name` picks its kernel.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import nbformat
from conftest import CORE_TOOLS, error_code, ok, refused, serve, text_of, without_rendered

#: The default tools, every one declared as checked below.
ALL_TOOLS = CORE_TOOLS
READ_ONLY = {
    "list_files",
    "list_kernels",
    "list_notebooks",
    "read_notebook",
    "get_notebook_revision",
    "read_cell",
    "outline",
    "search_notebooks",
    "read_output",
}
OPEN_WORLD = {"execute_cell", "insert_execute_code_cell", "execute_code", "connect_to_jupyter"}
DESTRUCTIVE = {"delete_cell", "overwrite_cell_source", "restart_notebook", "clear_cell_output"}


def write_notebook(path: Path, sources: list[str], kernel_name: str | None = None) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    if kernel_name is not None:
        notebook.metadata["kernelspec"] = {
            "name": kernel_name,
            "display_name": kernel_name,
            "language": "python",
        }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def install_kernelspec(jupyter_path: Path, name: str) -> None:
    """A second kernelspec that tells who it is through an environment variable."""
    spec = jupyter_path / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": f"Python ({name})",
                "language": "python",
                "env": {"WHICH_KERNEL": name},
            }
        )
    )


async def kernels_by_id(client) -> dict[str, dict]:
    listed = await ok(client, "list_kernels")
    return {kernel["kernel_id"]: kernel for kernel in listed["kernels"]}


async def printed(client, code: str, notebook: str) -> str:
    result = await client.call_tool("execute_code", {"code": code, "notebook_name": notebook})
    if result.is_error:
        return f"{error_code(result)}: {(result.structured_content or {}).get('error', {}) or text_of(result)}"
    return text_of(result)


#: Bytes of the default tools/list (the benchmark's target too).
TOOLS_LIST_BUDGET = 24_000


async def check_tool_declarations(client) -> None:
    """Every tool is served with a title, a description, true annotations and an output schema."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= ALL_TOOLS
    for name in ALL_TOOLS:
        tool = tools[name]
        assert tool.title and tool.description, name
        assert tool.output_schema and tool.output_schema.get("type") == "object", name
        assert '"title"' not in json.dumps(tool.output_schema), (
            f"{name}: pydantic's field titles are noise"
        )
        hints = tool.annotations
        assert hints is not None, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.open_world_hint is (name in OPEN_WORLD), name
        if name in DESTRUCTIVE:
            assert hints.destructive_hint is True, name
        if name in READ_ONLY or name == "insert_cell":
            assert hints.destructive_hint is False, name
    assert "timeout" in tools["execute_cell"].input_schema["properties"]
    # detach=true needs get_run to be followed, and get_run is in the runs toolset.
    assert not any(
        "detach" in tools[name].input_schema["properties"]
        for name in ("execute_cell", "execute_code")
    )
    assert "expected_revision" in tools["insert_cell"].input_schema["properties"]
    # The default listing is read by the model in every conversation: a budget, in bytes as sent.
    size = len(
        (await client.list_tools()).model_dump_json(by_alias=True, exclude_none=True).encode()
    )
    assert size <= TOOLS_LIST_BUDGET, (
        f"the default tools/list is {size:,} bytes, over {TOOLS_LIST_BUDGET:,}"
    )


async def test_use_list_share_restart_unuse(workspace):
    async with serve(workspace) as client:
        # Nothing chosen yet: calls that need a notebook say how to choose one.
        for tool in (
            "read_notebook",
            "get_notebook_revision",
            "insert_cell",
            "execute_code",
            "restart_notebook",
        ):
            arguments = (
                {"cell_index": -1, "cell_type": "code", "cell_source": "1"}
                if tool == "insert_cell"
                else {}
            )
            if tool == "execute_code":
                arguments = {"code": "1"}
            result = await refused(client, tool, arguments, "no_notebook")
            assert "use_notebook" in text_of(result)
        assert (await ok(client, "list_notebooks"))["notebooks"] == []
        await refused(client, "use_notebook", {"notebook_name": "missing.ipynb"}, "not_found")
        assert not (workspace / "missing.ipynb").exists()

        a = await ok(client, "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"})
        assert a["notebook_name"] == "a.ipynb" and a["notebook_path"] == "a.ipynb"
        assert a["cell_count"] == 0 and a["kernel_id"]
        on_disk = json.loads((workspace / "a.ipynb").read_text())
        assert on_disk["cells"] == [] and on_disk["metadata"]["kernelspec"]["name"] == "python3"
        assert a["revision"] == (await ok(client, "get_notebook_revision"))["revision"]
        before = (workspace / "a.ipynb").read_bytes()
        await refused(
            client, "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"}, "already_exists"
        )
        assert (workspace / "a.ipynb").read_bytes() == before
        unknown = await refused(
            client,
            "use_notebook",
            {"notebook_name": "z.ipynb", "mode": "create", "kernel_name": "nope"},
            "not_found",
        )
        assert "python3" in text_of(unknown)
        assert not (workspace / "z.ipynb").exists()
        await refused(
            client,
            "use_notebook",
            {"notebook_name": "z.ipynb", "mode": "create", "kernel_id": "nope"},
            "not_found",
        )
        assert not (workspace / "z.ipynb").exists(), "a refused use_notebook must create nothing"

        # Connecting again to the same notebook keeps its kernel.
        again = await ok(client, "use_notebook", {"notebook_name": "a.ipynb"})
        assert again["kernel_id"] == a["kernel_id"]

        await ok(client, "execute_code", {"code": "x = 1"})
        # A name and a path; the named one becomes current.
        b = await ok(
            client,
            "use_notebook",
            {"notebook_name": "B", "notebook_path": "sub/b.ipynb", "mode": "create"},
        )
        assert b["notebook_name"] == "B" and b["notebook_path"] == "sub/b.ipynb"
        assert b["kernel_id"] != a["kernel_id"]
        assert (workspace / "sub" / "b.ipynb").is_file()
        inserted = await ok(
            client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "b = 2"}
        )
        assert (
            json.loads((workspace / "sub" / "b.ipynb").read_text())["cells"][0]["id"]
            == inserted["cell_id"]
        )
        assert json.loads((workspace / "a.ipynb").read_text())["cells"] == []

        # One kernel per notebook: variables are not shared.
        assert (await printed(client, "print(x)", "B")).startswith("execution_error")
        assert "NameError" in await printed(client, "print(x)", "B")
        assert await printed(client, "print(x)", "a.ipynb") == "1\n"

        # Different notebooks run at the same time, each on its own kernel.
        timed_code = (
            "import time\nstart = time.monotonic()\ntime.sleep(1.5)\nprint(start, time.monotonic())"
        )
        spans = [
            tuple(map(float, text.split()))
            for text in await asyncio.gather(
                printed(client, timed_code, "a.ipynb"), printed(client, timed_code, "B")
            )
        ]
        assert max(start for start, _ in spans) < min(end for _, end in spans), (
            f"not in parallel: {spans}"
        )

        listed = (await ok(client, "list_notebooks"))["notebooks"]
        assert [
            (n["notebook_name"], n["notebook_path"], n["current"], n["kernel_id"]) for n in listed
        ] == [
            ("a.ipynb", "a.ipynb", False, a["kernel_id"]),
            ("B", "sub/b.ipynb", True, b["kernel_id"]),
        ]

        # Sharing a kernel on purpose, by kernel_id.
        c = await ok(
            client,
            "use_notebook",
            {"notebook_name": "c.ipynb", "mode": "create", "kernel_id": a["kernel_id"]},
        )
        assert c["kernel_id"] == a["kernel_id"]
        assert await printed(client, "print(x)", "c.ipynb") == "1\n"
        kernels = await kernels_by_id(client)
        assert kernels[a["kernel_id"]]["notebooks"] == ["a.ipynb", "c.ipynb"]
        assert kernels[a["kernel_id"]]["kernel_name"] == "python3"
        assert kernels[a["kernel_id"]]["state"] == "idle"
        assert kernels[b["kernel_id"]]["notebooks"] == ["sub/b.ipynb"]
        assert set(kernels) == {a["kernel_id"], b["kernel_id"]}

        # Releasing one of two notebooks on a shared kernel keeps the kernel.
        released = await ok(client, "unuse_notebook", {"notebook_name": "a.ipynb"})
        assert released == {
            "notebook_name": "a.ipynb",
            "notebook_path": "a.ipynb",
            "kernel_id": a["kernel_id"],
        }
        kernels = await kernels_by_id(client)
        assert kernels[a["kernel_id"]]["notebooks"] == ["c.ipynb"]
        assert await printed(client, "print(x)", "c.ipynb") == "1\n"
        assert "a.ipynb" not in [
            n["notebook_path"] for n in (await ok(client, "list_notebooks"))["notebooks"]
        ]

        # Coming back to it gives it a kernel of its own, with a fresh session.
        back = await ok(client, "use_notebook", {"notebook_name": "a.ipynb"})
        assert back["kernel_id"] not in (a["kernel_id"], b["kernel_id"])
        assert "NameError" in await printed(client, "print(x)", "a.ipynb")

        # Restarting a notebook that was the only user of its kernel stops that kernel.
        restarted = await ok(client, "restart_notebook", {"notebook_name": "c.ipynb"})
        assert restarted["kernel_id"] != a["kernel_id"]
        assert (
            restarted["revision"]
            == (await ok(client, "get_notebook_revision", {"notebook_name": "c.ipynb"}))["revision"]
        )
        kernels = await kernels_by_id(client)
        assert a["kernel_id"] not in kernels
        assert kernels[restarted["kernel_id"]]["notebooks"] == ["c.ipynb"]
        assert "NameError" in await printed(client, "print(x)", "c.ipynb")

        # Restarting one notebook of a shared kernel leaves the other its session.
        d = await ok(
            client,
            "use_notebook",
            {"notebook_name": "d.ipynb", "mode": "create", "kernel_id": b["kernel_id"]},
        )
        await ok(client, "execute_code", {"code": "shared = 'yes'", "notebook_name": "d.ipynb"})
        assert await printed(client, "print(shared)", "B") == "yes\n"
        fresh_d = await ok(client, "restart_notebook", {"notebook_name": "d.ipynb"})
        assert fresh_d["kernel_id"] != d["kernel_id"]
        assert await printed(client, "print(shared)", "B") == "yes\n"
        assert "NameError" in await printed(client, "print(shared)", "d.ipynb")
        assert (await kernels_by_id(client))[b["kernel_id"]]["notebooks"] == ["sub/b.ipynb"]

        # Releasing the current notebook leaves none current; its kernel stops.
        await ok(client, "use_notebook", {"notebook_name": "B"})
        released = await ok(client, "unuse_notebook", {"notebook_name": "B"})
        assert (
            released["notebook_path"] == "sub/b.ipynb" and released["kernel_id"] == b["kernel_id"]
        )
        assert b["kernel_id"] not in await kernels_by_id(client)
        await refused(client, "read_notebook", {}, "no_notebook")
        # The name is forgotten; the path still works, and the file was not touched.
        await refused(client, "read_notebook", {"notebook_name": "B"}, "invalid_path")
        read = await ok(client, "read_notebook", {"notebook_name": "sub/b.ipynb"})
        assert [cell["source"] for cell in read["cells"]] == ["b = 2"]
        await refused(client, "interrupt_kernel", {"kernel_id": b["kernel_id"]}, "not_found")

        for path in ("a.ipynb", "c.ipynb", "d.ipynb"):
            await ok(client, "unuse_notebook", {"notebook_name": path})
        assert (await ok(client, "list_kernels"))["kernels"] == []


async def test_read_notebook_pages_and_formats(workspace):
    sources = [f"value_{i} = {i}" for i in range(24)] + ["line one\nline two\nline three"]
    write_notebook(workspace / "pages.ipynb", sources)
    raw = json.loads((workspace / "pages.ipynb").read_text())
    raw["cells"][3]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["three\n"]}]
    raw["cells"][3]["execution_count"] = 7
    (workspace / "pages.ipynb").write_text(json.dumps(raw))
    ids = [cell["id"] for cell in raw["cells"]]
    before = (workspace / "pages.ipynb").read_bytes()
    async with serve(workspace) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "pages.ipynb"})
        assert used["cell_count"] == 25

        brief = await client.call_tool("read_notebook", {})
        page = brief.structured_content
        assert page["cell_count"] == 25 and page["start_index"] == 0
        assert [cell["index"] for cell in page["cells"]] == list(range(20))
        assert [cell["cell_id"] for cell in page["cells"]] == ids[:20]
        assert all(cell["outputs"] is None for cell in page["cells"])
        assert page["cells"][3]["execution_count"] == 7
        assert "start_index=20" in text_of(brief)

        rest = await ok(client, "read_notebook", {"start_index": 20})
        assert [cell["index"] for cell in rest["cells"]] == [20, 21, 22, 23, 24]
        assert (
            rest["cells"][-1]["source"].startswith("line one")
            and "line three" not in rest["cells"][-1]["source"]
        )

        detailed = await ok(
            client, "read_notebook", {"response_format": "detailed", "start_index": 3, "limit": 1}
        )
        assert [cell["cell_id"] for cell in detailed["cells"]] == [ids[3]]
        assert detailed["cells"][0]["outputs"] == [
            {"output_type": "stream", "name": "stdout", "text": "three\n"}
        ]
        last = await ok(client, "read_notebook", {"response_format": "detailed", "start_index": 24})
        assert last["cells"][0]["source"] == "line one\nline two\nline three"

        everything = await ok(client, "read_notebook", {"limit": 0})
        assert len(everything["cells"]) == 25
        empty = await ok(client, "read_notebook", {"start_index": 25})
        assert empty["cells"] == [] and empty["cell_count"] == 25
        await refused(client, "read_notebook", {"start_index": 26}, "invalid_argument")
        assert everything["revision"] == used["revision"]
    # Reading never writes.
    assert (workspace / "pages.ipynb").read_bytes() == before


async def test_tool_declarations_and_list_files(workspace):
    (workspace / "sub" / "deep").mkdir(parents=True)
    write_notebook(workspace / "a.ipynb", ["1"])
    write_notebook(workspace / "sub" / "b.ipynb", ["2"])
    (workspace / "sub" / "deep" / "notes.txt").write_text("hello")
    (workspace / "script.py").write_text("# %%\nprint(1)\n")
    (workspace / ".hidden").write_text("secret")
    # No kernel is needed here, so none is started ahead of need either.
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        await check_tool_declarations(client)
        top = await ok(client, "list_files")
        assert [(f["path"], f["type"]) for f in top["files"]] == [
            ("a.ipynb", "notebook"),
            ("script.py", "file"),
            ("sub", "directory"),
        ]
        assert top["total"] == 3
        sizes = {f["path"]: f["size"] for f in top["files"]}
        assert sizes["a.ipynb"] == (workspace / "a.ipynb").stat().st_size
        assert sizes["script.py"] == len("# %%\nprint(1)\n")
        assert all(
            re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", f["last_modified"])
            for f in top["files"]
        )

        deep = await ok(client, "list_files", {"max_depth": 3})
        assert [f["path"] for f in deep["files"]] == [
            "a.ipynb",
            "script.py",
            "sub",
            "sub/b.ipynb",
            "sub/deep",
            "sub/deep/notes.txt",
        ]
        notebooks = await ok(client, "list_files", {"max_depth": 3, "pattern": "*.ipynb"})
        assert [f["path"] for f in notebooks["files"]] == ["a.ipynb", "sub/b.ipynb"]
        paged = await client.call_tool("list_files", {"max_depth": 3, "start_index": 1, "limit": 2})
        assert [f["path"] for f in paged.structured_content["files"]] == ["script.py", "sub"]
        assert paged.structured_content["total"] == 6
        assert "start_index=3" in text_of(paged)
        inside = await ok(client, "list_files", {"path": "sub", "max_depth": 2})
        assert [f["path"] for f in inside["files"]] == [
            "sub/b.ipynb",
            "sub/deep",
            "sub/deep/notes.txt",
        ]
        itself = await ok(client, "list_files", {"path": "sub", "max_depth": 0})
        assert [(f["path"], f["type"]) for f in itself["files"]] == [("sub", "directory")]
        none = await client.call_tool("list_files", {"pattern": "*.csv"})
        assert without_rendered(none) == {"files": [], "total": 0} and "No files" in text_of(none)

        await refused(client, "list_files", {"path": "a.ipynb"}, "invalid_argument")
        await refused(client, "list_files", {"path": "nowhere"}, "not_found")
        await refused(client, "list_files", {"path": ".."}, "invalid_path")
        await refused(client, "list_files", {"path": "/etc"}, "invalid_path")

        listed = await ok(client, "list_kernels")
        assert listed["kernels"] == [] and "python3" in listed["kernelspecs"]


async def test_kernel_comes_from_the_notebooks_kernelspec(workspace, tmp_path):
    jupyter_path = tmp_path / "jupyter"
    install_kernelspec(jupyter_path, "other")
    write_notebook(workspace / "other.ipynb", ["import os"], kernel_name="other")
    write_notebook(workspace / "ghost.ipynb", ["import os"], kernel_name="not-installed")
    who = "import os; print(os.environ.get('WHICH_KERNEL', 'default'))"
    async with serve(workspace, env={"JUPYTER_PATH": str(jupyter_path)}) as client:
        specs = (await ok(client, "list_kernels"))["kernelspecs"]
        assert {"other", "python3"} <= set(specs)

        used = await ok(client, "use_notebook", {"notebook_name": "other.ipynb"})
        assert (await kernels_by_id(client))[used["kernel_id"]]["kernel_name"] == "other"
        assert await printed(client, who, "other.ipynb") == "other\n"
        # A restart keeps the notebook's kernelspec.
        restarted = await ok(client, "restart_notebook", {"notebook_name": "other.ipynb"})
        assert (await kernels_by_id(client))[restarted["kernel_id"]]["kernel_name"] == "other"
        assert await printed(client, who, "other.ipynb") == "other\n"

        # A kernelspec that is not installed here falls back to the default.
        ghost = await ok(client, "use_notebook", {"notebook_name": "ghost.ipynb"})
        assert (await kernels_by_id(client))[ghost["kernel_id"]]["kernel_name"] == "python3"
        assert await printed(client, who, "ghost.ipynb") == "default\n"

        # An explicit kernel_name wins, and a created notebook records it.
        created = await ok(
            client,
            "use_notebook",
            {"notebook_name": "new.ipynb", "mode": "create", "kernel_name": "other"},
        )
        assert (await kernels_by_id(client))[created["kernel_id"]]["kernel_name"] == "other"
        spec = json.loads((workspace / "new.ipynb").read_text())["metadata"]["kernelspec"]
        assert spec == {"name": "other", "display_name": "Python (other)", "language": "python"}
        override = await ok(
            client, "use_notebook", {"notebook_name": "other.ipynb", "kernel_name": "python3"}
        )
        assert (await kernels_by_id(client))[override["kernel_id"]]["kernel_name"] == "python3"
        assert await printed(client, who, "other.ipynb") == "default\n"
