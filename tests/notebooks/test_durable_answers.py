"""A call that changes a notebook answers only once the change is on disk, in one write.

The real server runs under ``strace -f``, which records its system calls in
the order they happen. For each call that stores something, between the
answer before it and its own answer on stdout there must be: the temporary
file's ``fsync``, its rename onto the notebook, the ``fsync`` of the
notebook's directory (which makes the rename itself survive a power cut), and
only then the answer. A server that answered first, skipped either ``fsync``
or wrote the notebook in place fails here. And the number of those writes
is counted: ``insert_execute_code_cell`` of a quick cell writes the notebook
once, the cell with its outputs (docs/reliability.md says why that is as safe
as writing the cell before the run); a cell still running after a moment is
in the file while it runs, and gets its outputs when it ends.

A process killed at any point keeps what reached the page cache, so a kill
cannot tell a durable write from a merely written one; the order of the
system calls can. Skipped where strace is missing or may not trace.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from rpc import RawServer

from jupyter_mcp_server._store.histories import Histories

NOTEBOOK = "durable.ipynb"
LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<call>\w+)\((?P<args>.*)\)\s+=\s+(?P<result>-?\d+)")


def _strace_works() -> str | None:
    strace = shutil.which("strace")
    if strace is None:
        return "strace is not installed"
    probe = subprocess.run([strace, "-f", "-o", "/dev/null", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.decode(errors='replace').strip()}"
    return None


pytestmark = pytest.mark.skipif(_strace_works() is not None, reason=str(_strace_works()))


@dataclass(frozen=True)
class Call:
    """One finished system call of the server (a line of strace's output, resumed ones joined)."""

    name: str
    args: str

    def names(self, path: Path) -> bool:
        return str(path) in self.args


def system_calls(trace: Path) -> list[Call]:
    """The traced calls in the order they finished (strace -f splits a call other threads
    interleave into an unfinished and a resumed line; the call is where it resumed)."""
    started: dict[str, str] = {}
    calls: list[Call] = []
    for line in trace.read_text(errors="replace").splitlines():
        unfinished = re.match(r"^(\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$", line)
        if unfinished:
            started[unfinished.group(1)] = f"{unfinished.group(2)}({unfinished.group(3)}"
            continue
        resumed = re.match(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$", line)
        if resumed:
            line = f"{resumed.group(1)}  {started.pop(resumed.group(1), '')}{resumed.group(3)}"
        found = LINE.match(line)
        if found and int(found.group("result")) >= 0:
            calls.append(Call(found.group("call"), found.group("args")))
    return calls


def answers(calls: list[Call]) -> list[int]:
    """Where each JSON-RPC message went out on stdout."""
    return [
        i
        for i, call in enumerate(calls)
        # The server writes its messages to a copy of its stdout (a pipe), one write each.
        if call.name == "write" and "<pipe:" in call.args and 'jsonrpc\\"' in call.args
    ]


def notebook_writes(calls: list[Call], directory: Path) -> list[list[str]]:
    """Each durable write of a notebook in `directory` within `calls`, as the steps it made:
    'fsync file', 'rename', 'fsync directory', in the order they happened."""
    writes: list[list[str]] = []
    pending: list[str] = []
    for call in calls:
        if call.name == "fsync" and ".jmcp-tmp" in call.args and call.names(directory):
            pending = ["fsync file"]
        elif call.name in ("rename", "renameat", "renameat2") and ".jmcp-tmp" in call.args:
            if call.names(directory) or f'"{NOTEBOOK}"' in call.args:
                pending.append("rename")
        elif call.name == "fsync" and re.match(rf"\d+<{re.escape(str(directory))}>$", call.args):
            pending.append("fsync directory")
            writes.append(pending)
            pending = []
    if pending:
        writes.append(pending)
    return writes


@pytest.fixture
def traced(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell("1 + 1"))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, workspace / NOTEBOOK)
    trace = tmp_path / "server.strace"
    wrapper = (
        "strace",
        "-f",
        "-y",
        "-s",
        "48",
        "-e",
        "trace=fsync,fdatasync,rename,renameat,renameat2,write,pwrite64",
        "-e",
        "signal=none",
        "-o",
        str(trace),
    )
    history = tmp_path / "history"
    with RawServer(
        workspace,
        "--capability",
        "kernel.prestart=off",
        wrapper=wrapper,
        env={"JUPYTER_MCP_HISTORY_DIR": str(history)},
    ) as server:
        server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "connect"}, timeout=120)
        server.ok("execute_code", {"code": "1"}, timeout=120)  # the kernel is up
        yield server, workspace, trace, history


def _calls_of_last_answer(trace: Path) -> list[Call]:
    """The system calls between the answer before the last one and the last answer."""
    deadline = time.monotonic() + 10
    while True:
        calls = system_calls(trace)
        marks = answers(calls)
        if len(marks) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(marks) >= 2, "strace saw no answers on stdout"
    return calls[marks[-2] + 1 : marks[-1] + 1]


def _then_answered(server: RawServer, trace: Path, tool: str, arguments: dict) -> list[Call]:
    server.ok(tool, arguments, timeout=120)
    time.sleep(0.2)  # strace writes its log as the calls finish; the answer was the last
    return _calls_of_last_answer(trace)


DURABLE = ["fsync file", "rename", "fsync directory"]


@pytest.mark.parametrize(
    ("tool", "arguments", "writes"),
    [
        ("insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "2 + 2"}, 1),
        ("execute_cell", {"cell_index": 0}, 1),
        ("insert_execute_code_cell", {"cell_index": -1, "cell_source": "3 + 3"}, 1),
    ],
)
def test_a_stored_change_is_fsynced_renamed_and_its_directory_fsynced_before_the_answer(
    traced, tool, arguments, writes
):
    server, workspace, trace, _history = traced
    calls = _then_answered(server, trace, tool, arguments)
    assert calls[-1].name == "write", "the window ends with the answer"
    done = notebook_writes(calls[:-1], workspace)
    assert done == [DURABLE] * writes, (
        f"{tool}: expected {writes} durable write(s) of the notebook before the answer "
        f"(file fsync, rename, directory fsync), saw {done}"
    )


def test_the_history_says_a_write_is_coming_before_the_rename_and_records_it_after(traced):
    # What the history's crash safety rests on (docs/history.md): the note that a write is
    # coming is on disk before the file is replaced, and the write's entry only after.
    server, _workspace, trace, _history = traced
    calls = _then_answered(server, trace, "execute_cell", {"cell_index": 0})
    renamed = [
        i
        for i, call in enumerate(calls)
        if call.name in ("rename", "renameat", "renameat2") and f'"{NOTEBOOK}"' in call.args
    ]
    noted = [i for i, c in enumerate(calls) if c.name == "pwrite64" and "pending.json>" in c.args]
    recorded = [i for i, c in enumerate(calls) if c.name == "write" and "entries.jsonl>" in c.args]
    synced = [i for i, c in enumerate(calls) if c.name == "fsync" and c.args.endswith(">")]
    # (An entry may come before the note: the revision the call changes, when the history
    # starts with this call.)
    assert len(renamed) == len(noted) == 1, (renamed, noted)
    assert [i for i in recorded if i > noted[0]] == recorded[-1:], recorded
    assert noted[0] < renamed[0] < recorded[-1] < len(calls) - 1
    assert synced and synced[-1] < len(calls) - 1, "the answer comes after the directory's fsync"


def test_a_quick_new_cell_is_one_write_and_one_history_entry_with_its_outputs(traced):
    server, workspace, trace, history = traced
    calls = _then_answered(
        server, trace, "insert_execute_code_cell", {"cell_index": 0, "cell_source": "40 + 2"}
    )
    assert notebook_writes(calls[:-1], workspace) == [DURABLE]
    stored = nbformat.read(workspace / NOTEBOOK, as_version=4)
    assert stored.cells[0].source == "40 + 2"
    assert stored.cells[0].outputs[0]["data"]["text/plain"] == "42"
    # The history starts with the revision the call changed, then the call's one entry.
    entries = _entries(history, workspace)
    assert [e["tool"] for e in entries] == [None, "insert_execute_code_cell"]


def test_a_long_new_cell_is_in_the_file_while_it_runs_and_gets_its_outputs_after(traced):
    server, workspace, _trace, _history = traced
    source = "import time\ntime.sleep(1.5)\nprint('slept')"
    request = server.start(
        "tools/call",
        {
            "name": "insert_execute_code_cell",
            "arguments": {"cell_index": -1, "cell_source": source},
        },
    )
    deadline = time.monotonic() + 1.2
    seen_running = False
    while time.monotonic() < deadline and not seen_running:
        cells = json.loads((workspace / NOTEBOOK).read_text())["cells"]
        seen_running = any("".join(c["source"]) == source and not c.get("outputs") for c in cells)
        time.sleep(0.05)
    assert seen_running, "a cell still running is in the file, without outputs yet"
    answer = server.wait(request, timeout=120)
    assert not answer["result"].get("isError"), answer
    cells = nbformat.read(workspace / NOTEBOOK, as_version=4).cells
    (ran,) = [c for c in cells if c.source == source]
    assert ran.outputs[0]["text"] == "slept\n"
    assert sum(1 for c in cells if c.source == source) == 1


def test_a_new_cell_refused_for_its_revision_or_index_runs_nothing(traced):
    server, workspace, _trace, _history = traced
    marker = workspace / "ran.txt"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    stale = server.call(
        "insert_execute_code_cell",
        {"cell_index": -1, "cell_source": code, "expected_revision": "0" * 16},
    )
    assert stale.get("isError") and "0000000000000000" in json.dumps(stale)
    far = server.call("insert_execute_code_cell", {"cell_index": 99, "cell_source": code})
    assert far.get("isError") and "out of range" in json.dumps(far)
    server.ok("execute_code", {"code": "1"})  # anything queued on the kernel has run by now
    assert not marker.exists(), "a refused call ran its code"
    sources = [c.source for c in nbformat.read(workspace / NOTEBOOK, as_version=4).cells]
    assert code not in sources


def _entries(history: Path, workspace: Path) -> list[dict]:
    histories = Histories(history)
    found = histories.of(f"workspace:{workspace.resolve()}", NOTEBOOK)
    return [] if found is None else found.entries()
