"""What a model reads of everyday outputs, end to end: real kernels, the real server, the official client.

A ``text/plain`` that is only an object's repr loses to the type that holds
the content; a DataFrame's shape is pandas' own; a chart reads as what it
shows and a widget says it is one; a traceback keeps the agent's own line
however deep the library it failed in, in every result that shows an error;
and bad input (malformed, deep, huge, invalid) reads as something bounded.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import error_code, ok, serve, text_of
from mcp.types import TextContent

CHARTS = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "charts" / "bundles.json").read_text()
)
TOOLSETS = ("--toolsets", "runs&introspection")
BARE_REPR = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-f]+)?>")


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def cell(client: Any, source: str) -> Any:
    """A new cell at the end of the notebook, run: its result."""
    return await client.call_tool(
        "insert_execute_code_cell", {"cell_index": -1, "cell_source": source}
    )


async def test_a_bare_repr_loses_to_the_type_that_holds_the_content(workspace: Path) -> None:
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "rich.ipynb", "mode": "create"})
        shown = await cell(
            client,
            "from IPython.display import HTML, JSON, Latex, Markdown, display\n"
            "display(HTML('<h3>Quarterly report</h3><p>Total is <b>42</b></p>'))",
        )
        assert texts(shown) == ["### Quarterly report\nTotal is 42"]
        listed = await cell(
            client,
            'HTML(\'<ul><li>first</li><li>see <a href="https://example.org/doc">the doc</a></li></ul>'
            "<ol><li>one</li><li>two</li></ol>')",
        )
        assert texts(listed) == ["- first\n- see the doc (https://example.org/doc)\n1. one\n2. two"]
        assert texts(await cell(client, "JSON({'total': 42, 'items': [1, 2]})")) == [
            '{"total":42,"items":[1,2]}'
        ]
        assert texts(await cell(client, "Markdown('**bold** and `code`')")) == [
            "**bold** and `code`"
        ]
        assert texts(await cell(client, "Latex(r'$\\alpha^2 + \\beta$')")) == [
            "$\\alpha^2 + \\beta$"
        ]
        # A table inside HTML, in its place among the text.
        mixed = await cell(
            client,
            "HTML('<p>Before</p><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table><p>After</p>')",
        )
        assert texts(mixed) == [
            "Before\nTable: 1 rows × 2 columns\n| k | v |\n| --- | --- |\n| a | 1 |\nAfter"
        ]
        # With nothing richer, the repr is what there is.
        (plain,) = texts(await cell(client, "class Thing:\n    pass\nThing()"))
        assert re.fullmatch(r"<__main__\.Thing at 0x[0-9a-f]+>", plain), plain

        # Read back from the file: the same texts.
        first = await client.call_tool("read_cell", {"cell_index": 0})
        assert "### Quarterly report\nTotal is 42" in texts(first)


async def test_a_dataframe_reads_with_pandas_own_shape(workspace: Path) -> None:
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "frames.ipynb", "mode": "create"})
        (two,) = texts(
            await cell(
                client, "import pandas as pd, numpy as np\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})"
            )
        )
        assert (
            two
            == "Table: 2 rows × 2 columns\n|  | a | b |\n| --- | --- | --- |\n| 0 | 1 | 3 |\n| 1 | 2 | 4 |"
        )
        (multi,) = texts(
            await cell(
                client,
                "index = pd.MultiIndex.from_product([['x', 'y'], [1, 2]], names=['k', 'n'])\n"
                "columns = pd.MultiIndex.from_tuples([('A', 'p'), ('A', 'q')])\n"
                "pd.DataFrame(np.arange(8).reshape(4, 2), index=index, columns=columns)",
            )
        )
        assert multi.splitlines() == [
            "Table: 4 rows × 2 columns; the first 2 columns are its index",
            "| k | n | A / p | A / q |",
            "| --- | --- | --- | --- |",
            "| x | 1 | 0 | 1 |",
            "| x | 2 | 2 | 3 |",
            "| y | 1 | 4 | 5 |",
            "| y | 2 | 6 | 7 |",
        ]
        (long,) = texts(await cell(client, "pd.DataFrame({'v': range(1000)})"))
        lines = long.splitlines()
        assert (
            lines[0] == "Table: 1000 rows × 1 columns (10 of the rows shown, as pandas shows them)"
        )
        assert "| ... | ... |" in lines and lines[-1] == "| 999 | 999 |"
        (wide,) = texts(await cell(client, "pd.DataFrame(np.zeros((3, 40)))"))
        assert wide.startswith("Table: 3 rows × 40 columns\n")
        (empty,) = texts(await cell(client, "pd.DataFrame({'a': []})"))
        assert empty.startswith("Table: 0 rows × 1 columns\n")


async def test_charts_read_as_what_they_show_and_widgets_say_they_are_widgets(
    workspace: Path,
) -> None:
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "charts.ipynb", "mode": "create"})
        shown: dict[str, str] = {}
        for name, bundle in CHARTS.items():
            code = (
                "import json\nfrom IPython.display import display\n"
                f"bundle = json.loads({json.dumps(bundle)!r})\n"
                "display(bundle['data'], raw=True, metadata=bundle['metadata'])"
            )
            result = await client.call_tool("execute_code", {"code": code})
            assert not result.is_error, text_of(result)
            (shown[name],) = texts(result)
            assert (
                len(shown[name]) < 400 and "bdata" not in shown[name] and "{" not in shown[name]
            ), shown[name]
        assert shown["vega-lite (Altair 6.3, mimetype renderer)"].splitlines() == [
            "Vega-Lite chart 'Sales by year' (interactive; a browser showing the notebook draws it)",
            "Mark(s): line; 30 data row(s)",
            "Encoding: x: year (ordinal), y: Sales (k€) (quantitative)",
        ]
        plotly = [
            "Plotly chart 'Squares and counts' (interactive; a browser showing the notebook draws it)",
            "2 trace(s): scatter, bar; 43 point(s) in all",
            "Axes: x axis 'n', y axis 'value'",
            "Traces: squares (scatter, markers, 40 points); counts (bar, 3 points)",
        ]
        assert shown["plotly (Plotly 7.1, plotly_mimetype renderer)"].splitlines() == plotly
        assert (
            shown["plotly (Plotly 7.1, notebook_connected renderer: HTML)"].splitlines() == plotly
        )
        assert shown["vega-lite (Altair 6.3, html renderer)"].splitlines()[:2] == [
            "Vega-Lite chart 'Sales by year' (interactive; a browser showing the notebook draws it)",
            "Mark(s): point; 30 data row(s)",
        ]
        assert shown["bokeh (Bokeh 3.9.2, output_notebook)"].splitlines() == [
            "Bokeh plot 'Bokeh lines' (interactive; a browser showing the notebook draws it)",
            "2 glyph renderer(s): Line, Scatter; 7 point(s) in all",
            "Axes: x axis 'time', y axis 'value'",
        ]
        widget = shown["widget (ipywidgets 8.1.9)"].splitlines()
        assert widget[0] == "IntSlider(value=3, description='n')"
        assert widget[1].startswith("[jupyter-mcp-server: an interactive Jupyter widget (model ")
        assert "only a browser running the notebook's kernel shows it" in widget[1]


SNAPSHOT = "import copy\n\ndef snapshot(value):\n    return copy.deepcopy(value)"
FAILING = (
    "import threading\nnested = {'a': {'b': {'c': [threading.Lock()]}}}\nresult = snapshot(nested)"
)


def assert_shows_the_users_line(text: str) -> None:
    """The agent's own line, the function it called, the library folded, the exception."""
    assert "----> 3 result = snapshot(nested)" in text, text
    assert "----> 4     return copy.deepcopy(value)" in text, text
    assert re.search(r"\[… \d+ library frame\(s\) folded: copy\]", text), text
    assert "TypeError: cannot pickle '_thread.lock' object" in text, text


async def test_a_traceback_keeps_the_line_that_failed_in_every_result_that_shows_it(
    workspace: Path,
) -> None:
    async with serve(workspace, *TOOLSETS) as client:
        await ok(client, "use_notebook", {"notebook_name": "deep.ipynb", "mode": "create"})
        assert not (await cell(client, SNAPSHOT)).is_error
        failed = await cell(client, FAILING)
        assert error_code(failed) == "execution_error"
        assert_shows_the_users_line("\n".join(texts(failed)))
        error = failed.structured_content["error"]
        assert any(entry.startswith("Cell In[2], line 3") for entry in error["traceback"])
        assert error["traceback"][-1] == "TypeError: cannot pickle '_thread.lock' object"
        assert len(error["traceback"]) <= 32 and all(
            len(entry) <= 1024 for entry in error["traceback"]
        )

        scratch = await client.call_tool(
            "execute_code", {"code": "snapshot({'x': [threading.Lock()]})"}
        )
        assert "----> 1 snapshot({'x': [threading.Lock()]})" in "\n".join(texts(scratch))
        assert_shows_the_users_line(
            "\n".join(texts(await client.call_tool("read_cell", {"cell_index": 1})))
        )
        assert_shows_the_users_line(
            text_of(await client.call_tool("read_notebook", {"response_format": "detailed"}))
        )

        run = await client.call_tool("run_cells", {"restart": True})
        assert_shows_the_users_line(text_of(run))
        verified = await client.call_tool("verify_notebook", {})
        assert not verified.is_error, text_of(verified)
        assert_shows_the_users_line(text_of(verified))
        (failure,) = verified.structured_content["failures"]
        assert any("result = snapshot(nested)" in entry for entry in failure["traceback"])

        debugged = await client.call_tool("debug_error", {})
        assert not debugged.is_error, text_of(debugged)
        report = text_of(debugged)
        assert re.search(r"->\s+3 result = snapshot\(nested\)", report), report
        assert re.search(r"->\s+4\s+return copy\.deepcopy\(value\)", report), report
        assert re.search(r"\[… \d+ frame\(s\) folded: copy\]", report), report
        frames = debugged.structured_content["frames"]
        assert [frame.get("cell_index") for frame in frames[:2]] == [1, 0]


RECURSION = (
    "import sys\nsys.setrecursionlimit({limit})\n\ndef down(n):\n    return down(n + 1)\n\ndown(0)"
)


def assert_folded_recursion(shown: str, at_least: int) -> None:
    assert "----> 7 down(0)" in shown and "----> 5     return down(n + 1)" in shown, shown
    repeated = re.search(r"\[… the frame above repeated (\d+) more time\(s\)\]", shown)
    assert repeated and int(repeated.group(1)) >= at_least, shown
    assert shown.count("\n") < 20 and len(shown) < 2_000, shown
    assert shown.rstrip().endswith("RecursionError: maximum recursion depth exceeded")


async def test_a_recursion_folds_to_a_few_lines(workspace: Path) -> None:
    # A notebook written elsewhere holding IPython's whole traceback of 5,000 frames, as
    # IPython writes it, and a recursion run here (a short one: IPython itself takes
    # minutes to format 5,000 frames; the slow test below runs that).
    frame = "Cell In[1], line 5, in down(n)\n      4 def down(n):\n----> 5     return down(n + 1)\n"
    traceback = [
        "-" * 75,
        "RecursionError                            Traceback (most recent call last)",
        "Cell In[1], line 7\n      4 def down(n):\n      5     return down(n + 1)\n----> 7 down(0)\n",
        *[frame] * 5_000,
        "RecursionError: maximum recursion depth exceeded",
    ]
    error = {
        "output_type": "error",
        "ename": "RecursionError",
        "evalue": "maximum recursion depth exceeded",
        "traceback": traceback,
    }
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": 1,
                "id": "deep",
                "metadata": {},
                "outputs": [error],
                "source": RECURSION.format(limit=5_200),
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (workspace / "written.ipynb").write_text(json.dumps(notebook))
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "written.ipynb"})
        read = await client.call_tool("read_cell", {"cell_index": 0})
        assert_folded_recursion("\n".join(texts(read)[1:]), 4_999)
        whole = text_of(await client.call_tool("read_notebook", {"response_format": "detailed"}))
        assert_folded_recursion(whole.split("[error output]\n", 1)[1], 4_999)

        await ok(client, "use_notebook", {"notebook_name": "run.ipynb", "mode": "create"})
        failed = await cell(client, RECURSION.format(limit=300))
        assert error_code(failed) == "execution_error"
        assert_folded_recursion("\n".join(texts(failed)), 200)
        assert len(failed.structured_content["error"]["traceback"]) < 10


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_a_recursion_of_5000_frames_run_here_folds_to_a_few_lines(workspace: Path) -> None:
    async with serve(workspace) as client:
        await ok(client, "use_notebook", {"notebook_name": "deep.ipynb", "mode": "create"})
        failed = await client.call_tool(
            "insert_execute_code_cell",
            {"cell_index": -1, "cell_source": RECURSION.format(limit=5_200), "timeout": 800},
        )
        assert error_code(failed) == "execution_error", text_of(failed)
        assert_folded_recursion("\n".join(texts(failed)), 4_900)
        assert len(failed.structured_content["error"]["traceback"]) < 10


async def test_bad_html_and_json_read_bounded_within_a_read(workspace: Path) -> None:
    async with serve(workspace, "--max-output-bytes", "80000000") as client:
        await ok(client, "use_notebook", {"notebook_name": "bad.ipynb", "mode": "create"})
        prelude = "from IPython.display import display, HTML\n"
        cases = {
            "malformed": prelude
            + 'display(HTML("<table><tr><td>a<td>b<tr><td>c</table><p>unclosed <b>bold <a href=\'x>broken"))',
            "nested": prelude
            + "display(HTML('<div>' * 10_000 + 'deep inside' + '</div>' * 10_000))",
            "nested lists": prelude + "display(HTML('<ul><li>' * 10_000 + 'deepest'))",
            "huge table": prelude
            + (
                "rows = ''.join(f'<tr><td>{i}</td><td>{i * 2}</td><td>row {i}</td></tr>' for i in range(870_000))\n"
                "display(HTML('<table><thead><tr><th>i</th><th>j</th><th>k</th></tr></thead><tbody>' + rows + '</tbody></table>'))\n"
                "print(len(rows) // 1_000_000, 'MB')"
            ),
            "invalid json": "from IPython.display import display\n"
            "display({'application/json': '{\"total\": 42,', 'text/plain': '<IPython.core.display.JSON object>'}, raw=True)",
        }
        shown: dict[str, str] = {}
        for name, code in cases.items():
            result = await client.call_tool("execute_code", {"code": code})
            assert not result.is_error, text_of(result)
            shown[name] = "\n".join(texts(result))
        assert shown["malformed"].startswith("Table: 2 rows × 2 columns\n")
        assert "unclosed bold" in shown["malformed"]
        assert shown["nested"] == "deep inside"
        assert shown["nested lists"].strip().endswith("- deepest")
        huge = shown["huge table"]
        assert huge.startswith("Table: 870000 rows × 3 columns (the first ") and "\n50 MB" in huge
        assert "more table rows are among them]" in huge and len(huge) <= 16_384 + 400
        assert shown["invalid json"].startswith(
            "[jupyter-mcp-server: this application/json output is not valid JSON"
        )
        assert '{"total": 42,' in shown["invalid json"]

        # Stored in a notebook, the 50 MB table is read back within a read's time.
        stored = await cell(client, cases["huge table"])
        assert not stored.is_error, text_of(stored)
        started = time.monotonic()
        read = await client.call_tool("read_cell", {"cell_index": 0})
        assert time.monotonic() - started < 15
        assert "\n".join(texts(read)).count("Table: 870000 rows × 3 columns") == 1
