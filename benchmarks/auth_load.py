#!/usr/bin/env python
"""Fifty signed-in clients at once: what checking each request's token costs a warm call.

    python benchmarks/auth_load.py                  # 50 clients, 30 s with auth, 30 s without
    python benchmarks/auth_load.py --seconds 5 --clients 8 --json out.json

Issue 28's load run. `oidc-provider` (npm, a certified OpenID provider) is started the way
tests/security/test_authorization.py starts it (tests/oidc/provider.mjs on loopback, with a signing
key made here), and each client gets a token of its own, signed with the provider's key the
way the tests mint them: a distinct subject (``agent-NN``) and client (``load-NN``), the
three scopes, the server's URL as audience. The server checks every request's token against
the keys it fetched from the provider's JWKS, as it would a provider's own tokens.

Two runs of the real server (``start --transport streamable-http``, ``--audit-log`` on in
both), one after the other, the same in all but the door: ``--auth-issuer`` with the fifty
tokens, then ``--mcp-token`` with one shared token. Each client is an official
``mcp.Client`` session over ``streamable_http_client`` (in ``--client-processes`` worker
processes), owns a notebook, and loops without think time over a warm write and read of its
notebook's first cell: ``overwrite_cell_source`` with a text naming the client and the
round, then ``read_cell``, which must give that text back. Measured over the window (after
every client has initialized and made both calls once): each call's latency as the client
sees it, p50 and p99; wrong answers (a read giving back another text, an error, an
exception), which must be 0; and, from the audit log afterwards, that every call was
recorded for its own client: with auth, the caller's user and client are the token's, and
the notebook it named is that client's.

Nothing asserts; the verdict line says whether p99 with auth was within 2x of p99 without.
The load average goes on the report: other work on a shared machine moves every number.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from procfs import cpu_seconds, load_average, machine, machine_busy_seconds
from profiles import server_environment
from results import percentile
from served import free_port, stop, wait_healthy

REPO = Path(__file__).resolve().parent.parent
OIDC_PROVIDER = "oidc-provider@9.13.3"  # tests/security/test_authorization.py's
SCOPES = "notebooks:read notebooks:write code:execute"
STATIC_TOKEN = "load-run-shared-token-0123456789abcdef"
HANG = 120.0
TOOLS = ("overwrite_cell_source", "read_cell")


# --- the provider and the tokens -----------------------------------------------------------


def start_provider(root: Path) -> tuple[subprocess.Popen[str], str, Any, str]:
    """(the provider's process, its issuer, its signing key, the key's id)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    sys.path.insert(0, str(REPO / "tests"))
    from node_tools import library

    node, folder, env = library(OIDC_PROVIDER)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**json.loads(RSAAlgorithm.to_jwk(key)), "kid": "load-key", "alg": "RS256", "use": "sig"}
    settings = root / "oidc-settings.json"
    client = {"client_id": "jupyter-mcp", "client_secret": "unused"}
    settings.write_text(
        json.dumps(
            {
                "signing_key": jwk,
                "introspection_client": {
                    **client,
                    "grant_types": [],
                    "response_types": [],
                    "redirect_uris": [],
                },
            }
        )
    )
    process = subprocess.Popen(
        [node, str(REPO / "tests" / "oidc" / "provider.mjs"), str(folder), str(settings)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        raise RuntimeError("oidc-provider did not start")
    return process, json.loads(line)["issuer"], key, jwk["kid"]


def mint(issuer: str, key: Any, kid: str, audience: str, index: int, seconds: float) -> str:
    import jwt

    now = int(time.time())
    claims = {
        "iss": issuer,
        "sub": f"agent-{index:02d}",
        "aud": audience,
        "client_id": f"load-{index:02d}",
        "scope": SCOPES,
        "iat": now,
        "exp": now + int(seconds) + 600,
        "jti": f"load-{index}-{now}",
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": kid})


# --- the clients, in worker processes ------------------------------------------------------


class LoadClient:
    """One client: its own session and token, its own notebook, a write then a read of it."""

    def __init__(self, index: int, client: Any, out: dict[str, Any]) -> None:
        self.index = index
        self.notebook = f"nb{index:02d}.ipynb"
        self.client = client
        self.out = out
        self.round = 0
        self.measuring = False

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(self.client.call_tool(tool, arguments), HANG)
        except Exception as error:  # every failure is a wrong answer, whatever it is
            self.out["wrong"].append(f"client {self.index} {tool}: {type(error).__name__}: {error}")
            return None
        elapsed = time.perf_counter() - started
        if result.is_error:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            self.out["wrong"].append(f"client {self.index} {tool}: {text[:300]}")
            return None
        if self.measuring:
            self.out["latencies"].setdefault(tool, []).append(elapsed)
        return result.structured_content or {}

    async def write_and_read(self) -> None:
        self.round += 1
        text = f"client {self.index} round {self.round}"
        where = {"notebook_name": self.notebook, "cell_index": 0}
        if await self.call("overwrite_cell_source", {**where, "cell_source": text}) is None:
            return
        read = await self.call("read_cell", {**where, "include_outputs": False})
        if read is None:
            return
        source = read.get("source")
        if isinstance(source, list):
            source = "".join(source)
        if source != text:
            self.out["wrong"].append(f"client {self.index} read {source!r}, wrote {text!r}")

    async def loop(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            await self.write_and_read()


async def _worker_async(
    url: str, clients: list[tuple[int, str]], ready: Any, go: Any, deadline: Any
) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {"latencies": {}, "wrong": []}
    async with contextlib.AsyncExitStack() as stack:
        running: list[LoadClient] = []
        for index, token in clients:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=httpx2.Timeout(60, read=HANG),
                )
            )
            client = await stack.enter_async_context(
                Client(streamable_http_client(url, http_client=http), mode="legacy")
            )
            await client.list_tools()
            running.append(LoadClient(index, client, out))
        await asyncio.gather(*(one.write_and_read() for one in running))  # warm
        out["warm_wrong"] = len(out["wrong"])
        ready.put(1)
        await asyncio.to_thread(go.wait)
        for one in running:
            one.measuring = True
        await asyncio.gather(*(one.loop(deadline.value) for one in running))
    return out


def worker(
    url: str, clients: list[tuple[int, str]], ready: Any, go: Any, deadline: Any, results: Any
) -> None:
    try:
        results.put(asyncio.run(_worker_async(url, clients, ready, go, deadline)))
    except BaseException as error:  # the parent must hear of it, or it waits forever
        results.put({"fatal": f"{type(error).__name__}: {error}"})
        ready.put(-1)
        raise


# --- one run -------------------------------------------------------------------------------


def seed(workspace: Path, clients: int) -> None:
    import nbformat
    from nbformat import v4

    for index in range(clients):
        notebook = v4.new_notebook()
        notebook.cells = [v4.new_code_cell("nothing written yet"), v4.new_markdown_cell("# notes")]
        nbformat.write(notebook, str(workspace / f"nb{index:02d}.ipynb"))


def run(
    name: str, door: list[str], tokens: Any, args: argparse.Namespace, root: Path, log: Any
) -> dict[str, Any]:
    folder = root / name
    workspace = folder / "workspace"
    workspace.mkdir(parents=True)
    seed(workspace, args.clients)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    audit = folder / "audit.jsonl"
    server_log = folder / "server.log"
    command = [
        sys.executable, "-m", "jupyter_mcp_server", "start",
        "--workspace-root", str(workspace), "--transport", "streamable-http",
        "--host", "127.0.0.1", "--port", str(port),
        "--capability", "kernel.prestart=off", "--audit-log", str(audit), *door,
    ]  # fmt: skip
    env = server_environment({"JUPYTER_MCP_APPROVE": "", "JUPYTER_MCP_EXTENSIONS": ""})
    with server_log.open("wb") as stderr:
        server = subprocess.Popen(
            command, env=env, cwd=workspace, stdout=subprocess.DEVNULL, stderr=stderr
        )
    context = multiprocessing.get_context("spawn")
    ready, results = context.Queue(), context.Queue()
    go = context.Event()
    deadline = context.Value("d", 0.0)
    workers = []
    try:
        wait_healthy(server, base, server_log)
        url = f"{base}/mcp"
        minted = [(index, tokens(url, index)) for index in range(args.clients)]
        count = min(args.client_processes, args.clients)
        for part in range(count):
            process = context.Process(
                target=worker,
                args=(url, minted[part::count], ready, go, deadline, results),
                daemon=True,
            )
            process.start()
            workers.append(process)
        for _ in workers:
            if ready.get(timeout=600) == -1:
                raise RuntimeError(f"a worker failed while warming up: {results.get(timeout=5)}")
        log(f"   {args.clients} clients warm")
        load_start = load_average()
        server_cpu = cpu_seconds(server.pid) or 0.0
        busy, total = machine_busy_seconds()
        wall = time.perf_counter()
        deadline.value = time.monotonic() + args.seconds
        go.set()
        outs = [results.get(True, args.seconds + 600) for _ in workers]
        wall = time.perf_counter() - wall
        server_cpu = (cpu_seconds(server.pid) or 0.0) - server_cpu
        busy_end, total_end = machine_busy_seconds()
        load_end = load_average()
    finally:
        stop(server, workers)
    fatal = [out["fatal"] for out in outs if "fatal" in out]
    if fatal:
        raise RuntimeError(f"a worker failed: {fatal}")
    latencies: dict[str, list[float]] = {}
    wrong: list[str] = []
    for out in outs:
        for tool, values in out["latencies"].items():
            latencies.setdefault(tool, []).extend(values)
        wrong.extend(out["wrong"])
    every = [value for values in latencies.values() for value in values]
    return {
        "run": name,
        "clients": args.clients,
        "seconds": round(wall, 2),
        "calls": len(every),
        "calls_per_second": round(len(every) / wall, 1),
        "wrong": len(wrong),
        "first_wrong": wrong[:10],
        "p50_ms": round(percentile(every, 0.5) * 1000, 2) if every else None,
        "p99_ms": round(percentile(every, 0.99) * 1000, 2) if every else None,
        "tools": {
            tool: {
                "calls": len(values),
                "p50_ms": round(percentile(values, 0.5) * 1000, 2),
                "p99_ms": round(percentile(values, 0.99) * 1000, 2),
            }
            for tool, values in sorted(latencies.items())
        },
        "audit": audit_check(audit, name == "auth"),
        "server_cpu_ms_per_call": round(server_cpu / len(every) * 1000, 3) if every else None,
        "machine_cores_busy": round((busy_end - busy) / wall, 2),
        "machine_capacity_s": round(total_end - total, 2),
        "load_start": load_start,
        "load_end": load_end,
    }


def audit_check(path: Path, signed_in: bool) -> dict[str, Any]:
    """Every recorded call of ours: for its own client's notebook, and (signed in) the token's caller."""
    checked, mismatched = 0, []
    for line in path.read_text().splitlines() if path.exists() else []:
        record = json.loads(line)
        if record.get("event") != "tool_call" or record.get("tool") not in TOOLS:
            continue
        checked += 1
        notebook = str((record.get("arguments") or {}).get("notebook_name", ""))
        caller = record.get("caller") or {}
        if signed_in:
            index = notebook.removeprefix("nb").removesuffix(".ipynb")
            if caller.get("user") != f"agent-{index}" or caller.get("client") != f"load-{index}":
                mismatched.append({"notebook": notebook, "caller": caller})
    return {"calls": checked, "mismatched": len(mismatched), "first": mismatched[:3]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument(
        "--static-first", action="store_true", help="the --mcp-token run first (the order's share)"
    )
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    started = time.perf_counter()

    def log(text: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    info = machine()
    log(f"{info['nproc']} x {info['cpu']}, Python {info['python']}, load {info['load']}")
    root = Path(tempfile.mkdtemp(prefix="jmcp-auth-load-"))
    provider, issuer, key, kid = start_provider(root)
    results = []
    try:

        def signed_in() -> dict[str, Any]:
            log(f"-- auth: {args.clients} clients, tokens of their own from {issuer}")
            return run(
                "auth",
                ["--auth-issuer", issuer],
                lambda url, index: mint(issuer, key, kid, url, index, args.seconds),
                args,
                root,
                log,
            )

        def with_static_token() -> dict[str, Any]:
            log(f"-- static token: {args.clients} clients, --mcp-token")
            door = ["--mcp-token", STATIC_TOKEN]
            return run("static", door, lambda url, index: STATIC_TOKEN, args, root, log)

        for one in (
            (with_static_token, signed_in) if args.static_first else (signed_in, with_static_token)
        ):
            results.append(one())
    finally:
        provider.terminate()
        provider.wait(10)
        shutil.rmtree(root, ignore_errors=True)
    print(
        "\n| run | calls | calls/s | p50 | p99 | wrong | audit calls | audit mismatched | server CPU/call | load |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        print(
            f"| {r['run']} | {r['calls']:,} | {r['calls_per_second']} | {r['p50_ms']} ms | {r['p99_ms']} ms | "
            f"{r['wrong']} | {r['audit']['calls']:,} | {r['audit']['mismatched']} | "
            f"{r['server_cpu_ms_per_call']} ms | {r['load_start']} -> {r['load_end']} |"
        )
        for tool, figures in r["tools"].items():
            print(
                f"|   {tool} | {figures['calls']:,} | | {figures['p50_ms']} ms | {figures['p99_ms']} ms | | | | | |"
            )
        for wrong in r["first_wrong"]:
            print(f"  wrong: {wrong}")
    auth, static = sorted(results, key=lambda r: r["run"] != "auth")
    if auth["p99_ms"] and static["p99_ms"]:
        ratio = auth["p99_ms"] / static["p99_ms"]
        print(
            f"\n- p99 with auth <= 2x without: {'met' if ratio <= 2 else 'NOT MET'} ({ratio:.2f}x); "
            f"wrong answers 0: {'met' if auth['wrong'] + static['wrong'] == 0 else 'NOT MET'}; "
            f"every audited call its own client's: {'met' if auth['audit']['mismatched'] == 0 else 'NOT MET'}"
        )
    print(
        f"\n{time.perf_counter() - started:.0f} s; {info['nproc']} x {info['cpu']}, Python {info['python']}; "
        f"load average {info['load']} at the start, {load_average()} at the end"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "runs": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
