"""Capabilities through the real process: layers, names, the resources, kernel.auto-restart."""

import asyncio
import json
import os
import signal
import subprocess
import time

from conftest import (
    error_code,
    ok,
    refused,
    serve,
    server_command,
    server_environment,
    text_of,
)


async def described(client):
    resource = await client.read_resource("capabilities://")
    assert resource.contents[0].mime_type == "application/json"
    return json.loads(resource.contents[0].text)


def by_name(description):
    return {entry["name"]: entry for entry in description["declared"]}


async def test_resource_shape_and_defaults(workspace):
    async with serve(workspace) as client:
        description = await described(client)
        assert set(description) == {"version", "capabilities", "declared", "workspace", "history"}
        assert description["history"]["on"] is True and "off" not in description["history"]
        assert description["workspace"] == {"root": str(workspace.resolve()), "source": "cli"}
        assert description["version"] == "1"
        declared = by_name(description)
        assert declared["kernel.auto-restart"]["enabled"] is False
        assert declared["kernel.auto-restart"]["source"] == "default"
        assert set(declared["kernel.auto-restart"]) == {"name", "description", "enabled", "source"}
        assert description["capabilities"] == sorted(n for n, e in declared.items() if e["enabled"])
        assert "kernel.auto-restart" not in description["capabilities"]

        self_described = json.loads(
            (await client.read_resource("jupymcp://capabilities")).contents[0].text
        )
        assert self_described["schema_version"] == "1.0"
        assert self_described["output_schema_version"] == "1.0"
        assert self_described["server"]["name"] == "jupyter-mcp-server"
        assert set(self_described["limits"]) == {
            "default_timeout_seconds",
            "max_timeout_seconds",
            "max_output_bytes",
            "max_output_blocks",
            "max_kernels",
            "idle_timeout_seconds",
        }
        assert self_described["limits"]["max_kernels"] == 8
        assert self_described["kernelspecs"] == sorted(self_described["kernelspecs"])
        assert "python3" in self_described["kernelspecs"]
        assert self_described["cancellation"]["interrupts_kernel"] is False


async def test_layers_and_precedence(workspace):
    env = {"JUPYTER_MCP_CAPABILITIES": "kernel.auto-restart,kernel.prestart=off"}
    async with serve(workspace, env=env) as client:
        declared = by_name(await described(client))
        assert (
            declared["kernel.auto-restart"]["enabled"],
            declared["kernel.auto-restart"]["source"],
        ) == (True, "env")
        assert (declared["kernel.prestart"]["enabled"], declared["kernel.prestart"]["source"]) == (
            False,
            "env",
        )
    args = ["--capability", "kernel.auto-restart=OFF", "--capability", "kernel.prestart"]
    async with serve(workspace, *args, env=env) as client:
        declared = by_name(await described(client))
        assert (
            declared["kernel.auto-restart"]["enabled"],
            declared["kernel.auto-restart"]["source"],
        ) == (False, "cli")
        assert (declared["kernel.prestart"]["enabled"], declared["kernel.prestart"]["source"]) == (
            True,
            "cli",
        )
        described_limits = json.loads(
            (await client.read_resource("jupymcp://capabilities")).contents[0].text
        )
        assert described_limits["sessions"]["auto_restart"] is False


async def test_extension_capability_named_on_the_command_line(workspace, my_extension_path):
    env = {"PYTHONPATH": my_extension_path}
    async with serve(workspace, "--capability", "myext.snapshots=off", env=env) as client:
        declared = by_name(await described(client))
        # Named on the command line without stopping the server, and the
        # extension's own declaration is the last layer.
        assert declared["myext.snapshots"]["source"] == "my-extension"
        assert declared["myext.snapshots"]["enabled"] is True


def test_unknown_names_stop_the_server(workspace):
    for args, env in (
        (["--capability", "kernel.autorestart"], {}),
        ([], {"JUPYTER_MCP_CAPABILITIES": "kernel.auto-restart,bogus.thing=off"}),
    ):
        started = subprocess.run(
            server_command(workspace, *args),
            env=server_environment(**env),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert started.returncode == 2, started.stderr
        assert "kernel.auto-restart" in started.stderr and "Known capabilities" in started.stderr
        assert started.stdout == ""


async def test_server_discover_carries_the_capabilities(workspace):
    async with serve(workspace, "--capability", "kernel.auto-restart", mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        advertised = client.server_capabilities.extensions["io.jupyter-mcp/capabilities"]
        assert advertised == await described(client)
        assert "kernel.auto-restart" in advertised["capabilities"]


async def kernel_pid(client, notebook):
    result = await ok(
        client,
        "insert_execute_code_cell",
        {
            "cell_index": -1,
            "cell_source": "import os; x = 41; os.getpid()",
            "notebook_name": notebook,
        },
    )
    assert result["status"] == "ok"
    read = await ok(
        client,
        "read_cell",
        {
            "cell_index": -1
            + len((await ok(client, "read_notebook", {"notebook_name": notebook}))["cells"]),
            "notebook_name": notebook,
        },
    )
    return int(read["outputs"][0]["data"]["text/plain"])


async def test_killed_kernel_with_auto_restart_off_and_on(workspace):
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "k.ipynb", "mode": "create"})
        pid = await kernel_pid(client, "k.ipynb")
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.5)
        gone = await refused(client, "execute_code", {"code": "x"}, "kernel_gone")
        assert "restart_notebook" in text_of(gone) and "kernel.auto-restart" in text_of(gone)
        assert "'k.ipynb'" in text_of(gone)
        # Still gone: nothing was replaced behind the caller's back.
        await refused(client, "execute_code", {"code": "1"}, "kernel_gone")
        restarted = await ok(client, "restart_notebook", {"notebook_name": "k.ipynb"})
        fresh = await client.call_tool("execute_code", {"code": "x"})
        assert error_code(fresh) == "execution_error" and "NameError" in text_of(fresh)
        assert restarted["kernel_id"]

    async with serve(workspace, "--capability", "kernel.auto-restart") as client:
        await ok(client, "use_notebook", {"notebook_name": "k.ipynb"})
        pid = await kernel_pid(client, "k.ipynb")
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.5)
        replaced = await client.call_tool("execute_code", {"code": "1 + 1"})
        assert not replaced.is_error, text_of(replaced)
        assert "replacement" in text_of(replaced) and "2" in text_of(replaced)


async def test_cancellation_follows_its_capability(workspace):
    cell = "import time\ntime.sleep(2.5)\nfinished = True"
    for args, expect_finished in (
        ([], True),
        (["--capability", "execution.cancel-interrupts"], False),
    ):
        async with serve(workspace, *args) as client:
            await ok(
                client,
                "use_notebook",
                {"notebook_name": "c.ipynb", "mode": "create" if not args else "connect"},
            )
            call = asyncio.create_task(client.call_tool("execute_code", {"code": cell}))
            await asyncio.sleep(1.0)
            call.cancel()
            started = time.monotonic()
            check = await client.call_tool(
                "execute_code", {"code": "print(globals().get('finished', False))"}
            )
            assert text_of(check).strip().endswith(str(expect_finished)), text_of(check)
            if not expect_finished:
                assert time.monotonic() - started < 2.0


PROBE = "print(len(In), repr(_), len(Out), sorted(k for k in globals() if k.startswith('_i') or k[1:].isdigit()))"


async def fresh_kernel_state(workspace, *args):
    async with serve(workspace, *args) as client:
        await ok(client, "use_notebook", {"notebook_name": "fresh.ipynb", "mode": "create"})
        result = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": PROBE}
        )
        assert not result.is_error, text_of(result)
        return result.structured_content["execution_count"], text_of(result)


async def test_a_prestarted_kernel_is_as_fresh_as_one_started_on_demand(tmp_path):
    """The pool's warm-up run leaves no trace a cell can see: no count, no history, no `_`."""
    (tmp_path / "pooled").mkdir()
    (tmp_path / "on-demand").mkdir()
    pooled = await fresh_kernel_state(tmp_path / "pooled", "--capability", "kernel.prestart")
    on_demand = await fresh_kernel_state(
        tmp_path / "on-demand", "--capability", "kernel.prestart=off"
    )
    assert pooled == on_demand
    assert pooled[0] == 1
