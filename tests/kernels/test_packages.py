"""install_packages and list_packages (the environments toolset) on real environments and PyPI.

A running kernel gets a package installed into its environment and imports it
on the next execution, without a restart and with its variables kept; a
module it had imported before an upgrade is said to need one. Bad input is
refused before anything runs: shell syntax, options, URLs, paths, the server's
own environment; an installer that hangs is stopped at its timeout and the
kernel runs on.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ok, refused, serve, text_of
from environments_support import EXTRA, LATER, make_env, server_lacks

ENVIRONMENTS = ("--toolsets", "environments", "--capability", "kernel.prestart=off")


class Heard:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")


async def test_a_package_installed_into_a_running_kernels_environment_imports_without_a_restart(
    workspace: Path,
) -> None:
    server_lacks(LATER)
    make_env(workspace / ".venv", "ipykernel")
    async with serve(workspace, *ENVIRONMENTS) as client:
        used = await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "kept = 42"})
        missing = await client.call_tool("execute_code", {"code": f"import {LATER}"})
        assert missing.is_error and "ModuleNotFoundError" in text_of(missing)

        heard = Heard()
        result = await client.call_tool(
            "install_packages", {"packages": [LATER]}, progress_callback=heard
        )
        assert not result.is_error, text_of(result)
        done = result.structured_content
        assert done["environment"] == ".venv" and done["installer"] == "uv"
        assert done["command"][-1] == LATER and "--python" in done["command"]
        assert [(p["name"], p["previous_version"]) for p in done["installed"]] == [(LATER, None)]
        assert done["needs_restart"] is False and done["kernel_id"] == used["kernel_id"]
        assert "no restart needed" in text_of(result)
        assert heard.messages, "the installer's output was not heard as progress"

        ran = await client.call_tool(
            "execute_code", {"code": f"import {LATER}; print({LATER}.__file__, kept)"}
        )
        assert not ran.is_error, text_of(ran)
        where, value = text_of(ran).split()
        assert Path(where).is_relative_to(workspace / ".venv") and value == "42"
        assert (await ok(client, "list_kernels"))["kernels"][0]["kernel_id"] == used["kernel_id"]

        listed = await ok(client, "list_packages", {"pattern": "term*"})
        assert [p["name"] for p in listed["packages"]] == [LATER] and listed["total"] > 10
        everything = await ok(client, "list_packages", {"environment": ".venv"})
        assert "ipykernel" in {p["name"] for p in everything["packages"]}

        # Again: nothing changes, and it says so.
        again = await ok(client, "install_packages", {"packages": [LATER]})
        assert again["installed"] == [] and again["already_present"] == [LATER]


async def test_an_upgrade_of_an_imported_module_says_a_restart_is_needed(workspace: Path) -> None:
    make_env(workspace / ".venv", "ipykernel", f"{EXTRA}==0.5.0")
    async with serve(workspace, *ENVIRONMENTS) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": f"import {EXTRA}"})
        result = await client.call_tool("install_packages", {"packages": [f"{EXTRA}==0.5.1"]})
        assert not result.is_error, text_of(result)
        done = result.structured_content
        assert [(p["name"], p["version"], p["previous_version"]) for p in done["installed"]] == [
            (EXTRA, "0.5.1", "0.5.0")
        ]
        assert done["needs_restart"] is True and done["stale_modules"] == [EXTRA]
        assert "restart_notebook" in text_of(result)
        # Nothing was restarted: the old version still runs.
        ran = await client.call_tool("execute_code", {"code": f"print({EXTRA}.__version__)"})
        assert text_of(ran).strip() == "0.5.0"


async def test_pip_installs_where_uv_is_not_wanted(workspace: Path) -> None:
    make_env(workspace / "env", "ipykernel", seed=True)
    async with serve(workspace, *ENVIRONMENTS, env={"JUPYTER_MCP_INSTALLER": "pip"}) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        done = await ok(client, "install_packages", {"packages": [f"{LATER}>=2"]})
        assert done["installer"] == "pip" and done["command"][1:4] == ["-m", "pip", "install"]
        assert [p["name"] for p in done["installed"]] == [LATER]
        assert not (await client.call_tool("execute_code", {"code": f"import {LATER}"})).is_error


async def test_bad_package_specifications_are_refused_before_anything_runs(
    workspace: Path, tmp_path: Path
) -> None:
    make_env(workspace / ".venv", "ipykernel")
    canary = tmp_path / "pwned"
    async with serve(workspace, *ENVIRONMENTS) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        shell = [
            f"{LATER}; touch {canary}",
            f"$(touch {canary})",
            f"`touch {canary}`",
            f"{LATER} && touch {canary}",
            f"{LATER} | tee {canary}",
            f"{LATER} {EXTRA}",
            f"{LATER}\ntouch {canary}",
            f"{LATER} > {canary}",
            "",
        ]
        for spec in shell:
            result = await refused(
                client, "install_packages", {"packages": [spec]}, "invalid_argument"
            )
            assert "not a package specification" in text_of(result) or "is a path" in text_of(
                result
            ), text_of(result)
        for spec, kind in [
            ("--index-url", "an installer option"),
            ("-e", "an installer option"),
            ("https://example.invalid/x.whl", "a URL"),
            (f"{LATER} @ https://example.invalid/x.whl", "a URL"),
            ("./vendored/pkg", "a path"),
            ("dist/pkg-1.0-py3-none-any.whl", "a path"),
        ]:
            result = await refused(
                client, "install_packages", {"packages": [spec, LATER]}, "invalid_argument"
            )
            assert kind in text_of(result) and "packages.any-source" in text_of(result), text_of(
                result
            )
        await refused(
            client, "install_packages", {"packages": [LATER], "environment": "nope"}, "not_found"
        )
        await refused(
            client, "install_packages", {"packages": [LATER], "timeout": 0}, "invalid_argument"
        )
    assert not canary.exists()
    assert not list((workspace / ".venv").glob(f"lib/python*/site-packages/{LATER}"))
    async with serve(workspace, *ENVIRONMENTS, "--capability", "packages.any-source") as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb"})
        result = await refused(
            client, "install_packages", {"packages": ["./no/such/pkg.whl"]}, "not_found"
        )
        assert str(workspace / "no" / "such" / "pkg.whl") in text_of(result)


async def test_the_servers_own_environment_is_refused_unless_allowed(workspace: Path) -> None:
    async with serve(workspace, *ENVIRONMENTS) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        result = await refused(client, "install_packages", {"packages": [LATER]}, "not_permitted")
        assert "server's own Python" in text_of(
            result
        ) and "packages.server-environment" in text_of(result)
        # Listing is harmless.
        listed = await ok(client, "list_packages", {"pattern": "ipykernel"})
        assert [p["name"] for p in listed["packages"]] == ["ipykernel"]


@contextlib.contextmanager
def silent_index(seconds: float) -> Iterator[str]:
    """A package index on loopback that accepts connections and answers nothing for `seconds`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()
    deadline = time.monotonic() + seconds

    def hold() -> None:
        while not stop.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                connection, _ = listener.accept()
                held.append(connection)
        for connection in held:
            connection.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/simple"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


@pytest.mark.parametrize("installer", ["uv", "pip"])
async def test_a_hanging_installer_is_stopped_at_its_timeout_and_the_kernel_runs_on(
    workspace: Path, installer: str
) -> None:
    make_env(workspace / ".venv", "ipykernel", seed=True)
    options = (*ENVIRONMENTS, "--capability", "packages.any-source")
    with silent_index(30) as index:
        async with serve(workspace, *options, env={"JUPYTER_MCP_INSTALLER": installer}) as client:
            used = await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            await ok(client, "execute_code", {"code": "kept = 'still here'"})
            started = time.monotonic()
            result = await refused(
                client,
                "install_packages",
                {"packages": ["--index-url", index, "no-such-package-anywhere"], "timeout": 4},
                "timeout",
            )
            assert time.monotonic() - started < 20
            assert "did not finish within 4 s" in text_of(result) and "kernel runs on" in text_of(
                result
            )
            ran = await client.call_tool("execute_code", {"code": "print(kept)"})
            assert text_of(ran).strip() == "still here"
            assert (await ok(client, "list_kernels"))["kernels"][0]["kernel_id"] == used[
                "kernel_id"
            ]


async def test_the_environments_tools_are_declared_and_opt_in(workspace: Path) -> None:
    async with serve(workspace, *ENVIRONMENTS) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("install_packages", "list_packages"):
            tool = tools[name]
            assert tool.title and tool.description and tool.annotations is not None, name
            assert tool.output_schema and tool.output_schema.get("type") == "object", name
            assert '"title"' not in str(tool.output_schema).replace("'title'", '"title"'), name
        install, listing = tools["install_packages"].annotations, tools["list_packages"].annotations
        assert (
            install.read_only_hint is False
            and install.destructive_hint is True
            and install.open_world_hint is True
        )
        assert listing.read_only_hint is True and listing.open_world_hint is False
    async with serve(workspace) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert (
            "install_packages" not in names
            and "list_packages" not in names
            and "list_kernels" in names
        )
