"""The inline budget: how much output text one result carries, and how a text is cut to it.

Every result costs the model context, so what one carries is bounded apart
from what the notebook stores (``--max-output-bytes``): the server's
``--inline-budget-chars``, or a call's ``max_output_chars``. A text over its
share keeps its head and its tail, whole lines where it can, around a marker
saying how many lines and bytes were left out and which ``read_output`` call
reads them: the beginning says what ran, the end how it finished.
"""

from __future__ import annotations

from jupyter_mcp_server._config import MAX_INLINE_BUDGET, MIN_INLINE_BUDGET
from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure

MIN_OUTPUT_CHARS = MIN_INLINE_BUDGET
MAX_OUTPUT_CHARS = MAX_INLINE_BUDGET


def budget_of(default: int, max_output_chars: int | None) -> int:
    """The budget of one call: its `max_output_chars`, checked, or the server's default."""
    if max_output_chars is None:
        return min(max(default, MIN_OUTPUT_CHARS), MAX_OUTPUT_CHARS)
    if not MIN_OUTPUT_CHARS <= max_output_chars <= MAX_OUTPUT_CHARS:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"max_output_chars must be between {MIN_OUTPUT_CHARS} and {MAX_OUTPUT_CHARS}, not "
            f"{max_output_chars}. Pass a value in that range, or leave it out for this server's "
            f"default of {default}; read_output pages whatever a result leaves out.",
            minimum=MIN_OUTPUT_CHARS,
            maximum=MAX_OUTPUT_CHARS,
        )
    return max_output_chars


def allot(lengths: list[int], budget: int) -> list[int]:
    """Each text's share of `budget`: short texts whole, the long ones sharing the rest evenly."""
    shares = [0] * len(lengths)
    remaining = budget
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for done, index in enumerate(order):
        fair = remaining // (len(order) - done)
        shares[index] = min(lengths[index], fair)
        remaining -= shares[index]
    return shares


def head_and_tail(text: str, chars: int, uri: str | None) -> str:
    """`text` in at most `chars` characters: its head and tail around a marker saying what is between.

    The marker counts the lines and UTF-8 bytes left out and names the first
    line left out, so ``read_output(uri, offset=that line)`` continues the
    head. A share too small for that marker gets a shorter one (the result's
    ``resource_link`` still names the whole), never more than `chars`.
    """
    if len(text) <= chars:
        return text
    room = chars - 240 - (len(uri) if uri else 0)
    for _ in range(4):
        room = max(room, 0)
        head = _head(text, room - room // 2)
        tail = _tail(text[len(head) :], room // 2)
        middle = text[len(head) : len(text) - len(tail)]
        cut = head + _marker(middle, head.count("\n"), uri) + tail
        over = len(cut) - chars
        if over <= 0:
            return cut
        if room == 0:
            break
        room -= over
    short = f"[jupyter-mcp-server: {len(text)} characters left out" + (
        f"; read_output(uri='{uri}')]" if uri else "]"
    )
    return short if len(short) <= chars else short[: max(chars, 0)]


def _marker(middle: str, first: int, uri: str | None) -> str:
    lines = middle.count("\n") + (0 if middle.endswith("\n") or not middle else 1)
    where = (
        f"read_output(uri='{uri}', offset={first}) pages them by line"
        if uri
        else "they are not stored anywhere"
    )
    return (
        f"\n[jupyter-mcp-server: {len(middle.encode('utf-8', 'surrogatepass'))} bytes over {lines} line(s) "
        f"left out here, from line {first} (0-based); {where}]\n"
    )


def _head(text: str, chars: int) -> str:
    head = text[:chars]
    cut = head.rfind("\n")
    # Whole lines when that keeps most of the share; a single huge line is cut mid-line.
    return head[: cut + 1] if cut >= chars // 2 else head


def _tail(text: str, chars: int) -> str:
    if chars <= 0:
        return ""
    tail = text[-chars:]
    cut = tail.find("\n")
    return tail[cut + 1 :] if 0 <= cut < chars // 2 else tail
