"""A detailed read of a notebook with 50 MiB of outputs: bounded, and the memory given back.

The real server over stdio and the official client. The structured part of
``read_notebook(response_format="detailed")`` is cut per output the way its
text is (``--inline-text-chars``, ``--inline-image-bytes``): long text keeps
its head and tail with a marker naming the output's resource, a large image
is replaced by a marker naming it. The server's RSS (``VmRSS`` of its own
process, never its kernels) is read before and after the read.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import random
from pathlib import Path

import nbformat
from conftest import ok, serve

MIB = 1024 * 1024


def big_notebook(path: Path, cells: int = 10) -> int:
    """`cells` code cells, each with 4 MiB of printed text and a 1 MiB base64 PNG; the outputs' size."""
    notebook = nbformat.v4.new_notebook()
    chunk = random.Random(7).randbytes(768 * 1024)
    total = 0
    for index in range(cells):
        text = "".join(f"line {index}-{n} " + "x" * 60 + "\n" for n in range(4 * MIB // 72))
        image = base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk).decode()
        outputs = [
            nbformat.v4.new_output("stream", name="stdout", text=text),
            nbformat.v4.new_output(
                "display_data", data={"image/png": image, "text/plain": "<Figure>"}
            ),
        ]
        total += len(text) + len(image)
        notebook.cells.append(
            nbformat.v4.new_code_cell(f"plot({index})", id=f"c{index}", outputs=outputs)
        )
    nbformat.write(notebook, path)
    return total


def server_pid(workspace: Path) -> int:
    """The server process (started by this test's client) whose command line names `workspace`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    arguments = handle.read().split(b"\0")
            except OSError:
                continue
            if b"jupyter_mcp_server" in arguments and str(workspace).encode() in arguments:
                found.append(int(entry))
    assert len(found) == 1, found
    return found[0]


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """``VmRSS`` (now) or ``VmHWM`` (the peak so far) of the process, in MiB."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


async def settled_rss(pid: int) -> float:
    """RSS once the server has had a moment to answer and free what the answer held."""
    await asyncio.sleep(1.0)
    return rss_mib(pid)


async def test_a_detailed_read_of_50_mib_of_outputs_is_bounded_and_gives_memory_back(
    workspace: Path,
) -> None:
    outputs_size = big_notebook(workspace / "big.ipynb")
    assert outputs_size > 50 * MIB
    async with serve(workspace) as client:
        pid = server_pid(workspace)
        started = await settled_rss(pid)
        # The brief read loads the notebook into the store: what every later read starts from.
        await ok(client, "read_notebook", {"notebook_name": "big.ipynb"})
        before = await settled_rss(pid)
        with contextlib.suppress(
            OSError
        ):  # resets VmHWM (Linux 4.0 and later), to see the read's own peak
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        result = await client.call_tool(
            "read_notebook",
            {"notebook_name": "big.ipynb", "response_format": "detailed", "limit": 0},
        )
        assert not result.is_error
        after = await settled_rss(pid)
        peak = rss_mib(pid, "VmHWM")
        structured = json.dumps(result.structured_content)
        print(
            f"\nRSS MiB: started {started:.0f}, after the brief read {before:.0f}, after the detailed read "
            f"{after:.0f} (peak {peak:.0f}); structuredContent {len(structured) / MIB:.2f} MiB of "
            f"{outputs_size / MIB:.0f} MiB of outputs"
        )
        assert len(structured) < 2 * MIB, len(structured)
        cells = result.structured_content["cells"]  # type: ignore[index]
        assert len(cells) == 10
        for cell in cells:
            stream, figure = cell["outputs"]
            uri = f"notebook-output:///big.ipynb?cell={cell['cell_id']}&output="
            # Long text: its head and tail, with a marker saying how much is left out and where it is whole.
            assert stream["text"].startswith(f"line {cell['index']}-0 ")
            assert stream["text"].endswith("x" * 60 + "\n")
            assert "characters left out here" in stream["text"] and uri + "0" in stream["text"]
            assert len(stream["text"]) < 70_000
            # An image never travels as JSON text: it leaves the data, named with its resource in
            # outputs_cut; the small text beside it kept.
            assert "image/png" not in figure["data"]
            (image,) = [cut for cut in cell["outputs_cut"] if cut["output"] == 1]
            assert image["mime_type"] == "image/png" and image["uri"] == uri + "1"
            assert figure["data"]["text/plain"] == "<Figure>"
            assert {cut["output"] for cut in cell["outputs_cut"]} == {0, 1}
        # read_cell's structured outputs are cut the same way.
        one = await ok(client, "read_cell", {"notebook_name": "big.ipynb", "cell_id": "c3"})
        assert len(json.dumps(one)) < 200_000 and {cut["output"] for cut in one["outputs_cut"]} == {
            0,
            1,
        }
        # The whole is one resource read away.
        whole = await client.read_resource("notebook-output:///big.ipynb?cell=c3&output=0")
        assert len(whole.contents[0].text) > 4 * MIB - 100  # type: ignore[union-attr]
        assert after - before < 24, (started, before, after)
