"""The output collector keeps limits exactly and tells what it left out."""

from __future__ import annotations

import json

import pytest

from jupyter_mcp_server._kernels.outputs import (
    CollectedOutputs,
    ErrorInfo,
    OutputCollector,
    Truncation,
    normalise_error,
    payload_size,
    plain_output,
    strip_ansi,
)

RED = "\x1b[0;31m"
RESET = "\x1b[0m"


def size_of(output: dict) -> int:
    """The contract's payload size, computed here without the module's help."""
    return len(json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def display(data: dict, display_id: str | None = None) -> dict:
    content: dict = {"data": data, "metadata": {}}
    if display_id is not None:
        content["transient"] = {"display_id": display_id}
    return content


def collect(*messages: tuple[str, dict], max_bytes: int = 1 << 20, max_blocks: int = 128):
    collector = OutputCollector(max_bytes, max_blocks)
    for msg_type, content in messages:
        collector.add(msg_type, content)
    return collector.result()


def test_consecutive_streams_of_one_name_merge_into_one_output():
    result = collect(
        ("stream", {"name": "stdout", "text": "a\n"}),
        ("stream", {"name": "stdout", "text": "b\n"}),
    )
    assert result.outputs == [stream("a\nb\n")]
    assert result.truncation == Truncation(False, 0, 0)
    assert result.error is None


def test_interleaved_stdout_and_stderr_keep_their_order():
    result = collect(
        ("stream", {"name": "stdout", "text": "1\n"}),
        ("stream", {"name": "stderr", "text": "2\n"}),
        ("stream", {"name": "stdout", "text": "3\n"}),
        ("stream", {"name": "stdout", "text": "4\n"}),
    )
    assert result.outputs == [
        stream("1\n"),
        stream("2\n", "stderr"),
        stream("3\n4\n"),
    ]


def test_carriage_return_overwrites_the_current_line_across_chunks():
    result = collect(
        ("stream", {"name": "stdout", "text": "start\n10%"}),
        ("stream", {"name": "stdout", "text": "\r50%"}),
        ("stream", {"name": "stdout", "text": "\r100%\n"}),
        ("stream", {"name": "stdout", "text": "done\r\n"}),
    )
    assert result.outputs == [stream("start\n100%\ndone\r\n")]


def test_a_trailing_carriage_return_waits_for_what_follows():
    result = collect(
        ("stream", {"name": "stdout", "text": "a\rb\r"}),
        ("stream", {"name": "stdout", "text": "c"}),
    )
    assert result.outputs == [stream("c")]


def test_stream_text_keeps_its_colours_and_a_model_reads_it_without_them():
    # Stored as Jupyter stores it; the limits count what a model reads.
    result = collect(("stream", {"name": "stderr", "text": f"{RED}warn{RESET}\n"}))
    assert result.outputs == [stream(f"{RED}warn{RESET}\n", "stderr")]
    assert plain_output(result.outputs[0]) == stream("warn\n", "stderr")
    assert payload_size(result.outputs[0]) == size_of(stream("warn\n", "stderr"))
    assert strip_ansi("\x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[1;32mok\x1b[0m") == "link ok"


def test_byte_limit_omits_payloads_and_counts_their_exact_size():
    first, second, third = "a" * 40, "b" * 40, "c" * 5
    limit = size_of(stream(first)) + 10
    result = collect(
        ("stream", {"name": "stdout", "text": first}),
        ("stream", {"name": "stdout", "text": second}),
        # Small enough to fit, but kept outputs must stay a true prefix.
        ("stream", {"name": "stderr", "text": third}),
        max_bytes=limit,
    )
    assert result.outputs == [stream(first)]
    expected = size_of(stream(second)) + size_of(stream(third, "stderr"))
    assert result.truncation == Truncation(True, 2, expected)
    assert result.truncation.as_dict() == {
        "truncated": True,
        "omitted_blocks": 2,
        "omitted_bytes": expected,
    }


def test_block_limit_counts_payloads_not_merged_outputs():
    texts = [f"line {i}\n" for i in range(5)]
    result = collect(
        *[("stream", {"name": "stdout", "text": text}) for text in texts], max_blocks=3
    )
    assert result.outputs == [stream("".join(texts[:3]))]
    assert result.truncation.omitted_blocks == 2
    assert result.truncation.omitted_bytes == sum(size_of(stream(t)) for t in texts[3:])


def test_a_payload_exactly_at_the_byte_limit_is_kept():
    payload = stream("x" * 100)
    result = collect(("stream", payload), max_bytes=size_of(payload))
    assert result.outputs == [payload]
    assert not result.truncation.truncated


def test_memory_stays_within_the_byte_limit():
    max_bytes = 1 << 20
    collector = OutputCollector(max_bytes, max_blocks=10_000)
    chunk = "y" * (5 * 1024 * 1024 // 1000)
    omitted = 0
    kept_so_far = 0
    for _ in range(1000):
        collector.add("stream", {"name": "stdout", "text": chunk})
        assert collector.size_bytes <= max_bytes
        size = size_of(stream(chunk))
        if omitted or kept_so_far + size > max_bytes:
            omitted += size
        else:
            kept_so_far += size
    result = collector.result()
    assert len(result.outputs) == 1
    assert len(result.outputs[0]["text"]) <= max_bytes
    assert result.truncation.omitted_bytes == omitted
    assert result.truncation.omitted_blocks == 1000 - kept_so_far // size_of(stream(chunk))


def test_clear_output_without_wait_clears_at_once_and_restarts_the_budget():
    result = collect(
        ("stream", {"name": "stdout", "text": "old\n"}),
        ("stream", {"name": "stdout", "text": "omitted\n"}),
        ("clear_output", {"wait": False}),
        ("stream", {"name": "stdout", "text": "new\n"}),
        max_blocks=1,
    )
    assert result.outputs == [stream("new\n")]
    assert result.truncation == Truncation(True, 1, size_of(stream("omitted\n")))


def test_clear_output_with_wait_clears_at_the_next_output():
    collector = OutputCollector(1 << 20, 128)
    collector.add("stream", {"name": "stdout", "text": "old\n"})
    collector.add("clear_output", {"wait": True})
    assert collector.result().outputs == [stream("old\n")]
    collector.add("display_data", display({"text/plain": "new"}))
    assert collector.result().outputs == [
        {"output_type": "display_data", "data": {"text/plain": "new"}, "metadata": {}}
    ]


def test_update_display_data_replaces_the_tracked_output_in_place():
    result = collect(
        ("display_data", display({"text/plain": "0%"}, "bar")),
        ("stream", {"name": "stdout", "text": "between\n"}),
        ("update_display_data", display({"text/plain": "100%"}, "bar")),
        ("update_display_data", display({"text/plain": "ignored"}, "unknown")),
        max_blocks=2,
    )
    assert result.outputs == [
        {"output_type": "display_data", "data": {"text/plain": "100%"}, "metadata": {}},
        stream("between\n"),
    ]
    assert "transient" not in result.outputs[0]
    assert result.truncation == Truncation(False, 0, 0)


def test_an_update_that_does_not_fit_is_omitted():
    small = {"output_type": "display_data", "data": {"text/plain": "0"}, "metadata": {}}
    big_data = {"text/plain": "9" * 200}
    result = collect(
        ("display_data", display({"text/plain": "0"}, "bar")),
        ("update_display_data", display(big_data, "bar")),
        max_bytes=size_of(small) + 10,
    )
    assert result.outputs == [small]
    omitted = size_of({"output_type": "display_data", "data": big_data, "metadata": {}})
    assert result.truncation == Truncation(True, 1, omitted)


def test_execute_result_carries_its_execution_count():
    collector = OutputCollector(1 << 20, 128)
    collector.add("execute_input", {"code": "1", "execution_count": 6})
    collector.add("status", {"execution_state": "busy"})
    assert collector.result().execution_count == 6
    collector.add(
        "execute_result", {"data": {"text/plain": "1"}, "metadata": {}, "execution_count": 7}
    )
    result = collector.result()
    assert result.outputs == [
        {
            "output_type": "execute_result",
            "execution_count": 7,
            "data": {"text/plain": "1"},
            "metadata": {},
        }
    ]
    assert result.execution_count == 7
    collector.set_execution_count(8)
    assert collector.result().execution_count == 8


IPYTHON_TRACEBACK = [
    f"{RED}---------------------------------------------------------------------------{RESET}",
    f"{RED}ZeroDivisionError{RESET}                         Traceback (most recent call last)",
    f"Cell {RED}In[1], line 3{RESET}\n      1 def f():\n----> 3 g()",
    f"Cell {RED}In[1], line 5{RESET}\n----> 5 1/0",
    f"{RED}ZeroDivisionError{RESET}: division by zero",
]


def test_errors_are_stripped_of_ansi_and_lose_only_the_row_of_dashes():
    info, removed = normalise_error(
        f"{RED}ZeroDivisionError{RESET}", "division by zero", IPYTHON_TRACEBACK, 1 << 20
    )
    # The header loses the spaces that align it for a terminal, and nothing else.
    assert info == ErrorInfo(
        "ZeroDivisionError",
        "division by zero",
        [
            "ZeroDivisionError Traceback (most recent call last)",
            *[strip_ansi(line) for line in IPYTHON_TRACEBACK[2:]],
        ],
    )
    original = {
        "output_type": "error",
        "ename": f"{RED}ZeroDivisionError{RESET}",
        "evalue": "division by zero",
        "traceback": IPYTHON_TRACEBACK,
    }
    normalised = {"output_type": "error", **info.as_dict()}
    assert removed == size_of(original) - size_of(normalised)
    assert removed > 0


def test_an_error_is_stored_as_the_kernel_sent_it_and_read_folded_and_plain():
    collector = OutputCollector(max_bytes=1 << 20, max_blocks=8)
    collector.add(
        "error",
        {
            "ename": "ZeroDivisionError",
            "evalue": "division by zero",
            "traceback": IPYTHON_TRACEBACK,
        },
    )
    result = collector.result()
    stored = result.outputs[0]
    # Stored as the kernel sent it, as Jupyter stores it: the row of dashes, the colours.
    assert stored["traceback"] == IPYTHON_TRACEBACK
    # A model reads it folded and plain, the row of dashes dropped.
    assert plain_output(stored) == {"output_type": "error", **result.error.as_dict()}
    assert collector.size_bytes == size_of(plain_output(stored))
    assert result.truncation == Truncation(False, 0, result.truncation.omitted_bytes)


def test_a_stored_error_past_the_byte_limit_keeps_its_head_and_tail_and_says_the_cut():
    frame = f"File {RED}/venv/site-packages/lib/deep.py:1{RESET}, in down()\n----> 1 down()\n"
    traceback = [*IPYTHON_TRACEBACK[:3], *[frame] * 5_000, IPYTHON_TRACEBACK[-1]]
    content = {"ename": "RecursionError", "evalue": "too deep", "traceback": traceback}
    whole = size_of(
        {"output_type": "error", **content, "traceback": [strip_ansi(line) for line in traceback]}
    )
    max_bytes = 16_384
    assert whole > 10 * max_bytes
    collector = OutputCollector(max_bytes=max_bytes, max_blocks=8)
    collector.add("error", content)
    result = collector.result()
    stored = result.outputs[0]
    assert size_of(plain_output({**stored, "traceback": []})) < max_bytes
    assert (
        size_of({**stored, "traceback": [strip_ansi(line) for line in stored["traceback"]]})
        <= max_bytes
    )
    # Its head and tail as the kernel sent them, colours and all, the cut said between them.
    assert stored["traceback"][:3] == traceback[:3]
    assert stored["traceback"][-2:] == traceback[-2:]
    markers = [line for line in stored["traceback"] if line.startswith("[jupyter-mcp-server: ")]
    assert len(markers) == 1 and "traceback entries" in markers[0]
    assert "left out here by --max-output-bytes" in markers[0]
    kept = len(stored["traceback"]) - 1
    assert f"[jupyter-mcp-server: {len(traceback) - kept} traceback entries" in markers[0]
    assert result.truncation.truncated
    # A model reads it folded, the cell's frame and the exception line there.
    read = plain_output(stored)["traceback"]
    assert (
        read[1].startswith("Cell In[1], line 3")
        and read[-1] == "ZeroDivisionError: division by zero"
    )
    assert len(read) < 12

    # One entry longer than its share keeps its head and tail, plain.
    long = {
        "ename": "ValueError",
        "evalue": "v",
        "traceback": [f"{RED}{'x' * 50_000}{RESET}", "ValueError: v"],
    }
    cut = OutputCollector(max_bytes=max_bytes, max_blocks=8)
    cut.add("error", long)
    first = cut.result().outputs[0]["traceback"][0]
    assert first.startswith("x" * 100) and first.endswith("x" * 100) and "\x1b" not in first
    assert "bytes of this entry left out here by --max-output-bytes" in first
    assert len(first) <= max_bytes // 8


def test_the_users_cell_frame_is_kept_and_library_frames_folded_when_the_innermost_are_all_in_libraries():
    traceback = [
        "-----",
        "ValueError    Traceback (most recent call last)",
        "Cell In[3], line 2\n      1 import pandas as pd\n----> 2 pd.read_csv('x')",
        "File /venv/site-packages/pandas/readers.py:1, in read_csv()",
        "File /venv/site-packages/pandas/readers.py:2, in _read()",
        "File /venv/site-packages/pandas/common.py:3, in get_handle()",
        "ValueError: bad",
    ]
    info, removed = normalise_error("ValueError", "bad", traceback, 1 << 20)
    assert info.traceback == [
        "ValueError Traceback (most recent call last)",
        traceback[2],
        "[… 2 library frame(s) folded: pandas]",
        *traceback[-2:],
    ]
    original = {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "bad",
        "traceback": traceback,
    }
    assert removed == size_of(original) - size_of({"output_type": "error", **info.as_dict()})


def test_the_innermost_library_frame_keeps_only_where_it_raised():
    """The library's code around the raise (a docstring, here) is not what a reader of a
    failing cell needs: its first line and the raising statement are."""
    raising = (
        "File /usr/lib/python3.11/json/encoder.py:180, in JSONEncoder.default(self, o)\n"
        "    161 def default(self, o):\n"
        '    162     """Implement this method in a subclass such that it returns\n'
        '    179     """\n'
        "--> 180     raise TypeError(f'Object of type {o.__class__.__name__} '\n"
        "    181                     f'is not JSON serializable')\n"
    )
    traceback = [
        "TypeError    Traceback (most recent call last)",
        "Cell In[3], line 2\n----> 2 result = snapshot(nested)",
        "File /usr/lib/python3.11/json/__init__.py:238, in dumps()\n--> 238 return cls(...)",
        raising,
        "TypeError: Object of type datetime is not JSON serializable",
    ]
    info, _ = normalise_error("TypeError", "Object of type datetime", traceback, 1 << 20)
    assert info.traceback == [
        "TypeError Traceback (most recent call last)",
        traceback[1],
        "[… 1 library frame(s) folded: json]",
        "File /usr/lib/python3.11/json/encoder.py:180, in JSONEncoder.default(self, o)\n"
        "--> 180     raise TypeError(f'Object of type {o.__class__.__name__} '\n"
        "    181                     f'is not JSON serializable')\n",
        traceback[-1],
    ]
    # Folding a folded traceback changes nothing.
    again, _ = normalise_error("TypeError", "Object of type datetime", info.traceback, 1 << 20)
    assert again.traceback == info.traceback


def test_a_traceback_without_the_exception_line_gets_one():
    info, _ = normalise_error("KeyError", "'x'", ["frame 1", "frame 2", "frame 3", "frame 4"], 4096)
    assert info.traceback == ["frame 1", "frame 2", "frame 3", "frame 4", "KeyError: 'x'"]
    qualified, _ = normalise_error(
        "JSONDecodeError", "bad", ["json.decoder.JSONDecodeError: bad"], 4096
    )
    assert qualified.traceback == ["json.decoder.JSONDecodeError: bad"]


def test_error_fields_are_capped_by_the_byte_limit():
    info, removed = normalise_error("E" * 300, "v" * 5000, ["t" * 5000] * 6, 1 << 20)
    assert info.ename == "E" * 127 + "…"
    assert info.evalue == "v" * 1023 + "…"
    assert len(info.traceback) == 7
    assert info.traceback[:6] == ["t" * 1023 + "…"] * 6
    assert info.traceback[6] == ("E" * 300 + ": " + "v" * 5000)[:1023] + "…"
    original = {
        "output_type": "error",
        "ename": "E" * 300,
        "evalue": "v" * 5000,
        "traceback": ["t" * 5000] * 6,
    }
    assert removed == size_of(original) - size_of({"output_type": "error", **info.as_dict()})

    # max_bytes // 16 = 64 characters per field, never below 32.
    small, _ = normalise_error("E", "v" * 100, [], 1024)
    assert small.evalue == "v" * 63 + "…"
    tiny, _ = normalise_error("E", "v" * 100, [], 16)
    assert tiny.evalue == "v" * 31 + "…"


def test_error_fields_shrink_further_until_the_error_fits():
    # Four-byte characters: five fields of 2000 // 16 = 125 characters would
    # take about 2500 bytes, so the cap halves once, to 62.
    max_bytes = 2000
    info, _ = normalise_error("E", "😀" * 5000, ["😀" * 5000] * 4, max_bytes)
    assert size_of({"output_type": "error", **info.as_dict()}) <= max_bytes
    assert info.evalue == "😀" * 61 + "…"
    assert info.traceback[-1] == "E: " + "😀" * 58 + "…"
    # It never goes below 32 characters, even when that cannot fit.
    floor, _ = normalise_error("E", "😀" * 5000, ["😀" * 5000] * 4, 100)
    assert floor.evalue == "😀" * 31 + "…"


def test_the_error_is_kept_even_past_the_limits():
    collector = OutputCollector(max_bytes=200, max_blocks=1)
    collector.add("stream", {"name": "stdout", "text": "kept\n"})
    collector.add("stream", {"name": "stdout", "text": "omitted\n"})
    collector.add(
        "error",
        {"ename": "ValueError", "evalue": "bad", "traceback": [f"{RED}ValueError{RESET}: bad"]},
    )
    result = collector.result()
    error_output = {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "bad",
        "traceback": ["ValueError: bad"],
    }
    raw_error = {**error_output, "traceback": [f"{RED}ValueError{RESET}: bad"]}
    # Stored in its colours; a model reads it plain.
    assert result.outputs == [stream("kept\n"), raw_error]
    assert plain_output(result.outputs[1]) == error_output
    assert result.error == ErrorInfo("ValueError", "bad", ["ValueError: bad"])
    removed = size_of(raw_error) - size_of(error_output)
    assert result.truncation == Truncation(True, 1, size_of(stream("omitted\n")) + removed)

    # Past the byte limit too: the error is the one thing kept beyond it.
    full = OutputCollector(max_bytes=size_of(stream("kept\n")), max_blocks=128)
    full.add("stream", {"name": "stdout", "text": "kept\n"})
    full.add("error", {"ename": "ValueError", "evalue": "bad", "traceback": []})
    # Stored as the kernel sent it (no traceback); counted as a model reads it.
    assert full.result().outputs == [stream("kept\n"), {**error_output, "traceback": []}]
    assert full.size_bytes == size_of(stream("kept\n")) + size_of(error_output)
    assert full.result().truncation == Truncation(False, 0, 0)


def test_on_output_sees_each_kept_payload_only():
    seen: list[dict] = []
    collector = OutputCollector(max_bytes=1 << 20, max_blocks=2)
    collector.on_output = seen.append
    for text in ("a", "b", "c"):
        collector.add("stream", {"name": "stdout", "text": text})
    assert seen == [stream("a"), stream("b")]


def test_result_is_a_snapshot():
    collector = OutputCollector(1 << 20, 128)
    collector.add("stream", {"name": "stdout", "text": "a"})
    before = collector.result()
    collector.add("stream", {"name": "stdout", "text": "b"})
    assert isinstance(before, CollectedOutputs)
    assert before.outputs == [stream("a")]


def test_negative_limits_are_refused():
    with pytest.raises(ValueError):
        OutputCollector(-1, 1)


def test_a_stream_payload_over_the_byte_limit_keeps_its_head_and_tail():
    # A single 5 MB print used to vanish whole; now it shows how it began and ended.
    text = "".join(f"line {i}\n" for i in range(600_000))
    max_bytes = 100_000
    result = collect(("stream", {"name": "stdout", "text": text}), max_bytes=max_bytes)
    (kept,) = result.outputs
    assert size_of(kept) <= max_bytes
    assert kept["text"].startswith("line 0\nline 1\n")
    assert kept["text"].endswith("line 599999\n")
    assert "bytes of this output left out here by --max-output-bytes" in kept["text"]
    # Exact: what was left out is the original payload's size minus the kept one's.
    assert result.truncation == Truncation(True, 0, size_of(stream(text)) - size_of(kept))


def test_after_a_cut_payload_the_gap_omits_everything():
    first = "a" * 50_000
    result = collect(
        ("stream", {"name": "stdout", "text": first}),
        ("stream", {"name": "stdout", "text": "after\n"}),
        max_bytes=20_000,
    )
    (kept,) = result.outputs
    assert kept["text"].startswith("aaa") and kept["text"].endswith("aaa")
    assert result.truncation.omitted_blocks == 1
    assert result.truncation.omitted_bytes == size_of(stream(first)) - size_of(kept) + size_of(
        stream("after\n")
    )


def test_too_little_room_omits_the_payload_whole_and_non_streams_are_never_cut():
    small = stream("s" * 100)
    room_left = 500  # under MIN_CUT_BYTES
    result = collect(
        ("stream", small),
        ("stream", {"name": "stdout", "text": "b" * 5000}),
        max_bytes=size_of(small) + room_left,
    )
    assert result.outputs == [small]
    assert result.truncation == Truncation(True, 1, size_of(stream("b" * 5000)))
    big = {"text/plain": "p" * 50_000}
    result = collect(("display_data", display(big)), max_bytes=20_000)
    assert result.outputs == [] and result.truncation.omitted_blocks == 1


def test_a_cut_of_non_ascii_text_stays_within_the_limit():
    text = "é\n" * 50_000
    result = collect(("stream", {"name": "stdout", "text": text}), max_bytes=4000)
    (kept,) = result.outputs
    assert 3000 < size_of(kept) <= 4000
    assert kept["text"].startswith("é\né\n") and kept["text"].endswith("é\n")
    assert result.truncation.omitted_bytes == size_of(stream(text)) - size_of(kept)
