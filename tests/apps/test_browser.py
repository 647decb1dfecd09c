"""Side by side with a person in JupyterLab, in a real browser.

JupyterLab with ``jupyter-collaboration`` and this package's server extension,
from PyPI, on loopback with a token; Chromium from the system's packages
driven by Playwright (its own browser downloads are not used: the launch
points at the installed browser). The person opens a notebook in the page;
the agent works through ``{base_url}/mcp`` with the official client; every
check reads the page's DOM, as the person would see it:

- the agent's cell and its output appear without a reload, the agent's
  variables are the page's (the person's next cell runs on the same kernel);
- a running cell shows ``[*]:`` and its first output before it ends;
- a person typing in the page the whole time the agent inserts, runs and
  rewrites cells keeps every keystroke, in the page and in the file, and the
  agent's subscription hears what they typed;
- the agent is shown in the page as a named collaborator while it works;
- the agent sees the cell and the text the person selected (``presence://``,
  ``outline``, ``read_notebook``), and hears when it changes.

Skipped, saying why, where Chromium, Playwright, JupyterLab or the
collaboration package is not installed (``scripts/install test`` installs the
Python ones and, as root with apt, Chromium). ``JUPYTER_MCP_SCREENSHOTS=DIR``
saves the pages' screenshots there (``docs/images`` holds the ones the docs show).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import importlib.util
import json
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import jupyter_server_process, ok
from test_jupyter_server import TOKEN, headers, sessions

from jupyter_mcp_server._jupyter.presence import LINGER

#: The MCP client's name, as the page shows the agent.
AGENT = "test-agent"
#: Where a Chromium is looked for (the first found), unless JUPYTER_MCP_CHROMIUM names one.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_or_skip() -> str:
    """The installed Chromium's path, or skip saying what is missing."""
    missing = [
        package
        for package, module in (
            ("playwright", "playwright"),
            ("jupyterlab", "jupyterlab"),
            ("jupyter-collaboration", "jupyter_server_ydoc"),
        )
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/install test installs them)")
    named = os.environ.get("JUPYTER_MCP_CHROMIUM")
    found = named or next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)
    if not found or not Path(found).exists():
        pytest.skip(
            "no Chromium found (apt-get install chromium; scripts/install test does it as root; "
            "or JUPYTER_MCP_CHROMIUM=/path/to/chrome)"
        )
    return found


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, str]]:
    """JupyterLab, collaborative, serving /mcp: (url, root_dir, log, chromium)."""
    chromium = chromium_or_skip()
    tmp = tmp_path_factory.mktemp("lab")
    # No "would you like news?" toast over the notebook in the screenshots.
    settings = tmp / "config" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    with jupyter_server_process(
        tmp,
        TOKEN,
        "--ServerApp.jpserver_extensions={'jupyter_mcp_server': True, 'jupyterlab': True, "
        "'jupyter_server_ydoc': True, 'jupyter_server_fileid': True, 'jupyter_lsp': False}",
        f"--SQLiteYStore.db_path={tmp / 'ystore.db'}",
        f"--YDocExtension.session_store_path={tmp / 'collaboration_sessions.json'}",
    ) as (url, root, log):
        yield url, root, log, chromium
    text = log.read_text(errors="replace")
    assert "Out-of-band" not in text, text[-4000:]
    assert "jupyter_mcp_server/" not in text, text[-4000:]


@contextlib.asynccontextmanager
async def browser(chromium: str) -> AsyncIterator[Any]:
    from playwright.async_api import Error, async_playwright

    async with async_playwright() as playwright:
        try:
            launched = await playwright.chromium.launch(executable_path=chromium)
        except Error as error:
            pytest.skip(f"Chromium at {chromium} does not start: {str(error).splitlines()[0]}")
        try:
            yield launched
        finally:
            await launched.close()


def write_notebook(path: Path, *sources: str) -> None:
    cells = [
        {
            "cell_type": "code",
            "id": f"cell-{i}",
            "metadata": {},
            "source": source,
            "outputs": [],
            "execution_count": None,
        }
        for i, source in enumerate(sources)
    ]
    kernelspec = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path.write_text(
        json.dumps(
            {
                "cells": cells,
                "metadata": {"kernelspec": kernelspec},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )


async def open_in_jupyterlab(chromium_browser: Any, url: str, path: str) -> Any:
    """A person opens `path` in JupyterLab (its own workspace, so no other tab comes back):
    the page, once the notebook shows and its kernel is idle."""
    page = await chromium_browser.new_page(viewport={"width": 1280, "height": 720})
    workspace = Path(path).stem
    await page.goto(f"{url}/lab/workspaces/{workspace}/tree/{path}?token={TOKEN}")
    await page.wait_for_selector(".jp-NotebookPanel .jp-Cell .cm-content", timeout=60_000)
    await page.wait_for_selector(
        ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000
    )
    # The indicator can show idle before the page's session is listed (a loaded machine):
    # the tests compare kernels with that session's, so wait until Jupyter lists it.
    deadline = time.monotonic() + 60
    while path not in sessions(url):
        assert time.monotonic() < deadline, f"JupyterLab never listed a session for {path}"
        await asyncio.sleep(0.2)
    # Set once: still there at the end means the page was never reloaded.
    await page.evaluate("window.openedOnce = true")
    return page


async def cells_in(page: Any) -> list[dict[str, str]]:
    """What the page shows of each cell: its prompt, its source, its outputs."""
    return await page.evaluate(  # type: ignore[no-any-return]
        """Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')).map(cell => ({
            prompt: (cell.querySelector('.jp-InputPrompt') || {}).innerText || '',
            source: Array.from(cell.querySelectorAll('.cm-line')).map(line => line.textContent).join('\\n'),
            output: (cell.querySelector('.jp-OutputArea') || {}).innerText || '',
        }))"""
    )


async def shows(page: Any, check: Any, seconds: float = 5.0) -> list[dict[str, str]]:
    """Wait until the page's cells pass `check`; answer them."""
    deadline = time.monotonic() + seconds
    while True:
        cells = await cells_in(page)
        if check(cells):
            return cells
        assert time.monotonic() < deadline, f"the page never showed it; it shows {cells}"
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def agent(url: str, message_handler: Any = None) -> AsyncIterator[Any]:
    """The official MCP client on {url}/mcp with the Jupyter token, as an agent connects."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import Implementation

    async with (
        httpx2.AsyncClient(headers=headers(), timeout=httpx2.Timeout(30, read=120)) as http,
        Client(
            streamable_http_client(f"{url}/mcp", http_client=http),
            mode="legacy",
            message_handler=message_handler,
            client_info=Implementation(name=AGENT, version="1.0"),
        ) as client,
    ):
        yield client


async def screenshot(page: Any, name: str) -> None:
    target = os.environ.get("JUPYTER_MCP_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(Path(target) / name))


async def test_the_agents_cells_appear_run_and_stream_in_the_page_on_the_pages_kernel(lab):
    url, root, _, chromium = lab
    write_notebook(root / "side.ipynb", "notes = 'the person was here first'")
    async with browser(chromium) as chromium_browser:
        page = await open_in_jupyterlab(chromium_browser, url, "side.ipynb")
        pages_kernel = sessions(url)["side.ipynb"]
        async with agent(url) as client:
            # The person opened it first: the agent runs on the page's kernel.
            used = await ok(client, "use_notebook", {"notebook_name": "side.ipynb"})
            assert used["kernel_id"] == pages_kernel

            answered = time.monotonic()
            ran = await ok(
                client,
                "insert_execute_code_cell",
                {
                    "cell_index": -1,
                    "cell_source": "answer = 6 * 7\nprint('the agent says', answer)",
                },
            )
            assert ran["status"] == "ok"
            # The output and the finished prompt arrive as separate changes of the document.
            cells = await shows(
                page,
                lambda cells: (
                    len(cells) == 2
                    and "the agent says 42" in cells[1]["output"]
                    and cells[1]["prompt"] == "[1]:"
                ),
            )
            assert time.monotonic() - answered < 5
            assert cells[1]["source"] == "answer = 6 * 7\nprint('the agent says', answer)"
            assert (
                cells[1]["prompt"] == "[1]:"
                and cells[0]["source"] == "notes = 'the person was here first'"
            )

            # The person's next cell, run in the page, sees the agent's variable: one kernel.
            await page.locator(".jp-NotebookPanel .jp-Cell").nth(0).locator(".cm-content").click()
            await page.keyboard.press("Control+End")
            await page.keyboard.type("\nprint(notes, answer + 1)")
            await page.keyboard.press("Shift+Enter")
            await shows(page, lambda cells: "the person was here first 43" in cells[0]["output"])

            # A cell that runs a while: marked running, its first line shown before it ends.
            code = "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')"
            running = asyncio.create_task(
                client.call_tool(
                    "insert_execute_code_cell", {"cell_index": -1, "cell_source": code}
                )
            )
            cells = await shows(
                page,
                lambda cells: (
                    len(cells) == 3
                    and cells[2]["prompt"] == "[*]:"
                    and "first" in cells[2]["output"]
                ),
            )
            assert not running.done() and "second" not in cells[2]["output"]
            # The agent is a named collaborator: its caret, in its colour, in the cell it runs,
            # with its name on the flag; and in the collaborators panel, with the notebook.
            running_cell = page.locator(".jp-NotebookPanel .jp-Cell").nth(2)
            await running_cell.locator(".jp-remote-cursor").wait_for(timeout=5_000)
            flag = page.locator(
                ".jp-remote-userFlag-name", has_text=f"{AGENT} ({getpass.getuser()})"
            )
            await flag.wait_for(state="attached", timeout=5_000)
            await page.click("li[data-id='jp-collaboration-panel']")
            collaborator = page.locator(
                ".jp-CollaboratorsList .jp-Collaborator", has_text=f"{AGENT} ({getpass.getuser()})"
            )
            await collaborator.wait_for(timeout=5_000)
            assert not running.done()
            await screenshot(page, "side-by-side-running.png")
            result = await running
            assert not result.is_error
            cells = await shows(
                page,
                lambda cells: (
                    cells[2]["output"] == "first\nsecond\n" and cells[2]["prompt"] == "[3]:"
                ),
            )
            await screenshot(page, "side-by-side.png")
            # A few seconds after the agent's last edit, it is no longer shown.
            await collaborator.wait_for(state="detached", timeout=(LINGER + 5) * 1000)
            assert await page.locator(".jp-remote-cursor").count() == 0
            assert await page.evaluate("window.openedOnce") is True, "the page was reloaded"
            await ok(client, "unuse_notebook", {"notebook_name": "side.ipynb"})
        # The person's kernel and session stay theirs.
        assert sessions(url)["side.ipynb"] == pages_kernel


async def test_a_person_typing_in_the_page_while_the_agent_edits_and_runs_keeps_every_keystroke(
    lab,
):
    """Typed through the browser's keyboard, a key every 10 ms or so, from before the agent's
    first edit to after its last: the page keeps every key in order (the cursor never thrown),
    the file gets them all, and the extension never reloads the file over the document. Then
    what the person types reaches the agent: its subscription hears it, its read sees it, and
    its next edit keeps it."""
    from test_protocol import Updates

    url, root, _, chromium = lab
    write_notebook(root / "typed.ipynb", "# notes: ", "x = 0")
    updates = Updates()
    async with browser(chromium) as chromium_browser, agent(url, updates) as client:
        page = await open_in_jupyterlab(chromium_browser, url, "typed.ipynb")
        await ok(client, "use_notebook", {"notebook_name": "typed.ipynb"})
        await client.subscribe_resource("notebook:///typed.ipynb")
        await page.locator(".jp-NotebookPanel .jp-Cell").nth(0).locator(".cm-content").click()
        await page.keyboard.press("Control+End")
        typed: list[str] = []
        stop = asyncio.Event()

        async def type_continuously() -> None:
            while not stop.is_set():
                key = "abcdefghij"[len(typed) % 10]
                await page.keyboard.type(key)
                typed.append(key)
                await asyncio.sleep(0.01)

        typist = asyncio.create_task(type_continuously())
        try:
            await asyncio.sleep(0.2)
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
                    {"cell_id": "cell-1", "cell_source": f"x = {step + 1}"},
                )
                await asyncio.sleep(0.5)  # the extension polls the file meanwhile
        finally:
            stop.set()
            await typist
        expected = "# notes: " + "".join(typed)
        assert len(typed) > 50, len(typed)
        cells = await shows(page, lambda cells: cells[0]["source"] == expected and len(cells) == 5)
        assert [cell["source"] for cell in cells[1:]] == [
            "x = 3",
            "print(0 * 7)",
            "print(1 * 7)",
            "print(2 * 7)",
        ]
        assert [cell["output"] for cell in cells[2:]] == ["0\n", "7\n", "14\n"]
        await eventually_on_disk(root / "typed.ipynb", [cell["source"] for cell in cells])
        await screenshot(page, "side-by-side-typing.png")

        # The person types again, nothing else happening: the agent hears of it and reads it.
        updates.uris.clear()
        await page.keyboard.type(" checked")
        expected += " checked"
        # (A notification may still be on its way for an earlier save: read after each.)
        deadline = time.monotonic() + 15
        while True:
            await updates.wait_for(
                "notebook:///typed.ipynb", seconds=max(0.1, deadline - time.monotonic())
            )
            updates.uris.clear()
            read = await ok(client, "read_notebook", {"response_format": "detailed"})
            if read["cells"][0]["source"] == expected:
                break
        # The agent's next edit keeps it, in the page and in the file.
        await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "markdown", "cell_source": "Done."},
        )
        cells = await shows(page, lambda cells: len(cells) == 6)
        assert cells[0]["source"] == expected
        await eventually_on_disk(root / "typed.ipynb", [cell["source"] for cell in cells])
        assert await page.evaluate("window.openedOnce") is True, "the page was reloaded"


async def eventually_on_disk(path: Path, sources: list[str], seconds: float = 10.0) -> None:
    """Wait until the file's cells have these sources (the extension saves a second after a change)."""

    def on_disk() -> list[str]:
        try:
            return ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]
        except ValueError:  # Jupyter rewrites the file in place: read it again
            return []

    deadline = time.monotonic() + seconds
    while on_disk() != sources:
        assert time.monotonic() < deadline, (on_disk(), sources)
        await asyncio.sleep(0.1)


async def people_of(client: Any) -> list[dict[str, Any]]:
    read = await client.read_resource("presence://")
    return json.loads(read.contents[0].text)["people"]  # type: ignore[no-any-return]


async def test_the_agent_sees_the_cell_and_text_the_person_selected(lab):
    """The person clicks into a cell and selects text in the page; the agent's presence://
    subscription hears it, presence:// names the notebook, the cell and the text, and outline
    and read_notebook say it in a line. Selecting another cell is heard again."""
    from test_protocol import Updates

    url, root, _, chromium = lab
    write_notebook(root / "focus.ipynb", "a = 1", "b = 2\nprint(b)", "c = 3")
    updates = Updates()
    async with browser(chromium) as chromium_browser, agent(url, updates) as client:
        # Nobody in it yet: nothing said.
        outlined = await client.call_tool("outline", {"notebook_name": "focus.ipynb"})
        assert "People here" not in outlined.content[0].text  # type: ignore[union-attr]
        await client.subscribe_resource("presence://")
        page = await open_in_jupyterlab(chromium_browser, url, "focus.ipynb")
        cells = page.locator(".jp-NotebookPanel .jp-Cell")
        # As a person does: click into the second cell's last line, select that line.
        await cells.nth(1).locator(".cm-line").nth(1).click()
        await page.keyboard.press("End")
        await page.keyboard.press("Shift+Home")

        async def selected(index: int, seconds: float = 10.0) -> dict[str, Any]:
            deadline = time.monotonic() + seconds
            while True:
                people = [p for p in await people_of(client) if p["cell_index"] == index]
                if people:
                    return people[0]
                assert time.monotonic() < deadline, await people_of(client)
                await asyncio.sleep(0.1)

        person = await selected(1)
        assert person["notebook"] == "focus.ipynb" and person["cell_id"] == "cell-1"
        assert person["selection"] == "print(b)", person
        assert person["current"] == "focus.ipynb", person
        await updates.wait_for("presence://")
        for tool in ("outline", "read_notebook"):
            said = (await client.call_tool(tool, {"notebook_name": "focus.ipynb"})).content[0].text  # type: ignore[union-attr]
            line = next(line for line in said.splitlines() if line.startswith("People here"))
            assert f"{person['name']} at cell 1 (cell-1), selected 'print(b)'" in line, said
        # Another cell: heard again, and said.
        updates.uris.clear()
        await cells.nth(2).locator(".cm-content").click()
        await updates.wait_for("presence://")
        person = await selected(2)
        assert person["cell_id"] == "cell-2" and person["selection"] == ""
        await screenshot(page, "person-focus")
