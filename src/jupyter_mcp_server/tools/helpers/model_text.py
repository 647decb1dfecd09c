"""An output as the text a model reads: what a person would see, in the fewest tokens.

The notebook keeps the raw MIME bundle untouched; only what a result carries
is rendered here. A pandas DataFrame's HTML is a Markdown table with its
shape said, other HTML is its text, JSON is compact, terminal escapes are
gone and a progress bar redrawn with ``\\r`` is its last state. The same text
is what ``read_output`` pages, so the line numbers a cut result names are
the ones it reads.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

from jupyter_mcp_server.kernels.outputs import strip_ansi

IMAGE_TYPES = ("image/png", "image/jpeg")

# A '\r' not followed by '\n' returns to the start of the line: what was
# before it on that line is overwritten (as the collector does on storage;
# notebooks written elsewhere may still hold the whole redraw history).
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n])")
_PANDAS_SHAPE = re.compile(r"(\d+)\s+rows\s+×\s+(\d+)\s+columns")


def joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(map(str, value))
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def plain(text: str) -> str:
    """Terminal text as it last looked: no escapes, each '\\r'-redrawn line at its last state."""
    text = strip_ansi(text)
    return _OVERWRITTEN.sub("", text).replace("\r\n", "\n") if "\r" in text else text


def output_text(output: Any) -> str | None:
    """The text a model reads for one output; None when it has none (an image alone)."""
    kind = output.get("output_type")
    if kind == "stream":
        return plain(joined(output.get("text", "")))
    if kind == "error":
        traceback = output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]
        return "\n".join(compact_traceback([plain(str(entry)) for entry in traceback]))
    data = output.get("data") or {}
    has_image = any(mime in data for mime in IMAGE_TYPES)
    html = joined(data["text/html"]) if "text/html" in data else None
    if html is not None and "<table" in html.lower():
        table = html_tables_as_markdown(html)
        if table:
            return table
    if "text/markdown" in data:
        return joined(data["text/markdown"])
    if "text/plain" in data and not has_image:
        return plain(joined(data["text/plain"]))
    if "application/json" in data:
        value = data["application/json"]
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if html is not None:
        return html_as_text(html)
    if "text/latex" in data:
        return joined(data["text/latex"])
    return None


_LIBRARY_FRAME = re.compile(r"^\s*File \"?([^\s\",:]+)")
_INSTALLED = re.compile(r"(?:site|dist)-packages/([A-Za-z0-9_.-]+)")
_STANDARD = re.compile(r"/lib/python3[.\d]*/([A-Za-z0-9_.-]+)")


def compact_traceback(entries: list[str]) -> list[str]:
    """IPython's traceback entries with library frames folded: the code the user wrote in
    full, each run of frames inside installed packages or the standard library as one line
    naming them and counting them. The innermost frame and the exception line are kept."""
    kept: list[str] = []
    run: list[str] = []

    def fold() -> None:
        if run:
            names = sorted({name for name in run if name})
            kept.append(f"[… {len(run)} library frame(s) folded: {', '.join(names) or 'library'}]")
            run.clear()

    for position, entry in enumerate(entries):
        match = _LIBRARY_FRAME.match(entry)
        package = (_INSTALLED.search(match.group(1)) or _STANDARD.search(match.group(1))) if match else None
        innermost = position >= len(entries) - 2
        if package is not None and not innermost:
            run.append(package.group(1).removesuffix(".py"))
            continue
        fold()
        kept.append(entry)
    fold()
    return kept


class _Tables(HTMLParser):
    """Rows of cell texts of every <table>, and the text around them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.outside: list[str] = []
        self._depth = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._colspan = 1
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "table":
            self._depth += 1
            if self._depth == 1:
                self.tables.append([])
        elif tag == "tr" and self._depth == 1:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            span = dict(attrs).get("colspan") or "1"
            self._colspan = int(span) if span.isdigit() and 0 < int(span) < 64 else 1
        elif tag in ("br", "p", "div") and self._depth == 0:
            self.outside.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag == "table":
            self._depth = max(0, self._depth - 1)
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            text = " ".join("".join(self._cell).split())
            self._row.extend([text] + [""] * (self._colspan - 1))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._depth == 1:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._depth == 0:
            self.outside.append(data)


def html_tables_as_markdown(html: str) -> str | None:
    """Every table of `html` as a Markdown table with its shape, and the text around them."""
    parser = _Tables()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        return None
    tables = [rows for rows in parser.tables if rows]
    if not tables:
        return None
    around = " ".join("".join(parser.outside).split())
    said = _PANDAS_SHAPE.search(around)
    parts = []
    for rows in tables:
        width = max(len(row) for row in rows)
        header, body = rows[0], rows[1:]
        if said is not None and len(tables) == 1:
            shape = f"{said.group(1)} rows × {said.group(2)} columns (some elided in this view)"
        else:
            shape = f"{len(body)} rows × {width} columns"
        lines = [f"Table: {shape}", _markdown_row(header, width), "|" + " --- |" * width]
        lines.extend(_markdown_row(row, width) for row in body)
        parts.append("\n".join(lines))
    text = "\n\n".join(parts)
    rest = _PANDAS_SHAPE.sub("", around).strip()
    return text + ("\n" + rest if rest else "")


def _markdown_row(cells: list[str], width: int) -> str:
    padded = [cell.replace("|", "\\|") for cell in cells] + [""] * (width - len(cells))
    return "| " + " | ".join(padded) + " |"


class _Text(HTMLParser):
    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_as_text(html: str) -> str:
    """The text a browser would show of `html`, one block per line, scripts and styles left out."""
    parser = _Text()
    try:
        parser.feed(html)
        parser.close()
    except Exception:
        return html
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)
