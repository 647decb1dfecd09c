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

from jupyter_mcp_server.store.history import Histories

NOTEBOOK = "crash.ipynb"
SERVER_ARGS = ("--toolsets", "history", "--capability", "kernel.prestart=off")


def revision_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def seed(path: Path, rng: random.Random) -> None:
    """About 0.5 MB, so that writing it takes a while and kills land mid-write."""
    notebook = nbformat.v4.new_notebook()
    for index in range(400):
        cell = nbformat.v4.new_code_cell(f"# seed {index}\n" + "x = 1  # filler\n" * rng.randint(2, 30))
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="output line\n" * rng.randint(0, 40))]
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


def batch(rng: random.Random, ids: list[str], tag: str) -> list[dict]:
    operations: list[dict] = []
    live = list(ids)
    for step in range(50):
        kind = rng.choice(["insert", "overwrite", "replace", "delete", "move", "tags"])
        if kind == "insert" or len(live) < 10:
            operations.append({"op": "insert", "index": rng.randint(0, len(live)), "source": f"# {tag} {step}\n"})
            live.insert(operations[-1]["index"], None)  # an id the server makes
            continue
        named = [i for i in live if i is not None]
        cell_id = rng.choice(named)
        if kind == "overwrite":
            operations.append({"op": "overwrite", "cell_id": cell_id, "source": f"# {tag} {step} rewritten\n" * 3})
        elif kind == "replace":
            operations.append({"op": "overwrite", "cell_id": cell_id, "source": "a b a\n"})
            operations.append({"op": "replace", "cell_id": cell_id, "old_string": "a", "new_string": tag, "replace_all": True})
        elif kind == "delete":
            operations.append({"op": "delete", "cell_id": cell_id})
            live.remove(cell_id)
        elif kind == "move":
            operations.append({"op": "move", "cell_id": cell_id, "to_index": rng.randrange(len(live))})
            live.remove(cell_id)
            live.insert(operations[-1]["to_index"], cell_id)
        else:
            operations.append({"op": "set_cell_metadata", "cell_id": cell_id, "tags": [f"{tag}-{step}"]})
    return operations


def check_history(root: Path, file_revision: str | None) -> list[dict]:
    """The history reads back whole; with `file_revision`, it ends there. Its entries."""
    histories = Histories(root)
    (directory,) = [d for d in root.iterdir() if d.is_dir()]
    history = histories.of(json.loads((directory / "index.json").read_text())["namespace"], NOTEBOOK)
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
                assert listed["entries"][0]["revision"] == landed and listed["entries"][0]["tool"] == "apply_edits"
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
        assert now in (before, after), f"trial {trial}: the file is neither before nor after the batch"
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
