"""The protocol around the tools, end to end over both generations.

Prompts and completion, the cell and output resources, logging, progress,
subscriptions and tasks: each test starts the real server over stdio and
talks to it with the official client, once with the 2025-11-25 handshake
(``mode="legacy"``) and once with 2026-07-28 (``mode="auto"``). Checks are
grouped per server start, since each start costs a second or two.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ok, serve, server_command, server_environment, text_of
from fixtures import extensions_site
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ReadResourceResult, ResourceTemplateReference
from servers import our_http_server

__all__ = ["extensions_site"]

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


def png(width: int, height: int) -> bytes:
    """A real PNG of the given size (random-looking rows so it does not compress away)."""
    rows = b"".join(
        b"\x00" + bytes((x * 7 + y * 13 + (x * y) % 251) % 256 for x in range(width * 3))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def write_notebook(path: Path, cells: list[Any]) -> Any:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = cells
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return notebook


def cited_notebook(workspace: Path) -> Any:
    image = base64.b64encode(png(4, 4)).decode()
    cells = [
        nbformat.v4.new_markdown_cell("# Title", id="intro"),
        nbformat.v4.new_code_cell("x = 1", id="set-x"),
        nbformat.v4.new_code_cell(
            "print(x)\nplot()",
            id="show",
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text="1\n"),
                nbformat.v4.new_output(
                    "display_data", data={"image/png": image, "text/plain": "<Figure>"}
                ),
            ],
        ),
        nbformat.v4.new_code_cell("y = 2", id="set-y"),
        nbformat.v4.new_code_cell("x + y", id="sum"),
    ]
    return write_notebook(workspace / "sub dir" / "cite me.ipynb", cells)


@MODES
async def test_cite_prompt_and_completion(workspace: Path, mode: str) -> None:
    cited_notebook(workspace)
    write_notebook(workspace / "other.ipynb", [])
    async with serve(workspace, mode=mode) as client:
        prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
        cite = prompts["jupyter_cite"]
        arguments = {argument.name: argument.required for argument in cite.arguments or []}
        assert arguments == {"prompt": True, "cell_indices": True, "notebook_name": False}

        result = await client.get_prompt(
            "jupyter_cite",
            {
                "prompt": "Why is the sum 3?",
                "cell_indices": "0-1, 4",
                "notebook_name": "sub dir/cite me.ipynb",
            },
        )
        assert len(result.messages) == 1
        message = result.messages[0]
        assert message.role == "user"
        text = message.content.text  # type: ignore[union-attr]
        assert "Cells 0-1, 4 of the notebook 'sub dir/cite me.ipynb':" in text
        assert "Cell 0 (id intro, markdown)" in text and "# Title" in text
        assert "Cell 1 (id set-x, code)" in text and "```python\nx = 1\n```" in text
        assert "Cell 4 (id sum, code)" in text and "x + y" in text
        assert "print(x)" not in text and "y = 2" not in text  # cells 2 and 3 were not cited
        assert text.rstrip().endswith("Why is the sum 3?")

        # The current notebook when none is named.
        await ok(
            client, "use_notebook", {"notebook_name": "c", "notebook_path": "sub dir/cite me.ipynb"}
        )
        current = await client.get_prompt("jupyter_cite", {"prompt": "p", "cell_indices": "3"})
        assert "Cell 3 (id set-y, code)" in current.messages[0].content.text  # type: ignore[union-attr]
        named = await client.get_prompt(
            "jupyter_cite", {"prompt": "p", "cell_indices": "2", "notebook_name": "c"}
        )
        assert "print(x)\nplot()" in named.messages[0].content.text  # type: ignore[union-attr]

        for bad, says in (
            ("5", "out of range"),
            ("2-1", "backwards"),
            ("a", "not an index"),
            ("", "empty"),
        ):
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(
                    "jupyter_cite", {"prompt": "p", "cell_indices": bad, "notebook_name": "c"}
                )
            assert says in str(refused.value), (bad, str(refused.value))
        with pytest.raises(MCPError) as missing:
            await client.get_prompt(
                "jupyter_cite", {"prompt": "p", "cell_indices": "0", "notebook_name": "nope.ipynb"}
            )
        assert "not_found" in str(missing.value)

        # Completion: notebook paths, then the ranges and indices that notebook has.
        ref = PromptReference(type="ref/prompt", name="jupyter_cite")
        paths = (
            await client.complete(ref, {"name": "notebook_name", "value": "sub"})
        ).completion.values
        assert paths == ["sub dir/cite me.ipynb"]
        everything = (
            await client.complete(ref, {"name": "notebook_name", "value": ""})
        ).completion.values
        assert everything == ["other.ipynb", "sub dir/cite me.ipynb"]
        ranges = await client.complete(
            ref,
            {"name": "cell_indices", "value": "0-1,"},
            {"notebook_name": "sub dir/cite me.ipynb"},
        )
        assert ranges.completion.values[0] == "0-1,0-4"
        assert "0-1,4" in ranges.completion.values
        started = await client.complete(
            ref, {"name": "cell_indices", "value": "2"}, {"notebook_name": "sub dir/cite me.ipynb"}
        )
        assert started.completion.values == ["2-4", "2"]

        template = ResourceTemplateReference(
            type="ref/resource", uri="notebook-output:///{+path}{?cell,output}"
        )
        cells = await client.complete(
            template, {"name": "cell", "value": "se"}, {"path": "sub dir/cite me.ipynb"}
        )
        assert cells.completion.values == ["set-x", "set-y"]
        outputs = await client.complete(
            template,
            {"name": "output", "value": ""},
            {"path": "sub dir/cite me.ipynb", "cell": "show"},
        )
        assert outputs.completion.values == ["0", "1"]


@MODES
async def test_cell_and_output_resources(workspace: Path, mode: str) -> None:
    notebook = cited_notebook(workspace)
    limits = {"JUPYTER_MCP_INLINE_IMAGE_BYTES": "2000", "JUPYTER_MCP_INLINE_TEXT_CHARS": "1000"}
    async with serve(workspace, mode=mode, env=limits) as client:
        templates = {t.name: t for t in (await client.list_resource_templates()).resource_templates}
        assert templates["notebook"].uri_template == "notebook:///{+path}"
        assert templates["notebook-cell"].uri_template == "notebook-cell:///{+path}{?cell}"
        assert templates["notebook-cell"].mime_type == "application/vnd.jupyter.cell+json"
        assert (
            templates["notebook-output"].uri_template == "notebook-output:///{+path}{?cell,output}"
        )

        base = "sub%20dir/cite%20me.ipynb"
        cell = (await client.read_resource(f"notebook-cell:///{base}?cell=set-x")).contents[0]
        assert cell.mime_type == "application/vnd.jupyter.cell+json"
        assert json.loads(cell.text)["source"] == "x = 1"  # type: ignore[union-attr]

        stream = (
            await client.read_resource(f"notebook-output:///{base}?cell=show&output=0")
        ).contents
        assert [(c.mime_type, c.text) for c in stream] == [("text/plain", "1\n")]  # type: ignore[union-attr]

        figure = (
            await client.read_resource(f"notebook-output:///{base}?cell=show&output=1")
        ).contents
        by_type = {content.mime_type: content for content in figure}
        assert set(by_type) == {"image/png", "text/plain"}
        expected = notebook.cells[2].outputs[1].data["image/png"]
        assert by_type["image/png"].blob == expected  # type: ignore[union-attr]
        assert base64.b64decode(by_type["image/png"].blob).startswith(b"\x89PNG")  # type: ignore[union-attr]
        assert by_type["text/plain"].text == "<Figure>"  # type: ignore[union-attr]

        for uri, says in (
            (f"notebook-output:///{base}?cell=show&output=2", "has 2 outputs"),
            (f"notebook-output:///{base}?cell=nope&output=0", "no cell with id"),
            (f"notebook-output:///{base}?cell=show", "output=N"),
            (f"notebook-cell:///{base}", "names no cell"),
            ("notebook-cell:///..%2Fescape.ipynb?cell=a", "invalid_path"),
            ("notebook-cell:///missing.ipynb?cell=a", "not_found"),
        ):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert says in str(refused.value), (uri, str(refused.value))

        # An execution's image or text too large to inline points to the output that holds it whole.
        small, large = base64.b64encode(png(4, 4)).decode(), base64.b64encode(png(40, 40)).decode()
        assert len(small) < 2000 < len(large)
        await ok(
            client, "use_notebook", {"notebook_name": "n", "notebook_path": "sub dir/cite me.ipynb"}
        )
        code = (
            "import base64\nfrom IPython.display import Image, display\n"
            f"display(Image(data=base64.b64decode('{small}')))\n"
            f"display(Image(data=base64.b64decode('{large}')))\n"
            "print('z' * 3000)"
        )
        result = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": code}
        )
        assert not result.is_error, text_of(result)
        cell_id = result.structured_content["cell_id"]  # type: ignore[index]
        kinds = [block.type for block in result.content]
        assert kinds.count("image") == 1, kinds  # the small one, inline
        links = [block for block in result.content if block.type == "resource_link"]
        assert [link.mime_type for link in links] == ["image/png", "text/plain"]
        image_link, text_link = links
        assert image_link.uri == f"notebook-output:///{base}?cell={cell_id}&output=1"
        whole = (await client.read_resource(image_link.uri)).contents
        assert [c.blob for c in whole if c.mime_type == "image/png"] == [large]  # type: ignore[union-attr]
        cut = next(b.text for b in result.content if b.type == "text" and b.text.startswith("zzz"))
        assert len(cut) < 1200 and text_link.uri in cut
        assert (await client.read_resource(text_link.uri)).contents[0].text == "z" * 3000 + "\n"  # type: ignore[union-attr]

        # Scratch code stores nothing in the notebook; what its result leaves out is kept a
        # while among the scratch outputs and linked there the same way.
        scratch = await client.call_tool("execute_code", {"code": code})
        assert [block.type for block in scratch.content].count("image") == 1
        links = [block for block in scratch.content if block.type == "resource_link"]
        assert [link.mime_type for link in links] == ["image/png", "text/plain"]
        assert all(link.uri.startswith("scratch-output:///") for link in links)
        whole = (await client.read_resource(links[0].uri)).contents
        assert [c.blob for c in whole if c.mime_type == "image/png"] == [large]  # type: ignore[union-attr]
        assert (await client.read_resource(links[1].uri)).contents[0].text == "z" * 3000 + "\n"  # type: ignore[union-attr]


class Heard:
    """What the server logged to this client."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []

    async def __call__(self, params: Any) -> None:
        self.messages.append((params.level, str(params.data)))

    def about(self, tool: str) -> list[tuple[str, str]]:
        return [(level, data) for level, data in self.messages if f"tool {tool}" in data.lower()]

    async def settle(self, seconds: float = 0.5) -> None:
        import anyio

        await anyio.sleep(seconds)


async def test_log_level_per_session(workspace: Path) -> None:
    """2025-11-25: nothing until logging/setLevel, then that level and above."""
    heard = Heard()
    async with serve(workspace, mode="legacy", logging_callback=heard) as client:
        assert client.server_capabilities.logging is not None
        await ok(client, "list_files")
        await heard.settle()
        assert heard.messages == []

        await client.set_logging_level("info")
        await ok(client, "list_files")
        await heard.settle()
        assert heard.about("list_files") == [("info", heard.about("list_files")[0][1])]
        assert heard.about("list_files")[0][1].startswith("Tool list_files ended: ok in ")

        heard.messages.clear()
        await client.set_logging_level("debug")
        await ok(client, "list_kernels")
        await heard.settle()
        assert [level for level, _ in heard.about("list_kernels")] == ["debug", "info"]

        heard.messages.clear()
        await client.set_logging_level("warning")
        await ok(client, "list_kernels")
        await heard.settle()
        assert heard.messages == []


async def test_log_level_per_request(workspace: Path) -> None:
    """2026-07-28: each request opts in with its own level and hears what was logged while it ran."""
    heard = Heard()
    async with serve(workspace, mode="auto", logging_callback=heard, log_level="info") as client:
        assert client.protocol_version == "2026-07-28"
        await ok(client, "list_files")
        # Delivered on the request's own stream, before its response.
        assert [level for level, _ in heard.about("list_files")] == ["info"]

        heard.messages.clear()
        await client.call_tool(
            "list_kernels", {}, meta={"io.modelcontextprotocol/logLevel": "debug"}
        )
        assert [level for level, _ in heard.about("list_kernels")] == ["debug", "info"]

        heard.messages.clear()
        await client.call_tool(
            "list_kernels", {}, meta={"io.modelcontextprotocol/logLevel": "error"}
        )
        await heard.settle()
        assert heard.messages == []

        with pytest.raises(MCPError):  # removed at 2026-07-28: the level travels with each request
            await client.set_logging_level("debug")

    quiet = Heard()
    async with serve(workspace, mode="auto", logging_callback=quiet) as client:
        await ok(client, "list_files")
        await quiet.settle()
        assert quiet.messages == []


@MODES
@pytest.mark.parametrize("stderr_level", ["WARNING", "DEBUG"])
async def test_logging_to_clients_writes_no_warning_on_stderr(
    workspace: Path, mode: str, stderr_level: str
) -> None:
    """Records delivered to a client on either generation leave the server's stderr free of
    Python warnings: none at the default level, and (at DEBUG, where warnings are logged) no
    SEP-2577 deprecation, since the server sends the plain notification each generation defines."""
    import sys

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    heard = Heard()
    log = workspace.parent / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=server_command(workspace)[1:],
        # Every warning shown each time it happens, as a client's first call would see it.
        env=server_environment(PYTHONWARNINGS="always", JUPYTER_MCP_LOG_LEVEL=stderr_level),
        cwd=str(workspace),
    )
    options: dict[str, Any] = {"logging_callback": heard}
    if mode == "auto":
        options["log_level"] = "debug"
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, **options) as client:
            if mode == "legacy":
                await client.set_logging_level("debug")
            for _ in range(3):
                await ok(client, "list_files")
            await heard.settle()
    assert [level for level, _ in heard.about("list_files")] == ["debug", "info"] * 3
    stderr = log.read_text()
    assert "MCPDeprecationWarning" not in stderr, stderr
    if stderr_level == "WARNING":
        assert "Warning:" not in stderr, stderr


class Progress:
    """The progress notifications of one call, with when each arrived."""

    def __init__(self) -> None:
        self.events: list[tuple[float, float, str]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        import time

        self.events.append((time.monotonic(), progress, message or ""))

    @property
    def messages(self) -> list[str]:
        return [message for _, _, message in self.events]


@MODES
async def test_progress_outputs_and_heartbeats(workspace: Path, mode: str) -> None:
    import time

    async with serve(workspace, mode=mode, env={"JUPYTER_MCP_HEARTBEAT_SECONDS": "0.5"}) as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "p", "notebook_path": "p.ipynb", "mode": "create"},
        )
        heard = Progress()
        code = "import time\nfor i in range(3):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.6)\ntime.sleep(2)\n'done'"
        started = time.monotonic()
        result = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": code},
            progress_callback=heard,
        )
        ended = time.monotonic()
        assert not result.is_error, text_of(result)
        joined = "\n".join(heard.messages)
        for i in range(3):
            assert f"[stdout] tick {i}" in joined, heard.messages
        progresses = [progress for _, progress, _ in heard.events]
        assert progresses == sorted(set(progresses)), progresses  # strictly increasing
        # The first output arrived while the cell still ran, not with the result.
        first = next(at for at, _, message in heard.events if "tick 0" in message)
        assert ended - first > 1.5, (ended - started, ended - first)
        # The silent two seconds at the end were filled with heartbeats.
        beats = [at for at, _, message in heard.events if message.startswith("running for")]
        assert len(beats) >= 2, heard.messages

        # No token, no progress: an ordinary call is unchanged.
        plain = await client.call_tool("execute_code", {"code": "print('x')"})
        assert text_of(plain).strip() == "x"

        # Output floods are coalesced and bounded, and every kept output still comes back in the result.
        flood = Progress()
        result = await client.call_tool(
            "execute_code",
            {"code": "for i in range(100):\n    print('line', i, 'x' * 100, flush=True)"},
            progress_callback=flood,
        )
        assert "line 99 " in text_of(result)
        assert 1 <= len(flood.events) < 50, len(flood.events)
        assert "more characters of output" in "".join(flood.messages)
        assert all(len(message) < 2200 for message in flood.messages)


@pytest.mark.slow
async def test_progress_through_a_20_second_cell(workspace: Path) -> None:
    """The real thing, once: a silent 20 s cell with the default heartbeat keeps the call alive
    (slow: test_progress_outputs_and_heartbeats checks the heartbeats in the default run)."""
    import time

    async with serve(workspace, mode="auto") as client:
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "p", "notebook_path": "slow.ipynb", "mode": "create"},
        )
        heard = Progress()
        started = time.monotonic()
        result = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "import time\ntime.sleep(20)\nprint('woke')"},
            progress_callback=heard,
        )
        ended = time.monotonic()
        assert not result.is_error and "woke" in text_of(result)
        assert ended - started >= 20
        moments = [started, *(at for at, _, _ in heard.events), ended]
        gaps = [later - earlier for earlier, later in itertools.pairwise(moments)]
        assert len(heard.events) >= 2 and max(gaps) <= 15, (gaps, heard.messages)
        assert any(message.startswith("running for") for message in heard.messages)


class Updates:
    """The notifications/resources/updated a 2025-11-25 client received."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message: Any) -> None:
        params = getattr(message, "params", None)
        if getattr(message, "method", None) == "notifications/resources/updated":
            self.uris.append(str(params.uri))  # type: ignore[union-attr]

    async def wait_for(self, uri: str, seconds: float = 5.0) -> None:
        import anyio

        with anyio.fail_after(seconds):
            while uri not in self.uris:
                await anyio.sleep(0.05)


def edit_outside(path: Path, source: str) -> None:
    """What another program (JupyterLab, an editor) does: rewrite the file."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(notebook, path)


async def test_subscription_2025(workspace: Path) -> None:
    import anyio

    write_notebook(workspace / "watched.ipynb", [nbformat.v4.new_code_cell("a = 1", id="first")])
    write_notebook(workspace / "other.ipynb", [])
    updates = Updates()
    watched, cell = "notebook:///watched.ipynb", "notebook-cell:///watched.ipynb?cell=first"
    async with serve(workspace, mode="legacy", message_handler=updates) as client:
        assert client.server_capabilities.resources.subscribe is True  # type: ignore[union-attr]
        await client.subscribe_resource(watched)
        await client.subscribe_resource(cell)

        # A tool's change: heard at once, for each URI of that notebook.
        await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "b = 2",
                "notebook_name": "watched.ipynb",
            },
        )
        await updates.wait_for(watched)
        await updates.wait_for(cell)
        # The watcher saw the same write: it does not announce it again.
        await anyio.sleep(1.0)
        assert updates.uris.count(watched) == 1, updates.uris

        # A change to a notebook nobody subscribed to is not announced.
        updates.uris.clear()
        await ok(
            client,
            "insert_cell",
            {
                "cell_index": -1,
                "cell_type": "code",
                "cell_source": "c = 3",
                "notebook_name": "other.ipynb",
            },
        )
        edit_outside(workspace / "other.ipynb", "d = 4")
        await anyio.sleep(1.0)
        assert updates.uris == []

        # Someone else edits the file on disk.
        edit_outside(workspace / "watched.ipynb", "outside = True")
        await updates.wait_for(watched)

        # Unsubscribed: silence.
        await client.unsubscribe_resource(watched)
        await client.unsubscribe_resource(cell)
        updates.uris.clear()
        edit_outside(workspace / "watched.ipynb", "again = True")
        await ok(
            client,
            "insert_cell",
            {
                "cell_index": 0,
                "cell_type": "code",
                "cell_source": "e = 5",
                "notebook_name": "watched.ipynb",
            },
        )
        await anyio.sleep(1.0)
        assert updates.uris == []

        with pytest.raises(MCPError) as refused:
            await client.subscribe_resource("notebook:///..%2F..%2Fetc%2Fpasswd")
        assert "invalid_path" in str(refused.value)


async def test_subscription_2026(workspace: Path) -> None:
    import anyio

    write_notebook(workspace / "watched.ipynb", [])
    write_notebook(workspace / "other.ipynb", [])
    watched = "notebook:///watched.ipynb"
    async with serve(workspace, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.resources.subscribe is True  # type: ignore[union-attr]
        async with client.listen(resource_subscriptions=[watched]) as subscription:

            async def next_event(seconds: float) -> Any:
                with anyio.move_on_after(seconds):
                    return await subscription.__anext__()
                return None

            await ok(
                client,
                "insert_cell",
                {
                    "cell_index": -1,
                    "cell_type": "code",
                    "cell_source": "x",
                    "notebook_name": "watched.ipynb",
                },
            )
            event = await next_event(5)
            assert event is not None and event.uri == watched
            assert await next_event(1.0) is None  # once, though the watcher saw the write too

            await ok(
                client,
                "insert_cell",
                {
                    "cell_index": -1,
                    "cell_type": "code",
                    "cell_source": "y",
                    "notebook_name": "other.ipynb",
                },
            )
            edit_outside(workspace / "other.ipynb", "z")
            assert await next_event(1.0) is None

            edit_outside(workspace / "watched.ipynb", "outside = True")
            event = await next_event(5)
            assert event is not None and event.uri == watched


# --- tasks (2026-07-28) ----------------------------------------------------------

from typing import Literal  # noqa: E402

import anyio  # noqa: E402
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim  # noqa: E402
from mcp.types import (  # noqa: E402
    CallToolResult,
    CancelTaskRequest,
    CancelTaskRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    Result,
)
from pydantic import ConfigDict, TypeAdapter  # noqa: E402

TASKS = "io.modelcontextprotocol/tasks"
ANSWER = TypeAdapter(dict[str, Any])


class CreatedTask(Result):
    """`CreateTaskResult`: the handle a task-augmented call answers with."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


async def get_task(client: Any, task_id: str) -> dict[str, Any]:
    return await client.session.send_request(
        GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), ANSWER
    )


async def until_done(client: Any, task_id: str, seconds: float = 30) -> dict[str, Any]:
    with anyio.fail_after(seconds):
        while True:
            task = await get_task(client, task_id)
            if task["status"] in ("completed", "failed", "cancelled"):
                return task
            await anyio.sleep(0.2)


class Tasks(ClientExtension):
    """The client side of the extension: declare it, and finish a task by polling it."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        async def resolve(created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
            poller = type("Poller", (), {"session": ctx.session})()
            task = await until_done(poller, created.task_id)
            return CallToolResult.model_validate(task["result"])

        return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]


TASK_ENV = {"JUPYTER_MCP_TASK_GRACE_SECONDS": "0.3", "JUPYTER_MCP_TASK_TTL_SECONDS": "3"}


async def test_tasks_start_poll_cancel_fetch_expire(workspace: Path) -> None:
    async with serve(workspace, mode="auto", env=TASK_ENV, extensions=[Tasks()]) as client:
        assert client.protocol_version == "2026-07-28"
        assert TASKS in (client.server_capabilities.extensions or {})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name in ("execute_cell", "insert_execute_code_cell", "execute_code"):
            assert (tools[name].meta or {}).get(TASKS) == {"taskSupport": "optional"}, name
        assert TASKS not in (tools["read_cell"].meta or {})
        await ok(
            client,
            "use_notebook",
            {"notebook_name": "t", "notebook_path": "t.ipynb", "mode": "create"},
        )

        # Started as a task, polled while it runs, cancelled: the kernel is interrupted, outputs kept.
        code = "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('ne' + 'ver')"
        created = await client.session.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": code}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask), created
        assert created.status == "working"
        task_id = created.task_id
        with anyio.fail_after(20):
            while "started" not in (task := await get_task(client, task_id)).get(
                "statusMessage", ""
            ):
                assert task["status"] == "working"
                await anyio.sleep(0.2)
        assert task["ttlMs"] > 3000 and task["pollIntervalMs"] > 0 and "result" not in task
        cancelled = await client.session.send_request(
            CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id)), ANSWER
        )
        assert cancelled.get("resultType", "complete") == "complete"
        started = anyio.current_time()
        task = await until_done(client, task_id)
        assert anyio.current_time() - started < 10  # interrupted, not waited out
        assert task["status"] == "cancelled"
        partial = CallToolResult.model_validate(task["result"])
        assert partial.structured_content["status"] == "interrupted"  # type: ignore[index]
        assert "started" in text_of(partial) and "never" not in text_of(partial)
        cell = await ok(client, "read_cell", {"cell_index": 0})
        assert "started" in json.dumps(cell["outputs"]) and "never" not in json.dumps(
            cell["outputs"]
        )
        # The kernel is usable again at once.
        assert "alive" in text_of(
            await client.call_tool("execute_code", {"code": "print('alive')"})
        )

        # Started, polled to the end, result fetched: the client's claim does the polling.
        result = await client.call_tool(
            "execute_code", {"code": "import time\ntime.sleep(1.5)\nprint('fetched')"}
        )
        assert not result.is_error and text_of(result).strip() == "fetched"
        # An execution error is a completed task whose result says so.
        created = await client.session.call_tool(
            "execute_code", {"code": "import time\ntime.sleep(1)\n1/0"}, allow_claimed=True
        )
        assert isinstance(created, CreatedTask)
        failed = await until_done(client, created.task_id)
        assert failed["status"] == "completed" and failed["result"]["isError"] is True
        # A call that ends within the grace period answers as usual.
        quick = await client.session.call_tool(
            "execute_code", {"code": "print(1)"}, allow_claimed=True
        )
        assert isinstance(quick, CallToolResult) and text_of(quick).strip() == "1"

        # Results expire after the stated time.
        await anyio.sleep(3.5)
        for gone in (task_id, created.task_id, "no-such-task"):
            with pytest.raises(MCPError) as missing:
                await get_task(client, gone)
            assert (
                missing.value.error.code == -32602
                and "not found" in missing.value.error.message.lower()
            )

    # A client that did not declare the extension gets plain results, and no task methods.
    async with serve(workspace, mode="auto", env=TASK_ENV) as plain:
        await ok(plain, "use_notebook", {"notebook_name": "t", "notebook_path": "t.ipynb"})
        slow = await plain.call_tool(
            "execute_code", {"code": "import time\ntime.sleep(1)\nprint('sync')"}
        )
        assert text_of(slow).strip() == "sync"
        with pytest.raises(MCPError) as refused:
            await get_task(plain, "x")
        assert refused.value.error.code == -32021
    async with serve(workspace, mode="legacy", env=TASK_ENV) as legacy:
        with pytest.raises(MCPError) as refused:
            await get_task(legacy, "x")
        assert refused.value.error.code == -32601


@contextlib.contextmanager
def http_server(workspace: Path, *args: str, **env: str) -> Iterator[str]:
    """The server over streamable HTTP on a free loopback port; yields the /mcp URL."""
    with our_http_server(
        workspace, *args, env=env, cwd=workspace, log=workspace.parent / "http-server.log"
    ) as server:
        yield server.url()


async def test_a_task_is_visible_only_to_its_client(workspace: Path) -> None:
    from mcp import Client
    from mcp.types import Implementation

    write_notebook(workspace / "shared.ipynb", [])
    with http_server(workspace, **TASK_ENV) as url:
        alice_info = Implementation(name="alice", version="1")
        bob_info = Implementation(name="bob", version="1")
        async with (
            Client(url, mode="auto", extensions=[Tasks()], client_info=alice_info) as alice,
            Client(url, mode="auto", extensions=[Tasks()], client_info=bob_info) as bob,
        ):
            assert alice.protocol_version == "2026-07-28"
            created = await alice.session.call_tool(
                "execute_code",
                {
                    "code": "import time\ntime.sleep(2)\nprint('mine')",
                    "notebook_name": "shared.ipynb",
                },
                allow_claimed=True,
            )
            assert isinstance(created, CreatedTask)
            with pytest.raises(MCPError) as hidden:
                await get_task(bob, created.task_id)
            assert hidden.value.error.code == -32602
            with pytest.raises(MCPError):
                await bob.session.send_request(
                    CancelTaskRequest(params=CancelTaskRequestParams(task_id=created.task_id)),
                    ANSWER,
                )
            done = await until_done(alice, created.task_id)
            assert done["status"] == "completed"  # bob's cancel did nothing
            assert "mine" in text_of(CallToolResult.model_validate(done["result"]))

        # A server built for a toolset selection is furnished like the module-level one.
        for mode in ("legacy", "auto"):
            async with Client(url + "?only=notebooks", mode=mode) as selected:
                capabilities = selected.server_capabilities
                assert (
                    capabilities.resources is not None and capabilities.resources.subscribe is True
                )
                assert capabilities.prompts is not None and capabilities.completions is not None
                assert capabilities.logging is not None
                assert [p.name for p in (await selected.list_prompts()).prompts] == ["jupyter_cite"]
                if mode == "auto":
                    assert TASKS in (capabilities.extensions or {})


def resource_refusals(workspace: Path) -> list[tuple[str, str, bool]]:
    """URIs resources/read refuses: the stable code, and whether it is a missing resource."""
    cited_notebook(workspace)
    base = "sub%20dir/cite%20me.ipynb"
    return [
        ("notebook:///../outside.ipynb", "invalid_path", False),
        ("notebook:///nested%2", "invalid_path", False),
        ("notebook://localhost/x.ipynb", "invalid_path", False),
        (f"notebook-cell:///{base}", "invalid_argument", False),
        (f"notebook-output:///{base}?cell=show&output=x", "invalid_argument", False),
        ("notebook:///missing.ipynb", "not_found", True),
        ("notebook-cell:///missing.ipynb?cell=a", "not_found", True),
        (f"notebook-cell:///{base}?cell=nope", "not_found", True),
        (f"notebook-output:///{base}?cell=show&output=9", "not_found", True),
        ("notebook-output:///missing.ipynb?cell=a&output=0", "not_found", True),
        ("notebook-output:///../outside.ipynb?cell=a&output=0", "invalid_path", False),
        ("notebook-cell:///../outside.ipynb?cell=a", "invalid_path", False),
        ("notebook-cell:///a.ipynb#cell=a", "invalid_path", False),
        ("capabilities://nope", "not_found", True),
        ("jupymcp://nope", "not_found", True),
        ("jupymcp://capabilities/..", "not_found", True),
        ("scratch-output:///nope?output=0", "not_found", True),
        ("scratch-output:///nope", "invalid_argument", False),
        ("nothing://here", "not_found", True),
    ]


async def check_resource_refusals(
    client: Any, refusals: list[tuple[str, str, bool]], legacy: bool
) -> None:
    for uri, code, missing in refusals:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        error = refused.value.error
        # -32002 is the 2025-11-25 code for a missing resource; 2026-07-28 retired it for -32602.
        expected = -32002 if missing and legacy else -32602
        assert error.code == expected, (uri, error)
        assert isinstance(error.data, dict) and error.data["code"] == code, (uri, error)
        assert error.data["uri"] == uri, (uri, error)
        assert error.message.startswith(f"{code}:"), (uri, error)


@MODES
async def test_resource_refusals_are_coded(workspace: Path, mode: str) -> None:
    refusals = resource_refusals(workspace)
    async with serve(workspace, mode=mode) as client:
        await check_resource_refusals(client, refusals, legacy=mode == "legacy")


@MODES
async def test_a_read_without_a_uri_and_an_extensions_refusal_are_coded(
    workspace: Path, extensions_site: Path, mode: str
) -> None:
    """Refused before any handler (params that are not a URI), or by an extension's resource
    raising the contract's ToolFailure (the SDK would call it a crash, -32603, its message withheld)."""
    from fixtures import python_path

    env = {"PYTHONPATH": python_path(extensions_site), "JUPYTER_MCP_EXTENSIONS": "fx-optin"}
    async with serve(workspace, "--toolsets", "extras", mode=mode, env=env) as client:
        assert (await client.read_resource("fixture://extras")).contents[
            0
        ].text == "extras resource"
        with pytest.raises(MCPError) as refused:
            await client.read_resource("fixture://refusing/wings")
        error = refused.value.error
        assert error.code == (-32002 if mode == "legacy" else -32602), error
        assert error.data == {"code": "not_found", "uri": "fixture://refusing/wings"}, error
        assert "There is no extra named 'wings'" in error.message, error
        for params in ({}, {"uri": 5}):
            with pytest.raises(MCPError) as refused:
                await client.session.send_request(_raw_read(params), ReadResourceResult)
            error = refused.value.error
            assert error.code == -32602 and isinstance(error.data, dict), error
            assert error.data["code"] == "invalid_argument" and "params.uri" in error.message, error


def _raw_read(params: dict[str, Any]) -> Any:
    """A resources/read request with `params` as they are, past the client's own checks."""
    from mcp.types import Request

    return Request[Any, Any].model_construct(method="resources/read", params=params)


async def test_resource_refusals_are_coded_over_http(workspace: Path) -> None:
    from mcp import Client

    refusals = resource_refusals(workspace)
    with http_server(workspace) as url:
        for mode in ("legacy", "auto"):
            async with Client(url, mode=mode) as client:
                await check_resource_refusals(
                    client, refusals, legacy=client.protocol_version != "2026-07-28"
                )
