"""The minutes-long stress scripts in tests/stress/, run in their short mode.

`tests/stress/crash.py` (SIGKILL during edits and executions),
`tests/stress/load.py` (50 concurrent HTTP clients) and `tests/stress/soak.py`
(20 HTTP clients of mixed work, drift measured) run for minutes in their
full mode; CI runs each in its short mode here, as a subprocess, and the
script's own verdict (exit status, problems listed in its JSON report) is
the test's. The soak's full mode (30 minutes) is the same code, marked slow.
docs/reliability.md gives the figures of every mode.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

STRESS = Path(__file__).resolve().parents[1] / "stress"


def run_script(name: str, tmp_path: Path, timeout: float, *arguments: str) -> dict:
    report = tmp_path / f"{name}.json"
    done = subprocess.run(
        [
            sys.executable,
            str(STRESS / f"{name}.py"),
            *(arguments or ("--short",)),
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if not report.exists():
        pytest.fail(
            f"{name}.py wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        )
    figures = json.loads(report.read_text())
    print(f"\n{name}: {json.dumps({k: v for k, v in figures.items() if k != 'problems'})}")
    assert not figures["problems"], (
        f"{name}.py found problems:\n" + "\n".join(figures["problems"]) + "\n" + done.stderr[-5000:]
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return figures


def test_crash_consistency_short(tmp_path: Path) -> None:
    figures = run_script("crash", tmp_path, timeout=600)
    assert figures["kills"] == 15 and figures["execution_kills"] == 2
    assert (
        figures["landed_before"] + figures["landed_after"] + figures["landed_between"]
        == figures["kills"]
    )


def test_load_short(tmp_path: Path) -> None:
    figures = run_script("load", tmp_path, timeout=600)
    assert figures["clients"] == 50 and figures["failures"] == 0
    assert figures["calls"] > 100


def check_soak(figures: dict, clients: int) -> None:
    assert figures["clients"] == clients and figures["failures"] == 0
    # Every kind of work happened, so the flat slopes are about all of it.
    assert (
        figures["left_mid_call"] > 0
        and figures["detached_runs"] > 0
        and figures["cancelled_runs"] > 0
    )
    assert figures["restarts"] > 0 and figures["sessions"] > clients
    assert figures["orphaned_processes"] == 0 and figures["leftover_connection_files"] == 0


def test_soak_short(tmp_path: Path) -> None:
    """20 clients for 30 seconds (about 2,500 calls, 29 restarts): every kind of work, no failure, nothing left behind (the slopes
    are judged only in runs of 10 minutes or more, as the full one)."""
    check_soak(run_script("soak", tmp_path, 900, "--short"), clients=20)


@pytest.mark.slow
def test_soak_full(tmp_path: Path) -> None:
    """20 clients for 30 minutes: the same code as the short one."""
    check_soak(run_script("soak", tmp_path, 3600, "--minutes", "30"), clients=20)
