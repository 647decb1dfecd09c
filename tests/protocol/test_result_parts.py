"""Each part of a result reads the same, whichever one a client hands its model.

Claude Code and Codex hand their model only ``structuredContent`` (as JSON
text) when a result has one; Gemini CLI, opencode and Qwen Code only the
``content``; Copilot CLI both, its blocks joined with nothing between; on an
error Gemini CLI and Qwen Code hand the whole result. So: a success's
structured part carries ``rendered`` (what the content says), no part ever
carries an image's base64 or raw HTML, each part stays within the inline
budget whatever a cell printed, and an error carries its traceback at most
twice. Real server over stdio, real kernel, the official client.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ok, serve, text_of, without_rendered, write_notebook

#: How a PNG's base64 starts: never text in any part.
PNG_BASE64 = "iVBORw0KGgo"
#: The default inline budget (characters), and room for a result's own fields and markers.
BUDGET = 16_384
OVERHEAD = 4_096

#: A 64x64 PNG made in the kernel (its base64 must not be in the source, which parts carry).
PNG = (
    "import struct, zlib, IPython.display as d\n"
    "def chunk(kind, body):\n"
    "    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))\n"
    "rows = b''.join(b'\\x00' + bytes([200, 30, 30]) * 64 for _ in range(64))\n"
    "png = (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 64, 64, 8, 2, 0, 0, 0))\n"
    "       + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))\n"
)
PLOT = PNG + "d.display(d.Image(png))\n"
#: An HTML table, its tags made in the kernel (the source, which parts carry, holds none).
TABLE = (
    "import IPython.display as d\n"
    "t = lambda name, body: '{}{}>{}{}/{}>'.format(chr(60), name, body, chr(60), name)\n"
    "head = t('thead', t('tr', t('th', 'name') + t('th', 'score')))\n"
    "body = t('tbody', t('tr', t('td', 'ada') + t('td', '3')))\n"
    "d.display(d.HTML(t('table', head + body)))\n"
)


def as_json(result) -> str:
    """The whole result as a client that hands it all would (Gemini CLI on an error)."""
    return result.model_dump_json(by_alias=True, exclude_none=True)


def parts(result) -> tuple[str, str]:
    """(the content's texts joined with nothing between, the structured part as JSON)."""
    joined = "".join(getattr(block, "text", "") for block in result.content)
    return joined, json.dumps(result.structured_content or {}, ensure_ascii=False)


async def test_each_part_says_what_code_did(workspace: Path) -> None:
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "t.ipynb", "mode": "create"})
        ran = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "print('hello')\n6*7+1000"},
        )
        joined, structured = parts(ran)
        assert "hello" in joined and "1042" in joined
        # Blocks joined with nothing between still read as two lines.
        assert "hello\n1042" in joined
        assert ran.structured_content["rendered"] == "hello\n1042"
        without_rendered(ran)

        value = await client.call_tool("execute_code", {"code": "6 * 7 + 1000"})
        assert value.structured_content["rendered"] == "1042"

        table = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": TABLE}
        )
        joined, structured = parts(table)
        for part in (joined, structured):
            assert "ada" in part and "score" in part
            assert "<table" not in part and "<td" not in part

        plot = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": PLOT}
        )
        assert [block.type for block in plot.content].count("image") == 1
        _, structured = parts(plot)
        assert PNG_BASE64 not in structured
        assert "image/png image" in plot.structured_content["rendered"]

        # A detailed read: outputs in the text too, never base64 or HTML in the JSON.
        read = await client.call_tool("read_notebook", {"response_format": "detailed"})
        joined, structured = parts(read)
        for part in (joined, structured):
            assert "hello" in part and "1042" in part and "ada" in part
            assert PNG_BASE64 not in part and "<table" not in part
        cells = without_rendered(read)["cells"]
        assert cells[2]["outputs_cut"][0]["mime_type"] == "image/png"
        assert cells[1]["outputs_cut"][0]["mime_type"] == "text/html"
        cell = await client.call_tool("read_cell", {"cell_index": 2})
        assert PNG_BASE64 not in parts(cell)[1]

        outline = await client.call_tool("outline", {})
        assert "rendered" not in outline.structured_content  # its fields say it all (below)
        assert "t.ipynb" in text_of(outline)
        assert outline.structured_content["notebook"] == "t.ipynb"


async def test_an_outline_says_in_its_fields_all_its_text_says(workspace: Path) -> None:
    """Claude Code and Codex read an outline's JSON alone: the notebook, the cell counts, each
    heading's folded count and where more headings go on are fields, not only text (so it
    needs no ``rendered`` copy)."""
    import nbformat
    from nbformat import v4

    cells = [v4.new_markdown_cell("# Book"), v4.new_code_cell("x = 1")]
    for chapter in range(40):
        cells.append(v4.new_markdown_cell(f"## Chapter {chapter}"))
        cells += [v4.new_markdown_cell(f"### Part {chapter}.{part}") for part in range(2)]
    nbformat.write(v4.new_notebook(cells=cells), str(workspace / "book.ipynb"))
    async with serve(workspace) as client:
        outline = await client.call_tool("outline", {"notebook_name": "book.ipynb", "limit": 3})
        assert not outline.is_error, text_of(outline)
        structured = outline.structured_content
        text = text_of(outline)
        assert "rendered" not in structured
        without_rendered(outline, "outline")
        assert structured["notebook"] == "book.ipynb" and "'book.ipynb'" in text
        assert structured["cell_types"] == {"markdown": 121, "code": 1}
        assert "121 markdown, 1 code" in text or "1 code, 121 markdown" in text
        shown = {
            int(line.split("[")[1].split("]")[0]): int(line.rsplit("+", 1)[1])
            for line in text.splitlines()
            if line.lstrip().startswith("#") and "] +" in line
        }
        assert shown, text  # some headings fold others under them
        assert {
            heading["cell_index"]: heading["folded_below"]
            for heading in structured["headings"]
            if "folded_below" in heading
        } == shown
        assert structured["headings_folded"] == sum(shown.values())
        more = int(text.split("More headings from cell ")[1].split(":")[0])
        assert structured["more_headings_from"] == more
        assert [row["index"] for row in structured["cells"]] == [0, 1, 2]
        assert structured["next_start_index"] == 3 and "start_index=3" in text


async def test_an_error_carries_its_traceback_at_most_twice(workspace: Path) -> None:
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "e.ipynb", "mode": "create"})
        failed = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "print('before')\ndef f():\n    return [1][3]\nf()"},
        )
        assert failed.is_error
        joined, _ = parts(failed)
        # The cell's own failing line, and the message run into nothing.
        assert "return [1][3]" in joined and "traceback).\nbefore\nIndexError" in joined
        # Its structured part says what the content says but the traceback, which ``error`` holds
        # (a client that hands the model only that part, Codex, still reads what came before).
        said = failed.structured_content["rendered"]
        assert "before" in said and "see the traceback" in said and "return [1][3]" not in said
        # A client handing the whole result reads the traceback twice at most.
        whole = as_json(failed)
        once = joined.count("return [1][3]")
        assert once >= 1 and whole.count("return [1][3]") <= 2 * once


async def test_a_runs_failing_cell_carries_its_traceback_at_most_twice(workspace: Path) -> None:
    """A run's failing cell: its traceback is in the content and in the structured part's
    ``cells[i].output``, so ``rendered`` points there instead of holding it a third time."""
    cells = [
        "def snapshot(record):\n    return json.dumps(record)",
        "import json, datetime\nresult = snapshot({'when': datetime.datetime(2024, 1, 1)})",
    ]
    write_notebook(workspace / "fix.ipynb", cells)
    async with serve(workspace, "--toolsets", "runs") as client:
        failed = await client.call_tool("run_cells", {"notebook_name": "fix.ipynb", "cells": "all"})
        assert failed.is_error
        joined, _ = parts(failed)
        assert "result = snapshot(" in joined and "TypeError" in joined
        said = failed.structured_content["rendered"]
        assert "result = snapshot(" not in said and "[cells[1].output, as this" in said
        assert "result = snapshot(" in failed.structured_content["cells"][1]["output"]
        whole = as_json(failed)
        assert whole.count("result = snapshot(") <= 2 * joined.count("result = snapshot(")


async def test_no_part_carries_more_than_the_budget(workspace: Path) -> None:
    """5 MB printed, 2 MB of HTML and a large image: every part stays within the budget."""
    code = PNG + (
        "print('x' * 5_000_000)\n"
        "d.display(d.HTML(chr(60) + 'p>' + 'y' * 2_000_000 + chr(60) + '/p>'))\n"
        "d.display({'text/plain': 'z' * 3_000_000}, raw=True)\n"
        "d.display(d.Image(png))\n"
    )
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "big.ipynb", "mode": "create"})
        ran = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": code}
        )
        assert not ran.is_error, text_of(ran)
        for tool, arguments in (
            ("insert_execute_code_cell", None),
            ("read_cell", {"cell_index": 0}),
            ("read_notebook", {"response_format": "detailed"}),
            ("execute_code", {"code": code}),
        ):
            result = ran if arguments is None else await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, text_of(result))
            joined, structured = parts(result)
            assert len(joined) <= BUDGET + OVERHEAD, (tool, len(joined))
            assert len(structured) <= 2 * BUDGET + OVERHEAD, (tool, len(structured))
            assert PNG_BASE64 not in joined + structured, tool
            assert "<p>" not in joined + structured, tool
    # The notebook keeps what the storage limits allow: the budget is about what a model is handed.
    stored = json.loads((workspace / "big.ipynb").read_text())["cells"][0]["outputs"]
    assert len("".join(stored[0]["text"])) > 1_000_000
