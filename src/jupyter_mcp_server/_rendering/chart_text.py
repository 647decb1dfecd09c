"""A chart output as a few lines saying what it shows: kind, title, axes, traces and points.

Plotly, Vega-Lite (Altair), Vega and Bokeh put a whole chart in the output as
JSON (a MIME type of their own, or a script inside ``text/html``): tens of
kilobytes that a browser draws and a model cannot read. What a model needs is
what a person would say of it: "a line chart of sales by quarter, 2 traces,
150 points". Nothing here is drawn or validated: a chart whose JSON does not
have the expected shape still reads as the kind of chart it is, and bad JSON
is never an exception.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLOTLY = "application/vnd.plotly.v1+json"
BOKEH_EXEC = "application/vnd.bokehjs_exec.v0+json"
BOKEH_LOAD = "application/vnd.bokehjs_load.v0+json"
_VEGA = re.compile(r"^application/vnd\.vega(lite)?\.v\d+(?:\.\d+)*(?:\+json|\.json)$")

#: At most this many traces (layers, renderers) are named one by one.
MAX_TRACES_NAMED = 8
#: The JSON of a chart larger than this (characters) is not parsed: it reads by its kind alone.
MAX_CHART_CHARS = 16 * 1024 * 1024
#: At most this many JSON nodes are visited in a Bokeh document.
MAX_NODES = 200_000

_NOTE = "interactive; a browser showing the notebook draws it"
_BYTES_PER_DTYPE = {
    "i1": 1,
    "u1": 1,
    "i2": 2,
    "u2": 2,
    "i4": 4,
    "u4": 4,
    "f4": 4,
    "i8": 8,
    "u8": 8,
    "f8": 8,
}


def is_chart(data: dict[str, Any]) -> bool:
    return any(
        mime == PLOTLY or mime in (BOKEH_EXEC, BOKEH_LOAD) or _VEGA.match(mime) for mime in data
    )


def chart_text(data: dict[str, Any]) -> str | None:
    """The summary of a chart bundle; None when `data` holds no chart type."""
    if PLOTLY in data:
        figure = _loaded(data[PLOTLY])
        return plotly_summary(figure if isinstance(figure, dict) else {})
    for mime in data:
        match = _VEGA.match(mime)
        if match:
            spec = _loaded(data[mime])
            spec = spec if isinstance(spec, dict) else {}
            return vega_lite_summary(spec) if match.group(1) else vega_summary(spec)
    if BOKEH_EXEC in data:
        script = data.get("application/javascript")
        return bokeh_summary(script if isinstance(script, str) else "")
    if BOKEH_LOAD in data:
        return (
            "[BokehJS loaded: the library a browser draws Bokeh plots with; no plot in this output]"
        )
    return None


def html_chart_text(html: str) -> str | None:
    """A chart embedded as a script in HTML (Plotly's and Altair's HTML renderers); None if none."""
    if len(html) > MAX_CHART_CHARS:
        return None
    start = html.find("Plotly.newPlot(")
    if start >= 0:
        values = _arguments(html, start + len("Plotly.newPlot("), 3)
        if len(values) >= 2 and isinstance(values[1], list):
            layout = values[2] if len(values) > 2 and isinstance(values[2], dict) else {}
            return plotly_summary({"data": values[1], "layout": layout})
    if "vegaEmbed" in html or "vega-embed" in html:
        start = html.rfind("})(")
        values = _arguments(html, start + 3, 1) if start >= 0 else []
        if (
            values
            and isinstance(values[0], dict)
            and "vega-lite" in str(values[0].get("$schema", ""))
        ):
            return vega_lite_summary(values[0])
    return None


def plotly_summary(figure: dict[str, Any]) -> str:
    traces = [trace for trace in figure.get("data") or [] if isinstance(trace, dict)]
    given = figure.get("layout")
    layout: dict[str, Any] = given if isinstance(given, dict) else {}
    kinds = [str(trace.get("type") or "scatter") for trace in traces]
    points = [_plotly_points(trace) for trace in traces]
    lines = [f"Plotly chart{_titled(_text_of(layout.get('title')))} ({_NOTE})"]
    lines.append(f"{len(traces)} trace(s): {_counted(kinds)}; {sum(points)} point(s) in all")
    axes = [
        f"{name.replace('axis', '')} axis {_text_of(axis.get('title'))!r}"
        for name, axis in sorted(layout.items())
        if re.fullmatch(r"[xyz]axis\d*", name)
        and isinstance(axis, dict)
        and _text_of(axis.get("title"))
    ]
    if axes:
        lines.append("Axes: " + ", ".join(axes))
    named = [
        f"{_text_of(trace.get('name')) or '(unnamed)'} ({kind}{', ' + str(trace['mode']) if trace.get('mode') else ''}, {count} points)"
        for trace, kind, count in zip(traces, kinds, points, strict=True)
    ]
    lines.extend(_listed("Traces", named))
    return "\n".join(lines)


def _plotly_points(trace: dict[str, Any]) -> int:
    for key in ("x", "y", "values", "z", "lat", "r", "labels"):
        if key in trace:
            return _length(trace[key])
    return 0


def _length(value: Any) -> int:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict) and "bdata" in value:
        # Plotly 6 sends arrays base64-encoded: {"dtype": "f8", "bdata": "...", "shape": "10, 3"}.
        shape = value.get("shape")
        if shape:
            parts = [int(part) for part in re.findall(r"\d+", str(shape))]
            return parts[0] if parts else 0
        encoded = str(value.get("bdata") or "")
        size = len(encoded) * 3 // 4 - encoded[-2:].count("=")
        return size // _BYTES_PER_DTYPE.get(str(value.get("dtype")), 8)
    return 1 if value is not None else 0


def vega_lite_summary(spec: dict[str, Any]) -> str:
    lines = [f"Vega-Lite chart{_titled(_text_of(spec.get('title')))} ({_NOTE})"]
    views = _views(spec)
    marks = [mark for mark in map(_mark_of, views) if mark]
    rows = _rows_of(spec)
    lines.append(f"Mark(s): {_counted(marks) or 'none given'}; {rows} data row(s)")
    encodings: list[str] = []
    for view in views:
        encoding = view.get("encoding")
        if not isinstance(encoding, dict):
            continue
        for channel, value in encoding.items():
            if isinstance(value, dict):
                said = (
                    value.get("title")
                    or value.get("field")
                    or value.get("aggregate")
                    or value.get("value")
                )
                kind = f" ({value['type']})" if value.get("type") else ""
                entry = f"{channel}: {said}{kind}"
                if said is not None and entry not in encodings:
                    encodings.append(entry)
    if encodings:
        lines.append("Encoding: " + ", ".join(encodings[: MAX_TRACES_NAMED * 2]))
    return "\n".join(lines)


def _views(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec and every view inside it (layers, concatenations, facets, repeats), breadth first."""
    found: list[dict[str, Any]] = []
    queue = [spec]
    while queue and len(found) < 256:
        view = queue.pop(0)
        found.append(view)
        for key in ("layer", "hconcat", "vconcat", "concat"):
            queue.extend(item for item in view.get(key) or [] if isinstance(item, dict))
        if isinstance(view.get("spec"), dict):
            queue.append(view["spec"])
    return found


def _mark_of(view: dict[str, Any]) -> str | None:
    mark = view.get("mark")
    if isinstance(mark, dict):
        mark = mark.get("type")
    return str(mark) if mark else None


def _rows_of(spec: dict[str, Any]) -> int:
    datasets = spec.get("datasets")
    if isinstance(datasets, dict):
        return sum(len(rows) for rows in datasets.values() if isinstance(rows, list))
    data = spec.get("data")
    if isinstance(data, dict) and isinstance(data.get("values"), list):
        return len(data["values"])
    return 0


def vega_summary(spec: dict[str, Any]) -> str:
    marks = [str(mark.get("type")) for mark in spec.get("marks") or [] if isinstance(mark, dict)]
    data = [entry for entry in spec.get("data") or [] if isinstance(entry, dict)]
    rows = sum(len(entry["values"]) for entry in data if isinstance(entry.get("values"), list))
    lines = [f"Vega chart{_titled(_text_of(spec.get('title')))} ({_NOTE})"]
    lines.append(
        f"Mark(s): {_counted(marks) or 'none given'}; {len(data)} data set(s), {rows} row(s) inline"
    )
    return "\n".join(lines)


def bokeh_summary(script: str) -> str:
    """A Bokeh plot from the ``docs_json`` its exec output's script embeds."""
    document = _bokeh_document(script)
    if document is None:
        return f"Bokeh plot ({_NOTE}; its document could not be read here)"
    objects = _bokeh_objects(document)
    plots = [
        item
        for item in objects
        if item.get("name") in ("Figure", "Plot", "GMap", "GridPlot", "GridBox")
    ]
    titles = [
        _text_of(_attributes(_attributes(plot).get("title")).get("text"))
        for plot in plots
        if isinstance(_attributes(plot).get("title"), dict)
    ]
    title = next((text for text in titles if text), "")
    renderers = [item for item in objects if item.get("name") == "GlyphRenderer"]
    glyphs = [_name_of(_attributes(item).get("glyph")) for item in renderers]
    points = [_bokeh_points(_attributes(item).get("data_source")) for item in renderers]
    axes = [
        f"{letter} axis {_text_of(_attributes(axis).get('axis_label'))!r}"
        for plot in plots
        for side, letter in (("below", "x"), ("above", "x"), ("left", "y"), ("right", "y"))
        for axis in _attributes(plot).get(side) or []
        if isinstance(axis, dict) and _text_of(_attributes(axis).get("axis_label"))
    ]
    lines = [f"Bokeh plot{_titled(title)} ({_NOTE})"]
    lines.append(
        f"{len(renderers)} glyph renderer(s): {_counted(glyphs) or 'none'}; {sum(points)} point(s) in all"
    )
    if axes:
        lines.append("Axes: " + ", ".join(axes))
    return "\n".join(lines)


def _bokeh_document(script: str) -> dict[str, Any] | None:
    if len(script) > MAX_CHART_CHARS:
        return None
    start = script.find("docs_json = ")
    if start < 0:
        return None
    values = _arguments(script, start + len("docs_json = "), 1)
    value: Any = values[0] if values else None
    if isinstance(value, str):  # older Bokeh: JSON.parse('...') of a string
        value = _loaded(value)
    if not isinstance(value, dict) or not value:
        return None
    document = next(iter(value.values()))
    return document if isinstance(document, dict) else None


def _bokeh_objects(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Bokeh model object in the document (dicts with ``type: object``), iteratively."""
    found: list[dict[str, Any]] = []
    stack: list[Any] = [document.get("roots")]
    visited = 0
    while stack and visited < MAX_NODES:
        node = stack.pop()
        visited += 1
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return found


def _bokeh_points(source: Any) -> int:
    data = _attributes(source).get("data")
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        return 0
    column = entries[0][1] if isinstance(entries[0], list) and len(entries[0]) == 2 else None
    if isinstance(column, dict) and column.get("type") == "ndarray":
        shape = column.get("shape") or [0]
        return (
            int(shape[0]) if isinstance(shape, list) and shape and isinstance(shape[0], int) else 0
        )
    return len(column) if isinstance(column, list) else 0


def _name_of(item: Any) -> str:
    return str(item.get("name") or "glyph") if isinstance(item, dict) else "glyph"


def _attributes(item: Any) -> dict[str, Any]:
    attributes = item.get("attributes") if isinstance(item, dict) else None
    return attributes if isinstance(attributes, dict) else {}


def _arguments(text: str, position: int, count: int) -> list[Any]:
    """Up to `count` JSON values from `position` on, separated by commas (a call's arguments)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    while len(values) < count:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        try:
            value, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
        values.append(value)
    return values


def _loaded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if len(value) > MAX_CHART_CHARS:
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _text_of(title: Any) -> str:
    if isinstance(title, dict):
        title = title.get("text")
    if isinstance(title, list):
        title = " ".join(map(str, title))
    return " ".join(str(title).split())[:200] if title else ""


def _titled(title: str) -> str:
    return f" {title!r}" if title else ""


def _counted(kinds: list[str]) -> str:
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{kind} ×{count}" if count > 1 else kind for kind, count in counts.items())


def _listed(label: str, items: list[str]) -> list[str]:
    if not items:
        return []
    shown = items[:MAX_TRACES_NAMED]
    more = f"; {len(items) - len(shown)} more" if len(items) > len(shown) else ""
    return [f"{label}: " + "; ".join(shown) + more]
