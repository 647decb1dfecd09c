"""The JSON-lines transport as a program drives it: a real process, real kernels, pipes.

Every line the server writes must be JSON; requests are answered by id, an
interrupt reaches a running execution, and a save without the current
revision is refused rather than overwriting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nbformat
from servers import our_stdio_server_async


class JsonLines:
    """A client of the transport: send requests, read answers and events."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.answers: dict[Any, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.lines: list[bytes] = []
        self._next = 0
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.lines.append(line)
            message = json.loads(line)  # nothing but JSON lines on stdout
            if "event" in message:
                self.events.append(message)
            else:
                self.answers[message.get("id")] = message
            self._arrived.set()

    def send(self, method: str, **params: Any) -> int:
        self._next += 1
        self.write({"id": self._next, "method": method, "params": params})
        return self._next

    def write(self, message: Any) -> None:
        assert self.process.stdin is not None
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(raw + b"\n")

    async def answer(self, request_id: Any, seconds: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while request_id not in self.answers:
            self._arrived.clear()
            left = deadline - time.monotonic()
            assert left > 0, f"no answer to {request_id}; got {self.answers}"
            await asyncio.wait_for(self._arrived.wait(), timeout=left)
        return self.answers.pop(request_id)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        answer = await self.answer(self.send(method, **params))
        assert "result" in answer, answer
        return answer["result"]

    async def refused(self, method: str, expected: str, /, **params: Any) -> dict[str, Any]:
        answer = await self.answer(self.send(method, **params))
        assert answer.get("error", {}).get("code") == expected, answer
        assert answer["error"]["message"]
        return answer["error"]

    async def until_event(self, request_id: int, text: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while not any(
            e["id"] == request_id and text in json.dumps(e["output"]) for e in self.events
        ):
            assert time.monotonic() < deadline, self.events
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def json_lines_server(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[JsonLines]:
    """``jupyter-mcp-server start --transport json-lines`` and a client of it; stopped afterwards."""
    async with our_stdio_server_async(
        workspace, "--transport", "json-lines", *args, env=env
    ) as server:
        yield JsonLines(server.process)


async def test_a_json_lines_session(workspace: Path) -> None:
    path = workspace / "session.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_code_cell("x = 40 + 2\nprint(x)", id="answer"),
        nbformat.v4.new_code_cell(
            "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\nprint('wo' + 'ke')",
            id="slow",
        ),
        nbformat.v4.new_markdown_cell("# notes", id="notes"),
    ]
    nbformat.write(notebook, path)
    async with json_lines_server(workspace) as client:
        opened = await client.call("open", path="session.ipynb")
        first_revision = opened["revision"]
        assert [cell["cell_id"] for cell in opened["cells"]] == ["answer", "slow", "notes"]
        assert opened["kernel_id"] and opened["format"] == "ipynb"

        ran = client.send("execute", path="session.ipynb", cell_id="answer")
        result = (await client.answer(ran))["result"]
        assert (
            result["schema_version"] == "1.0"
            and result["status"] == "ok"
            and result["cell_id"] == "answer"
        )
        assert result["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "42\n"}]
        assert any(e["id"] == ran and e["output"]["text"] == "42\n" for e in client.events)
        status = (await client.call("status", path="session.ipynb"))["notebooks"][0]
        assert status["dirty"] is True and status["kernel_state"] == "idle"
        assert (
            status["revision"] == status["disk_revision"] == first_revision
        )  # nothing written yet

        # An interrupt arrives while an execution runs, and stops it; its outputs so far are kept.
        slow = client.send("execute", path="session.ipynb", cell_id="slow")
        await client.until_event(slow, "sleeping")
        busy = (await client.call("status"))["notebooks"][0]
        assert busy["executing"] is True and busy["kernel_state"] == "busy"
        interrupted = await client.call("interrupt", path="session.ipynb")
        assert interrupted["was_busy"] is True
        stopped = (await client.answer(slow, seconds=15))["result"]
        assert stopped["status"] == "interrupted"
        assert "sleeping" in json.dumps(stopped["outputs"]) and "woke" not in json.dumps(
            stopped["outputs"]
        )

        # A save without the current revision is refused; the file is untouched.
        await client.refused("save", "invalid_argument", path="session.ipynb")
        assert nbformat.read(path, as_version=4).cells[0].outputs == []
        # Someone else changes the file: a save at the old revision is refused too.
        changed = nbformat.read(path, as_version=4)
        changed.cells.append(nbformat.v4.new_code_cell("outside = True", id="outside"))
        nbformat.write(changed, path)
        conflict = await client.refused(
            "save", "revision_conflict", path="session.ipynb", revision=first_revision
        )
        assert conflict["current_revision"] != first_revision
        assert [c.id for c in nbformat.read(path, as_version=4).cells] == [
            "answer",
            "slow",
            "notes",
            "outside",
        ]

        # Open again (the outside cell is there), run, save at the current revision.
        reopened = await client.call("open", path="session.ipynb")
        assert reopened["revision"] == conflict["current_revision"]
        assert [cell["cell_id"] for cell in reopened["cells"]][-1] == "outside"
        await client.call("execute", path="session.ipynb", cell_index=0)
        saved = await client.call("save", path="session.ipynb", revision=reopened["revision"])
        assert saved["revision"] != reopened["revision"]
        on_disk = nbformat.read(path, as_version=4)
        assert on_disk.cells[0].outputs[0]["text"] == "42\n" and on_disk.cells[3].id == "outside"

        # A restart is a fresh kernel: the variables are gone.
        restarted = await client.call("restart", path="session.ipynb")
        assert restarted["kernel_id"] != opened["kernel_id"]
        fresh = await client.call("execute", path="session.ipynb", code="x")
        assert fresh["status"] == "error" and fresh["error"]["ename"] == "NameError"

        await client.refused("execute", "invalid_argument", path="session.ipynb", cell_id="notes")
        await client.refused("execute", "not_found", path="other.ipynb", code="1")
        await client.refused("bogus", "unsupported")
        await client.refused("open", "invalid_path", path="../escape.ipynb")
        client.write(b"{not json")
        bad = await client.answer(None)
        assert bad["error"]["code"] == "invalid_argument"

        done = await client.call("shutdown")
        assert done["shutdown"] is True
        assert await asyncio.wait_for(client.process.wait(), timeout=30) == 0


async def test_open_and_save_say_when_an_older_nbformat_becomes_4_5(workspace: Path) -> None:
    from nbformat import v3

    path = workspace / "old.ipynb"
    cells = [v3.new_code_cell(input="1 + 1")]
    path.write_text(v3.writes_json(v3.new_notebook(worksheets=[v3.new_worksheet(cells=cells)])))
    async with json_lines_server(workspace) as client:
        opened = await client.call("open", path="old.ipynb")
        assert opened["format_upgraded"] == {"from": "3.0", "to": "4.5"}
        saved = await client.call("save", path="old.ipynb", revision=opened["revision"])
        assert saved["format_upgraded"] == {"from": "3.0", "to": "4.5"}
        on_disk = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        assert (on_disk.nbformat, on_disk.nbformat_minor) == (4, 5) and on_disk.cells[
            0
        ].source == "1 + 1"
        again = await client.call("open", path="old.ipynb")
        assert "format_upgraded" not in again
        assert "format_upgraded" not in await client.call(
            "save", path="old.ipynb", revision=again["revision"]
        )
        await client.call("shutdown")
        assert await asyncio.wait_for(client.process.wait(), timeout=30) == 0
