"""One agent CLI run headless against the real server, its model a scripted stand-in.

`run(client, transport, root, script)` installs the client (once per pinned
version), starts the stand-in, starts the server over streamable HTTP when
asked (over stdio the client starts it itself, through `tap.py`), writes the
client's configuration under a scratch home, runs its headless command and
answers a `Recording`: what the client handed its model for each step, every
request it made of the model API, and the protocol version it negotiated.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import node_tools
import pytest
from conftest import REPO, server_command
from servers import healthz, started

from .clients import Client, Setup
from .standin import Standin
from .tap import HttpTap

TAP = Path(__file__).with_name("tap.py")
#: The opt-in toolsets the script needs beside the default ones: run_cells, checkpoint, restore.
TOOLSETS = "runs&history"
#: Seconds one client may take for the whole script.
TIMEOUT = 240
#: Variables of the developer's shell that would point a client at a real model or account.
FOREIGN = (
    "ANTHROPIC_",
    "CLAUDE_",
    "OPENAI_",
    "CODEX_",
    "GEMINI_",
    "GOOGLE_",
    "COPILOT_",
    "GH_",
    "GITHUB_",
    "QWEN_",
    "OPENCODE",
    "DASHSCOPE_",
)

PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@dataclass(frozen=True)
class SignIn:
    """How the server is told to check sign-ins, and how a person signs in for it: the headers
    the client is to send, for the server's own URL (the audience its tokens name)."""

    arguments: tuple[str, ...]
    environment: dict[str, str]
    headers: Callable[[str], dict[str, str]]


@dataclass
class Recording:
    client: str
    transport: str
    steps: list[dict[str, Any]]  # the stand-in's: each call and what the model was handed
    requests: list[dict[str, Any]]  # every request the client made of the model API
    offered: list[str]  # the tool names the client offered its model
    tools_chars: int  # the size of the tool definitions it sent, as JSON
    protocol: dict[str, Any]  # what the client asked for and what it got, when it was seen
    problems: list[str]  # what the stand-in found wrong
    exit_code: int | None
    output: str  # the tail of the client's stdout and stderr
    seconds: float
    checks: dict[str, list[str]] = field(default_factory=dict)  # step -> what failed there

    def as_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "transport": self.transport,
            "protocol": self.protocol,
            "offered": self.offered,
            "tools_chars": self.tools_chars,
            "seconds": round(self.seconds, 1),
            "exit_code": self.exit_code,
            "problems": self.problems,
            "checks": self.checks,
            "requests": self.requests,
            "steps": self.steps,
        }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_env(root: Path) -> dict[str, str]:
    """What the server needs besides what a client passes on: this checkout's sources,
    nobody to approve anything, and a history that goes with the test."""
    return {
        "PYTHONPATH": str(REPO / "src"),
        "JUPYTER_MCP_APPROVE": "",
        "JUPYTER_MCP_HISTORY_DIR": str(root / "history"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        # The kernel's HOME is the scratch one: without this matplotlib would build its font
        # cache again for every client (seconds each).
        "MPLCONFIGDIR": str(node_tools.CACHE.parent / "matplotlib"),
    }


@contextlib.contextmanager
def http_server(
    root: Path, workspace: Path, protocol_log: Path, *args: str, **extra_env: str
) -> Iterator[tuple[str, str]]:
    """The server over streamable HTTP on loopback behind a tap (`args` added to its command);
    yields the /mcp URL (with our toolsets) the client is to use, and the server's own."""
    port = free_port()
    with (
        started(
            server_command(workspace, "--transport", "streamable-http", "--port", str(port), *args),
            env={**os.environ, **server_env(root), **extra_env},
            cwd=workspace,
            log=root / "server.log",
            ready=healthz,
            name="jupyter-mcp-server (streamable HTTP)",
            port=port,
            stdout=subprocess.DEVNULL,
            group=True,  # its own group: its kernels stop with it
            stop_seconds=15,
        ) as server,
        HttpTap(port, protocol_log).running() as tapped,
    ):
        yield f"{tapped}/mcp?{TOOLSETS}", server.url()


def stop(process: subprocess.Popen) -> None:
    """Stop a process we started and everything in its process group."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def offline_env(base: dict[str, str], home: Path, dead_proxy: bool) -> dict[str, str]:
    """The environment every client runs in: a scratch home, no account of the developer's,
    no telemetry or update checks, and a dead proxy for anything that is not loopback."""
    env = {
        k: v
        for k, v in base.items()
        if not k.upper().startswith(FOREIGN) and k.lower() not in PROXIES
    }
    for folder in ("config", "data", "cache", "state", "tmp"):
        (home / f".{folder}").mkdir(parents=True, exist_ok=True)
    if dead_proxy:
        dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        env.update({name: dead for name in PROXIES if name != "no_proxy"})
        env.update({name.upper(): dead for name in PROXIES if name != "no_proxy"})
        env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.update(
        HOME=str(home),
        USERPROFILE=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".data"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".state"),
        # Copilot saves a long result to a temporary file and hands the model its path.
        TMPDIR=str(home / ".tmp"),
        DO_NOT_TRACK="1",
        NO_UPDATE_NOTIFIER="1",
        NO_COLOR="1",
        TERM="dumb",
    )
    return env


def run(
    client: Client,
    transport: str,
    root: Path,
    script: list[tuple[str, dict]],
    token: str | None = None,
    sign_in: SignIn | None = None,
) -> Recording:
    """`client` run over `transport` through `script`. HTTP only: with `token`, the server is
    started with ``--mcp-token`` and the client sends it; with `sign_in`, the server is started
    with its arguments and environment and the client sends the headers its `headers` answers
    for the server's own URL (a person signed in for it)."""
    if transport in client.cannot:
        pytest.skip(client.cannot[transport])
    _, executable, base_env = node_tools.package(client.spec, client.command)
    workspace, home, workdir = root / "workspace", root / "home", root / "work"
    for folder in (workspace, home, workdir):
        folder.mkdir(parents=True, exist_ok=True)
    protocol_log = root / "protocol.jsonl"
    standin = Standin(script, client.search)
    with contextlib.ExitStack() as stack:
        stack.enter_context(standin.running())
        if transport == "stdio":
            command = [
                sys.executable,
                str(TAP),
                str(protocol_log),
                "--",
                *server_command(workspace, "--toolsets", TOOLSETS),
            ]
            server: dict[str, Any] = {"command": command, "env": server_env(root)}
        else:
            extra = ("--mcp-token", token) if token else ()
            if sign_in is not None:
                extra += sign_in.arguments
            url, own = stack.enter_context(
                http_server(
                    root,
                    workspace,
                    protocol_log,
                    *extra,
                    **(sign_in.environment if sign_in else {}),
                )
            )
            server = {"url": url}
            if token:
                server["headers"] = {"Authorization": f"Bearer {token}"}
            if sign_in is not None:
                server["headers"] = sign_in.headers(own)
        setup = Setup(home, workdir, standin.url, server)
        args, client_env = client.configure(setup)
        env = {**offline_env(base_env, home, client.dead_proxy), **server_env(root), **client_env}
        env["PWD"] = str(workdir)  # opencode takes its folder from PWD, not from its cwd
        started = time.monotonic()
        output_path = root / "client.out"
        with output_path.open("wb") as output:
            process = subprocess.Popen(
                [str(executable), *args],
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group, so stopping it stops its servers too
            )
            try:
                exit_code: int | None = process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                exit_code = None
            finally:
                stop(process)
        seconds = time.monotonic() - started
        (root / "model-requests.json").write_text(json.dumps(standin.bodies, indent=1))
    text = output_path.read_text(errors="replace")
    return Recording(
        client=client.name,
        transport=transport,
        steps=standin.steps(),
        requests=standin.requests,
        offered=standin.offered,
        tools_chars=standin.tools_chars,
        protocol=_protocol(protocol_log),
        problems=standin.problems,
        exit_code=exit_code,
        output=text[-4000:],
        seconds=seconds,
    )


def _protocol(log: Path) -> dict[str, Any]:
    """Off the tap's log: the client, the version it asked for, the one the server chose, and
    the version its tool calls were made at (which decides the shape of each result)."""
    seen: dict[str, Any] = {}
    if not log.exists():
        return seen
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["from"] == "server":
            seen.setdefault("negotiated", entry["version"])
        elif entry["method"] in ("initialize", "server/discover"):
            seen.setdefault("first_request", entry["method"])
            seen.setdefault("asked", entry["version"])
            seen.setdefault("client_info", entry.get("client_info"))
        elif entry["method"] == "tools/call":
            # None: its calls carried none (no call does over stdio at a 2025 version; over
            # HTTP, Gemini CLI sends no MCP-Protocol-Version): `negotiated` is what holds.
            seen.setdefault("tools_call", entry["version"])
    return seen
