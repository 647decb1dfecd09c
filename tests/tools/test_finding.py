"""Finding one's way in notebooks cheaply, end to end: outline, then search, then read cells."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from conftest import ok, refused, serve, text_of


def generated(path: Path, cells: int, *, seed: str = "") -> None:
    """A notebook of `cells` cells: a chapter heading every 100, a section every 10, outputs on code."""
    notebook = nbformat.v4.new_notebook()
    for index in range(cells):
        if index % 100 == 0:
            cell = nbformat.v4.new_markdown_cell(f"# Chapter {index // 100}\n\nSome prose.")
        elif index % 10 == 0:
            cell = nbformat.v4.new_markdown_cell(f"## Section {index}\n```\n# not a heading\n```")
        else:
            cell = nbformat.v4.new_code_cell(
                f"value_{index} = {index} * 2{seed}\nprint(value_{index})"
            )
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=f"{index * 2}\n" * 40)
            ]
            if index % 97 == 0:
                cell.outputs.append(
                    nbformat.v4.new_output(
                        "error", ename="KeyError", evalue="'k'", traceback=["KeyError: 'k'"]
                    )
                )
        cell.id = f"c{index}"
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


async def test_outline_of_a_2000_cell_notebook_is_small_and_paged(workspace):
    generated(workspace / "big.ipynb", 2000)
    async with serve(workspace) as client:
        result = await client.call_tool("outline", {"notebook_name": "big.ipynb"})
        assert not result.is_error, text_of(result)
        text = text_of(result)
        structured = result.structured_content
        # A few hundred tokens (about four characters each), text and structure together.
        assert len(text) < 2500, len(text)
        # The structured part says it all in its fields (for clients that hand their model only
        # that part), without a ``rendered`` copy of the text.
        assert "rendered" not in structured
        assert len(json.dumps(structured)) < 5000, len(json.dumps(structured))
        assert structured["cell_count"] == 2000 and structured["next_start_index"] == 20
        # 20 chapters: the sections folded first; no fenced comment taken for a heading.
        assert [h["text"] for h in structured["headings"]] == [f"Chapter {i}" for i in range(20)]
        assert structured["headings_folded"] == 180
        assert "# Chapter 3 [300]" in text and "not a heading" not in text
        assert "1 c c1 value_1 = 1 * 2 → stdout" in text
        page = await ok(
            client, "outline", {"notebook_name": "big.ipynb", "start_index": 1990, "limit": 20}
        )
        assert [c["index"] for c in page["cells"]] == list(range(1990, 2000)) and page[
            "next_start_index"
        ] is None
        cell = next(
            c
            for c in (
                await ok(
                    client,
                    "outline",
                    {"notebook_name": "big.ipynb", "start_index": 194, "limit": 1},
                )
            )["cells"]
        )
        assert cell["outputs"][1] == "error KeyError" and cell["outputs"][0].startswith("stdout ")
        await refused(
            client,
            "outline",
            {"notebook_name": "big.ipynb", "start_index": 2001},
            "invalid_argument",
        )


async def test_search_finds_sources_markdown_and_outputs_across_the_workspace(workspace):
    generated(workspace / "a.ipynb", 300)
    (workspace / "sub").mkdir()
    generated(workspace / "sub" / "b.ipynb", 50, seed=" + needle_7")
    (workspace / "script.py").write_text(
        "# %%\nimport os\n\n# %% [markdown]\n# A needle_7 in prose\n"
    )
    (workspace / "broken.ipynb").write_text("{ not json")
    (workspace / "notes.txt").write_text("needle_7")
    async with serve(workspace) as client:
        found = await ok(client, "search_notebooks", {"query": "needle_7"})
        assert found["total"] == 46 and found["skipped"] == 1 and found["notebooks_searched"] == 3
        assert (
            found["complete"] is True and found["next_offset"] == 20 and len(found["matches"]) == 20
        )
        first = found["matches"][0]
        assert first == {
            "notebook": "script.py",
            "cell_id": first["cell_id"],
            "cell_index": 1,
            "where": "source",
            "line": 1,
            "text": "A needle_7 in prose",
        }
        assert {m["notebook"] for m in found["matches"][1:]} == {"sub/b.ipynb"}
        rest = await ok(client, "search_notebooks", {"query": "needle_7", "offset": 40})
        assert len(rest["matches"]) == 6 and rest["next_offset"] is None

        # Outputs too, and a glob narrows the files.
        outputs = await ok(
            client, "search_notebooks", {"query": "^398$", "regex": True, "glob": "a.ipynb"}
        )
        assert outputs["total"] == 40 and {
            (m["cell_id"], m["where"]) for m in outputs["matches"]
        } == {("c199", "output 0")}
        errors = await ok(
            client, "search_notebooks", {"query": "KeyError", "glob": "*.ipynb", "limit": 100}
        )
        assert {m["cell_id"] for m in errors["matches"]} == {"c97", "c194", "c291"}
        markdown = await ok(
            client,
            "search_notebooks",
            {"query": r"^## Section 2\d0$", "regex": True, "glob": "a.ipynb"},
        )
        assert [m["cell_id"] for m in markdown["matches"]] == [
            "c210",
            "c220",
            "c230",
            "c240",
            "c250",
            "c260",
            "c270",
            "c280",
            "c290",
        ]

        bad = await refused(
            client, "search_notebooks", {"query": "value_(1", "regex": True}, "invalid_argument"
        )
        assert (
            "missing )" in text_of(bad)
            and "position 6" in text_of(bad)
            and "regex=false" in text_of(bad)
        )


async def test_a_catastrophic_pattern_cannot_hang_the_server(workspace):
    import time

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("x = '" + "a" * 60 + "!'")]
    nbformat.write(notebook, workspace / "evil.ipynb")
    async with serve(workspace) as client:
        started = time.monotonic()
        stopped = await refused(
            client, "search_notebooks", {"query": "(a+)+$", "regex": True}, "timeout"
        )
        assert time.monotonic() - started < 15
        assert "simplify it" in text_of(stopped)
        # The server answers at once afterwards.
        started = time.monotonic()
        assert (await ok(client, "search_notebooks", {"query": "aaa!"}))["total"] == 1
        assert time.monotonic() - started < 3


async def test_a_repeated_search_sees_every_change_made_by_another_program(workspace):
    """Texts are kept between searches, never past a change: a rewrite of the same size within
    the same clock tick as the last write, a rewrite of a file kept for long, a deletion, a new
    file are all seen by the next search."""
    import os
    import time

    generated(workspace / "a.ipynb", 30)
    generated(workspace / "b.ipynb", 30)
    async with serve(workspace) as client:
        a = workspace / "a.ipynb"
        now = time.time_ns()
        for path in (a, workspace / "b.ipynb"):
            os.utime(path, ns=(now, now))  # written just now: a timestamp that proves nothing yet
        assert (await ok(client, "search_notebooks", {"query": "value_17 ="}))["total"] == 2
        # Another program replaces a's source text with one of the same length in the same tick.
        before = a.stat()
        a.write_text(a.read_text().replace("value_17 = 17", "renamed_ = 17"))
        os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert a.stat().st_size == before.st_size and a.stat().st_mtime_ns == before.st_mtime_ns
        found = await ok(client, "search_notebooks", {"query": "value_17 ="})
        assert [m["notebook"] for m in found["matches"]] == ["b.ipynb"]
        assert (await ok(client, "search_notebooks", {"query": "renamed_ ="}))["total"] == 1
        # Files last written long ago are kept; a rewrite of one (same size, a new time) is seen.
        old = now - 60_000_000_000
        for path in (a, workspace / "b.ipynb"):
            os.utime(path, ns=(old, old))
        assert (await ok(client, "search_notebooks", {"query": "value_18 ="}))["total"] == 2
        b = workspace / "b.ipynb"
        b.write_text(b.read_text().replace("value_18 = 18", "changed = 18"))
        found = await ok(client, "search_notebooks", {"query": "value_18 ="})
        assert [m["notebook"] for m in found["matches"]] == ["a.ipynb"]
        os.remove(b)
        generated(workspace / "c.ipynb", 20)
        found = await ok(client, "search_notebooks", {"query": "value_17 ="})
        assert [m["notebook"] for m in found["matches"]] == ["c.ipynb"] and found[
            "notebooks_searched"
        ] == 2


async def test_search_answers_the_ids_every_other_tool_uses(workspace):
    """Cells without ids on disk (an older notebook) get ids in the store; a match names those,
    so that read_cell finds the cell, search after search."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("first = 1"),
        nbformat.v4.new_code_cell("needle = 2"),
    ]
    data = json.loads(nbformat.writes(notebook))
    data["nbformat_minor"] = 4
    for cell in data["cells"]:
        del cell["id"]
    (workspace / "old.ipynb").write_text(json.dumps(data))
    async with serve(workspace) as client:
        ids = set()
        for _ in range(2):
            (match,) = (await ok(client, "search_notebooks", {"query": "needle"}))["matches"]
            cell = await ok(
                client, "read_cell", {"notebook_name": "old.ipynb", "cell_id": match["cell_id"]}
            )
            assert cell["source"] == "needle = 2" and cell["cell_index"] == 1
            ids.add(match["cell_id"])
        assert len(ids) == 1


def _one_cell(path: Path, source: str, *, cell_id: str = "only") -> None:
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.id = cell_id
    notebook.cells = [cell]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


async def test_search_reaches_every_depth_and_says_exactly_what_it_searched(workspace):
    """Notebooks several folders down (another project's tests) are searched, a glob naming one
    exactly finds it, a symlink loop is walked once, and environments are not walked at all."""
    import os

    _one_cell(workspace / "top.ipynb", "needle = 'top'")
    _one_cell(workspace / "project" / "tests" / "files" / "a.ipynb", "needle = 'four down'")
    deep = workspace.joinpath(*[f"level{n}" for n in range(12)], "deep.ipynb")
    _one_cell(deep, "needle = 'twelve down'")
    os.symlink("..", workspace / "project" / "tests" / "loop")  # project/tests/loop -> project
    venv = workspace / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    _one_cell(venv / "lib" / "packaged.ipynb", "needle = 'inside an environment'")
    _one_cell(workspace / "web" / "node_modules" / "pkg" / "demo.ipynb", "needle = 'a package'")
    async with serve(workspace) as client:
        found = await ok(client, "search_notebooks", {"query": "needle ="})
        assert found["complete"] is True and found.get("stopped") is None
        assert sorted(m["notebook"] for m in found["matches"]) == sorted(
            ["top.ipynb", "project/tests/files/a.ipynb", deep.relative_to(workspace).as_posix()]
        )
        assert found["notebooks_searched"] == 3 and found["skipped"] == 0
        exact = await ok(
            client, "search_notebooks", {"query": "needle", "glob": "project/tests/files/a.ipynb"}
        )
        assert (
            exact["notebooks_searched"] == 1 and exact["total"] == 1 and exact["complete"] is True
        )
        (match,) = exact["matches"]
        cell = await ok(
            client, "read_cell", {"notebook_name": match["notebook"], "cell_id": match["cell_id"]}
        )
        assert cell["source"] == "needle = 'four down'"


async def test_a_search_cut_short_says_which_limit_cut_it(workspace):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("\n".join(f"hit_{n} = {n}" for n in range(1200)))]
    nbformat.write(notebook, workspace / "many.ipynb")
    async with serve(workspace) as client:
        found = await ok(client, "search_notebooks", {"query": "hit_"})
        assert found["complete"] is False and found["total"] == 1000
        assert "1,000-match limit" in found["stopped"]
        result = await client.call_tool("search_notebooks", {"query": "hit_"})
        assert "incomplete, stopped by the 1,000-match limit" in text_of(result)


async def test_invalid_notebooks_are_skipped_and_counted_and_nothing_reaches_stderr(
    workspace, tmp_path
):
    """Duplicate ids, an illegal id and an invalid version 3 notebook: none is searched under ids
    no other tool accepts (read_notebook refuses all three); each is skipped and counted, search
    after search, and nbformat's dump of the invalid v3 document never reaches the server's stderr."""
    import sys

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from rpc import environment

    def cells_with_ids(ids: list[str]) -> dict:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(f"needle_{n} = 1") for n in range(len(ids))]
        data = json.loads(nbformat.writes(notebook))
        for cell, cell_id in zip(data["cells"], ids, strict=True):
            cell["id"] = cell_id
        return data

    (workspace / "duplicate.ipynb").write_text(json.dumps(cells_with_ids(["same", "same"])))
    (workspace / "illegal.ipynb").write_text(json.dumps(cells_with_ids(["has space", "ok"])))
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": ""},
        "worksheets": [
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "input": "needle_v3 = 1",
                        "language": "python",
                        "outputs": [],
                        "collapsed": False,
                        "metadata": {},
                        "bogus_key": "x" * 500,
                    }
                ],
                "metadata": {},
            }
        ],
    }
    (workspace / "old_invalid.ipynb").write_text(json.dumps(v3))
    _one_cell(workspace / "fine.ipynb", "needle_fine = 1")
    log = tmp_path / "server.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jupyter_mcp_server", "start", "--workspace-root", str(workspace)],
        env=environment(),
        cwd=str(workspace),
    )
    with log.open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            for name in ("duplicate.ipynb", "illegal.ipynb", "old_invalid.ipynb"):
                await refused(client, "read_notebook", {"notebook_name": name}, "invalid_argument")
            before = log.read_text()
            for _ in range(2):
                found = await ok(client, "search_notebooks", {"query": "needle_"})
                assert [m["notebook"] for m in found["matches"]] == ["fine.ipynb"], found["matches"]
                assert found["notebooks_searched"] == 1 and found["skipped"] == 3
                result = await client.call_tool("search_notebooks", {"query": "needle_"})
                assert "duplicate.ipynb (not a valid notebook)" in text_of(result)
            said = log.read_text()[len(before) :]
    assert "bogus_key" not in said and "Notebook JSON" not in said, said[-2000:]


def _deep_notebook(path: Path) -> None:
    """2,000 cells: 20 chapters of 10 sections, each section with 3 subsections (800 headings)."""
    notebook = nbformat.v4.new_notebook()
    for index in range(2000):
        if index % 100 == 0:
            cell = nbformat.v4.new_markdown_cell(f"# Chapter {index // 100}")
        elif index % 10 == 0:
            cell = nbformat.v4.new_markdown_cell(f"## Section {index}")
        elif index % 10 in (3, 6, 8):
            cell = nbformat.v4.new_markdown_cell(f"prose\n\n### Part {index}")
        else:
            cell = nbformat.v4.new_code_cell(f"x = {index}")
        cell.id = f"c{index}"
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


async def test_outline_reaches_every_heading_of_a_2000_cell_notebook(workspace):
    """Each heading shown says how many are folded under it; section expands one, its own
    subsections folded the same way and expandable in turn; headings past the 30 shown
    continue at start_index; every one of the 800 headings is reached that way."""
    import re

    _deep_notebook(workspace / "deep.ipynb")
    async with serve(workspace) as client:
        top = await client.call_tool("outline", {"notebook_name": "deep.ipynb"})
        text = text_of(top)
        assert "# Chapter 3 [300] +39" in text, text
        assert "section=" in text
        chapter = await client.call_tool("outline", {"notebook_name": "deep.ipynb", "section": 300})
        said = text_of(chapter)
        structured = chapter.structured_content
        # The parts before the first section are the chapter's own: listed beside its sections.
        assert [h["cell_index"] for h in structured["headings"]] == [
            300,
            303,
            306,
            308,
            *range(310, 400, 10),
        ], said
        assert "## Section 350 [350] +3" in said and structured["cells"][0]["index"] == 300
        section = await ok(client, "outline", {"notebook_name": "deep.ipynb", "section": 350})
        assert [h["text"] for h in section["headings"]] == [
            "Section 350",
            "Part 353",
            "Part 356",
            "Part 358",
        ]
        assert section["headings_folded"] == 0

        # Walk: every heading is reached by expanding sections and following start_index.
        reached: set[int] = set()

        async def visit(arguments: dict) -> None:
            result = await client.call_tool("outline", {"notebook_name": "deep.ipynb", **arguments})
            assert not result.is_error, text_of(result)
            body = text_of(result)
            for heading in result.structured_content["headings"]:
                reached.add(heading["cell_index"])
            for index, _folded_under in re.findall(r"\[(\d+)\] \+(\d+)$", body, re.MULTILINE):
                if int(index) != arguments.get("section"):
                    await visit({"section": int(index)})
            if more := re.search(r"start_index=(\d+)\.\)", body):
                await visit({**arguments, "start_index": int(more.group(1))})

        await visit({})
        assert len(reached) == 800

        bad = await refused(
            client, "outline", {"notebook_name": "deep.ipynb", "section": 301}, "invalid_argument"
        )
        assert "holds no heading" in text_of(bad) and "[300]" in text_of(bad)
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert (
            "search_notebooks" in tools["outline"].description
            and "read_cell" in tools["outline"].description
        )


async def test_a_page_of_cells_names_the_headings_inside_it(workspace):
    _deep_notebook(workspace / "deep.ipynb")
    async with serve(workspace) as client:
        for response_format in ("brief", "detailed"):
            page = await client.call_tool(
                "read_notebook",
                {
                    "notebook_name": "deep.ipynb",
                    "start_index": 395,
                    "limit": 20,
                    "response_format": response_format,
                },
            )
            lines = text_of(page).splitlines()
            assert lines[1] == (
                "Headings in these cells: ### Part 396 [396]; ### Part 398 [398]; # Chapter 4 [400]; "
                "### Part 403 [403]; ### Part 406 [406]; ### Part 408 [408]; ## Section 410 [410]; ### Part 413 [413]"
            ), lines[:3]
