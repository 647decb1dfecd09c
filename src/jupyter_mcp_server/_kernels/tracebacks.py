"""A traceback folded to what a reader needs, from the whole of it.

The line an agent needs most when it fixes its own code is the line of its
own cell that failed, and that is the *outermost* frame: keeping the last few
entries of a traceback that went deep into a library loses it. So a traceback
is folded from all its entries at once:

- every frame of the notebook's own code (IPython's ``Cell In[3], line 2``,
  and any file outside installed packages and the standard library) is kept
  whole, its failing line marked as IPython marks it (``---->``);
- each run of frames inside installed packages (``site-packages``,
  ``dist-packages``) or the standard library becomes one line counting them
  and naming their packages, except the innermost frame of all, which says
  where the error was raised: of a library's frame, its first line and the
  marked line on (the statement that raised), not the library's code around it;
- a frame (or a cycle of up to four) repeated, as in a recursion, is kept
  once with a line counting the repeats;
- the exception line, and what chains one exception to the next, are kept;
  the row of dashes IPython puts above a traceback is not.

Folding is idempotent: the lines it writes are not frames, so folding a
folded traceback changes nothing. What is folded is bounded in entries
(``MAX_ENTRIES``) whatever the traceback held: a recursion of 5,000 frames
reads as a few lines.
"""

from __future__ import annotations

import re

#: At most this many frames are kept whole (the outermost and the innermost ones).
MAX_FRAMES = 12
#: At most this many entries in all (frames, fold lines, chains, the exception lines).
MAX_ENTRIES = 32
#: A cycle of frames this long at most is recognised as a repetition.
MAX_CYCLE = 4
#: A cycle counts as a repetition from this many occurrences on.
MIN_REPEATS = 3

_FRAME = re.compile(r"^\s*(?:Cell In\[|Input In \[|File |<ipython-input-)")
_PATH = re.compile(r"^\s*File \"?([^\s\",:]+|<frozen [\w.]+>)")
_INSTALLED = re.compile(r"(?:site|dist)-packages/([A-Za-z0-9_.-]+)")
_STANDARD = re.compile(r"/lib/(?:python3[.\d]*|pypy3[.\d]*)/([A-Za-z0-9_.-]+)")
_DASHES = re.compile(r"^\s*-{3,}\s*$")
_MARKED = re.compile(r"^\s*-*>\s*\d+")
_ALIGNED_HEADER = re.compile(r"^(\S[^\n]*?) {2,}(Traceback \(most recent call last\))", re.M)


def is_frame(entry: str) -> bool:
    """Whether a traceback entry is a frame (a place in code), rather than a header,
    a chaining sentence, a fold line or the exception line."""
    return _FRAME.match(entry) is not None


def is_cell_frame(entry: str) -> bool:
    """A frame of a notebook cell: IPython 8 and later ``Cell In[3], line 2``; IPython 7
    ``Input In [3]`` or ``<ipython-input-3-…>``."""
    stripped = entry.lstrip()
    return (
        stripped.startswith(("Cell In[", "Input In ["))
        or "<ipython-input-" in stripped.split("\n", 1)[0]
    )


def library_of(entry: str) -> str | None:
    """The package (or standard-library module) a frame runs in; None for the user's own code."""
    if is_cell_frame(entry):
        return None
    match = _PATH.match(entry)
    if match is None:
        return None
    path = match.group(1)
    found = _INSTALLED.search(path) or _STANDARD.search(path)
    if found:
        return found.group(1).removesuffix(".py")
    if path.startswith("<frozen "):  # the import system, frozen into the interpreter
        return path[len("<frozen ") : -1].split(".")[0]
    if path.endswith((".pyx", ".pxi", ".pxd")) and not path.startswith(("/", "~")):
        return path.split("/", 1)[0]  # a compiled extension's source, named from its package
    return None


def compact_traceback(entries: list[str]) -> list[str]:
    """`entries` (IPython's traceback, colour codes already stripped) folded: see the module."""
    entries = [entry for entry in entries if not _DASHES.match(entry)]
    frames = [position for position, entry in enumerate(entries) if is_frame(entry)]
    innermost = frames[-1] if frames else -1
    folded = _fold_libraries(entries, innermost)
    folded = _fold_repeats(folded)
    folded = _bound_frames(folded)
    return _bound_entries(folded)


def unaligned(entry: str) -> str:
    """An entry as a model reads it: IPython's header without the run of spaces that
    right-aligns ``Traceback (most recent call last)`` for a terminal (a model reads no
    columns, and the header is in every error it reads, often twice)."""
    return _ALIGNED_HEADER.sub(r"\1 \2", entry) if "Traceback (" in entry else entry


def fold_line(count: int, packages: list[str]) -> str:
    """The line that stands for `count` library frames in `packages`."""
    names = ", ".join(sorted(set(packages))) or "library"
    return f"[… {count} library frame(s) folded: {names}]"


#: Of the innermost frame inside a library: at most this many lines from the marked one on.
RAISING_LINES = 3


def raising_part(entry: str) -> str:
    """A library frame cut to where it raised: its first line (file, line, function) and
    from the marked line on, at most :data:`RAISING_LINES` lines; unchanged when nothing is
    marked."""
    lines = entry.split("\n")
    marked = next((n for n, line in enumerate(lines) if n and _MARKED.match(line)), None)
    if marked is None:
        return entry
    tail = [line for line in lines[marked : marked + RAISING_LINES] if line.strip()]
    return "\n".join([lines[0], *tail, ""] if entry.endswith("\n") else [lines[0], *tail])


def _fold_libraries(entries: list[str], innermost: int) -> list[str]:
    kept: list[str] = []
    run: list[str] = []
    for position, entry in enumerate(entries):
        package = library_of(entry)
        if package is not None and position != innermost:
            run.append(package)
            continue
        if run:
            kept.append(fold_line(len(run), run))
            run = []
        kept.append(raising_part(entry) if package is not None else entry)
    if run:
        kept.append(fold_line(len(run), run))
    return kept


def _fold_repeats(entries: list[str]) -> list[str]:
    """A block of up to ``MAX_CYCLE`` frames repeated ``MIN_REPEATS`` times or more is kept once."""
    kept: list[str] = []
    position = 0
    while position < len(entries):
        best_length, best_repeats = 0, 1
        if is_frame(entries[position]):
            for length in range(1, MAX_CYCLE + 1):
                block = entries[position : position + length]
                if len(block) < length or not all(is_frame(entry) for entry in block):
                    break
                repeats = 1
                while (
                    entries[position + repeats * length : position + (repeats + 1) * length]
                    == block
                ):
                    repeats += 1
                if repeats >= MIN_REPEATS and repeats * length > best_repeats * best_length:
                    best_length, best_repeats = length, repeats
        if best_length:
            kept.extend(entries[position : position + best_length])
            frames = "frame above" if best_length == 1 else f"{best_length} frames above"
            kept.append(f"[… the {frames} repeated {best_repeats - 1} more time(s)]")
            position += best_length * best_repeats
        else:
            kept.append(entries[position])
            position += 1
    return kept


def _bound_frames(entries: list[str]) -> list[str]:
    frames = [position for position, entry in enumerate(entries) if is_frame(entry)]
    if len(frames) <= MAX_FRAMES:
        return entries
    outer = MAX_FRAMES // 3
    first_dropped, last_dropped = frames[outer], frames[-(MAX_FRAMES - outer) - 1]
    dropped = len(frames) - MAX_FRAMES
    middle = entries[first_dropped : last_dropped + 1]
    libraries = sum(_count_of(entry) for entry in middle if not is_frame(entry))
    said = f" and {libraries} library frame(s)" if libraries else ""
    return [
        *entries[:first_dropped],
        f"[… {dropped} frame(s){said} folded here]",
        *entries[last_dropped + 1 :],
    ]


def _bound_entries(entries: list[str]) -> list[str]:
    if len(entries) <= MAX_ENTRIES:
        return entries
    head = MAX_ENTRIES // 4
    tail = MAX_ENTRIES - head - 1
    return [
        *entries[:head],
        f"[… {len(entries) - head - tail} traceback entries folded here]",
        *entries[-tail:],
    ]


_COUNT = re.compile(r"^\[… (\d+) library frame")


def _count_of(entry: str) -> int:
    match = _COUNT.match(entry)
    return int(match.group(1)) if match else 0


def shorten_entry(entry: str, max_chars: int, ellipsis: str = "…") -> str:
    """One entry in at most `max_chars`: a frame keeps its location line and its marked line
    (the line that failed) before the context around it, so shortening never loses them."""
    if len(entry) <= max_chars:
        return entry
    if is_frame(entry):
        lines = entry.split("\n")
        essential = [lines[0], *(line for line in lines[1:] if _MARKED.match(line))]
        if len(essential) > 1:
            room = max(max_chars - len(essential) + 1, 0)
            share = max(room // len(essential), 1)
            kept = "\n".join(_cut(line, share, ellipsis) for line in essential)
            if len(kept) <= max_chars:
                return kept
    return _cut(entry, max_chars, ellipsis)


def _cut(text: str, max_chars: int, ellipsis: str) -> str:
    return text if len(text) <= max_chars else text[: max(max_chars - 1, 0)] + ellipsis
