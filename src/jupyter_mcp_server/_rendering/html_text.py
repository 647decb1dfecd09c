"""HTML as the text a person reads in it: headings, paragraphs, lists, links, tables as Markdown.

A model reading an HTML output wants what a browser shows, not the markup:
a heading as ``### Quarterly report``, a list as ``- item`` lines, a link as
its text with its target, a table as a Markdown table headed with its exact
shape. A pandas DataFrame's index is not one of its columns (its shape is
pandas'), a MultiIndex reads flattened (``A / p``, its row labels repeated
on every row), and pandas' own truncation (``1000 rows × 1 columns`` under
a table that shows ten) is what the shape says.

The standard library's ``html.parser`` reads it: forgiving of malformed
markup, and iterative, so a document nested 10,000 levels deep costs no
recursion. It reads a few hundred kilobytes a second, so only the first
``MAX_HTML_CHARS`` of a document are read; a larger table still has its
rows counted (a plain count of ``<tr``) and the text says what was not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

#: Characters of one HTML document that are parsed; the rest is counted, not read.
MAX_HTML_CHARS = 131_072
#: Lists nested deeper than this are indented no further.
MAX_LIST_INDENT = 8
#: A cell spanning more than this many columns or rows is taken to span one.
MAX_SPAN = 64

_PANDAS_SHAPE = re.compile(r"(\d+)\s+rows\s+×\s+(\d+)\s+columns")
_TAG = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"[ \t\r\f\v\n]+")
#: Marks a line of <pre> text, kept as it is when lines are tidied.
_PRE_LINE = "\ue000"
#: One level of a nested list's indentation, kept when lines are tidied.
_INDENT = "\ue002"

_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "br",
        "tr",
        "pre",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "nav",
        "blockquote",
        "dl",
        "dt",
        "dd",
        "hr",
        "figure",
        "figcaption",
        "details",
        "summary",
        "ul",
        "ol",
        "caption",
        "form",
        "fieldset",
        "address",
        "center",
    }
)
_HIDDEN = frozenset({"script", "style", "head", "template", "noscript"})


@dataclass
class _Table:
    """One top-level table as it is read: rows of cell texts, and where each row was."""

    rows: list[list[str]] = field(default_factory=list)
    header_rows: int = 0
    heads: list[list[bool]] = field(default_factory=list)
    in_head: bool = False
    row: list[str] | None = None
    row_heads: list[bool] | None = None
    cell: list[str] | None = None
    is_head: bool = False
    colspan: int = 1
    rowspan: int = 1
    #: column -> (text, rows still to fill) for cells spanning rows
    pending: dict[int, tuple[str, int, bool]] = field(default_factory=dict)
    pandas: bool = False


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0
        self._pre = 0
        self._lists: list[list[int]] = []  # each open list: [kind (0 ul, 1 ol), items so far]
        self._links: list[str | None] = []
        self._table_depth = 0
        self._table: _Table | None = None
        self.tables: list[_Table] = []

    # What goes where: text into the current table cell, or into the document.
    def _emit(self, text: str) -> None:
        table = self._table
        if table is not None:
            if table.cell is not None:
                table.cell.append(text)
            return
        self.parts.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
            return
        if tag == "table":
            self._table_depth += 1
            if self._table_depth == 1:
                classes = (dict(attrs).get("class") or "").split()
                self._table = _Table(pandas="dataframe" in classes)
            return
        table = self._table
        if table is not None and self._table_depth == 1:
            if tag == "thead":
                table.in_head = True
            elif tag == "tbody":
                table.in_head = False
            elif tag == "tr":
                self._end_row()
                table.row, table.row_heads = [], []
                self._fill_spans()
            elif tag in ("td", "th"):
                self._end_cell()
                named = dict(attrs)
                table.cell, table.is_head = [], tag == "th"
                table.colspan = _span(named.get("colspan"))
                table.rowspan = _span(named.get("rowspan"))
            elif tag == "br":
                self._emit(" ")
            return
        if tag in _HEADINGS:
            self._emit("\n" + "#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            depth = min(len(self._lists), MAX_LIST_INDENT)
            marker = "- "
            if self._lists:
                self._lists[-1][1] += 1
                if self._lists[-1][0] == 1:
                    marker = f"{self._lists[-1][1]}. "
            self._emit("\n" + _INDENT * max(depth - 1, 0) + marker)
        elif tag in ("ul", "ol"):
            self._lists.append([1 if tag == "ol" else 0, 0])
            self._emit("\n")
        elif tag == "a":
            self._links.append(dict(attrs).get("href"))
        elif tag == "img":
            alt = (dict(attrs).get("alt") or "").strip()
            if alt:
                self._emit(f"[image: {alt}]")
        elif tag in _BLOCKS:
            if tag == "pre":
                self._pre += 1
            self._emit("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
            return
        if tag == "table":
            if self._table_depth == 1:
                self._end_table()
            self._table_depth = max(0, self._table_depth - 1)
            return
        table = self._table
        if table is not None and self._table_depth == 1:
            if tag in ("td", "th"):
                self._end_cell()
            elif tag == "tr":
                self._end_row()
            elif tag == "thead":
                self._end_row()
                table.in_head = False
            return
        if tag in _HEADINGS or tag == "li":
            self._emit("\n")
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._emit("\n")
        elif tag == "a":
            href = self._links.pop() if self._links else None
            if href and not href.startswith(("#", "javascript:")):
                self._emit(f" ({href})")
        elif tag in _BLOCKS:
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
            self._emit("\n")

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._pre and self._table is None:
            self._emit("\n".join(_PRE_LINE + line for line in data.split("\n")))
        else:
            self._emit(_SPACES.sub(" ", data))

    # Tables.
    def _fill_spans(self) -> None:
        """Cells of rows above that span into this row, at their columns."""
        table = self._table
        assert table is not None and table.row is not None and table.row_heads is not None
        while len(table.row) in table.pending:
            column = len(table.row)
            text, left, head = table.pending[column]
            table.row.append(text)
            table.row_heads.append(head)
            if left <= 1:
                del table.pending[column]
            else:
                table.pending[column] = (text, left - 1, head)

    def _end_cell(self) -> None:
        table = self._table
        if table is None or table.cell is None:
            return
        if table.row is None:
            table.row, table.row_heads = [], []
        assert table.row_heads is not None
        text = " ".join("".join(table.cell).split())
        for _ in range(table.colspan):
            column = len(table.row)
            table.row.append(text)
            table.row_heads.append(table.is_head)
            if table.rowspan > 1:
                table.pending[column] = (text, table.rowspan - 1, table.is_head)
            self._fill_spans()
        table.cell = None

    def _end_row(self) -> None:
        table = self._table
        if table is None:
            return
        self._end_cell()
        if table.row is not None and table.row_heads is not None:
            if table.row:
                table.rows.append(table.row)
                table.heads.append(table.row_heads)
                if table.in_head:
                    table.header_rows += 1
            table.row, table.row_heads = None, None

    def _end_table(self) -> None:
        self._end_row()
        table, self._table = self._table, None
        if table is not None and table.rows:
            self.parts.append("\n" + _KEPT_TABLE + str(len(self.tables)) + "\n")
            self.tables.append(table)

    def close(self) -> None:
        super().close()
        if self._table is not None:
            self._end_table()


#: Stands for a table in the document's text until the tables are written.
_KEPT_TABLE = "\ue001table:"


def html_as_text(html: str, max_chars: int = MAX_HTML_CHARS) -> str:
    """The text a browser shows of `html`: a block per line, tables as Markdown, never an exception."""
    read = html[:max_chars]
    if len(html) > max_chars:
        # Up to the last whole row (or tag) read, so no cell is shown cut short.
        end = read.rfind("</tr>") + len("</tr>")
        read = read[:end] if end >= max_chars // 2 else read[: read.rfind(">") + 1 or max_chars]
    rest = html[len(read) :]
    reader = _Reader()
    try:
        reader.feed(read)
        reader.close()
    except Exception:  # html.parser is forgiving; whatever it still refuses reads as its text
        return _tags_stripped(read) + _unread(rest, _rows_in(rest))
    stated = _PANDAS_SHAPE.search(" ".join("".join(reader.parts).split()))
    unread_rows = _rows_in(rest)
    lines: list[str] = []
    pandas_tables = sum(1 for table in reader.tables if table.pandas)
    for line in "".join(reader.parts).split("\n"):
        if line.startswith(_KEPT_TABLE):
            table = reader.tables[int(line[len(_KEPT_TABLE) :])]
            # pandas' stated shape belongs to its one table; the rows past the read part are counted.
            shape = stated if table.pandas and pandas_tables == 1 else None
            more_rows = unread_rows if table is reader.tables[-1] else 0
            lines.append(markdown_table(table, shape, more_rows))
            continue
        if (
            stated is not None
            and pandas_tables == 1
            and _PANDAS_SHAPE.fullmatch(" ".join(line.split()))
        ):
            continue  # said in the table's heading
        line = _tidied(line)
        if line:
            lines.append(line)
    if not lines:
        return ""
    return "\n".join(lines) + _unread(rest, unread_rows if reader.tables else 0)


def _tidied(line: str) -> str:
    """A line's spaces collapsed, except in <pre> text and a nested list's indentation."""
    if _PRE_LINE in line:
        return line.replace(_PRE_LINE, "").replace(_INDENT, "  ").rstrip()
    stripped = line.strip()
    levels = len(stripped) - len(stripped.lstrip(_INDENT))
    return "  " * levels + " ".join(stripped.replace(_INDENT, " ").split())


def _rows_in(html: str) -> int:
    """Table rows in HTML that is not parsed: its ``<tr`` tags counted (C speed, no list of matches)."""
    return html.count("<tr") + html.count("<TR")


def _unread(rest: str, rows: int) -> str:
    if not rest:
        return ""
    rows_said = f"; {rows} more table rows are among them" if rows else ""
    return f"\n[jupyter-mcp-server: the last {len(rest)} characters of this HTML were not read{rows_said}]"


def markdown_table(table: _Table, stated: re.Match[str] | None, more_rows: int = 0) -> str:
    """A table as Markdown headed ``Table: R rows × C columns``: its index (leading header
    cells of every body row) is not counted as a column, its header rows flattened."""
    rows = table.rows
    width = max(len(row) for row in rows)
    header_count = table.header_rows
    if header_count == 0 and all(table.heads[0]) and len(rows) > 1:
        header_count = 1
    body, body_heads = rows[header_count:], table.heads[header_count:]
    # The index: leading header cells of every body row under empty top-left header cells
    # (pandas and its Styler leave them blank); a table's own row headers stay columns.
    index = _index_width(body_heads) if header_count else 0
    if header_count and not body and table.pandas:
        index = next((i for i, label in enumerate(rows[0]) if label), 0)
    while index and any(rows[0][column] for column in range(index)) and not table.pandas:
        index -= 1
    header = _flattened(rows[:header_count], width, index)
    elided = sum(1 for row in body if row and all(cell in ("...", "…") for cell in row))
    if stated is not None:
        shape = f"{stated.group(1)} rows × {stated.group(2)} columns"
        if elided or int(stated.group(1)) != len(body):
            shape += f" ({len(body) - elided} of the rows shown, as pandas shows them)"
    else:
        counted = len(body) + more_rows
        shape = f"{counted} rows × {width - index} columns"
        if more_rows:
            shape += f" (the first {len(body)} rows read)"
    if index > 1:
        shape += f"; the first {index} columns are its index"
    lines = [f"Table: {shape}", _markdown_row(header, width), "|" + " --- |" * width]
    lines.extend(_markdown_row(row, width) for row in body)
    return "\n".join(lines)


def _index_width(heads: list[list[bool]]) -> int:
    """How many leading cells are header cells in every body row: the index's levels."""
    widths = [next((i for i, head in enumerate(row) if not head), len(row)) for row in heads if row]
    if not widths:
        return 0
    least = min(widths)
    # A row made of header cells alone (a caption-like row) says nothing about the index.
    return least if least < max(len(row) for row in heads) else 0


def _flattened(header_rows: list[list[str]], width: int, index: int) -> list[str]:
    """The header rows as one: each column's labels joined by " / ", the last row's index names
    (pandas puts the index's names on a row of their own) at the index columns."""
    if not header_rows:
        return [""] * width
    columns: list[str] = []
    for column in range(width):
        labels: list[str] = []
        for row in header_rows:
            label = row[column] if column < len(row) else ""
            if label and (not labels or labels[-1] != label):
                labels.append(label)
        columns.append(" / ".join(labels))
    return columns


def _markdown_row(cells: list[str], width: int) -> str:
    padded = [cell.replace("|", "\\|") for cell in cells] + [""] * (width - len(cells))
    return "| " + " | ".join(padded) + " |"


def _span(value: str | None) -> int:
    value = (value or "1").strip()
    return int(value) if value.isdigit() and 0 < int(value) <= MAX_SPAN else 1


def _tags_stripped(html: str) -> str:
    lines = (" ".join(line.split()) for line in _TAG.sub(" ", html).split("\n"))
    return "\n".join(line for line in lines if line)
