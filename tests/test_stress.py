"""The minutes-long stress scripts in tests/stress/, run in their short mode.

`tests/stress/crash.py` (SIGKILL during edits and executions) and
`tests/stress/load.py` (50 concurrent HTTP clients) run for minutes in their
full mode; CI runs each in its short mode here, as a subprocess, and the
script's own verdict (exit status, problems listed in its JSON report) is
the test's. docs/reliability.md gives the figures of both modes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

STRESS = Path(__file__).resolve().parent / "stress"


def run_script(name: str, tmp_path: Path, timeout: float) -> dict:
    report = tmp_path / f"{name}.json"
    done = subprocess.run(
        [sys.executable, str(STRESS / f"{name}.py"), "--short", "--json", str(report)],
        capture_output=True, text=True, timeout=timeout,
    )
    if not report.exists():
        pytest.fail(f"{name}.py wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    figures = json.loads(report.read_text())
    print(f"\n{name}: {json.dumps({k: v for k, v in figures.items() if k != 'problems'})}")
    assert not figures["problems"], f"{name}.py found problems:\n" + "\n".join(figures["problems"]) + "\n" + done.stderr[-5000:]
    assert done.returncode == 0, done.stderr[-5000:]
    return figures


def test_crash_consistency_short(tmp_path: Path) -> None:
    figures = run_script("crash", tmp_path, timeout=600)
    assert figures["kills"] == 15 and figures["execution_kills"] == 2
    assert figures["landed_before"] + figures["landed_after"] + figures["landed_between"] == figures["kills"]


def test_load_short(tmp_path: Path) -> None:
    figures = run_script("load", tmp_path, timeout=600)
    assert figures["clients"] == 50 and figures["failures"] == 0
    assert figures["calls"] > 100
