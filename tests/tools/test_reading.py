"""What a model reads of real outputs, end to end: real kernels, the real server, the official client.

A result carries at most its inline budget; what it leaves out is reachable
by reference, page by page; and outputs read as a person would see them.
"""

from __future__ import annotations

import base64
import json
import re

from conftest import error_code, ok, refused, serve, text_of
from mcp.types import ImageContent, ResourceLink, TextContent

MARKER = re.compile(
    r"\[jupyter-mcp-server: (\d+) bytes over (\d+) line\(s\) left out here, from line (\d+) \(0-based\); read_output\(uri='([^']+)', offset=(\d+)\)"
)


def output_texts(result) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def read_whole(client, uri: str) -> str:
    """Every line of an output, through read_output, page after page."""
    pages, offset = [], 0
    while offset is not None:
        page = await client.call_tool(
            "read_output", {"uri": uri, "offset": offset, "limit": 100_000}
        )
        assert not page.is_error, text_of(page)
        page_text = page.content[0].text
        pages.append(page_text[: page_text.rindex("[jupyter-mcp-server: lines")])
        returned, offset = (
            page.structured_content["returned"],
            page.structured_content["next_offset"],
        )
        assert returned > 0 and len(page_text) <= 16_384 + 200
    return "".join(pages)


async def test_a_long_output_is_cut_to_the_budget_and_read_back_by_reference(workspace):
    lines = "".join(f"{i}\n" for i in range(200_000))
    code = "print('\\n'.join(str(i) for i in range(200_000)))"
    async with serve(workspace, "--max-output-bytes", "4000000") as client:
        await ok(client, "use_notebook", {"notebook_name": "long.ipynb", "mode": "create"})

        # Scratch code: its outputs are kept a while among the scratch outputs.
        result = await client.call_tool("execute_code", {"code": code})
        assert not result.is_error, text_of(result)
        assert result.structured_content["truncation"]["truncated"] is False
        (shown,) = output_texts(result)
        assert len(shown) <= 16_384
        assert shown.startswith("0\n1\n2\n") and shown.endswith("199998\n199999\n")
        left_bytes, left_lines, first, uri, offset = MARKER.search(shown).groups()
        assert (
            uri.startswith("scratch-output:///") and first == offset and int(left_bytes) > 1_000_000
        )
        head = shown[: shown.index("\n[jupyter-mcp-server:")]
        assert int(first) == head.count("\n") and int(left_lines) == 200_000 - int(
            first
        ) - shown.rsplit("]\n", 1)[1].count("\n")
        assert [b.uri for b in result.content if isinstance(b, ResourceLink)] == [uri]
        assert await read_whole(client, uri) == lines
        # By bytes too, and the resource whole.
        page = await ok(
            client, "read_output", {"uri": uri, "offset": 10, "limit": 6, "by": "bytes"}
        )
        assert (
            page["returned"] == 6
            and page["total_bytes"] == len(lines)
            and page["next_offset"] == 16
        )
        assert (await client.read_resource(uri)).contents[0].text == lines
        # A byte page never splits a character: both ends move back to a character's start.
        accents = await client.call_tool("execute_code", {"code": "print('é' * 30_000)"})
        accent_uri = next(b.uri for b in accents.content if isinstance(b, ResourceLink))
        page = await client.call_tool(
            "read_output", {"uri": accent_uri, "offset": 1, "limit": 5, "by": "bytes"}
        )
        assert page.content[0].text.startswith("éé\n[jupyter-mcp-server: bytes 0-3 of 60001")
        assert (
            page.structured_content["offset"] == 0 and page.structured_content["next_offset"] == 4
        )

        # A stored cell: a smaller budget asked for, the rest in notebook-output:.
        result = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": code, "max_output_chars": 2000},
        )
        (shown,) = output_texts(result)
        assert len(shown) <= 2000 and shown.endswith("199999\n")
        uri = MARKER.search(shown).group(4)
        assert uri.startswith("notebook-output:///long.ipynb?cell=")
        page = await client.call_tool("read_output", {"uri": uri, "offset": 150_000, "limit": 3})
        assert page.content[0].text.startswith("150000\n150001\n150002\n")
        read = await client.call_tool("read_cell", {"cell_index": 0, "max_output_chars": 1024})
        assert sum(len(t) for t in output_texts(read)[1:]) <= 1024

        # Budgets out of range are refused before anything runs.
        for bad in (1023, 262_145):
            refusal = await refused(
                client,
                "execute_code",
                {"code": "print(1)", "max_output_chars": bad},
                "invalid_argument",
            )
            assert "1024" in text_of(refusal) and "262144" in text_of(refusal)
        await refused(
            client, "read_output", {"uri": "scratch-output:///gone?output=0"}, "not_found"
        )
        await refused(client, "read_output", {"uri": "file:///etc/passwd"}, "invalid_argument")


async def test_a_single_huge_print_keeps_its_head_and_tail(workspace):
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "huge.ipynb", "mode": "create"})
        result = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": "print('a' + 'x' * 5_000_000 + 'z')"},
        )
        assert not result.is_error, text_of(result)
        truncation = result.structured_content["truncation"]
        stored = json.loads((workspace / "huge.ipynb").read_text())["cells"][0]["outputs"]
        (output,) = stored
        text = "".join(output["text"])
        assert text.startswith("axxx") and text.endswith("xxxz\n")
        assert "bytes of this output left out here by --max-output-bytes" in text
        kept = len(
            json.dumps(
                {"output_type": "stream", "name": "stdout", "text": text}, separators=(",", ":")
            ).encode()
        )
        whole = len(
            json.dumps(
                {"output_type": "stream", "name": "stdout", "text": "a" + "x" * 5_000_000 + "z\n"},
                separators=(",", ":"),
            ).encode()
        )
        assert kept <= 1_048_576
        assert truncation == {"truncated": True, "omitted_blocks": 0, "omitted_bytes": whole - kept}
        (shown,) = output_texts(result)
        assert shown.startswith("axxx") and shown.endswith("xxxz\n") and len(shown) <= 16_384
        # A line longer than a page is read from its start, and said to be read by bytes.
        uri = next(b.uri for b in result.content if isinstance(b, ResourceLink))
        page = await client.call_tool("read_output", {"uri": uri})
        assert (
            page.structured_content["returned"] == 1 and page.structured_content["next_offset"] == 1
        )
        assert (
            "longer than a page; read it whole with by='bytes', offset=0]" in page.content[0].text
        )
        assert len(page.content[0].text) < 16_384 + 300
        later = await ok(
            client, "read_output", {"uri": uri, "by": "bytes", "offset": 500_000, "limit": 100}
        )
        assert later["returned"] == 100 and later["total_bytes"] == len(text.encode())


async def test_outputs_read_as_a_person_sees_them(workspace):
    async with serve(workspace, env={"JUPYTER_MCP_INLINE_IMAGE_BYTES": "100000"}) as client:
        await ok(client, "use_notebook", {"notebook_name": "look.ipynb", "mode": "create"})

        frame = await client.call_tool(
            "insert_execute_code_cell",
            {
                "cell_index": -1,
                "cell_source": "import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3.5, 19.0]})",
            },
        )
        assert output_texts(frame) == [
            "Table: 2 rows × 2 columns\n|  | city | temp |\n| --- | --- | --- |\n| 0 | Oslo | 3.5 |\n| 1 | Lima | 19.0 |"
        ]
        # The notebook keeps the raw bundle.
        stored = json.loads((workspace / "look.ipynb").read_text())["cells"][0]["outputs"][0][
            "data"
        ]
        assert "text/html" in stored and "text/plain" in stored

        # An error deep inside a library: the user's line, then the innermost frames, folded where they can be.
        failed = await client.call_tool(
            "execute_code", {"code": "import pandas as pd\npd.read_csv('/nowhere/at/all.csv')"}
        )
        assert error_code(failed) == "execution_error"
        shown = "\n".join(output_texts(failed))
        assert "Cell In[" in shown and "----> 2 pd.read_csv('/nowhere/at/all.csv')" in shown
        assert shown.rstrip().endswith(
            "FileNotFoundError: [Errno 2] No such file or directory: '/nowhere/at/all.csv'"
        )

        bar = await client.call_tool(
            "execute_code",
            {
                "code": "from tqdm import tqdm\nimport time\nfor _ in tqdm(range(40), mininterval=0, ascii=True):\n    time.sleep(0.005)"
            },
        )
        (shown,) = output_texts(bar)
        assert shown.count("\n") <= 1 and "40/40" in shown and "100%" in shown

        code = (
            "from PIL import Image\nimport io, random\nfrom IPython.display import display, Image as Shown\n"
            "random.seed(1)\nimage = Image.new('RGB', (1800, 1200))\n"
            "image.putdata([(x % 256, y % 256, (x * y) % 256) for y in range(1200) for x in range(1800)])\n"
            "buffer = io.BytesIO()\nimage.save(buffer, 'PNG')\ndisplay(Shown(data=buffer.getvalue()))"
        )
        picture = await client.call_tool(
            "insert_execute_code_cell", {"cell_index": -1, "cell_source": code}
        )
        assert not picture.is_error, text_of(picture)
        (small,) = [b for b in picture.content if isinstance(b, ImageContent)]
        assert len(small.data) <= 100_000
        assert any("shrunk from 1800x1200" in t for t in output_texts(picture))
        (original,) = [b for b in picture.content if isinstance(b, ResourceLink)]
        whole = (await client.read_resource(original.uri)).contents
        blob = next(c.blob for c in whole if c.mime_type == "image/png")
        assert base64.b64decode(blob)[:8] == b"\x89PNG\r\n\x1a\n" and len(blob) > 100_000
        assert error_code(picture) is None


async def test_outside_jupyterlab_nobody_is_present_and_nothing_is_said(workspace):
    """presence:// answers no people where no JupyterLab is (the CLI), a subscription to it is
    accepted, and outline and read_notebook add no line (the browser test shows a person)."""
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "alone.ipynb", "mode": "create"})
        read = await client.read_resource("presence://")
        assert json.loads(read.contents[0].text) == {"people": []}
        await client.subscribe_resource("presence://")
        for tool in ("outline", "read_notebook"):
            said = text_of(await client.call_tool(tool, {"notebook_name": "alone.ipynb"}))
            assert "People here" not in said, said
        await client.unsubscribe_resource("presence://")


async def test_a_read_page_cells_are_the_cell_summary_model_dumped(workspace):
    """read_notebook builds each cell's wire form as a dict (models.cell_summary): every kind
    of cell must be exactly what the CellSummary model in its output schema dumps."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

    from jupyter_mcp_server._schemas.models import CellSummary, NotebookRead

    notebook = new_notebook(
        cells=[
            new_markdown_cell("# Title"),
            new_code_cell(
                "1 + 1",
                execution_count=1,
                outputs=[new_output("execute_result", {"text/plain": "2"}, execution_count=1)],
            ),
            new_code_cell(
                "print('x' * 200_000)",
                execution_count=2,
                outputs=[new_output("stream", name="stdout", text="x" * 200_000 + "\n")],
            ),
            new_code_cell(""),
            new_raw_cell("raw text"),
        ]
    )
    nbformat.write(notebook, workspace / "kinds.ipynb")
    async with serve(workspace) as client:
        for response_format in ("detailed", "brief"):
            result = await client.call_tool(
                "read_notebook",
                {"notebook_name": "kinds.ipynb", "response_format": response_format, "limit": 0},
            )
            assert not result.is_error, text_of(result)
            page = result.structured_content
            cells = page["cells"]
            assert len(cells) == 5
            if response_format == "detailed":
                assert "outputs_cut" in cells[2] and "outputs_cut" not in cells[1]
            for cell in cells:
                dumped = CellSummary.model_validate(cell).model_dump()
                assert cell == dumped and list(cell) == list(dumped)
            whole = NotebookRead.model_validate(page).model_dump()
            assert [key for key in page if key in whole] == list(whole)
