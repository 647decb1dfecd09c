"""The official MCP conformance suite, and the Inspector's strict schema check.

`@modelcontextprotocol/conformance` runs every scenario a spec revision
requires (``--requirements 2025-11-25`` and ``--requirements 2026-07-28``,
the two protocol generations this server speaks) against
`jupyter-mcp-server start --transport streamable-http`, with the test-only
extension in tests/fixtures/conformance-extension installed beside it to
offer the tools, resources and prompts the scenarios call. A scenario fails
when any of its checks does; every failure must be listed, with its reason,
in tests/conformance/baseline-<revision>.yml, and every listed scenario
must still fail (a fix makes its entry stale, and the test says so).

The MCP Inspector CLI's ``--strict`` reports tool-schema portability
problems; this server's tools (every installed extension's, over stdio) must
have none. Both tools come from npm through tests/node_tools.py, cached.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, server_command, server_environment
from fixtures import pip_install
from node_tools import package
from test_http import HttpServer, http_server

CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
REVISIONS = ("2025-11-25", "2026-07-28")
BASELINES = REPO / "tests" / "conformance"
EXTENSION = REPO / "tests" / "fixtures" / "conformance-extension"


def baseline(revision: str) -> dict[str, str]:
    """Scenario -> the comment block above it (its reason)."""
    entries: dict[str, str] = {}
    reason: list[str] = []
    for line in (BASELINES / f"baseline-{revision}.yml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            reason.append(stripped.lstrip("# "))
        elif stripped.startswith("- "):
            entries[stripped[2:].strip()] = " ".join(reason)
        elif not stripped:
            reason = []
    return entries


@pytest.fixture(scope="module")
def conformance_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("conformance")
    site = root / "site"
    pip_install(site, EXTENSION)
    with http_server(
        root, site, "--capability", "kernel.prestart=off", JUPYTER_MCP_EXTENSIONS="fx-conformance"
    ) as server:
        yield server


def run_conformance(server: HttpServer, revision: str, output: Path) -> dict[str, list[dict]]:
    node, conformance, env = package(CONFORMANCE, "conformance")
    done = subprocess.run(
        [
            node,
            str(conformance),
            "server",
            "--url",
            server.url(),
            "--requirements",
            revision,
            "-o",
            str(output),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=output,
    )
    scenarios: dict[str, list[dict]] = {}
    for checks in sorted(output.glob("server-*/checks.json")):
        name = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        scenarios[name] = json.loads(checks.read_text())
    assert scenarios, (
        f"the conformance suite ran nothing:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return scenarios


@pytest.mark.parametrize("revision", REVISIONS)
def test_conformance_suite(conformance_server, revision: str, tmp_path: Path) -> None:
    scenarios = run_conformance(conformance_server, revision, tmp_path)
    failing = {
        name: [
            f"{c['id']}: {c.get('errorMessage', '')[:200]}"
            for c in checks
            if c.get("status") == "FAILURE"
        ]
        for name, checks in scenarios.items()
    }
    failing = {name: problems for name, problems in failing.items() if problems}
    expected = baseline(revision)
    for name, reason in expected.items():
        assert reason, f"baseline-{revision}.yml lists {name} without a reason"
    unexpected = {name: problems for name, problems in failing.items() if name not in expected}
    stale = sorted(name for name in expected if name in scenarios and name not in failing)
    checks = sum(len(c) for c in scenarios.values())
    passed = sum(1 for c in scenarios.values() for check in c if check.get("status") == "SUCCESS")
    print(
        f"\nconformance {revision}: {len(scenarios)} scenarios, {checks} checks, {passed} passed; "
        f"{len(failing)} scenarios failing, all in the baseline: {not unexpected}"
    )
    assert not unexpected, (
        f"new conformance failures for {revision}: {json.dumps(unexpected, indent=1)}"
    )
    assert not stale, f"these now pass; remove them from baseline-{revision}.yml: {stale}"


def test_inspector_strict_tool_schemas(workspace: Path) -> None:
    node, inspector, env = package(INSPECTOR, "mcp-inspector")
    env = {**server_environment(), **{k: v for k, v in env.items() if k == "PATH"}}
    env["MCP_CATALOG_PATH"] = str(workspace.parent / "inspector-catalog.json")
    command = server_command(workspace, "--capability", "kernel.prestart=off")
    done = subprocess.run(
        [node, str(inspector), "--cli", "--method", "tools/list", "--strict", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=workspace,
    )
    assert done.returncode == 0, (
        f"--strict found tool-schema problems (exit {done.returncode}):\n{done.stderr[-4000:]}"
    )
    tools = json.loads(done.stdout)["tools"]
    assert len(tools) >= 20 and {"list_files", "execute_code"} <= {tool["name"] for tool in tools}
    assert "error" not in done.stderr.lower(), done.stderr[-2000:]
    print(f"\ninspector --strict: {len(tools)} tools, no portability problem")
