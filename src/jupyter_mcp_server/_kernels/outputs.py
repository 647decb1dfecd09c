"""Bounded, honest outputs from a kernel's iopub messages.

A cell can print gigabytes; a model reading the result can take a few hundred
kilobytes, and a client must know exactly what it did not see. This module
turns iopub messages into nbformat v4 outputs while keeping the server-wide
limits (``max_output_bytes``, ``max_output_blocks``) and counting what it
leaves out, so the output schema 1.0 ``truncation`` object is exact:

- A *payload* is one iopub output message as its nbformat output dict; its
  size is its compact UTF-8 JSON size (:func:`payload_size`).
- Payloads are kept while fewer than ``max_blocks`` are kept and their bytes
  fit in ``max_bytes``. The first payload that does not fit starts a gap:
  every payload after it is omitted, even smaller ones that would fit, so the
  kept outputs are always a true prefix of what the code printed. That first
  payload is omitted too, unless it is a stream and at least
  ``MIN_CUT_BYTES`` are still free: then its text keeps its head and tail
  around a marker, to fill the bytes left (a single 5 MB print shows how it
  began and how it ended, not nothing), and the bytes cut from it count as
  omitted bytes (its original size minus the kept one's, as for an error).
  Omitted payloads are measured and dropped, never held.
- An error payload is the exception to the gap: it is always kept, because
  the error is the one thing a caller must see. The notebook stores it as the
  kernel sent it, as Jupyter stores it (every frame, IPython's row of dashes,
  the colours: :func:`stored_error`), bounded only by ``max_bytes``: past it,
  the traceback keeps its first and last entries around one saying how many
  were left out, and an entry too long for its share keeps its head and tail.
  What a model reads of it is folded from the whole of it (``tracebacks``,
  :class:`ErrorInfo`, :func:`plain_output`): every frame of the user's own
  cells whole, library frames folded with a count and their package names,
  repeats counted, the exception line kept; at most
  ``tracebacks.MAX_ENTRIES`` entries, each shortened to the byte limit's
  share keeping a frame's location and failing line. The bytes folding and
  shortening removed from what a model reads count as omitted bytes.
- Colour codes are kept as the kernel sent them, as Jupyter stores them (JupyterLab and
  the output app colour them), and the limits count a payload as a model reads it
  (:func:`plain_output`, from which every text for a model is made): colours cost no
  byte of the budget, and a model reads the same whether they are there or not.
- No synthetic stderr stream announces a truncation: clients read
  ``truncation``, and cannot mistake a server limit for the notebook's stderr.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp_server._kernels.tracebacks import compact_traceback, shorten_entry, unaligned
from jupyter_mcp_server._text.terminal import strip_ansi

ENAME_MAX_CHARS = 128
FIELD_MIN_CHARS = 32
FIELD_MAX_CHARS = 1024
ELLIPSIS = "…"
#: A stream payload that does not fit is cut to head and tail only when this
#: many bytes are free: fewer would show only the marker.
MIN_CUT_BYTES = 1024

# A '\r' that is not the first half of '\r\n' returns the cursor to the start
# of the line, so whatever the line held up to it is overwritten (the rule of
# nbconvert's coalesce_streams). '.' stops at '\n', so lines never merge.
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n])")


@dataclass(frozen=True)
class Truncation:
    """What the limits left out: whole payloads, and bytes cut from an error."""

    truncated: bool
    omitted_blocks: int
    omitted_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "truncated": self.truncated,
            "omitted_blocks": self.omitted_blocks,
            "omitted_bytes": self.omitted_bytes,
        }


@dataclass(frozen=True)
class ErrorInfo:
    """A kernel error, normalised: plain text, bounded, its traceback folded (``tracebacks``)."""

    ename: str
    evalue: str
    traceback: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"ename": self.ename, "evalue": self.evalue, "traceback": list(self.traceback)}


@dataclass(frozen=True)
class CollectedOutputs:
    """Everything one execution produced, as the notebook will store it."""

    outputs: list[dict[str, Any]]
    truncation: Truncation
    error: ErrorInfo | None
    execution_count: int | None
    #: Display id -> indices in `outputs` of the outputs that show it (ids are transient:
    #: never stored, so whoever keeps the notebook keeps these to update them later).
    displays: dict[str, list[int]] = field(default_factory=dict)
    #: Display id -> the ``data`` and ``metadata`` it showed last in this execution: what
    #: the outputs of earlier executions showing that id now show too.
    display_updates: dict[str, dict[str, Any]] = field(default_factory=dict)


def _strip_value(value: Any) -> Any:
    if isinstance(value, str):
        return strip_ansi(value)
    if isinstance(value, list):
        return [strip_ansi(item) if isinstance(item, str) else item for item in value]
    return value


def _plain_entry(entry: str) -> str:
    """A traceback entry as a model reads it (no colour codes, the header not aligned)."""
    return unaligned(strip_ansi(entry))


def _plain_traceback(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    plain = [_plain_entry(item) if isinstance(item, str) else item for item in value]
    if all(isinstance(item, str) for item in plain):
        # The notebook keeps the kernel's whole traceback; a model reads it folded.
        return compact_traceback(plain)
    return plain


def plain_output(output: Any) -> Any:
    """An output as a model reads it: its stream text, error and ``text/plain`` without
    terminal escapes, a traceback folded (``tracebacks.compact_traceback``) and its header
    without the spaces that align it for a terminal. The notebook keeps them, as Jupyter
    does (JupyterLab and the output app colour them); every text made for a model is made
    from this. The same object when there is nothing to strip or fold, a copy otherwise."""
    if not isinstance(output, dict):
        return output
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        plain = _strip_value(text)
        return output if plain == text else {**output, "text": plain}
    if kind == "error":
        fields = {key: _strip_value(output.get(key)) for key in ("ename", "evalue")}
        fields["traceback"] = _plain_traceback(output.get("traceback"))
        changed = {key: value for key, value in fields.items() if value != output.get(key)}
        return {**output, **changed} if changed else output
    data = output.get("data")
    if isinstance(data, dict) and "text/plain" in data:
        text = data["text/plain"]
        plain = _strip_value(text)
        if plain != text:
            return {**output, "data": {**data, "text/plain": plain}}
    return output


def payload_size(output: dict[str, Any]) -> int:
    """The size the limits count: compact UTF-8 JSON of what a model reads of it
    (:func:`plain_output`: colour codes the notebook keeps are not counted), non-ASCII left
    as is."""
    return _json_size(plain_output(output))


def _json_size(output: dict[str, Any]) -> int:
    return len(json.dumps(output, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def normalise_error(
    ename: Any, evalue: Any, traceback: Any, max_bytes: int
) -> tuple[ErrorInfo, int]:
    """The error as it is kept, and how many bytes normalising it removed.

    The removed bytes are the original error payload's size minus the
    normalised one's, never below zero (appending the final line can make a
    bare error grow).
    """
    raw_lines = [str(line) for line in (traceback or [])]
    # Colour codes count as removed: the model's text leaves them out (docs/protocol.md).
    original = _json_size(_error_output(str(ename or ""), str(evalue or ""), raw_lines))
    name = strip_ansi(str(ename or ""))
    value = strip_ansi(str(evalue or ""))
    lines = [_plain_entry(line) for line in raw_lines]
    if not _ends_with_exception_line(lines, name) and (name or value):
        lines.append(f"{name}: {value}" if value else name)
    lines = compact_traceback(lines)
    name = _shorten(name, ENAME_MAX_CHARS)
    cap = min(max(max_bytes // 16, FIELD_MIN_CHARS), FIELD_MAX_CHARS)
    while True:
        info = ErrorInfo(
            name, _shorten(value, cap), [shorten_entry(line, cap, ELLIPSIS) for line in lines]
        )
        size = payload_size(_error_output(info.ename, info.evalue, info.traceback))
        if size <= max_bytes or cap <= FIELD_MIN_CHARS:
            return info, max(0, original - size)
        cap = max(FIELD_MIN_CHARS, cap // 2)


class OutputCollector:
    """Collects one execution's iopub messages into bounded nbformat outputs.

    Feed it with :meth:`add` in arrival order, then read :meth:`result`.
    ``on_output``, when set, is called with each payload as it is kept (not
    with omitted ones, updates or clears); it runs after the collector's own
    bookkeeping, and its exceptions are the caller's.
    """

    def __init__(self, max_bytes: int, max_blocks: int) -> None:
        if max_bytes < 0 or max_blocks < 0:
            raise ValueError("output limits cannot be negative")
        self.max_bytes = max_bytes
        self.max_blocks = max_blocks
        self.on_output: Callable[[dict[str, Any]], None] | None = None
        self._shortened = False
        self._outputs: list[dict[str, Any]] = []
        # display_id -> kept outputs showing it; the id is transient and is
        # not written into the notebook, so it lives only here.
        self._displays: dict[str, list[dict[str, Any]]] = {}
        self._kept_bytes = 0
        self._kept_blocks = 0
        self._omitted_blocks = 0
        self._omitted_bytes = 0
        self._in_gap = False
        self._clear_before_next_output = False
        self._error: ErrorInfo | None = None
        self._execution_count: int | None = None
        # display_id -> what it shows now, for outputs of other executions.
        self._display_updates: dict[str, dict[str, Any]] = {}

    @property
    def size_bytes(self) -> int:
        """Payload bytes kept since the last clear: what the byte limit is checked on."""
        return self._kept_bytes

    def set_execution_count(self, count: int | None) -> None:
        if isinstance(count, int):
            self._execution_count = count

    def add(self, msg_type: str, content: dict[str, Any]) -> None:
        """Take one iopub message; anything that is not output is ignored."""
        if msg_type == "stream":
            text = content.get("text", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            name = content.get("name", "stdout")
            # Kept as the kernel sent it, colours and all, as Jupyter stores it.
            self._add_payload({"output_type": "stream", "name": name, "text": text})
        elif msg_type in ("display_data", "execute_result"):
            output: dict[str, Any] = {"output_type": msg_type}
            if msg_type == "execute_result":
                self.set_execution_count(content.get("execution_count"))
                output["execution_count"] = content.get("execution_count")
            output["data"] = dict(content.get("data") or {})
            output["metadata"] = dict(content.get("metadata") or {})
            display_id = _display_id_of(content)
            if display_id is not None:
                # A new output showing an id updates every output already showing it,
                # as JupyterLab and nbclient do, then is shown itself.
                self._update_display(content)
            self._add_payload(output, display_id)
        elif msg_type == "error":
            self._add_error(content)
        elif msg_type == "clear_output":
            if content.get("wait"):
                self._clear_before_next_output = True
            else:
                self._clear()
        elif msg_type == "update_display_data":
            self._update_display(content)
        elif msg_type == "execute_input":
            self.set_execution_count(content.get("execution_count"))

    def result(self) -> CollectedOutputs:
        """A snapshot: later messages do not change what it returns."""
        truncated = self._omitted_blocks > 0 or self._shortened
        position = {id(output): index for index, output in enumerate(self._outputs)}
        displays = {
            display_id: [position[id(target)] for target in targets if id(target) in position]
            for display_id, targets in self._displays.items()
        }
        return CollectedOutputs(
            outputs=copy.deepcopy(self._outputs),
            truncation=Truncation(truncated, self._omitted_blocks, self._omitted_bytes),
            error=self._error,
            execution_count=self._execution_count,
            displays={display_id: indices for display_id, indices in displays.items() if indices},
            display_updates=copy.deepcopy(self._display_updates),
        )

    def _add_payload(self, payload: dict[str, Any], display_id: str | None = None) -> None:
        self._apply_pending_clear()
        size = payload_size(payload)
        fits = self._kept_blocks < self.max_blocks and self._kept_bytes + size <= self.max_bytes
        if self._in_gap or not fits:
            cut = None
            if not self._in_gap and self._kept_blocks < self.max_blocks:
                # A cut through colour codes would leave half an escape: the cut is plain.
                cut = cut_stream(plain_output(payload), self.max_bytes - self._kept_bytes)
            self._in_gap = True
            if cut is None:
                self._omitted_blocks += 1
                self._omitted_bytes += size
                return
            kept_size = payload_size(cut)
            self._shortened = True
            self._omitted_bytes += size - kept_size
            self._keep(cut, kept_size, display_id)
            return
        self._keep(payload, size, display_id)

    def _add_error(self, content: dict[str, Any]) -> None:
        self._apply_pending_clear()
        info, removed = normalise_error(
            content.get("ename"), content.get("evalue"), content.get("traceback"), self.max_bytes
        )
        self._omitted_bytes += removed
        # Stripping colour codes counts in omitted_bytes (docs/protocol.md) but loses
        # nothing a reader needs; only a shortened error makes it `truncated`: what a
        # model reads shortened past folding, or the stored one cut by the byte limit.
        raw = [str(line) for line in (content.get("traceback") or [])]
        plain = _error_output(
            strip_ansi(str(content.get("ename") or "")),
            strip_ansi(str(content.get("evalue") or "")),
            compact_traceback([_plain_entry(line) for line in raw]),
        )
        kept = _error_output(info.ename, info.evalue, list(info.traceback))
        stored, cut = stored_error(content, self.max_bytes)
        if cut or payload_size(kept) < _json_size(plain):
            self._shortened = True
        self._error = info
        # Counted as a model reads it, as every payload is.
        self._keep(stored, payload_size(kept), None)

    def _keep(self, payload: dict[str, Any], size: int, display_id: str | None) -> None:
        self._kept_blocks += 1
        self._kept_bytes += size
        last = self._outputs[-1] if self._outputs else None
        if (
            payload["output_type"] == "stream"
            and last is not None
            and last["output_type"] == "stream"
            and last["name"] == payload["name"]
        ):
            # Only the unfinished last line can still be overwritten by '\r'.
            head, newline, tail = last["text"].rpartition("\n")
            last["text"] = head + newline + _overwrite_lines(tail + payload["text"])
        else:
            kept = dict(payload)
            if kept["output_type"] == "stream":
                kept["text"] = _overwrite_lines(kept["text"])
            self._outputs.append(kept)
            if display_id is not None:
                self._displays.setdefault(display_id, []).append(kept)
        if self.on_output is not None:
            self.on_output(payload)

    def _update_display(self, content: dict[str, Any]) -> None:
        # An update replaces what an output shows rather than adding one, so it
        # is no new block, and it applies even in a gap: the kept prefix then
        # shows the display's latest state, as the notebook would. Updates for
        # displays that were never kept (or were cleared) are dropped, as
        # Jupyter drops updates for unknown ids.
        display_id = _display_id_of(content)
        data = dict(content.get("data") or {})
        metadata = dict(content.get("metadata") or {})
        if display_id is not None:
            # For the outputs of earlier executions (whoever keeps them applies it); one too
            # large for the byte limit is not carried there.
            update = {"data": data, "metadata": metadata}
            if payload_size({"output_type": "display_data", **update}) <= self.max_bytes:
                self._display_updates[display_id] = update
            else:
                self._display_updates.pop(display_id, None)
        targets = self._displays.get(display_id or "", [])
        if not targets:
            return
        growth = sum(
            payload_size({**target, "data": data, "metadata": metadata}) - payload_size(target)
            for target in targets
        )
        if self._kept_bytes + growth > self.max_bytes:
            self._in_gap = True
            self._omitted_blocks += 1
            self._omitted_bytes += payload_size(
                {"output_type": "display_data", "data": data, "metadata": metadata}
            )
            return
        self._kept_bytes += growth
        for target in targets:
            target["data"] = dict(data)
            target["metadata"] = dict(metadata)

    def _apply_pending_clear(self) -> None:
        if self._clear_before_next_output:
            self._clear()

    def _clear(self) -> None:
        # Cleared outputs were shown and replaced, not omitted: the budget
        # starts again and the gap closes, while the omitted counts stay.
        self._outputs.clear()
        self._displays.clear()
        self._kept_bytes = 0
        self._kept_blocks = 0
        self._in_gap = False
        self._clear_before_next_output = False


def cut_stream(payload: dict[str, Any], room: int) -> dict[str, Any] | None:
    """A stream payload cut to head and tail so its size is at most `room`; None when it cannot be."""
    if payload.get("output_type") != "stream" or room < MIN_CUT_BYTES:
        return None
    text = str(payload.get("text", ""))
    empty = payload_size({**payload, "text": ""})
    # Characters cost bytes unevenly (escapes, non-ASCII): start from the average.
    per_char = (payload_size(payload) - empty) / max(len(text), 1)
    keep = max(0, int((room - empty - 120) / per_char))
    while True:
        head, tail = text[: keep - keep // 2], text[len(text) - keep // 2 :] if keep // 2 else ""
        left_out = len(text[len(head) : len(text) - len(tail)].encode("utf-8", "surrogatepass"))
        marker = f"\n[jupyter-mcp-server: {left_out} bytes of this output left out here by --max-output-bytes]\n"
        cut = {**payload, "text": head + marker + tail}
        over = payload_size(cut) - room
        if over <= 0:
            return cut
        if keep == 0:
            return None
        keep = max(0, keep - int(over / per_char) - 8)


#: Of a stored error past the byte limit, an entry (or the value) keeps at most this share
#: of ``max_bytes``, never less than :data:`STORED_ENTRY_MIN` characters.
STORED_ENTRY_SHARE = 8
STORED_ENTRY_MIN = 256


def stored_error(content: dict[str, Any], max_bytes: int) -> tuple[dict[str, Any], bool]:
    """The error as the notebook stores it, and whether it was cut.

    The kernel's own, as Jupyter (nbclient, JupyterLab) stores it: every entry of
    its traceback, IPython's row of dashes and its header as written, the colours.
    Measured plain and unfolded (colour codes cost no byte, as the limits count
    them), an error over `max_bytes` is cut: a value or an entry longer than its
    share keeps its head and tail, plain (a cut through colour codes would leave
    half an escape), around a marker; then, while still over, the traceback keeps
    its first and last entries around one entry saying how many entries and
    bytes were left out. The last entries (where it was raised, the exception
    line) are kept first.
    """
    ename, evalue = str(content.get("ename") or ""), str(content.get("evalue") or "")
    raw = [str(line) for line in (content.get("traceback") or [])]

    def size(name: str, value: str, entries: list[str]) -> int:
        return _json_size(
            _error_output(strip_ansi(name), strip_ansi(value), list(map(strip_ansi, entries)))
        )

    original = _error_output(ename, evalue, raw)
    if size(ename, evalue, raw) <= max_bytes:
        return original, False
    share = max(max_bytes // STORED_ENTRY_SHARE, STORED_ENTRY_MIN)
    if len(strip_ansi(ename)) > ENAME_MAX_CHARS:
        ename = _shorten(strip_ansi(ename), ENAME_MAX_CHARS)
    evalue = _cut_text(evalue, share)
    entries = [_cut_text(entry, share) for entry in raw]
    base = size(ename, evalue, []) + len(_left_out(len(entries), 10**9)) + 8
    sizes = [size("", "", [entry]) - size("", "", []) + 1 for entry in entries]
    if base + sum(sizes) <= max_bytes:
        stored = _error_output(ename, evalue, entries)
        return stored, stored != original
    head: list[int] = []
    tail: list[int] = []
    room = max_bytes - base
    low, high = 0, len(entries) - 1
    take_tail = True
    while low <= high:
        position = high if take_tail else low
        if sizes[position] > room and (head or tail):
            break
        room -= sizes[position]
        if take_tail:
            tail.insert(0, position)
            high -= 1
        else:
            head.append(position)
            low += 1
        take_tail = not take_tail
    left = [entries[position] for position in range(low, high + 1)]
    kept = [entries[position] for position in head]
    if left:
        dropped = sum(len(strip_ansi(entry).encode("utf-8", "surrogatepass")) for entry in left)
        kept.append(_left_out(len(left), dropped))
    kept.extend(entries[position] for position in tail)
    stored = _error_output(ename, evalue, kept)
    return stored, stored != original


def _left_out(entries: int, dropped: int) -> str:
    return (
        f"[jupyter-mcp-server: {entries} traceback entries ({dropped} bytes) left out here "
        "by --max-output-bytes]"
    )


def _cut_text(text: str, max_chars: int) -> str:
    """`text` as it is when it fits in `max_chars` (plain); else its head and tail, plain,
    around a marker saying how much was left out."""
    plain = strip_ansi(text)
    if len(plain) <= max_chars:
        return text
    keep = max(max_chars - 120, 2)
    head, tail = plain[: keep - keep // 2], plain[len(plain) - keep // 2 :]
    left_out = len(plain[len(head) : len(plain) - len(tail)].encode("utf-8", "surrogatepass"))
    return (
        f"{head}\n[jupyter-mcp-server: {left_out} bytes of this entry left out here by "
        f"--max-output-bytes]\n{tail}"
    )


def _error_output(ename: str, evalue: str, traceback: list[str]) -> dict[str, Any]:
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": traceback}


def _shorten(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + ELLIPSIS


def _ends_with_exception_line(lines: list[str], ename: str) -> bool:
    """Whether the traceback already ends in ``Name: message`` (IPython's last line)."""
    last = next((line for line in reversed(lines) if line.strip()), "")
    last_line = next((part for part in reversed(last.splitlines()) if part.strip()), "")
    # The name may be qualified there (``json.decoder.JSONDecodeError``).
    pattern = rf"(?:[\w.]+\.)?{re.escape(ename)}(?::|$)"
    return bool(ename) and re.match(pattern, last_line.strip()) is not None


def _overwrite_lines(text: str) -> str:
    return _OVERWRITTEN.sub("", text) if "\r" in text else text


def _display_id_of(content: dict[str, Any]) -> str | None:
    display_id = (content.get("transient") or {}).get("display_id")
    return display_id if isinstance(display_id, str) and display_id else None


#: The ``output_type`` of a step a long call announces ("cell 3 of 10: ok"), heard among the
#: outputs by whoever follows the call; no kernel sends it, and no notebook stores it.
PROGRESS = "progress"


def describe(output: dict[str, Any]) -> str:
    """One output as a line to follow a call by: what it is, and its text when it has one
    (without colour codes: a model may read it)."""
    output = plain_output(output)
    kind = output.get("output_type")
    if kind == PROGRESS:
        return f"[{output.get('text', '')}]\n"
    if kind == "stream":
        text = output.get("text", "")
        return f"[{output.get('name', 'stdout')}] " + (
            "".join(text) if isinstance(text, list) else str(text)
        )
    if kind == "error":
        return f"[error] {output.get('ename')}: {output.get('evalue')}"
    data = output.get("data") or {}
    rich = [mime for mime in data if mime != "text/plain"]
    plain = data.get("text/plain")
    text = ("".join(plain) if isinstance(plain, list) else str(plain)) if plain is not None else ""
    return f"[{', '.join(rich) or kind}] {text}".rstrip()
