"""The diffs edits and history show: texts without a final newline, and notebooks cell by cell."""

from __future__ import annotations

import difflib

from jupyter_mcp_server._store.diffs import NO_NEWLINE, cell_diff, diff_text, unified_diff


def test_no_final_newline_is_said_not_run_together():
    # Neither side ends with a newline (most cell sources): the marker would say nothing,
    # and the lines still do not run together.
    diff = unified_diff("x", "y")
    assert diff == "--- before\n+++ after\n@@ -1 +1 @@\n-x\n+y\n"
    # One side gains its final newline: only the side that lacks it says so.
    diff = unified_diff("a\nx", "a\ny\n")
    assert f"-x\n{NO_NEWLINE}+y\n" in diff and diff.count(NO_NEWLINE) == 1
    diff = unified_diff("x\n", "x")
    assert diff == f"--- before\n+++ after\n@@ -1 +1 @@\n-x\n+x\n{NO_NEWLINE}"
    assert NO_NEWLINE not in unified_diff("a\n", "b\n")
    assert unified_diff("same", "same") == ""
    # Every line of the diff is a whole line: nothing runs together.
    for before, after in [("x", "x\n"), ("p\nq", "p\nr"), ("", "z"), ("z", "")]:
        diff = unified_diff(before, after)
        assert diff.endswith("\n")
        for line in diff.splitlines():
            assert line[:1] in ("-", "+", " ", "@", "\\"), line
        assert list(
            difflib.restore(difflib.ndiff(before.splitlines(True), after.splitlines(True)), 2)
        ) == after.splitlines(True)


def test_cell_diff_by_id():
    a = {
        "id": "a",
        "cell_type": "code",
        "source": "1",
        "outputs": [],
        "metadata": {},
        "execution_count": None,
    }
    b = {"id": "b", "cell_type": "markdown", "source": "# B", "metadata": {}}
    c = {
        "id": "c",
        "cell_type": "code",
        "source": "c = 1\n",
        "outputs": [],
        "metadata": {},
        "execution_count": None,
    }
    d = {"id": "d", "cell_type": "raw", "source": "raw", "metadata": {}}
    c2 = {
        **c,
        "source": "c = 2\n",
        "metadata": {"tags": ["parameters"]},
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "2"}],
        "execution_count": 3,
    }
    diff = cell_diff([a, b, c], [c2, a, d])
    assert [x["cell_id"] for x in diff["added"]] == ["d"]
    assert [x["cell_id"] for x in diff["removed"]] == ["b"]
    assert [x["cell_id"] for x in diff["moved"]] == ["c"]
    (changed,) = diff["changed"]
    assert changed["cell_id"] == "c" and "-c = 1\n+c = 2\n" in changed["source_diff"]
    assert (
        changed["metadata"] == ["tags"]
        and changed["outputs"] == "0 output(s) -> 1 output(s) (stdout)"
    )
    text = diff_text(diff)
    assert (
        "added raw cell d" in text and "removed markdown cell b" in text and "moved cell c" in text
    )
    assert diff_text(cell_diff([a], [a])) == "(no change)"
