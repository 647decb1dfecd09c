"""SIGKILL of the server during apply_edits: the file is before or after, never between,
and the notebook's history stays consistent.

Each trial starts a server on the notebook the previous one left, asks for a
batch of 50 mixed operations as a dry run (which names the revision the batch
makes: new cells' ids follow from the batch), sends the batch for real and
kills the server after a random delay drawn around a batch's own latency, so
kills land before, during and after the write of the file and of the history.
Then the file must be at the revision before or the dry run's revision, and
the history must read back whole: every entry's content kept, each entry
following the one before it; once the next server has read the file, the
history ends at the file's revision, attributed to apply_edits when the batch
landed (a write whose entry the kill prevented is attributed by its pending
note).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import statistics
import time
from pathlib import Path

import nbformat
import pytest
from rpc import RawServer

from jupyter_mcp_server._store.histories import Histories

NOTEBOOK = "crash.ipynb"
SERVER_ARGS = ("--toolsets", "history", "--capability", "kernel.prestart=off")


def revision_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def seed(path: Path, rng: random.Random) -> None:
    """About 0.5 MB, so that writing it takes a while and kills land mid-write."""
    notebook = nbformat.v4.new_notebook()
    for index in range(400):
        cell = nbformat.v4.new_code_cell(
            f"# seed {index}\n" + "x = 1  # filler\n" * rng.randint(2, 30)
        )
        cell.outputs = [
            nbformat.v4.new_output(
                "stream", name="stdout", text="output line\n" * rng.randint(0, 40)
            )
        ]
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


def batch(rng: random.Random, ids: list[str], tag: str) -> list[dict]:
    operations: list[dict] = []
    live = list(ids)
    for step in range(50):
        kind = rng.choice(["insert", "overwrite", "replace", "delete", "move", "tags"])
        if kind == "insert" or len(live) < 10:
            operations.append(
                {"op": "insert", "index": rng.randint(0, len(live)), "source": f"# {tag} {step}\n"}
            )
            live.insert(operations[-1]["index"], None)  # an id the server makes
            continue
        named = [i for i in live if i is not None]
        cell_id = rng.choice(named)
        if kind == "overwrite":
            operations.append(
                {"op": "overwrite", "cell_id": cell_id, "source": f"# {tag} {step} rewritten\n" * 3}
            )
        elif kind == "replace":
            operations.append({"op": "overwrite", "cell_id": cell_id, "source": "a b a\n"})
            operations.append(
                {
                    "op": "replace",
                    "cell_id": cell_id,
                    "old_string": "a",
                    "new_string": tag,
                    "replace_all": True,
                }
            )
        elif kind == "delete":
            operations.append({"op": "delete", "cell_id": cell_id})
            live.remove(cell_id)
        elif kind == "move":
            operations.append(
                {"op": "move", "cell_id": cell_id, "to_index": rng.randrange(len(live))}
            )
            live.remove(cell_id)
            live.insert(operations[-1]["to_index"], cell_id)
        else:
            operations.append(
                {"op": "set_cell_metadata", "cell_id": cell_id, "tags": [f"{tag}-{step}"]}
            )
    return operations


def check_history(root: Path, file_revision: str | None) -> list[dict]:
    """The history reads back whole; with `file_revision`, it ends there. Its entries."""
    histories = Histories(root)
    (directory,) = [d for d in root.iterdir() if d.is_dir()]
    history = histories.of(
        json.loads((directory / "index.json").read_text())["namespace"], NOTEBOOK
    )
    assert history is not None and history.directory == directory
    entries = history.entries()
    for before, after in itertools.pairwise(entries):
        assert after["previous_revision"] == before["revision"], entries
    for entry in entries:
        _, cells = history.content(entry["revision"])  # raises when not kept
        texts = history.texts(entry["revision"])
        assert all(digest in texts for _, digest in cells)
    if file_revision is not None:
        assert entries[-1]["revision"] == file_revision
    return entries


def run_trials(tmp_path: Path, trials: int, rng_seed: int = 16) -> dict:
    rng = random.Random(rng_seed)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    history_root = tmp_path / "history"
    env = {"JUPYTER_MCP_HISTORY_DIR": str(history_root)}
    path = workspace / NOTEBOOK
    seed(path, rng)
    figures = {"trials": 0, "landed_before": 0, "landed_after": 0, "answered_before_kill": 0}
    latencies: list[float] = []
    landed: str | None = None  # the batch revision of the previous trial, when it landed
    for trial in range(trials):
        server = RawServer(workspace, *SERVER_ARGS, env=env)
        try:
            listed = server.ok("notebook_history", {"notebook_name": NOTEBOOK, "limit": 1})
            before = revision_of(path.read_bytes())
            assert listed["revision"] == before
            if landed is not None:
                # The previous trial's batch is in the history as apply_edits' (its entry, or its pending note).
                assert (
                    listed["entries"][0]["revision"] == landed
                    and listed["entries"][0]["tool"] == "apply_edits"
                )
            check_history(history_root, before)
            ids = [cell["id"] for cell in json.loads(path.read_text())["cells"]]
            operations = batch(rng, ids, f"t{trial}")
            arguments = {"notebook_name": NOTEBOOK, "operations": operations}
            after = server.ok("apply_edits", {**arguments, "dry_run": True})["revision"]
            if trial < 3:  # a few complete batches: what a batch takes here
                started = time.monotonic()
                server.ok("apply_edits", arguments)
                latencies.append(time.monotonic() - started)
                assert revision_of(path.read_bytes()) == after
                landed = after
                continue
            request = server.start("tools/call", {"name": "apply_edits", "arguments": arguments})
            time.sleep(rng.uniform(0.2, 2.5) * statistics.median(latencies))
            answered = server.poll_answer(request)
            server.kill()
        finally:
            if server.process.poll() is None:
                server.kill()
        figures["trials"] += 1
        now = revision_of(path.read_bytes())
        assert now in (before, after), (
            f"trial {trial}: the file is neither before nor after the batch"
        )
        nbformat.validate(nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT))
        if answered is not None:
            figures["answered_before_kill"] += 1
            assert now == after
        figures["landed_after" if now == after else "landed_before"] += 1
        landed = after if now == after else None
        check_history(history_root, None)
    figures["median_batch_ms"] = round(statistics.median(latencies) * 1000, 1)
    return figures


def test_a_killed_batch_leaves_the_file_before_or_after_and_the_history_consistent(tmp_path):
    figures = run_trials(tmp_path, 12)
    print(f"\napply_edits kills: {figures}")
    assert figures["trials"] == 9


@pytest.mark.slow
def test_a_hundred_killed_batches(tmp_path):
    figures = run_trials(tmp_path, 103, rng_seed=100)
    print(f"\napply_edits kills: {figures}")
    assert figures["trials"] == 100
    # Kills landed on both sides of the write.
    assert figures["landed_before"] > 0 and figures["landed_after"] > 0


# SIGKILL during every kind of call that writes a notebook, with outside writes between.

MIXED_ARGS = ("--toolsets", "history,runs", "--capability", "kernel.prestart=off")
#: The kinds of call killed, in turn: an undo is a restore of the revision before the current
#: one, a redo the restore of what the undo replaced.
KINDS = ("apply_edits", "execute_cell", "run_cells", "undo", "redo")
TOOL_OF = {"undo": "restore_notebook", "redo": "restore_notebook"}
RUN_CELLS = 5


def seed_mixed(path: Path, rng: random.Random) -> None:
    """Filler to make a write take a few milliseconds, and a few short cells to run (random
    outputs, so that no two runs write the same revision)."""
    notebook = nbformat.v4.new_notebook()
    for index in range(120):
        notebook.cells.append(
            nbformat.v4.new_markdown_cell(f"# filler {index}\n" + "text " * rng.randint(10, 300))
        )
    for index in range(RUN_CELLS):
        source = f"import random, time\ntime.sleep(0.05)\nprint('cell {index}', random.random())"
        notebook.cells.append(nbformat.v4.new_code_cell(source, id=f"run-{index}"))
    nbformat.write(notebook, path)


def write_outside(path: Path, trial: int) -> str:
    """A person's change, saved in another layout than the server's: its revision."""
    notebook = json.loads(path.read_text())
    notebook["cells"].insert(
        0,
        {
            "id": f"outside-{trial}",
            "cell_type": "markdown",
            "metadata": {},
            "source": [f"outside {trial}"],
        },
    )
    path.write_text(json.dumps(notebook, indent=2))
    return revision_of(path.read_bytes())


class MixedTrials:
    """One notebook, a server per trial, each trial's call of one kind killed at random."""

    def __init__(self, tmp_path: Path, rng: random.Random) -> None:
        self.rng = rng
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.history_root = tmp_path / "history"
        self.env = {"JUPYTER_MCP_HISTORY_DIR": str(self.history_root)}
        self.path = self.workspace / NOTEBOOK
        seed_mixed(self.path, rng)
        self.latencies: dict[str, float] = {}
        #: The revision the last undo replaced (what a redo brings back), when it landed.
        self.undone: str | None = None
        self.figures = {
            "trials": 0,
            "changed": 0,
            "unchanged": 0,
            "outside_writes": 0,
            "from_note": 0,
        }

    def arguments(self, server: RawServer, kind: str, listed: dict) -> dict | None:
        """The call of `kind` on the notebook as it is now (None: nothing to do)."""
        if kind == "apply_edits":
            ids = [
                c["id"]
                for c in json.loads(self.path.read_text())["cells"]
                if not c["id"].startswith("run-")
            ]
            return {
                "notebook_name": NOTEBOOK,
                "operations": batch(self.rng, ids, f"k{self.figures['trials']}")[:12],
            }
        if kind == "execute_cell":
            return {"notebook_name": NOTEBOOK, "cell_id": f"run-{self.rng.randrange(RUN_CELLS)}"}
        if kind == "run_cells":
            return {"notebook_name": NOTEBOOK}
        if kind == "undo":
            if len(listed["entries"]) < 2:
                return None
            return {"notebook_name": NOTEBOOK, "revision": listed["entries"][1]["revision"]}
        if self.undone is None:
            return None
        return {"notebook_name": NOTEBOOK, "revision": self.undone}

    def started(self) -> tuple[RawServer, dict]:
        """A server on the notebook as the last trial left it, checked: its history ends at
        the file (and reads back whole). The server and its history's newest entries."""
        server = RawServer(self.workspace, *MIXED_ARGS, env=self.env)
        listed = server.ok("notebook_history", {"notebook_name": NOTEBOOK, "limit": 2})
        on_disk = revision_of(self.path.read_bytes())
        assert listed["revision"] == on_disk
        assert listed["entries"][0]["revision"] == on_disk, (
            f"the history's newest entry is not the file: {listed}"
        )
        check_history(self.history_root, on_disk)
        return server, listed

    def warmed(self, server: RawServer, kind: str) -> None:
        """The notebook's kernel started before a call that runs cells, so that the kill lands in
        the run and the write of its outputs, not in the kernel's start."""
        if kind in ("execute_cell", "run_cells"):
            server.ok("execute_code", {"notebook_name": NOTEBOOK, "code": "1"}, timeout=120)

    def uncut(self, server: RawServer, kind: str, listed: dict) -> dict:
        """A call of `kind` left to finish (what it takes here): the history's newest entries after it."""
        arguments = self.arguments(server, kind, listed)
        assert arguments is not None
        self.warmed(server, kind)
        before = revision_of(self.path.read_bytes())
        started = time.monotonic()
        done = server.ok(TOOL_OF.get(kind, kind), arguments, timeout=120)
        self.latencies[kind] = time.monotonic() - started
        now = revision_of(self.path.read_bytes())
        if kind == "undo":
            self.undone = before
        elif kind == "redo":
            assert done["revision"] == now == self.undone
            self.undone = None
        listed = server.ok("notebook_history", {"notebook_name": NOTEBOOK, "limit": 2})
        newest = listed["entries"][0]
        assert newest["revision"] == now and newest["previous_revision"] == before, (kind, listed)
        assert newest["tool"] == TOOL_OF.get(kind, kind), (kind, listed)
        return listed

    def killed(self, server: RawServer, kind: str, listed: dict) -> tuple[RawServer, dict]:
        """A call of `kind` killed at a random moment of it, then maybe an outside write; the
        next server's history must end at the file, attributed to whoever made it. That server,
        for the next trial, and its history's newest entries."""
        arguments = self.arguments(server, kind, listed)
        if arguments is None:
            return server, listed
        try:
            self.warmed(server, kind)
            before = revision_of(self.path.read_bytes())
            request = server.start(
                "tools/call", {"name": TOOL_OF.get(kind, kind), "arguments": arguments}
            )
            time.sleep(self.rng.uniform(0.2, 2.5) * self.latencies[kind])
            answered = server.poll_answer(request)
        finally:
            server.kill()
        self.figures["trials"] += 1
        now = revision_of(self.path.read_bytes())
        nbformat.validate(nbformat.reads(self.path.read_text(), as_version=nbformat.NO_CONVERT))
        if answered is not None:
            assert not answered["result"].get("isError"), answered
        changed = now != before
        self.figures["changed" if changed else "unchanged"] += 1
        if kind == "undo" and changed:
            self.undone = before
        elif kind == "redo" and changed:
            self.undone = None
        outside = self.rng.random() < 0.5
        if outside:
            now = write_outside(self.path, self.figures["trials"])
            self.figures["outside_writes"] += 1
            self.undone = None  # a redo now would write over the person's change
        server, listed = self.started()
        newest = listed["entries"][0]
        try:
            if outside:
                assert newest["tool"] is None and newest["revision"] == now, listed
            elif changed:
                # The killed call's own change, from its entry or (killed before it) its pending note.
                assert newest["tool"] == TOOL_OF.get(kind, kind) and newest["revision"] == now, (
                    kind,
                    listed,
                )
                if answered is None:
                    self.figures["from_note"] += 1
            else:
                assert newest["revision"] == before
        except BaseException:
            server.kill()
            raise
        return server, listed


def run_mixed_trials(tmp_path: Path, cycles: int, rng_seed: int) -> dict:
    trials = MixedTrials(tmp_path, random.Random(rng_seed))
    server, listed = trials.started()
    try:
        # A first cycle left to finish: what each kind of call takes here, and an undo then a redo.
        for kind in KINDS:
            listed = trials.uncut(server, kind, listed)
        server.close()
        server, listed = trials.started()
        for _ in range(cycles):
            for kind in KINDS:
                server, listed = trials.killed(server, kind, listed)
    finally:
        if server.process.poll() is None:
            server.kill()
    trials.figures["ms"] = {
        kind: round(seconds * 1000) for kind, seconds in trials.latencies.items()
    }
    return trials.figures


def test_killed_edits_runs_and_restores_leave_the_history_ending_at_the_file(tmp_path):
    figures = run_mixed_trials(tmp_path, 1, rng_seed=30)
    print(f"\nmixed kills: {figures}")
    assert figures["trials"] >= 4


@pytest.mark.slow
def test_many_killed_edits_runs_and_restores(tmp_path):
    figures = run_mixed_trials(tmp_path, 20, rng_seed=31)
    print(f"\nmixed kills: {figures}")
    assert figures["trials"] >= 80
    assert figures["changed"] > 0 and figures["unchanged"] > 0
