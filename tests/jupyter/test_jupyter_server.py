"""Past one machine: a real Jupyter Server as the kernel backend, and the server inside it.

One real `jupyter server` (from PyPI) runs on loopback with a token for the
whole module, with this package's server extension enabled, under a base
URL. Against it:

- ``jupyter-mcp-server start --jupyter-url`` (stdio, the official client)
  runs the execution suite's essentials on its kernels: ok, error,
  truncation, timeout and interrupt, and ``kernel_gone`` when the kernel is
  deleted over REST;
- a websocket dropped under a running execution (a real TCP proxy between
  the two servers cuts every connection and refuses new ones for a while)
  comes back, and the output printed meanwhile arrives;
- a wrong token and an unreachable URL are clear errors, never repeating the
  token, which appears in no result and no log line;
- ``connect_to_jupyter`` switches where later kernels start;
- ``--jupyter-contents`` keeps the notebooks on that server, with revisions
  and conflicts as for local files;
- ``{base_url}/mcp`` serves the official client with the Jupyter token (both
  protocol generations) and refuses it without; a kernel the agent starts
  there is in ``/api/kernels``, and a notebook it writes is in
  ``/api/contents``;
- each notebook's kernel is bound to it in ``/api/sessions`` (remote with
  ``--jupyter-contents``, and inside Jupyter Server), and unbound when the
  agent stops the kernel;
- Jupyter's authorizer (a custom ``Authorizer`` class, tests/fixtures/jupyter-authorizer)
  chooses the caller's profile at ``{base_url}/mcp``: read, write, execute;
- with JupyterLab's collaboration extension (a second server, when
  ``jupyter-server-ydoc`` is installed), a Y client in the notebook's room
  sees the agent's edits without the file being polled.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import hashlib
import json
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import nbformat
import pytest
from conftest import (
    error_code,
    jupyter_server_process,
    ok,
    refused,
    server_command,
    server_environment,
    text_of,
)
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

TOKEN = "jupyter-test-token-4f9c2e7a1b"
WRONG = "wrong-token-8d3b6a0c5e"
BASE_URL = "/lab-base/"
NO_PRESTART = ("--capability", "kernel.prestart=off")


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The module's Jupyter Server, the extension enabled: (url with base URL, root_dir)."""
    tmp = tmp_path_factory.mktemp("jupyter")
    with jupyter_server_process(
        tmp,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True}",
        "--JupyterMCPServerApp.use_contents_manager=True",
        base_url=BASE_URL,
    ) as (url, root, log):
        yield url, root
        # Kernels deleted mid-execution print their own tracebacks; this package's code prints none.
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text, text[text.index("jupyter_mcp_server/") - 3000 :][
            :6000
        ]


def headers(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"token {token}"}


def remote_kernels(url: str) -> set[str]:
    return {kernel["id"] for kernel in httpx.get(f"{url}/api/kernels", headers=headers()).json()}


def sessions(url: str) -> dict[str, str]:
    """What JupyterLab sees in ``/api/sessions``: notebook path -> kernel id."""
    return {
        session["path"]: session["kernel"]["id"]
        for session in httpx.get(f"{url}/api/sessions", headers=headers()).json()
    }


@contextlib.asynccontextmanager
async def serve_logged(
    workspace: Path, log: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """The real server over stdio, the official client on it, its stderr (at DEBUG) in `log`."""
    command = server_command(workspace, *args)
    params = StdioServerParameters(
        command="bash",
        args=["-c", 'exec "$0" "$@" 2>>"$SERVER_LOG"', *command],
        env=server_environment(SERVER_LOG=str(log), JUPYTER_MCP_LOG_LEVEL="DEBUG", **(env or {})),
        cwd=str(workspace),
    )
    async with Client(params, mode="legacy") as client:
        yield client


def dump(result: Any) -> str:
    """Everything a client is told by a result: content, structured content, _meta."""
    return json.dumps(result.model_dump(mode="json", by_alias=True), default=str)


async def wait_for_file(path: Path, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)


# --- Remote kernels: the execution suite's essentials -------------------------------


async def test_remote_kernels_run_like_local_ones(workspace, tmp_path, jupyter):
    url, root = jupyter
    log = tmp_path / "server.log"
    async with serve_logged(
        workspace,
        log,
        "--jupyter-url",
        url,
        "--max-output-blocks",
        "3",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": TOKEN},
    ) as client:
        # A local notebook's path means nothing on that server: no session names it there.
        said, kernel_ids = await the_execution_essentials(
            client,
            url,
            root,
            workspace,
            TOKEN,
            started=lambda kernel_id: kernel_id not in sessions(url).values(),
        )
    # The server stops the kernels it started there.
    assert not set(kernel_ids) & remote_kernels(url)
    text = log.read_text()
    assert "jupyter_mcp_server" in text, "the log at DEBUG should say something"
    assert TOKEN not in text, "the token is in the server's log"
    assert all(TOKEN not in answer for answer in said)


async def the_execution_essentials(
    client: Client, url: str, root: Path, workspace: Path, token: str, started: Any = None
) -> tuple[list[str], list[str]]:
    """The execution suite's essentials on kernels at `url` (a Jupyter Server, or a kernel
    gateway), through a server started with ``--jupyter-url url --max-output-blocks 3``:
    what the client was told, and the ids of the kernels it used. ``started(kernel_id)``,
    when given, is checked once the first kernel is there."""
    auth = {"Authorization": f"token {token}"}

    def kernels_there() -> set[str]:
        return {kernel["id"] for kernel in httpx.get(f"{url}/api/kernels", headers=auth).json()}

    before = kernels_there()
    said: list[str] = []
    used = await ok(client, "use_notebook", {"notebook_name": "far.ipynb", "mode": "create"})
    kernel_id = used["kernel_id"]
    assert kernels_there() - before == {kernel_id}, "the kernel is not on the Jupyter Server"
    assert (workspace / "far.ipynb").is_file(), "without --jupyter-contents notebooks stay local"
    assert started is None or started(kernel_id)
    listed = await ok(client, "list_kernels")
    assert listed["kernelspecs"] == ["python3"] and [k["kernel_id"] for k in listed["kernels"]] == [
        kernel_id
    ]

    # ok: outputs, the value, the execution count; the kernel works in the server's root.
    result = await client.call_tool(
        "insert_execute_code_cell",
        {"cell_index": -1, "cell_source": "import os\nprint(os.getcwd())\nkept = 21\nkept * 2"},
    )
    said.append(dump(result))
    assert not result.is_error, text_of(result)
    assert (
        result.structured_content["status"] == "ok"
        and result.structured_content["execution_count"] == 1
    )
    assert text_of(result) == f"{root}\n\n42", text_of(result)
    stored = json.loads((workspace / "far.ipynb").read_text())["cells"][0]
    assert stored["execution_count"] == 1 and stored["outputs"][0]["text"] == [f"{root}\n"]

    # error: a traceback, code execution_error.
    failed = await client.call_tool("execute_code", {"code": "1/0"})
    said.append(dump(failed))
    assert (
        error_code(failed) == "execution_error"
        and failed.structured_content["error"]["ename"] == "ZeroDivisionError"
    )

    # truncation, counted exactly.
    many = await client.call_tool("execute_code", {"code": "for i in range(6): display(i)"})
    said.append(dump(many))
    assert not many.is_error and many.structured_content["truncation"]["omitted_blocks"] == 3, dump(
        many
    )

    # timeout: the kernel is interrupted over REST, the partial output comes back, the session survives.
    started = time.monotonic()
    timed = await client.call_tool(
        "execute_code",
        {"code": "import time\nprint('before', flush=True)\ntime.sleep(30)", "timeout": 2},
    )
    said.append(dump(timed))
    assert error_code(timed) == "timeout" and "before" in text_of(timed), text_of(timed)
    assert time.monotonic() - started < 10
    assert text_of(await client.call_tool("execute_code", {"code": "kept"})) == "21"

    # interrupt_kernel under a running call.
    running = asyncio.create_task(
        client.call_tool(
            "execute_code",
            {
                "code": "import time\nopen('go-interrupt', 'w').close()\ntime.sleep(30)",
                "timeout": 60,
            },
        )
    )
    await wait_for_file(root / "go-interrupt")
    interrupted = await ok(client, "interrupt_kernel", {"kernel_id": kernel_id})
    assert interrupted == {"kernel_id": kernel_id}
    result = await asyncio.wait_for(running, 15)
    said.append(dump(result))
    assert error_code(result) == "interrupted", text_of(result)
    assert text_of(await client.call_tool("execute_code", {"code": "kept"})) == "21"

    # kernel_gone: somebody deletes the kernel on the server.
    assert httpx.delete(f"{url}/api/kernels/{kernel_id}", headers=auth).status_code == 204
    gone = await refused(client, "execute_code", {"code": "kept"}, "kernel_gone")
    said.append(dump(gone))
    assert "restart_notebook" in text_of(gone)
    # ...and under a running execution.
    restarted = await ok(client, "restart_notebook", {})
    assert restarted["kernel_id"] in kernels_there()
    running = asyncio.create_task(
        client.call_tool(
            "execute_code",
            {"code": "import time\nopen('go-delete', 'w').close()\ntime.sleep(30)", "timeout": 60},
        )
    )
    await wait_for_file(root / "go-delete")
    httpx.delete(f"{url}/api/kernels/{restarted['kernel_id']}", headers=auth)
    result = await asyncio.wait_for(running, 20)
    said.append(dump(result))
    assert error_code(result) == "kernel_gone", text_of(result)
    fresh = await ok(client, "restart_notebook", {})
    assert text_of(await client.call_tool("execute_code", {"code": "'fresh'"})) == "'fresh'"

    capabilities = json.loads(
        (await client.read_resource("jupymcp://capabilities")).contents[0].text
    )
    assert capabilities["kernelspecs"] == ["python3"]
    return said, [kernel_id, restarted["kernel_id"], fresh["kernel_id"]]


# --- A dropped websocket ------------------------------------------------------------


class Proxy:
    """A TCP proxy on loopback that can cut every connection and refuse new ones for a while."""

    def __init__(self, target: str) -> None:
        host_port = target.split("//", 1)[1].split("/", 1)[0]
        self.target_port = int(host_port.rsplit(":", 1)[1])
        self.base = target.split(host_port, 1)[1]
        self.refusing = False
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.base_events.Server | None = None
        self.cuts = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}{self.base}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target_port
            )
        except OSError:
            writer.transport.abort()
            return
        self.writers.update({writer, upstream_writer})

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(
            pump(reader, upstream_writer), pump(upstream_reader, writer), return_exceptions=True
        )
        self.writers.difference_update({writer, upstream_writer})

    def cut(self) -> None:
        """Every open connection ends at once, as when a network goes away."""
        self.cuts += len(self.writers)
        for writer in list(self.writers):
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


async def test_a_dropped_websocket_comes_back_without_losing_output(workspace, tmp_path, jupyter):
    url, root = jupyter
    proxy = Proxy(url)
    proxied = await proxy.start()
    log = tmp_path / "server.log"
    try:
        async with serve_logged(
            workspace, log, "--jupyter-url", proxied, *NO_PRESTART, env={"JUPYTER_TOKEN": TOKEN}
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "drop.ipynb", "mode": "create"})
            await ok(client, "execute_code", {"code": "kept = 'still here'"})
            code = (
                "import time\nprint('start', flush=True)\nopen('go-drop', 'w').close()\ntime.sleep(2.0)\n"
                "for i in range(5):\n    print(i, flush=True)\n    time.sleep(0.2)\n"
                "time.sleep(1.5)\nprint('end', flush=True)"
            )
            running = asyncio.create_task(
                client.call_tool("execute_code", {"code": code, "timeout": 60})
            )
            await wait_for_file(root / "go-drop")
            await asyncio.sleep(
                0.7
            )  # 'start' has crossed the proxy; the kernel is quiet for a while
            # The network goes away while the kernel is quiet, and stays away while it prints.
            proxy.refusing = True
            proxy.cut()
            assert proxy.cuts >= 2
            await asyncio.sleep(2.5)
            proxy.refusing = False
            result = await asyncio.wait_for(running, 30)
            assert not result.is_error, text_of(result)
            assert text_of(result) == "start\n0\n1\n2\n3\n4\nend\n", text_of(result)
            # The same session goes on, over the restored websocket.
            assert (
                text_of(await client.call_tool("execute_code", {"code": "print(kept)"}))
                == "still here\n"
            )
    finally:
        await proxy.close()
    text = log.read_text()
    assert "reconnecting" in text and "Reconnected" in text, text[-3000:]
    assert TOKEN not in text


# --- Choosing the server, and refusing a wrong one --------------------------------------


async def test_connect_to_jupyter_checks_then_switches(workspace, tmp_path, jupyter):
    url, root = jupyter
    log = tmp_path / "server.log"
    async with serve_logged(workspace, log, *NO_PRESTART) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        hints = tools["connect_to_jupyter"].annotations
        assert (
            hints.destructive_hint is True
            and hints.open_world_hint is True
            and hints.read_only_hint is False
        )
        assert set(tools["connect_to_jupyter"].output_schema["properties"]) >= {
            "jupyter_url",
            "version",
            "kernelspecs",
        }

        local = await ok(client, "use_notebook", {"notebook_name": "here.ipynb", "mode": "create"})
        assert local["kernel_id"] not in remote_kernels(url)

        said = []
        wrong = await refused(
            client,
            "connect_to_jupyter",
            {"jupyter_url": url, "jupyter_token": WRONG},
            "invalid_argument",
        )
        said.append(dump(wrong))
        assert "refused the token" in text_of(wrong) and "jupyter_token" in text_of(wrong)
        missing = await refused(
            client, "connect_to_jupyter", {"jupyter_url": url}, "invalid_argument"
        )
        said.append(dump(missing))
        unreachable = await refused(
            client,
            "connect_to_jupyter",
            {"jupyter_url": "http://127.0.0.1:9", "jupyter_token": WRONG},
            "not_found",
        )
        said.append(dump(unreachable))
        assert "Could not reach" in text_of(unreachable)
        bad = await refused(
            client,
            "connect_to_jupyter",
            {"jupyter_url": f"http://user:{WRONG}@127.0.0.1:9"},
            "invalid_argument",
        )
        said.append(dump(bad))
        assert all(WRONG not in answer for answer in said), said
        # Nothing switched: a new notebook still gets a local kernel.
        still_local = await ok(
            client, "use_notebook", {"notebook_name": "also-here.ipynb", "mode": "create"}
        )
        assert still_local["kernel_id"] not in remote_kernels(url)

        connected = await ok(
            client, "connect_to_jupyter", {"jupyter_url": url + "/", "jupyter_token": TOKEN}
        )
        assert connected["jupyter_url"] == url and connected["kernelspecs"] == ["python3"]
        assert connected["version"] == httpx.get(f"{url}/api").json()["version"]
        assert TOKEN not in json.dumps(connected)

        far = await ok(client, "use_notebook", {"notebook_name": "there.ipynb", "mode": "create"})
        assert far["kernel_id"] in remote_kernels(url)
        # Kernels already running stay where they were, and both run.
        where = "import os; print(os.getcwd())"
        assert (
            text_of(
                await client.call_tool(
                    "execute_code", {"code": where, "notebook_name": "here.ipynb"}
                )
            )
            == f"{workspace}\n"
        )
        assert (
            text_of(
                await client.call_tool(
                    "execute_code", {"code": where, "notebook_name": "there.ipynb"}
                )
            )
            == f"{root}\n"
        )
        assert local["kernel_id"] not in remote_kernels(url)
    assert far["kernel_id"] not in remote_kernels(url)
    assert WRONG not in log.read_text() and TOKEN not in log.read_text()


def test_start_refuses_a_wrong_token_or_an_unreachable_server(workspace, jupyter):
    url, _ = jupyter
    env = server_environment()
    for args, extra, expected in (
        (("--jupyter-url", url, "--jupyter-token", WRONG), {}, "refused the token"),
        (("--jupyter-url", url), {"JUPYTER_TOKEN": WRONG}, "refused the token"),
        (("--jupyter-url", "http://127.0.0.1:9"), {"JUPYTER_TOKEN": WRONG}, "Could not reach"),
        (("--jupyter-url", "ftp://somewhere"), {}, "--jupyter-url must be an http"),
        (("--jupyter-contents",), {}, "--jupyter-contents needs --jupyter-url"),
    ):
        started = subprocess.run(
            server_command(workspace, *args),
            env={**env, **extra},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert started.returncode == 2, (args, started.stderr)
        assert expected in started.stderr, started.stderr
        assert WRONG not in started.stderr + started.stdout


# --- Notebooks on the Jupyter Server --------------------------------------------------


async def test_notebooks_on_the_jupyter_server_keep_their_revisions(workspace, tmp_path, jupyter):
    url, root = jupyter
    log = tmp_path / "server.log"
    async with serve_logged(
        workspace,
        log,
        "--jupyter-url",
        url,
        "--jupyter-contents",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": TOKEN},
    ) as client:
        created = await ok(
            client, "use_notebook", {"notebook_name": "shared/remote.ipynb", "mode": "create"}
        )
        on_server = root / "shared" / "remote.ipynb"
        assert on_server.is_file() and not (workspace / "shared").exists()
        assert created["revision"] == hashlib.sha256(on_server.read_bytes()).hexdigest()[:16]

        ran = await ok(
            client,
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "print('stored remotely')"},
        )
        assert json.loads(on_server.read_text())["cells"][0]["outputs"][0]["text"] == [
            "stored remotely\n"
        ]
        # The notebook is on that server, so its kernel is bound to it there (POST /api/sessions).
        assert sessions(url)["shared/remote.ipynb"] == created["kernel_id"]
        assert ran["revision"] == hashlib.sha256(on_server.read_bytes()).hexdigest()[:16]

        listed = await ok(client, "list_files", {"path": "shared"})
        assert [(entry["path"], entry["type"]) for entry in listed["files"]] == [
            ("shared/remote.ipynb", "notebook")
        ]
        await refused(
            client,
            "use_notebook",
            {"notebook_name": "shared/remote.ipynb", "mode": "create"},
            "already_exists",
        )
        await refused(client, "use_notebook", {"notebook_name": "../escape.ipynb"}, "invalid_path")
        await refused(client, "read_notebook", {"notebook_name": "nowhere.ipynb"}, "not_found")

        # The person saves the notebook in JupyterLab (through the same contents API).
        model = httpx.get(f"{url}/api/contents/shared/remote.ipynb", headers=headers()).json()
        model["content"]["cells"].append(
            {
                "cell_type": "markdown",
                "id": "from-lab",
                "metadata": {},
                "source": "Added in JupyterLab",
            }
        )
        await asyncio.sleep(0.01)
        assert (
            httpx.put(
                f"{url}/api/contents/shared/remote.ipynb",
                headers=headers(),
                json={"type": "notebook", "content": model["content"]},
            ).status_code
            == 200
        )
        conflict = await refused(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "x = 1",
                "expected_revision": ran["revision"],
            },
            "revision_conflict",
        )
        current = conflict.meta["io.jupyter-mcp/error"]["current_revision"]
        assert current == hashlib.sha256(on_server.read_bytes()).hexdigest()[:16]
        read = await ok(client, "read_notebook", {"response_format": "detailed"})
        assert [cell["source"] for cell in read["cells"]] == [
            "print('stored remotely')",
            "Added in JupyterLab",
        ]
        inserted = await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "x = 1",
                "expected_revision": current,
            },
        )
        assert "".join(json.loads(on_server.read_text())["cells"][-1]["source"]) == "x = 1"
        assert inserted["revision"] == (await ok(client, "get_notebook_revision", {}))["revision"]
        await ok(client, "unuse_notebook", {"notebook_name": "shared/remote.ipynb"})
        assert "shared/remote.ipynb" not in sessions(url) and created[
            "kernel_id"
        ] not in remote_kernels(url)
    assert TOKEN not in log.read_text()


@pytest.mark.parametrize("prestart", ["on", "off"])
async def test_a_notebooks_kernel_runs_in_its_folder_on_the_jupyter_server(
    workspace, tmp_path, jupyter, prestart
):
    """As JupyterLab starts it (Jupyter Server's kernel `path`): through --jupyter-contents (a
    prestarted kernel, started in the server's root, moved there first) and inside the server."""
    url, root = jupyter
    folder = root / f"far-{prestart}" / "nested"
    folder.mkdir(parents=True)
    (folder / "input.csv").write_text("beside the notebook")
    code = "import os; print(os.getcwd(), open('input.csv').read())"
    expected = f"{folder.resolve()} beside the notebook"
    remote = (
        "--jupyter-url",
        url,
        "--jupyter-contents",
        "--capability",
        f"kernel.prestart={prestart}",
    )
    async with serve_logged(
        workspace, tmp_path / "server.log", *remote, env={"JUPYTER_TOKEN": TOKEN}
    ) as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": f"far-{prestart}/nested/remote.ipynb", "mode": "create"},
        )
        ran = await client.call_tool("execute_code", {"code": code})
        assert not ran.is_error, text_of(ran)
        assert text_of(ran).strip() == expected
    async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": f"far-{prestart}/nested/inside.ipynb", "mode": "create"},
        )
        ran = await client.call_tool("execute_code", {"code": code})
        assert not ran.is_error, text_of(ran)
        assert text_of(ran).strip() == expected
        await ok(client, "unuse_notebook", {"notebook_name": f"far-{prestart}/nested/inside.ipynb"})


async def test_outline_and_search_read_the_jupyter_servers_contents(workspace, tmp_path, jupyter):
    url, root = jupyter
    (root / "found" / "deeper").mkdir(parents=True, exist_ok=True)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Far away"),
        nbformat.v4.new_code_cell("needle = 'remote haystack'"),
    ]
    nbformat.write(notebook, root / "found" / "deeper" / "far.ipynb")
    (root / "found" / "script.py").write_text("# %%\nneedle = 'in a percent script'\n")
    (root / "found" / "broken.ipynb").write_text("{")
    (workspace / "local.ipynb").write_text((root / "found" / "deeper" / "far.ipynb").read_text())
    async with serve_logged(
        workspace,
        tmp_path / "server.log",
        "--jupyter-url",
        url,
        "--jupyter-contents",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": TOKEN},
    ) as client:
        found = await ok(client, "search_notebooks", {"query": "needle = '", "glob": "found/*"})
        if not found["complete"]:
            # The search's time budget can run out on a loaded machine (the percent script's
            # first read imports jupytext); it says so, and the next search has it warm.
            found = await ok(client, "search_notebooks", {"query": "needle = '", "glob": "found/*"})
        assert sorted((m["notebook"], m["text"]) for m in found["matches"]) == [
            ("found/deeper/far.ipynb", "needle = 'remote haystack'"),
            ("found/script.py", "needle = 'in a percent script'"),
        ], found
        assert found["skipped"] == 1, "the broken notebook is skipped and counted"
        outline = await ok(client, "outline", {"notebook_name": "found/deeper/far.ipynb"})
        assert [h["text"] for h in outline["headings"]] == ["Far away"]


async def test_subscriptions_hear_changes_made_on_the_jupyter_server(workspace, tmp_path, jupyter):
    """With the notebooks in a Jupyter Server's contents, a subscriber hears a save made there
    by someone else (the contents are polled: no file under the workspace changes)."""
    from test_protocol import Updates

    url, _ = jupyter
    updates = Updates()
    command = server_command(workspace, "--jupyter-url", url, "--jupyter-contents", *NO_PRESTART)
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        env=server_environment(JUPYTER_TOKEN=TOKEN),
        cwd=str(workspace),
    )
    async with Client(params, mode="legacy", message_handler=updates) as client:
        await ok(
            client, "use_notebook", {"notebook_name": "watched/remote.ipynb", "mode": "create"}
        )
        await client.subscribe_resource("notebook:///watched/remote.ipynb")
        model = httpx.get(f"{url}/api/contents/watched/remote.ipynb", headers=headers()).json()
        model["content"]["cells"].append(
            {
                "cell_type": "markdown",
                "id": "from-lab",
                "metadata": {},
                "source": "Saved in JupyterLab",
            }
        )
        saved = httpx.put(
            f"{url}/api/contents/watched/remote.ipynb",
            headers=headers(),
            json={"type": "notebook", "content": model["content"]},
        )
        assert saved.status_code == 200
        with anyio.fail_after(10):
            await updates.wait_for("notebook:///watched/remote.ipynb")
        assert not (workspace / "watched").exists()


# --- The extension: {base_url}/mcp inside Jupyter Server ---------------------------------


def test_the_extension_is_installed_enabled():
    """The only Jupyter config the package ships declares the extension on (installed beside
    JupyterLab, ``jupyter server`` serves /mcp behind its own authentication; tests/package/test_distribution.py
    starts one from a wheel)."""
    from conftest import REPO

    tomllib = pytest.importorskip("tomllib")

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    shipped = project["tool"]["setuptools"]["data-files"]
    assert list(shipped) == ["etc/jupyter/jupyter_server_config.d"]
    for relative in shipped["etc/jupyter/jupyter_server_config.d"]:
        assert json.loads((REPO / relative).read_text()) == {
            "ServerApp": {"jpserver_extensions": {"jupyter_mcp_server": True}}
        }


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None, mode: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(
            headers=headers(token) if token else {}, timeout=httpx2.Timeout(30, read=120)
        ) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def test_the_extension_serves_mcp_with_jupyters_token(jupyter):
    url, root = jupyter
    endpoint = f"{url}/mcp"
    assert BASE_URL.rstrip("/") in endpoint
    # Without the token (or with a wrong one), refused before anything is served.
    for presented in ({}, headers(WRONG), {"Authorization": f"Bearer {WRONG}"}):
        answer = httpx.post(
            endpoint,
            headers={
                **presented,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        assert answer.status_code in (401, 403), answer.status_code
        assert WRONG not in answer.text
    with pytest.raises(Exception):  # noqa: B017 - whatever the client raises, it gets nothing
        async with connect(endpoint, None, "legacy") as client:
            await client.list_tools()

    before = remote_kernels(url)
    for mode, name in (("legacy", "agent-legacy.ipynb"), ("auto", "agent-modern.ipynb")):
        async with connect(endpoint, TOKEN, mode) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {
                "use_notebook",
                "execute_cell",
                "connect_to_jupyter",
            } <= tools and "launch_sandbox" not in tools
            used = await ok(client, "use_notebook", {"notebook_name": name, "mode": "create"})
            # The kernel is Jupyter Server's own: in /api/kernels, for JupyterLab to see.
            assert used["kernel_id"] in remote_kernels(url) - before
            ran = await ok(
                client,
                "insert_execute_code_cell",
                {
                    "cell_index": -1,
                    "cell_source": "import os\nprint(os.getcwd())",
                    "notebook_name": name,
                },
            )
            assert ran["status"] == "ok"
            # The notebook went through Jupyter's contents manager, into its root_dir.
            model = httpx.get(f"{url}/api/contents/{name}", headers=headers()).json()
            assert model["content"]["cells"][0]["outputs"][0]["text"] == f"{root}\n"
            capabilities = json.loads(
                (await client.read_resource("capabilities://")).contents[0].text
            )
            assert capabilities
    # Toolset selection by query works here too.
    async with connect(f"{endpoint}?only=notebooks", TOKEN, "legacy") as client:
        assert "connect_to_jupyter" in {tool.name for tool in (await client.list_tools()).tools}

    # A kernel the person started in JupyterLab is shared by id.
    started = httpx.post(f"{url}/api/kernels", headers=headers(), json={"name": "python3"}).json()[
        "id"
    ]
    async with connect(endpoint, TOKEN, "legacy") as client:
        await ok(
            client,
            "execute_code",
            {"code": "shared = 'set by the agent'", "notebook_name": "agent-legacy.ipynb"},
        )
        shared = await ok(
            client, "use_notebook", {"notebook_name": "agent-legacy.ipynb", "kernel_id": started}
        )
        assert shared["kernel_id"] == started
        await ok(client, "execute_code", {"code": "from_agent = 42"})
        await ok(client, "unuse_notebook", {"notebook_name": "agent-legacy.ipynb"})
    # Released by the agent, the person's kernel goes on running.
    assert started in remote_kernels(url)


def test_outside_a_hub_the_extension_offers_no_sign_in_and_streams_at_once(jupyter):
    """No JupyterHub: a request without the token is a plain 403 (Jupyter's own login is
    the way in), the Hub sign-in's metadata is not served; and the long GET stream's head
    comes at once, not with its first event (a client waiting for it would stall)."""
    url, _ = jupyter
    endpoint = f"{url}/mcp"
    mcp = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    answer = httpx.post(endpoint, headers=mcp, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.status_code == 403 and "resource_metadata" not in str(answer.headers)
    for path in ("oauth-protected-resource/mcp", "openid-configuration"):
        assert httpx.get(f"{url}/.well-known/{path}").status_code == 404
    opened = httpx.post(
        endpoint,
        headers={**mcp, **headers()},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "stream-head", "version": "0"},
            },
        },
    )
    session = opened.headers["mcp-session-id"]
    stream_headers = {
        **headers(),
        "Accept": "text/event-stream",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    }
    started = time.monotonic()
    with httpx.stream("GET", endpoint, headers=stream_headers, timeout=5) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
    assert time.monotonic() - started < 3
    httpx.delete(endpoint, headers={**headers(), "mcp-session-id": session})


async def test_the_extensions_kernels_answer_introspection_while_a_cell_runs(jupyter):
    """Jupyter Server's own kernels are reached over ZMQ: the introspection toolset gets side
    sockets and a subshell there too, so it answers while the agent's cell runs."""
    url, root = jupyter
    async with connect(f"{url}/mcp?introspection", TOKEN, "legacy") as client:
        await ok(client, "use_notebook", {"notebook_name": "peek.ipynb", "mode": "create"})
        await ok(client, "execute_code", {"code": "peeked = [1, 2, 3]"})
        assert [v["name"] for v in (await ok(client, "list_variables"))["variables"]] == ["peeked"]
        marker = root / "peek-started"
        running = asyncio.create_task(
            client.call_tool(
                "execute_code",
                {"code": f"open({str(marker)!r}, 'w').close()\nimport time\ntime.sleep(30)"},
            )
        )
        try:
            await wait_for_file(marker)
            started = time.monotonic()
            described = (await ok(client, "describe_variable", {"name": "peeked"}))["variable"]
            assert described["len"] == 3 and time.monotonic() - started < 3
        finally:
            await client.call_tool("interrupt_notebook_session", {"notebook_name": "peek.ipynb"})
            await running
        # Restarted in place from JupyterLab: the subshell went with the old process, and
        # the next question sets up a new one rather than failing.
        (kernel_id,) = [
            k["kernel_id"]
            for k in (await ok(client, "list_kernels"))["kernels"]
            if "peek.ipynb" in k["notebooks"]
        ]
        assert (
            httpx.post(f"{url}/api/kernels/{kernel_id}/restart", headers=headers()).status_code
            == 200
        )
        assert (await ok(client, "list_variables"))["variables"] == []
        await ok(client, "execute_code", {"code": "again = 1"})
        assert [v["name"] for v in (await ok(client, "list_variables"))["variables"]] == ["again"]
        await ok(client, "unuse_notebook", {"notebook_name": "peek.ipynb"})


async def test_the_extension_binds_each_notebooks_kernel_in_jupyter_sessions(jupyter):
    """JupyterLab shows the agent's kernel beside its notebook, and opening the notebook gets that kernel."""
    url, _ = jupyter
    async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
        used = await ok(client, "use_notebook", {"notebook_name": "bound.ipynb", "mode": "create"})
        kernel = used["kernel_id"]
        await ok(client, "execute_code", {"code": "made_by = 'the agent'"})
        assert sessions(url)["bound.ipynb"] == kernel
        # A person opening it in JupyterLab (which asks for a session for the path) gets the agent's kernel.
        opened = httpx.post(
            f"{url}/api/sessions",
            headers=headers(),
            json={"path": "bound.ipynb", "type": "notebook", "kernel": {"name": "python3"}},
        )
        assert opened.json()["kernel"]["id"] == kernel

        # A second notebook sharing the kernel is bound to it too.
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "also-bound.ipynb", "mode": "create", "kernel_id": kernel},
        )
        assert sessions(url)["also-bound.ipynb"] == kernel
        # The first moves to a fresh kernel; the shared one stays with the second.
        fresh = (await ok(client, "restart_notebook", {"notebook_name": "bound.ipynb"}))[
            "kernel_id"
        ]
        assert sessions(url)["bound.ipynb"] == fresh and sessions(url)["also-bound.ipynb"] == kernel
        assert kernel in remote_kernels(url)

        # Released: the kernel stops and its session goes.
        await ok(client, "unuse_notebook", {"notebook_name": "also-bound.ipynb"})
        assert "also-bound.ipynb" not in sessions(url) and kernel not in remote_kernels(url)
        await ok(client, "unuse_notebook", {"notebook_name": "bound.ipynb"})
        assert "bound.ipynb" not in sessions(url) and fresh not in remote_kernels(url)

        # A kernel the person started, shared with a notebook: released by the agent, it keeps running
        # and keeps its session (Jupyter Server deletes a session only with its kernel).
        theirs = httpx.post(
            f"{url}/api/kernels", headers=headers(), json={"name": "python3"}
        ).json()["id"]
        await ok(client, "use_notebook", {"notebook_name": "bound.ipynb", "kernel_id": theirs})
        assert sessions(url)["bound.ipynb"] == theirs
        await ok(client, "unuse_notebook", {"notebook_name": "bound.ipynb"})
        assert sessions(url)["bound.ipynb"] == theirs and theirs in remote_kernels(url)


async def test_a_notebook_the_person_opened_first_runs_the_agents_code_on_the_pages_kernel(jupyter):
    """The person opened the notebook in JupyterLab (a session, a kernel) before the agent: the
    agent gets that kernel, so each sees the other's variables, and list_kernels shows it."""
    url, root = jupyter
    (root / "opened.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    page = httpx.post(
        f"{url}/api/sessions",
        headers=headers(),
        json={"path": "opened.ipynb", "type": "notebook", "kernel": {"name": "python3"}},
    ).json()
    pages_kernel = page["kernel"]["id"]
    async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
        used = await ok(client, "use_notebook", {"notebook_name": "opened.ipynb"})
        assert used["kernel_id"] == pages_kernel
        ran = await ok(
            client,
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "from_the_agent = 42"},
        )
        assert ran["status"] == "ok"
        listed = await ok(client, "list_kernels")
        # (The module's server is shared with other tests: only this notebook's kernel is asked about.)
        assert [k["kernel_id"] for k in listed["kernels"] if "opened.ipynb" in k["notebooks"]] == [
            pages_kernel
        ]
        assert sessions(url)["opened.ipynb"] == pages_kernel
        # The person's next cell, on the page's kernel, sees the agent's variable (no NameError).
        seen = await ok(client, "execute_code", {"code": "print(from_the_agent)"})
        assert seen["status"] == "ok"
        # Released by the agent, the person's kernel and session stay.
        await ok(client, "unuse_notebook", {"notebook_name": "opened.ipynb"})
    assert pages_kernel in remote_kernels(url) and sessions(url)["opened.ipynb"] == pages_kernel
    httpx.delete(f"{url}/api/sessions/{page['id']}", headers=headers())


# --- Live collaboration: the agent's edits in the document JupyterLab has open ---------------


#: The first byte of a Y websocket message that carries awareness.
AWARENESS_MESSAGE = 1


class RoomChannel:
    """A collaboration room's websocket (tornado's client) as a pycrdt provider channel; the
    awareness updates it carries (which the provider ignores) go into `awareness`."""

    def __init__(self, connection: Any, path: str, awareness: Any) -> None:
        self.connection = connection
        self._path = path
        self.awareness = awareness

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> RoomChannel:
        return self

    async def __anext__(self) -> bytes:
        message = await self.connection.read_message()
        if message is None:
            raise StopAsyncIteration
        if message[0] == AWARENESS_MESSAGE:
            from pycrdt import read_message

            self.awareness.apply_awareness_update(read_message(bytes(message[1:])), "room")
        return bytes(message)

    async def send(self, message: bytes) -> None:
        await self.connection.write_message(message, binary=True)

    async def recv(self) -> bytes:
        return await self.__anext__()


@contextlib.asynccontextmanager
async def person_in_jupyterlab(url: str, path: str) -> AsyncIterator[Any]:
    """What JupyterLab does to open a notebook collaboratively: a session for the file, then its
    room's websocket, synchronized into a local YNotebook (yielded; its ``awareness`` holds the
    room's other clients' states as they arrive)."""
    from jupyter_ydoc import YNotebook
    from pycrdt import Awareness, Doc, Provider
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    answer = httpx.put(
        f"{url}/api/collaboration/session/{path}",
        headers=headers(),
        json={"format": "json", "type": "notebook"},
    )
    assert answer.status_code in (200, 201), answer.text
    session = answer.json()
    room = f"{session['format']}:{session['type']}:{session['fileId']}"
    ws_url = f"ws{url[4:]}/api/collaboration/room/{room}?sessionId={session['sessionId']}"
    connection = await websocket_connect(HTTPRequest(ws_url, headers=headers()))
    ydoc = Doc()
    notebook = YNotebook(ydoc, Awareness(ydoc))
    channel = RoomChannel(connection, room, notebook.awareness)
    notebook.channel = channel  # for a test that speaks as the page does (its awareness)
    try:
        async with Provider(notebook.ydoc, channel):
            yield notebook
    finally:
        connection.close()


async def eventually(check: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "never happened"
        await asyncio.sleep(0.02)


def sources(notebook: Any) -> list[str]:
    return [cell["source"] for cell in notebook.get()["cells"]]


async def test_with_jupyter_collaboration_the_agents_edits_are_live_in_the_open_notebook(tmp_path):
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        # The extension never polls the file: only this server's own mirroring can make an edit appear.
        "--YDocExtension.file_poll_interval=0",
        "--YDocExtension.document_save_delay=0.2",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ) as (url, root, log):
        async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
            await ok(client, "use_notebook", {"notebook_name": "live.ipynb", "mode": "create"})
            first = await ok(
                client,
                "insert_cell",
                {
                    "cell_index": 0,
                    "cell_type": "markdown",
                    "cell_source": "# Written before anyone looked",
                },
            )
            async with person_in_jupyterlab(url, "live.ipynb") as seen:
                await eventually(lambda: sources(seen) == ["# Written before anyone looked"])
                deltas: list[Any] = []
                seen.ycells.observe(lambda event: deltas.append(event.delta))

                inserted = await ok(
                    client,
                    "insert_cell",
                    {
                        "cell_index": -1,
                        "cell_type": "code",
                        "cell_source": "answer = 6 * 7\nanswer",
                    },
                )
                await eventually(
                    lambda: (
                        sources(seen)
                        == ["# Written before anyone looked", "answer = 6 * 7\nanswer"]
                    )
                )
                # One cell inserted after the first, which was left alone (no reload of the whole document).
                assert all("delete" not in step for delta in deltas for step in delta), deltas

                ran = await ok(client, "execute_cell", {"cell_id": inserted["cell_id"]})
                assert ran["status"] == "ok"
                # Outputs stream into the room as they come; the count is set as the run ends,
                # so the page may see the output first.
                await eventually(
                    lambda: (
                        seen.get()["cells"][1].get("outputs")
                        and seen.get()["cells"][1]["outputs"][0]["data"]["text/plain"] == "42"
                        and seen.get()["cells"][1]["execution_count"] == 1
                    )
                )

                await ok(
                    client,
                    "overwrite_cell_source",
                    {"cell_id": first["cell_id"], "cell_source": "# Rewritten by the agent"},
                )
                await eventually(lambda: sources(seen)[0] == "# Rewritten by the agent")
                await ok(
                    client, "move_cell", {"source_cell_id": first["cell_id"], "target_index": 1}
                )
                await eventually(
                    lambda: sources(seen) == ["answer = 6 * 7\nanswer", "# Rewritten by the agent"]
                )
                deleted = await ok(
                    client, "delete_cell", {"cell_ids_to_delete": [first["cell_id"]]}
                )
                await eventually(lambda: sources(seen) == ["answer = 6 * 7\nanswer"])

                # Revisions stay the file's: the collaboration extension saving the document
                # later changes nothing, since the document is the file's content.
                await asyncio.sleep(0.6)
                on_disk = (root / "live.ipynb").read_bytes()
                assert hashlib.sha256(on_disk).hexdigest()[:16] == deleted["revision"]
                assert (await ok(client, "get_notebook_revision", {}))["revision"] == deleted[
                    "revision"
                ]

                # The person types in JupyterLab: the extension saves it, and the agent reads it.
                seen.set_cell(0, source="answer = 6 * 7  # checked\nanswer")
                await eventually(lambda: b"# checked" in (root / "live.ipynb").read_bytes())
                read = await ok(client, "read_notebook", {"response_format": "detailed"})
                assert [cell["source"] for cell in read["cells"]] == [
                    "answer = 6 * 7  # checked\nanswer"
                ]
                assert (
                    read["revision"]
                    == hashlib.sha256((root / "live.ipynb").read_bytes()).hexdigest()[:16]
                )
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text and "Could not show an edit" not in text, text[
            -4000:
        ]


async def test_the_agents_running_cell_shows_running_in_the_page_and_its_outputs_stream_in(
    tmp_path,
):
    """As for a person's own run: the cell is marked running, and each output appears in the
    page as the kernel sends it, not all at the end; when it ends, the stored outputs."""
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ) as (url, _, log):
        async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
            await ok(client, "use_notebook", {"notebook_name": "running.ipynb", "mode": "create"})
            code = "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')"
            cell = await ok(
                client, "insert_cell", {"cell_index": 0, "cell_type": "code", "cell_source": code}
            )
            async with person_in_jupyterlab(url, "running.ipynb") as page:
                await eventually(lambda: sources(page) == [code])
                running = asyncio.create_task(
                    client.call_tool("execute_cell", {"cell_id": cell["cell_id"]})
                )

                def shown() -> str:
                    outputs = page.ycells[0].get("outputs")
                    return (
                        "".join(str(output.get("text", "")) for output in outputs)
                        if outputs is not None
                        else ""
                    )

                await eventually(
                    lambda: page.ycells[0].get("execution_state") == "running", seconds=10
                )
                await eventually(lambda: "first" in shown(), seconds=10)
                assert not running.done() and "second" not in shown()  # streamed, not at the end
                result = await running
                assert not result.is_error
                await eventually(lambda: page.ycells[0].get("execution_state") == "idle")
                await eventually(
                    lambda: (
                        page.get()["cells"][0]["outputs"]
                        == [{"output_type": "stream", "name": "stdout", "text": "first\nsecond\n"}]
                    )
                )
                assert page.get()["cells"][0]["execution_count"] == 1
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text, text[-4000:]


def agents_shown(page: Any) -> list[dict[str, Any]]:
    """The awareness states in the page's room that name this server's agent."""
    return [
        state
        for state in page.awareness.states.values()
        if str((state.get("user") or {}).get("username", "")).startswith("jupyter-mcp-server")
    ]


async def test_the_agent_is_a_named_collaborator_in_the_room_while_it_works(tmp_path):
    """In the room's awareness, as JupyterLab reads it: the MCP client's name, a colour, and a
    caret at the end of the cell it wrote or is running (a Y relative position the person's
    document resolves); gone a few seconds after its last edit, and after a run ends."""
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    from mcp.types import Implementation
    from pycrdt import StickyIndex

    from jupyter_mcp_server._jupyter.presence import LINGER

    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ) as (url, _, log):
        async with (
            httpx2.AsyncClient(headers=headers(), timeout=httpx2.Timeout(30, read=120)) as http,
            Client(
                streamable_http_client(f"{url}/mcp", http_client=http),
                mode="legacy",
                client_info=Implementation(name="test-agent", version="1"),
            ) as client,
        ):
            await ok(client, "use_notebook", {"notebook_name": "aware.ipynb", "mode": "create"})
            await ok(
                client,
                "insert_cell",
                {"cell_index": 0, "cell_type": "markdown", "cell_source": "# Before anyone looked"},
            )
            async with person_in_jupyterlab(url, "aware.ipynb") as page:
                await eventually(lambda: sources(page) == ["# Before anyone looked"])
                assert agents_shown(page) == []  # nobody was editing when the person came

                inserted = await ok(
                    client,
                    "insert_cell",
                    {"cell_index": -1, "cell_type": "code", "cell_source": "print('hello')"},
                )
                await eventually(lambda: len(agents_shown(page)) == 1 and len(sources(page)) == 2)
                (state,) = agents_shown(page)
                # Named by its client and the person it acts for (a shared token names nobody:
                # the user the server runs as).
                assert state["user"]["display_name"] == f"test-agent ({getpass.getuser()})"
                assert state["user"]["color"] and state["user"]["initials"]
                # The caret: at the end of the inserted cell's source, in the person's own document.
                (caret,) = state["cursors"]
                source = page.ycells[1]["source"]
                assert StickyIndex.from_json(caret["head"], source).get_index() == len(
                    "print('hello')"
                )
                # Gone a few seconds after the last edit.
                shown_at = time.monotonic()
                await eventually(lambda: agents_shown(page) == [], seconds=LINGER + 3)
                assert time.monotonic() - shown_at > LINGER - 1

                # Running a cell: shown for the whole run, however long, then gone.
                await ok(
                    client,
                    "overwrite_cell_source",
                    {
                        "cell_id": inserted["cell_id"],
                        "cell_source": f"import time\ntime.sleep({LINGER + 2})",
                    },
                )
                running = asyncio.create_task(
                    client.call_tool("execute_cell", {"cell_id": inserted["cell_id"]})
                )
                await eventually(
                    lambda: page.ycells[1].get("execution_state") == "running", seconds=10
                )
                await asyncio.sleep(LINGER + 0.5)
                assert not running.done() and len(agents_shown(page)) == 1
                assert not (await running).is_error
                await eventually(lambda: agents_shown(page) == [], seconds=LINGER + 3)
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text, text[-4000:]


async def test_two_agents_in_one_notebook_are_two_collaborators(tmp_path):
    """Two agents (two sessions: here, of the same client) editing one open notebook at once:
    two awareness states, each with its own name and its caret in the cell it wrote; the
    global room lists both; each goes when its own linger ends."""
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    from mcp.types import Implementation
    from pycrdt import StickyIndex

    from jupyter_mcp_server._jupyter.presence import LINGER

    @contextlib.asynccontextmanager
    async def agent(url: str, name: str) -> AsyncIterator[Client]:
        async with (
            httpx2.AsyncClient(headers=headers(), timeout=httpx2.Timeout(30, read=120)) as http,
            Client(
                streamable_http_client(f"{url}/mcp", http_client=http),
                mode="legacy",
                client_info=Implementation(name=name, version="1"),
            ) as client,
        ):
            yield client

    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ) as (url, _, log):
        async with agent(url, "writer") as first, agent(url, "writer") as second:
            await ok(first, "use_notebook", {"notebook_name": "two.ipynb", "mode": "create"})
            await ok(second, "use_notebook", {"notebook_name": "two.ipynb"})
            async with person_in_jupyterlab(url, "two.ipynb") as page:
                await eventually(lambda: agents_shown(page) == [])
                await ok(
                    first,
                    "insert_cell",
                    {"cell_index": -1, "cell_type": "code", "cell_source": "first = 1"},
                )
                await ok(
                    second,
                    "insert_cell",
                    {"cell_index": -1, "cell_type": "code", "cell_source": "second = 22"},
                )
                await eventually(
                    lambda: (
                        len(agents_shown(page)) == 2
                        and sources(page)[-2:] == ["first = 1", "second = 22"]
                    )
                )
                shown = agents_shown(page)
                assert {state["user"]["display_name"] for state in shown} == {
                    f"writer ({getpass.getuser()})"
                }
                # Two carets, each at the end of the cell its agent wrote.
                heads = [state["cursors"][0]["head"] for state in shown]
                assert heads[0] != heads[1]
                ends = {
                    StickyIndex.from_json(head, page.ycells[index]["source"]).get_index()
                    for head, index in zip(heads, (-2, -1), strict=True)
                } | {
                    StickyIndex.from_json(head, page.ycells[index]["source"]).get_index()
                    for head, index in zip(heads, (-1, -2), strict=True)
                }
                assert {len("first = 1"), len("second = 22")} <= ends, ends
                await eventually(lambda: agents_shown(page) == [], seconds=LINGER + 3)
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text, text[-4000:]


async def test_a_person_typing_while_the_agent_edits_and_runs_loses_no_keystroke(tmp_path):
    """The extension polls the file as it does by default (faster here), and saves the
    document a second after the last change: a person types into one cell the whole time the
    agent inserts, runs and rewrites others. Every keystroke stays in the page and reaches the
    file, and the extension never finds a change it did not make."""
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        "--YDocExtension.file_poll_interval=0.2",
        "--YDocExtension.document_save_delay=1",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ) as (url, root, log):
        async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
            await ok(client, "use_notebook", {"notebook_name": "typed.ipynb", "mode": "create"})
            await ok(
                client,
                "insert_cell",
                {"cell_index": 0, "cell_type": "markdown", "cell_source": "notes: "},
            )
            other = await ok(
                client,
                "insert_cell",
                {"cell_index": 1, "cell_type": "code", "cell_source": "x = 1"},
            )
            async with person_in_jupyterlab(url, "typed.ipynb") as page:
                await eventually(lambda: sources(page) == ["notes: ", "x = 1"])
                typed: list[str] = []
                stop = asyncio.Event()

                async def type_continuously() -> None:
                    source = page.ycells[0]["source"]
                    while not stop.is_set():
                        key = "abcdefghij"[len(typed) % 10]
                        source.insert(len(str(source)), key)  # one keystroke at the end of the cell
                        typed.append(key)
                        await asyncio.sleep(0.01)

                typist = asyncio.create_task(type_continuously())
                try:
                    for step in range(3):
                        ran = await ok(
                            client,
                            "insert_execute_code_cell",
                            {"cell_index": -1, "cell_source": f"print({step} * 7)"},
                        )
                        assert ran["status"] == "ok"
                        await ok(
                            client,
                            "overwrite_cell_source",
                            {"cell_id": other["cell_id"], "cell_source": f"x = {step}"},
                        )
                        await asyncio.sleep(0.4)  # the extension polls the file meanwhile
                finally:
                    stop.set()
                    await typist
                expected = "notes: " + "".join(typed)
                assert len(typed) > 50
                # Nothing typed was erased from the page, and the agent's edits are all there.
                await eventually(lambda: sources(page)[0] == expected, seconds=5)
                assert sources(page)[1:] == [
                    "x = 2",
                    "print(0 * 7)",
                    "print(1 * 7)",
                    "print(2 * 7)",
                ]
                # ... and the extension's save brings all of it to the file.

                def on_disk() -> list[str]:
                    try:
                        cells = json.loads((root / "typed.ipynb").read_text())["cells"]
                    except ValueError:  # Jupyter's save rewrites the file in place: read it again
                        return []
                    return ["".join(cell["source"]) for cell in cells]

                await eventually(lambda: on_disk()[:1] == [expected], seconds=10)
                await eventually(lambda: on_disk() == sources(page), seconds=10)
                read = await ok(client, "read_notebook", {"response_format": "brief"})
                assert (
                    read["revision"]
                    == hashlib.sha256((root / "typed.ipynb").read_bytes()).hexdigest()[:16]
                )
        text = log.read_text(errors="replace")
        assert "Out-of-band" not in text, text[-4000:]
        assert "jupyter_mcp_server/" not in text, text[-4000:]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("how", ["left", "unsubscribed", "still-connected"])
async def test_jupyter_server_with_the_extension_exits_on_sigterm_after_subscribers(tmp_path, how):
    """SIGTERM stops `jupyter server` within seconds, whatever the subscribers did.

    A subscription starts the workspace watcher, whose wait runs in a
    non-daemon worker thread; it hung the process until SIGKILL once a client
    had subscribed and left without unsubscribing."""
    import signal

    started: list[Any] = []
    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True}",
        started=started,
    ) as (url, root, log):
        (process,) = started
        (root / "watched.ipynb").write_text(
            json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
        )
        async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
            await client.subscribe_resource("notebook:///watched.ipynb")
            if how == "unsubscribed":
                await client.unsubscribe_resource("notebook:///watched.ipynb")
            if how == "still-connected":
                stopping = time.monotonic()
                process.send_signal(signal.SIGTERM)
                while process.poll() is None and time.monotonic() - stopping < 10:
                    await asyncio.sleep(0.1)
        if how != "still-connected":
            await asyncio.sleep(0.5)
            stopping = time.monotonic()
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, 10)
        took = time.monotonic() - stopping
        assert process.poll() is not None, (
            f"jupyter server still running {took:.1f} s after SIGTERM:\n{log.read_text()[-3000:]}"
        )
        assert process.returncode == 0, log.read_text()[-3000:]


async def test_with_jupyter_collaboration_a_batch_and_a_restore_are_live_and_in_the_history(
    tmp_path,
):
    """apply_edits and restore_notebook take the single-cell edits' path: one change of the
    open document (the person's cursor cells untouched), saved by the room; the history records
    them as the tools' (not as changes made outside), and the person's own save as theirs."""
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        "--YDocExtension.file_poll_interval=0",
        "--YDocExtension.document_save_delay=0.2",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
        env={"JUPYTER_MCP_HISTORY_DIR": str(tmp_path / "history")},
    ) as (url, root, log):
        async with connect(f"{url}/mcp?history", TOKEN, "legacy") as client:
            await ok(client, "use_notebook", {"notebook_name": "batch.ipynb", "mode": "create"})
            first = await ok(
                client,
                "insert_cell",
                {"cell_index": 0, "cell_type": "markdown", "cell_source": "# Kept"},
            )
            async with person_in_jupyterlab(url, "batch.ipynb") as seen:
                await eventually(lambda: sources(seen) == ["# Kept"])
                deltas: list[Any] = []
                seen.ycells.observe(lambda event: deltas.append(event.delta))
                done = await ok(
                    client,
                    "apply_edits",
                    {
                        "operations": [
                            {"op": "insert", "source": "a = 1", "cell_id": "a"},
                            {"op": "insert", "source": "b = 2", "cell_id": "b"},
                            {
                                "op": "replace",
                                "cell_id": "a",
                                "old_string": "1",
                                "new_string": "10",
                            },
                            {"op": "set_cell_metadata", "cell_id": "b", "tags": ["parameters"]},
                        ]
                    },
                )
                assert done["previous_revision"] == first["revision"]
                await eventually(lambda: sources(seen) == ["# Kept", "a = 10", "b = 2"])
                assert all("delete" not in step for delta in deltas for step in delta), deltas
                assert seen.get()["cells"][2]["metadata"]["tags"] == ["parameters"]
                await asyncio.sleep(0.6)
                assert (
                    hashlib.sha256((root / "batch.ipynb").read_bytes()).hexdigest()[:16]
                    == done["revision"]
                )

                # A failing batch changes nothing, in the page either.
                result = await client.call_tool(
                    "apply_edits",
                    {
                        "operations": [
                            {"op": "delete", "cell_id": "a"},
                            {"op": "overwrite", "cell_id": "a", "source": "x"},
                        ]
                    },
                )
                assert result.is_error and sources(seen) == ["# Kept", "a = 10", "b = 2"]

                # The person types and JupyterLab saves: a change made outside the server.
                seen.set_cell(0, source="# Kept, by hand")
                await eventually(lambda: b"by hand" in (root / "batch.ipynb").read_bytes())
                listed = await ok(client, "notebook_history", {})
                tools = [(e["tool"], e["revision"]) for e in listed["entries"]]
                assert tools[0][0] is None and ("apply_edits", done["revision"]) in tools
                assert ("insert_cell", first["revision"]) in tools

                restored = await ok(client, "restore_notebook", {"revision": done["revision"]})
                await eventually(lambda: sources(seen) == ["# Kept", "a = 10", "b = 2"])
                await asyncio.sleep(0.6)
                assert restored["revision"] == done["revision"]
                listed = await ok(client, "notebook_history", {"limit": 1})
                assert listed["entries"][0]["tool"] == "restore_notebook"
        text = log.read_text(errors="replace")
        assert "jupyter_mcp_server/" not in text, text[-4000:]


async def test_a_checkpoint_of_a_notebook_on_a_jupyter_server_is_a_jupyter_checkpoint(
    workspace, tmp_path, jupyter
):
    """JupyterLab's "Revert to checkpoint" lists the contents API's checkpoints: a named
    checkpoint makes one there too, holding the notebook as it was."""
    url, root = jupyter
    async with serve_logged(
        workspace,
        tmp_path / "server.log",
        "--jupyter-url",
        url,
        "--jupyter-contents",
        "--toolsets",
        "history",
        *NO_PRESTART,
        env={"JUPYTER_TOKEN": TOKEN, "JUPYTER_MCP_HISTORY_DIR": str(tmp_path / "history")},
    ) as client:
        await ok(client, "use_notebook", {"notebook_name": "checked.ipynb", "mode": "create"})
        await ok(
            client, "insert_cell", {"cell_index": 0, "cell_type": "code", "cell_source": "kept = 1"}
        )
        marked = await ok(client, "checkpoint", {"name": "before the change"})
        assert marked["jupyter_checkpoint"]
        listed = httpx.get(
            f"{url}/api/contents/checked.ipynb/checkpoints", headers=headers()
        ).json()
        assert marked["jupyter_checkpoint"] in [c["id"] for c in listed]
        await ok(
            client,
            "insert_cell",
            {"cell_index": 0, "cell_type": "code", "cell_source": "changed = 2"},
        )
        restored = await ok(client, "restore_notebook", {"revision": "before the change"})
        assert restored["revision"] == marked["revision"]
        assert [c["source"] for c in nbformat.read(root / "checked.ipynb", as_version=4).cells] == [
            "kept = 1"
        ]


# --- Jupyter's authorizer chooses the caller's profile -------------------------------

AUTHORIZER_FIXTURE = Path(__file__).parents[1] / "fixtures" / "jupyter-authorizer"


@pytest.mark.parametrize(
    ("grants", "profile"),
    [
        (["read:contents"], "read-only"),
        (["read:contents", "write:contents"], "edit"),
        (["read:contents", "write:contents", "execute:kernels"], "full"),
        # Running code writes outputs into the notebook: without write, only reading.
        (["execute:kernels"], None),
    ],
)
async def test_jupyters_authorizer_chooses_the_callers_profile(tmp_path, grants, profile):
    """A real Jupyter Server with a custom Authorizer (--ServerApp.authorizer_class): what it
    allows the caller is the profile /mcp serves it, request by request."""
    from test_profiles import check_profile, notebook

    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True}",
        "--ServerApp.authorizer_class=grants_authorizer.GrantsAuthorizer",
        # /api/status (the fixture's readiness check) is the `api` resource.
        f"--GrantsAuthorizer.grants={','.join(['read:api', *grants])}",
        env={"PYTHONPATH": str(AUTHORIZER_FIXTURE)},
    ) as (url, root, _log):
        notebook(root)
        if profile is None:
            answer = httpx.post(
                f"{url}/mcp",
                headers={
                    **headers(),
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            )
            assert answer.status_code == 403 and "read" in answer.text, answer.text
            return
        async with connect(f"{url}/mcp", TOKEN, "legacy") as client:
            if profile == "full":
                await ok(client, "use_notebook", {"notebook_name": "a.ipynb"})
                ran = await ok(client, "execute_cell", {"cell_index": 0})
                assert ran["status"] == "ok"
                await ok(client, "unuse_notebook", {"notebook_name": "a.ipynb"})
                return
            await check_profile(client, profile)
            if profile == "edit":
                await ok(
                    client,
                    "insert_cell",
                    {
                        "notebook_name": "a.ipynb",
                        "cell_index": -1,
                        "cell_type": "code",
                        "cell_source": "2 + 2",
                    },
                )
                assert "2 + 2" in (root / "a.ipynb").read_text()
        # The URL narrows further, never wider than the authorizer's.
        if profile == "edit":
            async with connect(f"{url}/mcp?profile=read-only", TOKEN, "legacy") as client:
                await check_profile(client, "read-only")


async def test_a_persons_caret_reaches_a_2026_listener_of_presence(tmp_path):
    """A person's page (the Y client JupyterLab is, here in Python) publishes its caret and
    selection in a notebook's room, as Yjs relative positions; a 2026-07-28 agent listening to
    presence:// hears it, and reads the cell and the text. The agent's own state is not a
    person."""
    pytest.importorskip(
        "jupyter_server_ydoc", reason="jupyter-collaboration (jupyter-server-ydoc) is not installed"
    )
    import anyio
    from pycrdt import Assoc, StickyIndex, create_awareness_message

    with jupyter_server_process(
        tmp_path,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyter_server_ydoc': True, 'jupyter_server_fileid': True}",
        f"--SQLiteYStore.db_path={tmp_path / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp_path / 'collaboration_sessions.json'}",
    ) as (url, root, _log):
        nbformat.write(
            nbformat.v4.new_notebook(
                cells=[
                    nbformat.v4.new_code_cell("a = 1", id="first"),
                    nbformat.v4.new_code_cell("total = a + 41", id="second"),
                ]
            ),
            root / "watched.ipynb",
        )
        async with (
            connect(f"{url}/mcp", TOKEN, "auto") as client,
            person_in_jupyterlab(url, "watched.ipynb") as page,
            client.listen(resource_subscriptions=["presence://"]) as subscription,
        ):
            assert client.protocol_version == "2026-07-28"
            await eventually(lambda: len(page.ycells) == 2)
            source = page.ycells[1]["source"]

            def position(index: int) -> dict[str, Any]:
                # As Yjs writes one: every key present, null when unused.
                found = {"type": None, "tname": None, "item": None, "assoc": 0}
                found.update(StickyIndex.new(source, index, Assoc.AFTER).to_json())
                found["type"] = StickyIndex.new(source, 0, Assoc.BEFORE).to_json()["type"]
                return found

            page.awareness.set_local_state(
                {
                    "user": {"username": "person-1", "name": "Ada", "display_name": "Ada"},
                    "cursors": [
                        {
                            "anchor": position(0),
                            "head": position(5),
                            "primary": True,
                            "empty": False,
                        }
                    ],
                }
            )
            update = page.awareness.encode_awareness_update([page.awareness.client_id])
            await page.channel.send(create_awareness_message(update))
            with anyio.fail_after(10):
                event = await subscription.__anext__()
            assert event.uri == "presence://"
            people = json.loads((await client.read_resource("presence://")).contents[0].text)[
                "people"
            ]
            assert [
                (p["name"], p["notebook"], p["cell_id"], p["cell_index"], p["selection"])
                for p in people
            ] == [("Ada", "watched.ipynb", "second", 1, "total")]
            said = text_of(await client.call_tool("outline", {"notebook_name": "watched.ipynb"}))
            assert "People here: Ada at cell 1 (second), selected 'total'." in said, said


def test_inside_jupyter_server_a_dropped_call_resumes_with_last_event_id(jupyter):
    """The same resumable streams at ``{base_url}/mcp`` (the tornado bridge): the call's stream
    dropped mid-run and resumed twice, every progress notification and the result once."""
    from test_resumable import EMPTY_NOTEBOOK, run_dropped_twice

    url, root = jupyter
    (root / "resume.ipynb").write_text(json.dumps(EMPTY_NOTEBOOK))
    run_dropped_twice(f"{url}/mcp", headers(), "resume.ipynb")
