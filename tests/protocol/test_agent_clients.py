"""What the agents people use actually hand their model from this server's results.

The server's results are only worth what reaches the model, and each client
passes a tool result on in its own way (some keep only `structuredContent`,
some only `content`, some drop images or wrap text). These tests run the real
CLIs (pinned npm versions, headless) against the real server over stdio and
streamable HTTP, with a scripted stand-in for each client's model API on
loopback (tests/agent_clients), and check, step by step, what the model was
handed: a cell's printed text and value, the failing line of an error, a
DataFrame as a table and not HTML, a plot never as base64 text, a notebook
read back, an outline, a search, an edit's diff, a run, an undo.

Marked `agents`: `pytest -m agents tests/protocol/test_agent_clients.py`. Each test
skips saying why when node, npm or the client's package cannot be had.
`JUPYTER_MCP_AGENT_RECORD=FILE` writes every recording there as JSON (for a
benchmark that counts what each client hands its model). Each step is also
checked against `benchmarks/client_views.py`, the rule workload 12 counts a
client's bytes by: that client's view of the server's raw result (as the tap
saw it) must be what the client handed, so the rules cannot drift from the
clients.
"""

from __future__ import annotations

import asyncio
import fcntl
import importlib.util
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_clients.clients import CLIENTS
from agent_clients.session import Recording, SignIn, run
from agent_clients.standin import Handed
from agent_clients.tap import results_log
from conftest import REPO
from mcp.types import CallToolResult
from test_authorization import provider

pytestmark = [pytest.mark.agents, pytest.mark.timeout(420)]
__all__ = ["provider"]  # the real OpenID provider, a fixture used by name

NOTEBOOK = "demo.ipynb"
PNG = "iVBORw0KGgo"  # how base64 of a PNG starts: never text a model should read


@dataclass(frozen=True)
class Step:
    tool: str
    arguments: dict[str, Any]
    #: What the model must have been handed: answers what is wrong ([] when all is well).
    check: Callable[[Handed], list[str]]


def contains(*wanted: str, absent: tuple[str, ...] = ()) -> Callable[[Handed], list[str]]:
    def check(handed: Handed) -> list[str]:
        text = handed.text()
        wrong = [f"{w!r} not in what the model got" for w in wanted if w not in text]
        wrong += [f"{a!r} in what the model got" for a in absent if a in text]
        return wrong

    return check


def shows_a_plot(handed: Handed) -> list[str]:
    """The model learns a figure was drawn (as an image, or named in text where the client
    drops images), and never gets it as base64 text."""
    wrong = contains(absent=(PNG,))(handed)
    if not handed.images() and "image/png" not in handed.text():
        wrong.append("neither an image nor a word of one in what the model got")
    return wrong


def _kernel_has(module: str) -> bool:
    # The kernel is the server's own Python (python3 in this environment): the same modules.
    return importlib.util.find_spec(module) is not None


def script() -> tuple[list[Step], list[str]]:
    """The steps every client runs, and the steps left out here and why."""
    on = {"notebook_name": NOTEBOOK}  # every call names it: a stateless client has no "current"
    left_out = []
    steps = [
        Step("use_notebook", {**on, "mode": "create"}, contains(NOTEBOOK)),
        Step(
            "insert_execute_code_cell",
            {**on, "cell_index": -1, "cell_source": 'print("hello")\n6 * 7 + 1000'},
            contains("hello", "1042"),
        ),
        Step(
            "insert_execute_code_cell",
            {**on, "cell_index": -1, "cell_source": "def broken():\n    return 1 / 0\n\nbroken()"},
            # The cell's own failing line, not only the exception's name.
            contains("return 1 / 0", "ZeroDivisionError"),
        ),
    ]
    if _kernel_has("pandas"):
        frame = 'import pandas as pd\npd.DataFrame({"city": ["Paris", "Oslo"], "population": [2100000, 700000]})'
        steps.append(
            Step(
                "insert_execute_code_cell",
                {**on, "cell_index": -1, "cell_source": frame},
                contains("population", "Oslo", absent=("<table",)),
            )
        )
    else:
        left_out.append("the DataFrame: pandas is not installed in the kernel's environment")
    if _kernel_has("matplotlib"):
        plot = (
            "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
            "%matplotlib inline\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"
        )
        steps.append(
            Step(
                "insert_execute_code_cell",
                {**on, "cell_index": -1, "cell_source": plot},
                shows_a_plot,
            )
        )
    else:
        left_out.append("the plot: matplotlib is not installed in the kernel's environment")
    steps += [
        Step(
            "read_notebook",
            {**on, "response_format": "detailed"},
            contains("hello", "1042", "return 1 / 0", absent=("<table", PNG)),
        ),
        Step("outline", on, contains("def broken", "ZeroDivisionError", absent=(PNG,))),
        Step("search_notebooks", {"query": "broken", "glob": NOTEBOOK}, contains("def broken():")),
        Step("checkpoint", {**on, "name": "before-edit"}, contains("before-edit")),
        Step(
            "edit_cell_source",
            {**on, "cell_index": 0, "old_string": "1000", "new_string": "2000"},
            contains("-6 * 7 + 1000", "+6 * 7 + 2000"),  # the diff
        ),
        Step("run_cells", {**on, "cells": "0"}, contains("hello", "2042")),
        Step("restore_notebook", {**on, "revision": "before-edit"}, contains("+6 * 7 + 1000")),
        Step("read_cell", {**on, "cell_index": 0}, contains("6 * 7 + 1000", "1042")),
    ]
    return steps, left_out


#: Every recording of this session, by "client/transport", for a benchmark to count bytes.
RECORDINGS: dict[str, dict[str, Any]] = {}


def _client_views() -> Any:
    """benchmarks/client_views.py, loaded by path (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "client_views", REPO / "benchmarks" / "client_views.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def raw_results(root: Path) -> list[tuple[str, Any, dict[str, Any]]]:
    """(tool, arguments, raw result) of every tool call the tap saw, in the order made."""
    log = results_log(root / "protocol.jsonl")
    if not log.exists():
        return []
    calls: dict[Any, tuple[str, Any]] = {}
    done = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if "call" in entry:
            calls[entry["call"]] = (entry["tool"], entry["arguments"])
        elif entry["result_of"] in calls:
            done.append((*calls.pop(entry["result_of"]), entry["result"]))
    return done


def _as_handed(handed: Handed, views: Any) -> str:
    """What was handed, written as the views write it: pieces joined by a line break, JSON as
    the client serialized it, images as data URLs."""
    pieces = []
    for block in [*handed.blocks, *handed.beside]:
        if block["type"] == "text":
            pieces.append(block["text"])
        elif block["type"] == "image":
            pieces.append(f"data:{block['mime_type']};base64,{block['data']}")
        else:
            pieces.append(views.js_json(block.get("value", block)))
    return "\n".join(pieces)


def view_drift(recording: Recording, root: Path) -> list[str]:
    """Each step where benchmarks/client_views.py's view of the server's raw result is not
    what the client handed its model (Codex's wall time and Claude Code's image file aside)."""
    views = _client_views()
    view = views.VIEWS.get(recording.client)
    if view is None:
        return [f"benchmarks/client_views.py has no view for {recording.client}"]
    raw = raw_results(root)
    wrong = []
    for step in recording.steps:
        if not step["handed"]:
            continue
        found = next(
            (r for r in raw if r[0] == step["tool"] and r[1] == step["arguments"]), None
        ) or next((r for r in raw if r[0] == step["tool"]), None)
        if found is None:
            wrong.append(f"step {step['step']} {step['tool']}: the tap saw no result for it")
            continue
        raw.remove(found)
        tool, arguments, result = found
        expected = view(CallToolResult.model_validate(result), tool=tool, arguments=arguments)
        got = _as_handed(Handed(**step["handed"]), views)
        expected, got = (
            re.sub(
                r"\[Image: source: [^\]]*\]",
                "[Image]",
                re.sub(r"Wall time: [0-9.]+ seconds", "Wall time", t),
            )
            for t in (expected, got)
        )
        if expected != got:
            at = next(
                (i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), None
            )
            at = min(len(expected), len(got)) if at is None else at
            wrong.append(
                f"step {step['step']} {step['tool']}: view {len(expected)} chars, handed {len(got)}; "
                f"from {at}: view {expected[max(0, at - 40) : at + 80]!r} / handed {got[max(0, at - 40) : at + 80]!r}"
            )
    return wrong


def keep(recording: Recording) -> None:
    RECORDINGS[f"{recording.client}/{recording.transport}"] = recording.as_json()
    path = os.environ.get("JUPYTER_MCP_AGENT_RECORD")
    if not path:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Two test workers may write at once: one at a time, each adding its own.
    with open(target.with_name(f".{target.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = json.loads(target.read_text()) if target.exists() else {}
        kept[f"{recording.client}/{recording.transport}"] = recording.as_json()
        target.write_text(json.dumps(kept, indent=1))


def _summary(recording: Recording) -> str:
    requests = [
        f"{r['at']:6.1f}s {r['method']} {r['path']} {r.get('kind', '')} {r.get('answer', '')}"
        for r in recording.requests
    ]
    return (
        f"exit {recording.exit_code} after {recording.seconds:.0f}s; problems: {recording.problems}\n"
        f"requests:\n  "
        + "\n  ".join(requests[-30:])
        + f"\nclient output:\n{recording.output[-2500:]}"
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("client_name", list(CLIENTS))
def test_what_the_model_is_handed(client_name: str, transport: str, tmp_path: Path) -> None:
    steps, left_out = script()
    recording = run(
        CLIENTS[client_name], transport, tmp_path, [(s.tool, s.arguments) for s in steps]
    )
    if not any(s["handed"] for s in recording.steps):
        keep(recording)
        pytest.fail(f"{client_name} over {transport} ran no step:\n{_summary(recording)}")
    handed_by_step = {s["step"]: s["handed"] for s in recording.steps}
    failures: dict[str, list[str]] = {}
    for number, step in enumerate(steps):
        label = f"{number} {step.tool}"
        if not handed_by_step.get(number):
            failures[label] = ["the client never handed the model this call's result"]
            continue
        handed = Handed(**handed_by_step[number])
        wrong = step.check(handed)
        # Whatever the step: an image is handed as an image or not at all, never as text.
        if PNG in handed.text() and not any(PNG in w for w in wrong):
            wrong.append(f"{PNG!r} (a base64 PNG) in what the model got")
        if wrong:
            failures[label] = wrong
    recording.checks = failures
    recording.problems += [f"left out {why}" for why in left_out]
    keep(recording)
    protocol = recording.protocol.get("tools_call") or recording.protocol.get("negotiated")
    assert not failures, (
        f"{client_name} over {transport} handed its model results that miss what they must say "
        f"(MCP protocol {protocol}):\n"
        + "\n".join(f"  step {label}: {'; '.join(wrong)}" for label, wrong in failures.items())
        + f"\n{_summary(recording)}"
    )
    drift = view_drift(recording, tmp_path)
    assert not drift, (
        f"benchmarks/client_views.py's view for {client_name} over {transport} is not what the "
        "client handed its model:\n  " + "\n  ".join(drift)
    )


#: The clients that call over HTTP at 2026-07-28 with no session (docs/protocol.md): what they
#: chose with use_notebook is kept for the caller their token names, not for a connection.
STATELESS_OVER_HTTP = ("claude-code", "copilot")


@pytest.mark.parametrize("client_name", STATELESS_OVER_HTTP)
def test_a_stateless_client_keeps_its_notebook(client_name: str, tmp_path: Path) -> None:
    """Signed in with the server's --mcp-token, a client that sends no session and passes back
    no handle still works on the notebook it chose: later calls name none."""
    steps = [
        Step(
            "use_notebook",
            {"notebook_name": NOTEBOOK, "mode": "create"},
            contains(NOTEBOOK, absent=("nothing is remembered",)),
        ),
        Step(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": 'print("hello")\n6 * 7 + 1000'},
            contains("hello", "1042"),
        ),
        Step("read_notebook", {"response_format": "detailed"}, contains(NOTEBOOK, "1042")),
    ]
    recording = run(
        CLIENTS[client_name],
        "http",
        tmp_path,
        [(s.tool, s.arguments) for s in steps],
        token="agent-clients-test-token",
    )
    protocol = recording.protocol.get("tools_call") or recording.protocol.get("negotiated")
    assert protocol == "2026-07-28", (protocol, _summary(recording))
    handed_by_step = {s["step"]: s["handed"] for s in recording.steps}
    failures = {
        f"{number} {step.tool}": (
            step.check(Handed(**handed_by_step[number]))
            if handed_by_step.get(number)
            else ["the client never handed the model this call's result"]
        )
        for number, step in enumerate(steps)
    }
    failures = {label: wrong for label, wrong in failures.items() if wrong}
    assert not failures, (
        f"{client_name} lost its notebook between stateless calls:\n"
        + "\n".join(f"  step {label}: {'; '.join(wrong)}" for label, wrong in failures.items())
        + f"\n{_summary(recording)}"
    )


def test_claude_code_signed_in_through_the_openid_provider(provider, tmp_path: Path) -> None:
    """A person signs in through the real OpenID provider (its login and consent pages, the code
    with PKCE, RFC 8707's audience: the official client's OAuth flow); Claude Code then calls
    with that token over HTTP, and is the same signed-in caller on every stateless call."""
    from test_authorization import INTROSPECTOR, signed_in

    class Own:
        def __init__(self, url: str) -> None:
            self._url = url

        def url(self, query: str = "") -> str:
            return self._url

    def person_signs_in(own_url: str) -> dict[str, str]:
        async def signing_in() -> str:
            async with signed_in(Own(own_url), "alice") as (_, storage):  # type: ignore[arg-type]
                assert storage.tokens is not None
                return storage.tokens.access_token

        return {"Authorization": f"Bearer {asyncio.run(signing_in())}"}

    sign_in = SignIn(
        arguments=(
            "--auth-issuer",
            provider.issuer,
            "--auth-client-id",
            INTROSPECTOR["client_id"],
            "--audit-log",
            str(tmp_path / "audit.jsonl"),
        ),
        environment={"JUPYTER_MCP_AUTH_CLIENT_SECRET": INTROSPECTOR["client_secret"]},
        headers=person_signs_in,
    )
    steps = [
        Step("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"}, contains(NOTEBOOK)),
        Step(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": 'print("signed in")\n6 * 7 + 1000'},
            contains("signed in", "1042"),
        ),
    ]
    recording = run(
        CLIENTS["claude-code"],
        "http",
        tmp_path,
        [(s.tool, s.arguments) for s in steps],
        sign_in=sign_in,
    )
    handed_by_step = {s["step"]: s["handed"] for s in recording.steps}
    for number, step in enumerate(steps):
        assert handed_by_step.get(number), (step.tool, _summary(recording))
        assert step.check(Handed(**handed_by_step[number])) == [], _summary(recording)
    # Each call is alice's, as the provider signed her in, in the audit log.
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    called = [r for r in records if r.get("tool") in ("use_notebook", "insert_execute_code_cell")]
    assert called and all(r["caller"]["user"] == "alice" for r in called), called
