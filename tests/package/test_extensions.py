"""Extensions, installed as real packages and served by the real server.

`examples/my-extension` and the fixture distribution in
`tests/fixtures/fixture-extensions` are pip-installed into a directory once
per session; every server here is `jupyter-mcp-server start` over stdio with
that directory on PYTHONPATH, talked to with the official client. Each server
start is grouped with every check it can serve, because a start costs a
second or two.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from conftest import error_code, ok, server_command, server_environment, text_of
from fixtures import (
    FIXTURES,
    ONLY_OURS,
    OURS,
    extensions_site,
    pip_install,
    python_path,
    read_lines,
)
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from reactor_mcp_server import put_on_server

from jupyter_mcp_server._extensions import (
    ExtensionManager,
    JupyterMCPExtension,
    PluginCompatibility,
    PluginManifest,
    ReplacingServer,
    ToolExtension,
    Toolset,
    ToolSpec,
)
from jupyter_mcp_server._hooks import Hooks, ToolCallEnded

__all__ = ["extensions_site"]  # the session fixture, used by name

from conftest import CORE_TOOLS

NARROWED_DESCRIPTION = "List only the notebooks (*.ipynb) in the workspace."
#: Every fixture that registers and starts, in entry-point name order
#: (fx-lazy registers too, but sleeps until a client asks for ``lazy``).
STARTED_FIXTURES = (
    "fx-broken-capabilities",
    "fx-broken-start",
    "fx-gateway",
    "fx-hooks",
    "fx-optin",
    "fx-orphan",
    "fx-tag-a",
    "fx-tag-b",
)
NO_KERNEL_AHEAD = ("--capability", "kernel.prestart=off")
EMPTY_NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def populate(workspace: Path) -> Path:
    (workspace / "a.ipynb").write_text(json.dumps(EMPTY_NOTEBOOK), encoding="utf-8")
    (workspace / "b.py").write_text("# %%\nprint(1)\n", encoding="utf-8")
    (workspace / "notes.txt").write_text("not a notebook\n", encoding="utf-8")
    return workspace


@contextlib.asynccontextmanager
async def served(
    workspace: Path,
    *args: str,
    site: Path,
    log: Path,
    cwd: Path,
    **env: str,
) -> AsyncIterator[Client]:
    """The server over stdio with `site` installed; its stderr goes to `log`.

    `cwd` is deliberately not the workspace: a tool answering the workspace
    root can only be right by reading the configuration the CLI installed.
    """
    env = {"JUPYTER_MCP_EXTENSIONS": ONLY_OURS, **env}
    params = StdioServerParameters(
        command=sys.executable,
        args=server_command(workspace, *args)[1:],
        env=server_environment(PYTHONPATH=python_path(site), **env),
        cwd=str(cwd),
    )
    with log.open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            yield client


async def tool_map(client: Client) -> dict[str, Any]:
    tools = (await client.list_tools()).tools
    names = [tool.name for tool in tools]
    assert len(names) == len(set(names)), f"a tool is served twice: {sorted(names)}"
    return {tool.name: tool for tool in tools}


async def capabilities(client: Client) -> dict[str, dict[str, Any]]:
    read = await client.read_resource("capabilities://")
    document = json.loads(read.contents[0].text)
    enabled = set(document["capabilities"])
    declared = {entry["name"]: entry for entry in document["declared"]}
    assert enabled == {name for name, entry in declared.items() if entry["enabled"]}
    return declared


async def tags_of(client: Client) -> list[str]:
    """What the two tag extensions appended to list_kernels, in the order they did."""
    result = await client.call_tool("list_kernels", {})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None and "kernels" in result.structured_content
    # Each block but the last ends in a line break (clients may join blocks with nothing between).
    return [
        block.text.rstrip("\n")
        for block in result.content
        if getattr(block, "text", "").startswith("tag:")
    ]


def logged(log: Path, level: str, *fragments: str) -> bool:
    """Whether one line of the server's log has `level` and every fragment."""
    return any(
        f" {level} " in line and all(f in line for f in fragments) for line in read_lines(log)
    )


# --- 1. The whole path, with examples/my-extension ---------------------------


async def test_example_extension_whole_path(extensions_site, workspace, tmp_path):
    populate(workspace)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    log = tmp_path / "server.log"
    # Only my-extension: the fixtures installed beside it are not served.
    async with served(
        workspace,
        *NO_KERNEL_AHEAD,
        site=extensions_site,
        log=log,
        cwd=elsewhere,
        JUPYTER_MCP_EXTENSIONS="my-extension",
    ) as client:
        tools = await tool_map(client)
        assert set(tools) == CORE_TOOLS | {"my_tool"}

        # A tool, answering with what the command line said, not the cwd.
        result = await client.call_tool("my_tool", {"argument": "hi"})
        assert not result.is_error, text_of(result)
        assert text_of(result) == f"hi @ {workspace.resolve()}"
        assert tools["my_tool"].description.startswith("Echo the argument")

        # A capability, declared and attributed.
        declared = (await capabilities(client))["myext.snapshots"]
        assert declared["source"] == "my-extension" and declared["enabled"] is True

        # A core tool narrowed: what it says and what it does.
        assert tools["list_files"].description == NARROWED_DESCRIPTION
        assert "pattern" not in tools["list_files"].input_schema["properties"]
        # The wrapper declares no result; the tool keeps the one it had, output schema included.
        assert "files" in (tools["list_files"].output_schema or {}).get("properties", {})
        listed = await ok(client, "list_files", {})
        assert [entry["path"] for entry in listed["files"]] == ["a.ipynb"]

        # The extensions it did not list are absent, tool extensions included.
        assert await tags_of(client) == []


async def test_an_extension_written_with_the_first_documented_imports(workspace, tmp_path):
    """``jupyter_mcp_server.extensions`` and ``jupyter_mcp_server.capabilities``, the paths the
    first extension documentation showed, still load an extension: its tool served, its hooks
    called, its capability advertised."""
    populate(workspace)
    site = tmp_path / "site"
    pip_install(site, FIXTURES / "documented-extension")
    heard = tmp_path / "hooks.log"
    log = tmp_path / "server.log"
    async with served(
        workspace,
        *NO_KERNEL_AHEAD,
        site=site,
        log=log,
        cwd=workspace,
        JUPYTER_MCP_EXTENSIONS="my-extension",
        DOCUMENTED_EXTENSION_LOG=str(heard),
    ) as client:
        tools = await tool_map(client)
        assert set(tools) == CORE_TOOLS | {"my_tool"}, log.read_text()[-2000:]
        assert tools["my_tool"].description == "What it does."
        result = await client.call_tool("my_tool", {"argument": "hi"})
        assert not result.is_error and text_of(result) == "hi…", text_of(result)
        declared = (await capabilities(client))["myext.snapshots"]
        assert declared["source"] == "my-extension" and declared["enabled"] is True
        assert {"on_server", "on_start"} <= set(read_lines(heard))
    assert read_lines(heard)[-1] == "on_stop"
    assert not logged(log, "ERROR", "my-extension"), log.read_text()[-2000:]


async def test_core_tools_served_whatever_the_environment_lists(
    extensions_site, workspace, tmp_path
):
    populate(workspace)

    async def tools_when(listed: str) -> tuple[dict[str, Any], list[str]]:
        log = tmp_path / f"server-{listed or 'empty'}.log"
        async with served(
            workspace,
            *NO_KERNEL_AHEAD,
            site=extensions_site,
            log=log,
            cwd=workspace,
            JUPYTER_MCP_EXTENSIONS=listed,
        ) as client:
            tools = await tool_map(client)
            listed_files = await ok(client, "list_files", {})
            return tools, sorted(entry["path"] for entry in listed_files["files"])

    # Two servers at once: each costs a start, and there are two cores.
    (empty, empty_files), (bogus, bogus_files) = await asyncio.gather(
        tools_when(""), tools_when("no-such-extension")
    )
    for tools, files in ((empty, empty_files), (bogus, bogus_files)):
        assert set(tools) == CORE_TOOLS
        assert tools["list_files"].description != NARROWED_DESCRIPTION
        assert files == ["a.ipynb", "b.py", "notes.txt"]
    # A name that matches nothing installed is a typo worth saying so.
    assert logged(
        tmp_path / "server-no-such-extension.log",
        "WARNING",
        "JUPYTER_MCP_EXTENSIONS",
        "'no-such-extension'",
    )


# --- 2. Discovery order --------------------------------------------------------


def discovered(site: Path | None, listed: str | None = None) -> list[str]:
    """What a server built in a process that sees `site` registers, in order."""
    env = server_environment(PYTHONPATH=python_path(site))
    if listed is not None:
        env["JUPYTER_MCP_EXTENSIONS"] = listed
    code = (
        "import json\nfrom jupyter_mcp_server._app import build_state\nfrom jupyter_mcp_server._config import read_config\n"
        "print(json.dumps(list(build_state(read_config({})).extensions.host.registered)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_discovery_order_and_narrowing(extensions_site):
    runs = (
        (None, None),  # what is installed besides: the baseline
        (extensions_site, None),
        (extensions_site, "my-extension, fx-tag-b"),
        (extensions_site, ""),
        (extensions_site, "nothing-by-that-name"),
    )
    with ThreadPoolExecutor(len(runs)) as pool:
        baseline, everything, narrowed, empty, bogus = pool.map(lambda run: discovered(*run), runs)
    # The fixture distribution lists its entry points out of order; discovery
    # sorts them with whatever else is installed, after the core tools. The
    # two that cannot load are absent.
    assert baseline[0] == everything[0] == "jupyter-mcp-server"
    loadable = {*STARTED_FIXTURES, "fx-lazy", "my-extension"}
    assert loadable <= set(OURS)
    assert set(everything[1:]) == loadable | set(baseline[1:])
    # (discover() answers manifest names; ours equal their entry-point names.)
    assert [name for name in everything if name in loadable] == sorted(loadable)
    assert narrowed == ["jupyter-mcp-server", "fx-tag-b", "my-extension"]
    assert empty == bogus == ["jupyter-mcp-server"]


# --- 3 and 4. Failures isolated; tool extensions in their declared order ------


async def test_failing_extensions_cost_only_themselves(extensions_site, workspace, tmp_path):
    populate(workspace)
    log = tmp_path / "server.log"
    markers = tmp_path / "markers"
    async with served(
        workspace,
        *NO_KERNEL_AHEAD,
        "--toolsets",
        "extras",
        site=extensions_site,
        log=log,
        cwd=workspace,
        JUPYTER_MCP_LOG_LEVEL="DEBUG",
        FIXTURE_MARKERS=str(markers),
    ) as client:
        tools = await tool_map(client)
        # Everything that did not fail is served, over stdio the opt-in toolset --toolsets named too.
        assert CORE_TOOLS | {"my_tool", "extra_tool", "gateway_tool"} == set(tools)
        assert (await capabilities(client))["myext.snapshots"]["source"] == "my-extension"
        result = await client.call_tool("extra_tool", {})
        assert text_of(result) == "extra"
        # An extension's resources() are on the stdio server too.
        assert (await client.read_resource("fixture://extras")).contents[
            0
        ].text == "extras resource"

        # Two extensions of list_kernels: fx-tag-a is registered first, but
        # declares order 20 against fx-tag-b's 10, so B applies first (innermost)
        # and its tag comes first. One list_kernels, not two.
        assert await tags_of(client) == ["tag:B", "tag:A"]

    # The log names each failing extension, with what failed.
    assert logged(log, "ERROR", "'fx-broken-import'", "could not be loaded")
    assert logged(log, "ERROR", "'fx-broken-manifest'", "could not be registered")
    assert logged(log, "ERROR", "'fx-broken-capabilities'", "capabilities")
    assert logged(log, "ERROR", "'fx-broken-start'", "on_start")
    assert logged(log, "DEBUG", "'fx-orphan'", "'no_such_tool'", "nobody offers")
    assert not any(
        "an extension of a tool nobody offered was applied" in line for line in read_lines(log)
    )

    # Every extension after the one whose on_start raised was started; each was stopped.
    events = read_lines(markers)
    assert [e for e in events if e.startswith("start:")] == [
        f"start:{name}" for name in STARTED_FIXTURES
    ]
    assert sorted(e for e in events if e.startswith("stop:")) == [
        f"stop:{name}" for name in STARTED_FIXTURES
    ]


async def test_tool_extension_order_follows_the_declaration_not_the_installation(
    extensions_site, workspace, tmp_path
):
    # The same two distributions, the declared orders swapped: now A applies first.
    async with served(
        workspace,
        *NO_KERNEL_AHEAD,
        site=extensions_site,
        log=tmp_path / "server.log",
        cwd=workspace,
        FIXTURE_TAG_ORDER="name-order",
    ) as client:
        assert await tags_of(client) == ["tag:A", "tag:B"]
        await tool_map(client)


# In process: the two orders of registration give one and the same tool.


class Probe(JupyterMCPExtension):
    """Offers `probe`, which answers the list its extensions append to."""

    def manifest(self) -> PluginManifest:
        return PluginManifest(
            name="probe", version="1", compatibility=PluginCompatibility(api_version="v1")
        )

    def toolsets(self) -> tuple[Toolset, ...]:
        return (Toolset(name="probe"),)

    def tools(self) -> list[ToolSpec]:
        async def probe() -> list[str]:
            """The original description."""
            return []

        return [ToolSpec(name="probe", handler=probe, toolset="probe")]


class Tag(JupyterMCPExtension):
    """Appends its tag to what `probe` answers; its order declared one way or the other."""

    def __init__(self, tag: str, order: int, as_triple: bool) -> None:
        self.tag = tag
        self.order = order
        self.as_triple = as_triple
        if not as_triple:
            self.tool_extension_order = order

    def manifest(self) -> PluginManifest:
        return PluginManifest(
            name=f"tag-{self.tag}", version="1", compatibility=PluginCompatibility(api_version="v1")
        )

    def toolsets(self) -> tuple[Toolset, ...]:
        return ()

    def tool_extensions(self) -> Any:
        def wrap(handler: Any) -> Any:
            async def tagged() -> list[str]:
                return [*(await handler()), self.tag]

            return tagged

        extension = ToolExtension(wrap=wrap, description=f"Described by {self.tag}.")
        return (("probe", extension, self.order),) if self.as_triple else (("probe", extension),)


async def resolved_probe(
    *extensions: JupyterMCPExtension, hooks: Hooks | None = None
) -> tuple[list[str], str, list[str]]:
    """Register `extensions` in this order on a fresh manager: probe's tags, description, tool names."""
    manager = ExtensionManager(hooks)
    for extension in extensions:
        assert manager.register(extension) is not None
    specs = manager.tools()
    names = [spec.name for spec in specs]
    (spec,) = (spec for spec in specs if spec.name == "probe")
    return await spec.handler(), spec.documentation, names


async def test_tool_extension_order_in_process():
    def a() -> Tag:
        return Tag("a", 20, as_triple=False)

    def b() -> Tag:
        return Tag("b", 10, as_triple=True)

    # Declared: b (10) before a (20), in both orders of registration, the tool
    # before or after its extensions.
    orders = [
        (Probe(), a(), b()),
        (Probe(), b(), a()),
        (a(), b(), Probe()),
        (b(), Probe(), a()),
    ]
    for extensions in orders:
        tags, description, names = await resolved_probe(*extensions)
        assert tags == ["b", "a"], [type(e).__name__ for e in extensions]
        # The last applied is the outermost, and its description is the one a model reads.
        assert description == "Described by a."
        assert names.count("probe") == 1

    # Equal orders: extension name decides (tag-a before tag-b), never registration.
    for first, second in (
        (Tag("a", 0, True), Tag("b", 0, False)),
        (Tag("b", 0, False), Tag("a", 0, True)),
    ):
        tags, _, _ = await resolved_probe(Probe(), first, second)
        assert tags == ["a", "b"]

    # The host fires the hook pair around an extension's tool, once, its extensions outside it.
    ended: list[ToolCallEnded] = []
    hooks = Hooks()
    hooks.after_tool.append(ended.append)
    tags, _, _ = await resolved_probe(Probe(), a(), b(), hooks=hooks)
    assert tags == ["b", "a"]
    assert [(event.tool, event.outcome) for event in ended] == [("probe", "ok")]

    # Put on a server twice (reactor's own step), it is still one tool: the later one replaces.
    manager = ExtensionManager()
    for extension in (Probe(), b(), a()):
        manager.register(extension)
    server = ReplacingServer(name="probe-server")
    put_on_server(server, Probe().tools())
    put_on_server(server, manager.tools())
    listed = await server.list_tools()
    assert [tool.name for tool in listed] == ["probe"]
    assert listed[0].description == "Described by a."
    manager.stop()


# --- 5. Hooks: the audit log, and an observer that raises ---------------------


async def test_audit_log_and_a_raising_hook(extensions_site, workspace, tmp_path):
    audit = tmp_path / "audit.jsonl"
    log = tmp_path / "server.log"
    async with served(
        workspace,
        "--audit-log",
        str(audit),
        site=extensions_site,
        log=log,
        cwd=workspace,
    ) as client:
        # fx-hooks registered an observer that raises on every event; nothing breaks.
        await ok(client, "list_kernels")
        assert text_of(await client.call_tool("my_tool", {"argument": "audited"})).startswith(
            "audited @"
        )
        missing = await client.call_tool("read_notebook", {})
        assert error_code(missing) == "no_notebook"
        await ok(client, "use_notebook", {"notebook_name": "a.ipynb", "mode": "create"})
        assert (await ok(client, "execute_code", {"code": "6*7"}))["status"] == "ok"
        failed = await client.call_tool("execute_code", {"code": "1/0"})
        assert failed.is_error and error_code(failed) == "execution_error"
        assert failed.structured_content["status"] == "error"

    records = [json.loads(line) for line in read_lines(audit)]
    calls = [r for r in records if r["event"] == "tool_call"]
    executions = [r for r in records if r["event"] == "execution"]
    # Each call once, the core tools' and an extension's alike.
    assert [(c["tool"], c["outcome"]) for c in calls] == [
        ("list_kernels", "ok"),
        ("my_tool", "ok"),
        ("read_notebook", "no_notebook"),
        ("use_notebook", "ok"),
        ("execute_code", "ok"),
        ("execute_code", "execution_error"),
    ]
    assert calls[1]["arguments"] == {"argument": "audited"}
    assert calls[4]["arguments"]["code"] == "6*7"
    assert calls[3]["arguments"]["notebook_name"] == "a.ipynb"
    assert all(isinstance(c["duration_ms"], (int, float)) and c["duration_ms"] >= 0 for c in calls)
    assert [(e["code"], e["status"]) for e in executions] == [("6*7", "ok"), ("1/0", "error")]
    assert all(e["duration_ms"] >= 0 and e["kernel_id"] for e in executions)
    # The raising observer was called, and logged, on both kinds of event.
    assert logged(log, "ERROR", "failed on ToolCall;")
    assert logged(log, "ERROR", "failed on ExecutionEnded;")
    assert os.path.getsize(audit) > 0
