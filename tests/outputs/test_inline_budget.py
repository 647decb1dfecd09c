"""The inline budget and what a model reads, unit by unit: no server, no kernel."""

from __future__ import annotations

import base64
import io

import pytest
from mcp.types import ImageContent, ResourceLink, TextContent

from jupyter_mcp_server._calls.scratch import ScratchOutputs
from jupyter_mcp_server._errors import ToolFailure
from jupyter_mcp_server._rendering.budget import (
    MAX_OUTPUT_CHARS,
    MIN_OUTPUT_CHARS,
    allot,
    budget_of,
    head_and_tail,
)
from jupyter_mcp_server._rendering.content import InlineLimits, output_blocks
from jupyter_mcp_server._rendering.model_text import html_as_text, output_text, plain


def test_budget_bounds_and_refusals():
    assert budget_of(16_384, None) == 16_384
    assert budget_of(16_384, MIN_OUTPUT_CHARS) == MIN_OUTPUT_CHARS
    assert budget_of(16_384, MAX_OUTPUT_CHARS) == MAX_OUTPUT_CHARS
    for bad in (0, MIN_OUTPUT_CHARS - 1, MAX_OUTPUT_CHARS + 1):
        with pytest.raises(ToolFailure) as refused:
            budget_of(16_384, bad)
        assert (
            refused.value.code == "invalid_argument"
            and str(MIN_OUTPUT_CHARS) in refused.value.message
        )


def test_allot_gives_short_texts_whole_and_shares_the_rest():
    assert allot([10, 20], 100) == [10, 20]
    assert allot([10, 500, 500], 110) == [10, 50, 50]
    assert sum(allot([7, 1000, 3, 999], 400)) <= 400


def test_head_and_tail_says_what_it_left_out():
    text = "".join(f"{i}\n" for i in range(100_000))
    cut = head_and_tail(text, 4000, "scratch-output:///k?output=0")
    assert len(cut) <= 4000
    head, _, rest = cut.partition("\n[jupyter-mcp-server: ")
    marker, _, tail = rest.partition("]\n")
    assert text.startswith(head) and text.endswith(tail)
    first = head.count("\n")
    assert f"from line {first}" in marker and f"offset={first}" in marker
    middle = text[len(head) : len(text) - len(tail)]
    assert f"{len(middle.encode())} bytes over {middle.count(chr(10))} line(s)" in marker
    assert head_and_tail("short", 4000, None) == "short"


def test_many_outputs_never_exceed_a_small_budget():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": f"{i}\n" * 500} for i in range(60)
    ]
    uri = "notebook-output:///some/long/path/to/a/notebook.ipynb?cell=abcdef&output={}"
    for budget in (1024, 4000, 16_384):
        blocks = output_blocks(outputs, uri.format, InlineLimits(budget_chars=budget))
        assert sum(len(b.text) for b in blocks if isinstance(b, TextContent)) <= budget
        assert len([b for b in blocks if isinstance(b, ResourceLink)]) == 60
    assert head_and_tail("x" * 5000, 120, "scratch-output:///k?output=0").startswith(
        "[jupyter-mcp-server: 5000 characters left out"
    )


def test_html_tables_read_as_markdown_with_their_shape():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"a": [1, 2, 3], "b|c": ["x", "y", "z"]})
    text = output_text(
        {
            "output_type": "execute_result",
            "data": {"text/html": frame._repr_html_(), "text/plain": str(frame)},
        }
    )
    assert text is not None
    lines = text.splitlines()
    assert lines[0] == "Table: 3 rows × 2 columns", "the index is not one of its columns"
    assert lines[1] == "|  | a | b\\|c |"
    assert lines[3] == "| 0 | 1 | x |"
    big = pandas.DataFrame({"v": range(1000)})
    text = output_text({"output_type": "execute_result", "data": {"text/html": big._repr_html_()}})
    assert text is not None and text.startswith("Table: 1000 rows × 1 columns")


def test_other_outputs_read_plainly():
    assert (
        html_as_text("<div><b>Hi</b> there<script>x()</script><p>next</p></div>")
        == "Hi there\nnext"
    )
    assert (
        output_text({"output_type": "display_data", "data": {"application/json": {"a": [1, 2]}}})
        == '{"a":[1,2]}'
    )
    assert plain("\x1b[31mred\x1b[0m 10%\r 50%\r100%\ndone") == "100%\ndone"
    assert output_text({"output_type": "stream", "text": ["a\r", "b\n"]}) == "b\n"


def png(width: int, height: int) -> str:
    from PIL import Image

    image = Image.new("RGB", (width, height))
    image.putdata(
        [((x * 7) % 256, (y * 3) % 256, (x * y) % 256) for y in range(height) for x in range(width)]
    )
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_outputs_share_the_budget_and_large_images_shrink():
    pytest.importorskip("PIL")
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "x\n" * 50_000},
        {"output_type": "stream", "name": "stderr", "text": "short\n"},
        {
            "output_type": "display_data",
            "data": {"image/png": png(1600, 1200), "text/plain": "<Figure>"},
            "metadata": {},
        },
    ]
    blocks = output_blocks(
        outputs,
        lambda i: f"scratch-output:///k?output={i}",
        InlineLimits(image_bytes=200_000, budget_chars=2000),
    )
    texts = [
        b.text
        for b in blocks
        if isinstance(b, TextContent) and not b.text.startswith("[jupyter-mcp-server: image")
    ]
    assert sum(map(len, texts)) <= 2000 and "short\n" in texts
    image = next(b for b in blocks if isinstance(b, ImageContent))
    assert len(image.data) <= 200_000
    links = [b.uri for b in blocks if isinstance(b, ResourceLink)]
    assert links == ["scratch-output:///k?output=0", "scratch-output:///k?output=2"]


def test_scratch_outputs_are_bounded_and_expire():
    import random

    now = [0.0]
    noise = random.Random(0)

    def outputs(n: int, size: int) -> list[dict]:
        # Incompressible text, so the compressed size is about `size`.
        return [
            {
                "n": n,
                "text": "".join(
                    noise.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(size)
                ),
            }
        ]

    store = ScratchOutputs(max_executions=2, max_bytes=1000, ttl_seconds=10, clock=lambda: now[0])
    a, b, c = (store.put(outputs(n, 10)) for n in range(3))
    assert store.get(a) is None and store.get(b)[0]["n"] == 1 and len(store) == 2
    d = store.put(outputs(4, 1500))
    assert store.get(c) is None and store.get(d)[0]["n"] == 4, (
        "the newest is kept even above max_bytes"
    )
    e = store.put(outputs(5, 10))
    assert store.get(d) is None and store.get(e)[0]["n"] == 5
    now[0] = 11
    assert store.get(e) is None and len(store) == 0
    # Printed text is held compressed.
    store = ScratchOutputs()
    text = "".join(f"{i}\n" for i in range(200_000))
    store.put([{"output_type": "stream", "name": "stdout", "text": text}])
    assert store._bytes < len(text) // 2


def test_tracebacks_keep_user_frames_and_fold_library_ones():
    entries = [
        "-----\nValueError    Traceback (most recent call last)",
        "Cell In[3], line 2\n      1 import pandas as pd\n----> 2 pd.read_csv('x')",
        "File /venv/lib/python3.11/site-packages/pandas/io/parsers/readers.py:1026, in read_csv(...)\n   1026 return _read()",
        "File /venv/lib/python3.11/site-packages/pandas/io/common.py:873, in get_handle(...)\n    873 handle = open()",
        "File /usr/lib/python3.11/codecs.py:9, in decode()\n    9 raise",
        "File /venv/lib/python3.11/site-packages/numpy/core.py:1, in f()\n    1 raise ValueError",
        "ValueError: bad",
    ]
    text = output_text(
        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": entries}
    )
    assert text is not None
    assert text.split("\n") == [
        "-----",
        "ValueError Traceback (most recent call last)",
        *entries[1].split("\n"),
        "[… 3 library frame(s) folded: codecs, pandas]",
        *entries[5].split("\n"),
        "ValueError: bad",
    ]
