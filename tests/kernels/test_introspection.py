"""The introspection toolset on real kernels, through the real server and the official client.

Variables of a session with a DataFrame, an array, a function and hostile
objects (a ``__repr__`` that sleeps 60 s, one that raises, one that returns
100 MB); proof that no call leaves a trace in the kernel (execution count,
``In``/``Out``, ``_``, names, ``sys.modules``, ``sys.last_value``, the
notebook); completion, inspection, ``is_complete``; the last error's frames
and locals; history; and the answers while a cell runs, with subshells and
on a kernel that has none.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import error_code, jupyter_server_process, ok, refused, serve, text_of

pytest.importorskip("pandas")
pytest.importorskip("numpy")

INTROSPECTION = ("--toolsets", "introspection")
NO_PRESTART = ("--capability", "kernel.prestart=false")

SESSION = textwrap.dedent(
    '''
    import json, re, sys, time
    import numpy as np
    import pandas as pd
    df = pd.DataFrame({"price": [1.5, None, 3.0], "item": ["a", "b", "c"]})
    arr = np.arange(12.0).reshape(3, 4)
    def add(x, y=2):
        """Add y to x."""
        return x + y
    class Sleepy:
        def __repr__(self):
            time.sleep(60)
            return "never"
    class Raising:
        def __repr__(self):
            raise RuntimeError("no repr for you")
    class Huge:
        def __repr__(self):
            return "x" * 100_000_000
    class Spinning:
        def __repr__(self):
            global spins
            while True:
                spins += 1
    spins = 0
    sleepy, raising, huge, spinning = Sleepy(), Raising(), Huge(), Spinning()
    class SlowFrame(pd.DataFrame):
        def memory_usage(self, *args, **kwargs):
            time.sleep(60)
    slow = SlowFrame({"a": [1]})
    gen = (i for i in range(10))
    '''
)

#: Printed, never bound: what a call on the kernel could have changed.
SNAPSHOT = (
    "print(json.dumps({'count': get_ipython().execution_count, 'In': len(In), 'Out': len(Out), "
    "'underscore': repr(_)[:80], 'names': sorted(n for n in dir() if not re.fullmatch(r'_i*\\d*|__?|___', n)), "
    "'modules': sorted(sys.modules), 'last': repr(getattr(sys, 'last_value', None))}))"
)


async def snapshot(client) -> dict:
    # The snapshot (every module name) is longer than a result's default inline budget.
    result = await client.call_tool("execute_code", {"code": SNAPSHOT, "max_output_chars": 262_144})
    assert not result.is_error, result.structured_content["error"]
    return json.loads(text_of(result))


async def test_variables_of_a_session_with_hostile_objects(workspace):
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION) as client:
        await ok(client, "use_notebook", {"notebook_name": "vars.ipynb", "mode": "create"})
        await ok(client, "insert_execute_code_cell", {"cell_index": -1, "cell_source": SESSION})

        started = time.monotonic()
        listed = await ok(client, "list_variables")
        took = time.monotonic() - started
        assert took < 5, f"a sleeping __repr__ held list_variables for {took:.1f} s"
        by_name = {entry["name"]: entry for entry in listed["variables"]}
        assert set(by_name) == {
            "df",
            "arr",
            "add",
            "Sleepy",
            "Raising",
            "Huge",
            "Spinning",
            "sleepy",
            "raising",
            "huge",
            "spinning",
            "spins",
            "gen",
            "SlowFrame",
            "slow",
        }
        assert listed["total"] == 15
        # Modules, IPython's own names and _private ones are not the user's variables.
        assert not {"pd", "np", "In", "Out", "get_ipython", "exit", "_"} & set(by_name)
        assert by_name["df"]["type"] == "pandas.DataFrame" and by_name["df"]["shape"] == [3, 2]
        assert by_name["arr"]["shape"] == [3, 4] and by_name["arr"]["dtype"] == "float64"
        assert by_name["arr"]["bytes"] == 96
        assert by_name["add"]["type"] == "function"
        assert by_name["sleepy"]["repr"] is None and "budget" in by_name["sleepy"]["repr_note"]
        assert (
            by_name["raising"]["repr"] is None
            and "no repr for you" in by_name["raising"]["repr_note"]
        )
        assert by_name["huge"]["repr_cut"] is True and len(by_name["huge"]["repr"]) <= 121
        assert by_name["gen"]["type"] == "generator"
        # A library's subclass may override what sizes are read with: read under the budget too.
        assert by_name["slow"]["type"] == "__main__.SlowFrame" and by_name["slow"]["repr"] is None
        # A __repr__ looping in Python is stopped, not left spinning in the kernel.
        assert by_name["spinning"]["repr"] is None and "budget" in by_name["spinning"]["repr_note"]
        spun = text_of(await client.call_tool("execute_code", {"code": "spins"}))
        await asyncio.sleep(0.3)
        assert text_of(await client.call_tool("execute_code", {"code": "spins"})) == spun

        with_modules = await ok(
            client, "list_variables", {"include_modules": True, "name_pattern": "n?"}
        )
        assert [entry["name"] for entry in with_modules["variables"]] == ["np"]
        assert [
            e["name"]
            for e in (await ok(client, "list_variables", {"type_filter": "DataFrame"}))["variables"]
        ] == ["df", "slow"]
        assert [
            e["name"]
            for e in (await ok(client, "list_variables", {"name_pattern": "a*"}))["variables"]
        ] == ["add", "arr"]
        classes = await ok(client, "list_variables", {"name_pattern": "[A-Z]*"})
        assert [e["name"] for e in classes["variables"]] == [
            "Huge",
            "Raising",
            "Sleepy",
            "SlowFrame",
            "Spinning",
        ]
        page = await ok(client, "list_variables", {"offset": 2, "limit": 3})
        assert page["offset"] == 2 and page["total"] == 15
        assert [e["name"] for e in page["variables"]] == ["Sleepy", "SlowFrame", "Spinning"]
        await refused(client, "list_variables", {"limit": 501}, "invalid_argument")

        frame = (await ok(client, "describe_variable", {"name": "df"}))["variable"]
        assert frame["kind"] == "dataframe" and frame["shape"] == [3, 2]
        assert frame["columns"][0] == {"name": "price", "dtype": "float64", "non_null": 2}
        assert frame["columns"][1]["name"] == "item" and frame["columns"][1]["non_null"] == 3
        assert "1.5" in frame["head"] and "NaN" in frame["head"]

        array = (await ok(client, "describe_variable", {"name": "arr"}))["variable"]
        assert (
            array["kind"] == "array"
            and array["stats"]["min"] == 0.0
            and array["stats"]["max"] == 11.0
        )
        assert array["stats"]["mean"] == 5.5

        function = (await ok(client, "describe_variable", {"name": "add"}))["variable"]
        assert function["signature"] == "(x, y=2)" and function["doc"] == "Add y to x."

        started = time.monotonic()
        hostile = (await ok(client, "describe_variable", {"name": "sleepy"}))["variable"]
        assert time.monotonic() - started < 5
        assert hostile["repr"] is None and "budget" in hostile["repr_note"]

        lazy = (await ok(client, "describe_variable", {"name": "gen"}))["variable"]
        assert lazy["kind"] == "iterator" and "without being advanced" in lazy["note"]
        # Nothing of the generator was consumed.
        assert text_of(await client.call_tool("execute_code", {"code": "next(gen)"})) == "0"

        missing = await refused(client, "describe_variable", {"name": "dff"}, "not_found")
        assert "'df'" in text_of(missing)
        assert missing.meta["io.jupyter-mcp/error"]["close_matches"][0] == "df"
        await refused(client, "describe_variable", {"name": "df.columns"}, "invalid_argument")


async def test_no_introspection_call_leaves_a_trace(workspace):
    notebook = workspace / "trace.ipynb"
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION) as client:
        await ok(client, "use_notebook", {"notebook_name": "trace.ipynb", "mode": "create"})
        await ok(client, "insert_execute_code_cell", {"cell_index": -1, "cell_source": SESSION})
        await ok(
            client, "execute_code", {"code": "'the last result'"}
        )  # so that _ and Out hold something
        failed = await client.call_tool(
            "execute_code", {"code": "def fails():\n    local = 'kept'\n    1 / 0\nfails()"}
        )
        assert error_code(failed) == "execution_error"
        revision = (await ok(client, "get_notebook_revision"))["revision"]
        on_disk = notebook.read_bytes()
        before = await snapshot(client)

        # What reads the kernel through the helper, and its history: nothing changes, and no module
        # is imported but those pandas loads lazily the first time it formats a frame (as any
        # display of the frame would).
        helper_calls = [
            ("list_variables", {}),
            ("list_variables", {"include_modules": True}),
            ("describe_variable", {"name": "df"}),
            ("describe_variable", {"name": "arr"}),
            ("describe_variable", {"name": "add"}),
            ("describe_variable", {"name": "gen"}),
            ("describe_variable", {"name": "raising"}),
            ("debug_error", {}),
            ("kernel_history", {}),
        ]
        # The kernel's own completion and inspection: IPython's completer imports jedi and
        # its highlighter pygments the first time, as a Tab in JupyterLab would; nothing else changes.
        kernel_calls = [
            ("complete", {"code": "df.pri"}),
            ("complete", {"code": "len(", "cursor_pos": 3, "mode": "inspect"}),
            ("complete", {"code": "for i in x:", "mode": "is_complete"}),
        ]
        for calls, strict in ((helper_calls, True), (kernel_calls, False)):
            for tool, arguments in calls:
                await ok(client, tool, arguments)
            after = await snapshot(client)
            # The snapshot cell itself is the one execution between the two.
            assert after["count"] == before["count"] + 1
            assert after["In"] == before["In"] + 1
            assert after["Out"] == before["Out"] == 1
            assert after["underscore"] == before["underscore"] == "'the last result'"
            assert after["names"] == before["names"]
            assert after["last"] == before["last"] and "ZeroDivisionError" in after["last"]
            imported = set(after["modules"]) - set(before["modules"])
            if strict:
                assert {m for m in imported if not m.startswith("pandas.")} == set(), sorted(
                    imported
                )
            before = after
        assert (await ok(client, "get_notebook_revision"))["revision"] == revision
        assert notebook.read_bytes() == on_disk
        history = (await ok(client, "kernel_history", {"limit": 200}))["entries"]
        assert not any(
            "jupyter_mcp" in entry["input"] or "jupyter-mcp" in entry["input"] for entry in history
        )


async def test_completion_inspection_and_bad_cursors(workspace):
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION) as client:
        await ok(client, "use_notebook", {"notebook_name": "complete.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "import pandas as pd"})

        completed = await ok(client, "complete", {"code": "pd.DataFrame.mer"})
        assert any(match.endswith("merge") for match in completed["matches"]), completed["matches"]
        assert completed["cursor_end"] == len("pd.DataFrame.mer")

        inspected = await ok(
            client, "complete", {"code": "len(", "cursor_pos": 3, "mode": "inspect"}
        )
        assert inspected["found"] is True and "Return the number of items" in inspected["text"]
        assert "\x1b" not in inspected["text"]

        assert (
            await ok(client, "complete", {"code": "for i in range(3):", "mode": "is_complete"})
        )["status"] == "incomplete"
        assert (await ok(client, "complete", {"code": "x = 1", "mode": "is_complete"}))[
            "status"
        ] == "complete"

        for cursor in (100, -1, 4):
            await refused(
                client, "complete", {"code": "abc", "cursor_pos": cursor}, "invalid_argument"
            )

        history = (await ok(client, "kernel_history"))["entries"]
        # This kernel's inputs only, never an earlier kernel's from IPython's history database.
        assert [entry["input"] for entry in history] == ["import pandas as pd"]
        await ok(client, "execute_code", {"code": "a = 1"})
        await ok(client, "execute_code", {"code": "b = 2"})
        assert [
            e["input"] for e in (await ok(client, "kernel_history", {"limit": 2}))["entries"]
        ] == ["a = 1", "b = 2"]


async def test_debug_error_shows_the_raising_frame_and_its_locals(workspace):
    source = "def inner(n):\n    planted = 'sentinel-' + str(n)\n    return n / 0\n\ndef outer():\n    return inner(42)\n\nouter()"
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION) as client:
        await ok(client, "use_notebook", {"notebook_name": "debug.ipynb", "mode": "create"})
        nothing = await ok(client, "debug_error")
        assert nothing["error"] is None and nothing["frames"] == []
        await ok(client, "insert_execute_code_cell", {"cell_index": -1, "cell_source": "x = 1"})
        failed = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": source}
        )
        assert error_code(failed) == "execution_error"
        cell_id = failed.structured_content["cell_id"]

        report = await ok(client, "debug_error", {"context_lines": 1})
        assert report["error"] == {"ename": "ZeroDivisionError", "evalue": "division by zero"}
        functions = [frame["function"] for frame in report["frames"]]
        assert functions == ["<module>", "outer", "inner"], functions
        raising = report["frames"][-1]
        assert raising["line"] == 3 and raising["source"] == [
            "    planted = 'sentinel-' + str(n)",
            "    return n / 0",
            "",
        ]
        assert raising["locals"]["planted"]["repr"] == "'sentinel-42'"
        assert raising["locals"]["n"] == {"type": "int", "repr": "42", "repr_cut": False}
        assert raising["cell_index"] == 1 and raising["cell_id"] == cell_id
        assert report["frames"][0]["locals"] is None  # the notebook's namespace: list_variables
        assert "sentinel-42" in text_of(await client.call_tool("debug_error", {}))


def kernelspec(root: Path, name: str, body: str) -> dict[str, str]:
    """A kernelspec running an IPython kernel subclass with `body`, and the environment that finds it."""
    module = f"{name}_kernel"
    (root / f"{module}.py").write_text(
        "from ipykernel.ipkernel import IPythonKernel\n"
        f"class Kernel(IPythonKernel):\n{textwrap.indent(body, '    ')}"
    )
    spec = root / "share" / "jupyter" / "kernels" / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [
                    sys.executable,
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    "{connection_file}",
                    f"--IPKernelApp.kernel_class={module}.Kernel",
                ],
                "display_name": name,
                "language": "python",
                "env": {"PYTHONPATH": str(root)},
            }
        )
    )
    return {"JUPYTER_PATH": str(root / "share" / "jupyter")}


def no_subshell_kernel(root: Path) -> dict[str, str]:
    """A kernel that does not offer subshells, as ipykernel 6 and most other kernels."""
    return kernelspec(
        root,
        "nosubshells",
        "@property\n"
        "def kernel_info(self):\n"
        "    info = dict(super().kernel_info)\n"
        "    info['supported_features'] = [f for f in info['supported_features'] if f != 'kernel subshells']\n"
        "    return info\n",
    )


async def test_a_kernel_in_another_language(workspace, tmp_path):
    """Variables and tracebacks are Python's; completion and history are any kernel's own."""
    env = kernelspec(
        tmp_path,
        "otherlang",
        "language_info = {**IPythonKernel.language_info, 'name': 'otherlang'}\n",
    )
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION, env=env) as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "other.ipynb", "mode": "create", "kernel_name": "otherlang"},
        )
        await ok(client, "execute_code", {"code": "value = 1"})
        for tool, arguments in (
            ("list_variables", {}),
            ("describe_variable", {"name": "value"}),
            ("debug_error", {}),
        ):
            refusal = await refused(client, tool, arguments, "unsupported")
            assert "otherlang" in text_of(refusal) and "execute_code" in text_of(refusal)
        assert "value" in (await ok(client, "complete", {"code": "valu"}))["matches"]
        assert (await ok(client, "kernel_history"))["entries"][-1]["input"] == "value = 1"


@pytest.mark.parametrize("subshells", [True, False])
async def test_while_a_cell_runs(workspace, tmp_path, subshells):
    env = {} if subshells else no_subshell_kernel(tmp_path)
    kernel_name = "python3" if subshells else "nosubshells"
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION, env=env) as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "busy.ipynb", "mode": "create", "kernel_name": kernel_name},
        )
        await ok(client, "execute_code", {"code": "ready = 41"})
        await ok(client, "list_variables")  # the side sockets are set up before the cell starts
        marker = workspace / "started"
        running = asyncio.create_task(
            client.call_tool(
                "execute_code",
                {"code": f"open({str(marker)!r}, 'w').close()\nimport time\ntime.sleep(30)"},
            )
        )
        try:
            deadline = time.monotonic() + 10
            while not marker.exists():
                assert time.monotonic() < deadline, "the cell did not start"
                await asyncio.sleep(0.05)
            started = time.monotonic()
            if subshells:
                listed = await ok(client, "list_variables")
                assert [entry["name"] for entry in listed["variables"]] == ["ready"]
                completed = await ok(client, "complete", {"code": "rea"})
                assert "ready" in completed["matches"]
            else:
                busy = await refused(client, "list_variables", {}, "busy")
                details = busy.meta["io.jupyter-mcp/error"]
                assert (
                    details["kernel_state"] == "busy"
                    and "time.sleep(30)" in details["running_code"]
                )
                assert "subshells" in text_of(busy)
                await refused(client, "complete", {"code": "rea"}, "busy")
            assert time.monotonic() - started < 3, "the question waited behind the running cell"
        finally:
            await client.call_tool("interrupt_notebook_session", {"notebook_name": "busy.ipynb"})
            interrupted = await running
        assert error_code(interrupted) == "interrupted", text_of(interrupted)
        assert (await ok(client, "describe_variable", {"name": "ready"}))["variable"][
            "repr"
        ] == "41"


async def test_a_namespace_changing_under_the_question(workspace):
    """With subshells the question runs beside a cell that binds and deletes names all the time."""
    churn = textwrap.dedent(
        f"""
        open({str(workspace / "churning")!r}, "w").close()
        import time
        end, n = time.monotonic() + 30, 0
        while time.monotonic() < end:
            globals()[f"churn{{n % 300}}"] = n
            globals().pop(f"churn{{(n + 150) % 300}}", None)
            n += 1
        """
    )
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION) as client:
        await ok(client, "use_notebook", {"notebook_name": "churn.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "steady = 1"})
        running = asyncio.create_task(client.call_tool("execute_code", {"code": churn}))
        try:
            deadline = time.monotonic() + 10
            while not (workspace / "churning").exists():
                assert time.monotonic() < deadline, "the cell did not start"
                await asyncio.sleep(0.05)
            for _ in range(10):
                listed = await ok(client, "list_variables", {"limit": 500})
                assert "steady" in {entry["name"] for entry in listed["variables"]}
            await refused(client, "describe_variable", {"name": "never_bound"}, "not_found")
        finally:
            await client.call_tool("interrupt_notebook_session", {"notebook_name": "churn.ipynb"})
            await running


async def test_no_kernel_and_default_toolsets(workspace):
    async with serve(workspace, *NO_PRESTART) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "list_variables" not in names and "execute_code" in names
    (workspace / "idle.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    async with serve(workspace, *NO_PRESTART, *INTROSPECTION) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "list_variables",
            "describe_variable",
            "complete",
            "debug_error",
            "kernel_history",
        } <= names
        refusal = await refused(
            client, "list_variables", {"notebook_name": "idle.ipynb"}, "not_found"
        )
        assert "use_notebook" in text_of(refusal)
        await refused(client, "kernel_history", {}, "no_notebook")


async def test_a_kernel_on_a_jupyter_server(workspace, tmp_path):
    """Reached only through its websocket: no side sockets, so asked between executions."""
    token = "introspection-token-3b7d"
    with jupyter_server_process(tmp_path, token) as (url, _root, _log):
        async with serve(
            workspace,
            *NO_PRESTART,
            *INTROSPECTION,
            "--jupyter-url",
            url,
            env={"JUPYTER_TOKEN": token},
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "far.ipynb", "mode": "create"})
            await ok(client, "execute_code", {"code": "far = {'a': 1}"})
            listed = await ok(client, "list_variables")
            assert listed["variables"] == [
                {
                    "name": "far",
                    "type": "dict",
                    "len": 1,
                    "bytes": listed["variables"][0]["bytes"],
                    "repr": "{'a': 1}",
                    "repr_cut": False,
                }
            ]
            assert "far" in (await ok(client, "complete", {"code": "fa"}))["matches"]
            marker = workspace / "far-started"
            running = asyncio.create_task(
                client.call_tool(
                    "execute_code",
                    {"code": f"open({str(marker)!r}, 'w').close()\nimport time\ntime.sleep(30)"},
                )
            )
            try:
                deadline = time.monotonic() + 10
                while not marker.exists():
                    assert time.monotonic() < deadline, "the cell did not start"
                    await asyncio.sleep(0.05)
                started = time.monotonic()
                busy = await refused(client, "describe_variable", {"name": "far"}, "busy")
                assert busy.meta["io.jupyter-mcp/error"]["kernel_state"] == "busy"
                assert "websocket" in text_of(busy)
                assert time.monotonic() - started < 3
            finally:
                await client.call_tool("interrupt_notebook_session", {"notebook_name": "far.ipynb"})
                await running
            assert (await ok(client, "describe_variable", {"name": "far"}))["variable"]["len"] == 1
