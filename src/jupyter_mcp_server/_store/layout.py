"""nbformat's JSON layout, byte for byte, and each cell's text kept between writes.

Every change to a notebook rewrites the whole file, and a 2,000-cell notebook
spent most of each edit encoding cells that did not change. ``json`` only has
a C encoder for output without indentation; with ``indent`` it runs a
generator per value in Python. :func:`indented_json` writes nbformat's layout
(``indent=1``, sorted keys, ``ensure_ascii=False``) with one Python call per
container and the C string encoder for every string, and :class:`CellTexts`
keeps the text of every cell of the last write, keyed by the cell's content,
so the next write encodes only the cells that changed.
"""

from __future__ import annotations

from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

#: The indentation of a cell: inside the notebook (0) and its ``cells`` list (1).
CELL_LEVEL = 2

_INF = float("inf")


class NotPlainJson(Exception):
    """A value :func:`indented_json` leaves to ``json.dumps``."""


class Verbatim(str):
    """JSON text already encoded at its place in the layout, written as it is."""


def indented_json(value: Any, level: int = 0) -> str:
    """``json.dumps(value, indent=1, sort_keys=True, separators=(",", ": "),
    ensure_ascii=False)``, byte for byte, as if ``value`` sat ``level`` deep.

    Anything but the JSON types nbformat stores (a non-string key, bytes, an
    unknown object, NaN) raises :class:`NotPlainJson`, and the caller uses ``json``.
    """
    out: list[str] = []
    append = out.append

    def container(value: Any, level: int) -> None:
        if not value:
            append("{}" if isinstance(value, dict) else "[]")
            return
        newline = "\n" + " " * (level + 1)
        separator = "," + newline
        between = newline
        if isinstance(value, dict):
            append("{")
            for key in sorted(value):
                if type(key) is not str:
                    raise NotPlainJson
                append(between)
                between = separator
                append(encode_basestring(key))
                append(": ")
                item = value[key]
                if type(item) is str:
                    append(encode_basestring(item))
                else:
                    other(item, level + 1)
            append("\n" + " " * level + "}")
        else:
            append("[")
            for item in value:
                append(between)
                between = separator
                if type(item) is str:
                    append(encode_basestring(item))
                else:
                    other(item, level + 1)
            append("\n" + " " * level + "]")

    def other(value: Any, level: int) -> None:
        if isinstance(value, Verbatim):
            append(value)
        elif isinstance(value, (dict, list, tuple)):
            container(value, level)
        elif isinstance(value, str):
            append(encode_basestring(value))
        elif value is None:
            append("null")
        elif value is True:
            append("true")
        elif value is False:
            append("false")
        elif isinstance(value, int):
            append(int.__repr__(value))
        elif isinstance(value, float) and value == value and value not in (_INF, -_INF):
            append(float.__repr__(value))
        else:  # NaN, infinities, bytes, anything else: json's own rules
            raise NotPlainJson

    other(value, level)
    return "".join(out)


#: Cells whose text is longer than this (an image, a long output) are encoded
#: again at every write rather than kept twice more in memory (text and key):
#: their cost is in C, proportional to their size, like writing them.
KEPT_TEXT_LIMIT = 64 * 1024


class CellTexts:
    """The text of each cell of a notebook's last write, reused while the cell is unchanged.

    The key is ``repr(cell)``: C-fast, and different for any difference that
    changes the text, including ``1``, ``1.0`` and ``True``, which compare
    equal. A text is therefore never stale, whoever changed the cell (a tool,
    or another program whose save was read back). Only the last write's texts
    of at most :data:`KEPT_TEXT_LIMIT` characters are kept, so memory stays
    about twice the size of the notebook's small cells. Each text is kept with
    its digest (``digest_of``), computed once, which names it in a notebook's
    history; :meth:`take_written` hands over the last encoding's cells.
    """

    def __init__(self, digest_of: Callable[[str], str] | None = None) -> None:
        self._texts: dict[str, tuple[str, str]] = {}
        self._digest_of = digest_of or _no_digest
        self._written: list[tuple[str, str]] | None = None

    def fork(self) -> CellTexts:
        """A copy to encode a notebook that may never be written, leaving this one as it is."""
        fork = CellTexts(self._digest_of)
        fork._texts = dict(self._texts)
        return fork

    def take_written(self) -> list[tuple[str, str]] | None:
        """Each cell's (text, digest) of the last :meth:`cells_text`, once; None if it failed."""
        written, self._written = self._written, None
        return written

    def cells_text(self, cells: list[Any], disk_cell: Callable[[Any], Any]) -> Verbatim:
        """The ``cells`` list as it sits in the notebook; ``disk_cell`` gives a cell's stored form."""
        self._written = None
        if not cells:
            self._written = []
            return Verbatim("[]")
        previous = self._texts
        texts: dict[str, tuple[str, str]] = {}
        parts: list[tuple[str, str]] = []
        for cell in cells:
            key = repr(cell)
            kept = texts.get(key) or previous.get(key)
            if kept is None:
                text = indented_json(disk_cell(cell), CELL_LEVEL)
                kept = (text, self._digest_of(text))
            if len(kept[0]) <= KEPT_TEXT_LIMIT:
                texts[key] = kept
            parts.append(kept)
        self._texts = texts
        self._written = parts
        indent = "\n" + " " * CELL_LEVEL
        return Verbatim(
            "["
            + indent
            + ("," + indent).join(text for text, _ in parts)
            + "\n"
            + " " * (CELL_LEVEL - 1)
            + "]"
        )


def _no_digest(text: str) -> str:
    return ""
