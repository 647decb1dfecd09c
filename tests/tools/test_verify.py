"""verify_notebook: the notebook from the top in a throwaway kernel, on a real server.

A notebook that works only because its cells ran out of order in the live
kernel (a planted hidden-state dependency) is found out; outputs that differ
only by memory addresses and timestamps do not count as differences; a
missing module is named; the live kernel's variables and the file stay as
they were; the throwaway kernel counts against --max-kernels.
"""

from __future__ import annotations

import nbformat
from conftest import ok, refused, serve
from test_runs import write_notebook

from jupyter_mcp_server._tools.verify import normalised

RUNS = ("--toolsets", "runs", "--capability", "kernel.prestart=off")


async def test_hidden_state_failures_differences_and_the_live_kernel_untouched(workspace):
    path = workspace / "planted.ipynb"
    ids = write_notebook(
        path,
        [
            "a = 1",
            "total = a + b\nprint(total)",  # b is defined only below: hidden state
            "b = 2",
            "print(object())\nimport datetime\nprint(datetime.datetime.now().isoformat())",
            "import random\nprint(random.random())",
            "verified_here = True",
        ],
    )
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "planted.ipynb"})
        # Run out of order in the live kernel: it works there.
        for index in (0, 2, 1, 3, 4):
            await ok(client, "execute_cell", {"cell_index": index})
        await ok(client, "execute_code", {"code": "marker = 'live'"})
        before = (await ok(client, "get_notebook_revision"))["revision"]
        kernels_before = (await ok(client, "list_kernels"))["kernels"]

        found = await ok(client, "verify_notebook", {})
        assert found["status"] == "fails" and found["revision"] == before
        assert found["hidden_state"] == [
            {"index": 1, "cell_id": ids[1], "names": ["b"], "defined_below": [ids[2]]}
        ]
        assert [(f["cell_id"], f["ename"]) for f in found["failures"]] == [(ids[1], "NameError")]
        differs = {d["cell_id"] for d in found["differences"]}
        # The failing cell and the random number differ; the address and the timestamp do not.
        assert differs == {ids[1], ids[4]}, found["differences"]
        assert found["cells_run"] == 6 and found["missing_modules"] == []

        # Nothing of the live session changed: its variables, its kernel, the file.
        live = await ok(client, "execute_code", {"code": "print(marker, 'verified_here' in dir())"})
        assert live["status"] == "ok"
        said = await client.call_tool(
            "execute_code", {"code": "print(marker, 'verified_here' in dir())"}
        )
        assert "live False" in said.content[0].text
        assert (await ok(client, "get_notebook_revision"))["revision"] == before
        assert (await ok(client, "list_kernels"))["kernels"] == kernels_before


async def test_a_clean_notebook_and_a_missing_module(workspace):
    write_notebook(workspace / "clean.ipynb", ["x = 2", "print(x * 21)"])
    write_notebook(
        workspace / "missing.ipynb", ["import not_a_module_anywhere_42", "print('after')"]
    )
    async with serve(workspace, *RUNS) as client:
        await ok(client, "use_notebook", {"notebook_name": "clean.ipynb"})
        await ok(client, "run_cells", {})
        clean = await ok(client, "verify_notebook", {})
        assert clean["status"] == "ok" and clean["differences"] == [] and clean["failures"] == []
        missing = await ok(client, "verify_notebook", {"notebook_name": "missing.ipynb"})
        assert missing["missing_modules"] == ["not_a_module_anywhere_42"]
        assert missing["failures"][0]["ename"] == "ModuleNotFoundError"
        # The file is never written: the cell that never ran has no outputs.
        cells = nbformat.read(str(workspace / "missing.ipynb"), as_version=4).cells
        assert all(not cell.outputs for cell in cells)


async def test_bounded_by_its_timeout_and_by_max_kernels(workspace):
    write_notebook(workspace / "slow.ipynb", ["import time\ntime.sleep(30)", "print('never')"])
    async with serve(workspace, *RUNS, "--max-kernels", "1") as client:
        await ok(client, "use_notebook", {"notebook_name": "slow.ipynb"})
        await refused(client, "verify_notebook", {}, "kernel_limit")
        await ok(client, "unuse_notebook", {"notebook_name": "slow.ipynb"})
        stopped = await ok(client, "verify_notebook", {"notebook_name": "slow.ipynb", "timeout": 3})
        assert stopped["status"] == "incomplete" and stopped["stopped_at"]["index"] == 0
        assert stopped["seconds"] < 20
        assert (await ok(client, "list_kernels"))["kernels"] == []


def test_what_differs_between_two_runs_of_the_same_code_is_left_out() -> None:
    one = (
        "Error in callback <bound method W._fill of <__main__.W object at 0x7f35cfa2c950>> "
        "(for post_run_cell), with arguments args (<ExecutionResult object at 7f35cee1f1d0, "
        'execution_count=3>,):\n  File "/tmp/ipykernel_19291/50175785.py", line 6'
    )
    other = (
        "Error in callback <bound method W._fill of <__main__.W object at 0x7fab01c2d3e0>> "
        "(for post_run_cell), with arguments args (<ExecutionResult object at 7fab00e1f2a0, "
        'execution_count=3>,):\n  File "/tmp/ipykernel_402/50175785.py", line 6'
    )
    assert normalised(one) == normalised(other)
    # What code printed on purpose stays: a word after "at", a short hex, another count.
    assert normalised("meet at cafe, at 10") == "meet at cafe, at 10"
    assert normalised(one) != normalised(one.replace("execution_count=3", "execution_count=4"))
