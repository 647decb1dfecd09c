"""A notebook's durable write leaves the server free to answer every other call meanwhile.

A write ends with two ``fsync`` calls and a check-and-rename under the
directory's write lock, which every server process writing in that directory
takes (tests/notebooks/test_concurrent_writers.py). Made on the event loop, a write
waiting for that lock stopped the whole server: while another process held
the lock (another server re-reading a big notebook it lost a race on), no
agent's call was answered, whatever notebook it was about. Here a real
process holds the lock with ``flock``, as a second server does, and the
server must go on answering; once the lock is let go, the waiting write lands
whole. A write whose request is cancelled while it waits still ends as one
write: the file and what the server says of it agree afterwards.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
from rpc import RawServer

SERVER_ARGS = ("--capability", "kernel.prestart=off")

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def directory_lock_held(directory: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding `directory`'s write lock until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        if holder.poll() is None:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(10)


def let_go(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(10)


def notebook(path: Path, *sources: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, path)


def sources_on_disk(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return [cell.source for cell in nb.cells]


def revision_on_disk(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def pending(server: RawServer, request_id: int, seconds: float) -> bool:
    """Whether `request_id` is still unanswered after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll_answer(request_id) is not None:
            return False
        time.sleep(0.05)
    return True


def test_a_write_waiting_for_another_process_lock_stops_no_other_call(workspace: Path) -> None:
    notebook(workspace / "locked" / "a.ipynb", "a = 1")
    notebook(workspace / "free" / "b.ipynb", "b = 1")
    with RawServer(workspace, *SERVER_ARGS) as server:
        server.ok("read_notebook", {"notebook_name": "locked/a.ipynb"})
        with directory_lock_held(workspace / "locked") as holder:
            waiting = server.start(
                "tools/call",
                {
                    "name": "insert_cell",
                    "arguments": {
                        "notebook_name": "locked/a.ipynb",
                        "cell_index": -1,
                        "cell_type": "code",
                        "cell_source": "a = 2",
                    },
                },
            )
            assert pending(server, waiting, 1.0), "the write did not wait for the lock"
            # Meanwhile every other call is answered: a read, a write elsewhere, a listing.
            read = server.ok("read_notebook", {"notebook_name": "free/b.ipynb"}, timeout=20)
            assert [cell["source"] for cell in read["cells"]] == ["b = 1"]
            server.ok(
                "insert_cell",
                {
                    "notebook_name": "free/b.ipynb",
                    "cell_index": -1,
                    "cell_type": "code",
                    "cell_source": "b = 2",
                },
                timeout=20,
            )
            assert sources_on_disk(workspace / "free" / "b.ipynb") == ["b = 1", "b = 2"]
            server.ok("list_files", {"path": "", "max_depth": 2}, timeout=20)
            # The waiting write has not gone round the lock.
            assert pending(server, waiting, 0.5)
            assert sources_on_disk(workspace / "locked" / "a.ipynb") == ["a = 1"]
            let_go(holder)
            answer = server.wait(waiting, timeout=30)
        result = answer["result"]
        assert not result.get("isError"), result
        assert sources_on_disk(workspace / "locked" / "a.ipynb") == ["a = 1", "a = 2"]
        assert result["structuredContent"]["revision"] == revision_on_disk(
            workspace / "locked" / "a.ipynb"
        )


def test_a_write_cancelled_while_it_waits_still_ends_as_one_write(workspace: Path) -> None:
    path = workspace / "locked" / "a.ipynb"
    notebook(path, "a = 1")
    with RawServer(workspace, *SERVER_ARGS, "--toolsets", "history") as server:
        server.ok("read_notebook", {"notebook_name": "locked/a.ipynb"})
        with directory_lock_held(workspace / "locked") as holder:
            waiting = server.start(
                "tools/call",
                {
                    "name": "insert_cell",
                    "arguments": {
                        "notebook_name": "locked/a.ipynb",
                        "cell_index": -1,
                        "cell_type": "code",
                        "cell_source": "a = 2",
                    },
                },
            )
            assert pending(server, waiting, 1.0)
            server.notify(
                "notifications/cancelled", {"requestId": waiting, "reason": "the person stopped"}
            )
            # The server answers other calls while the cancelled write still waits.
            server.ok("list_notebooks", {}, timeout=20)
            let_go(holder)
        # The write went through whole (it had begun: only its answer is dropped), and
        # the server's view of the file is the file.
        deadline = time.monotonic() + 20
        while sources_on_disk(path) != ["a = 1", "a = 2"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sources_on_disk(path) == ["a = 1", "a = 2"]
        read = server.ok("read_notebook", {"notebook_name": "locked/a.ipynb"}, timeout=20)
        assert [cell["source"] for cell in read["cells"]] == ["a = 1", "a = 2"]
        assert read["revision"] == revision_on_disk(path)
        # The next write starts from it, checked against the revision the server gave.
        server.ok(
            "insert_cell",
            {
                "notebook_name": "locked/a.ipynb",
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "a = 3",
                "expected_revision": read["revision"],
            },
            timeout=20,
        )
        assert sources_on_disk(path) == ["a = 1", "a = 2", "a = 3"]
        # The history names each revision the file held, the cancelled write's too.
        history = server.ok("notebook_history", {"notebook_name": "locked/a.ipynb"}, timeout=20)
        revisions = [entry["revision"] for entry in history["entries"]]
        assert revisions[0] == revision_on_disk(path), history
        assert read["revision"] in revisions, history
