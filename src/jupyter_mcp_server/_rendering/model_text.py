"""An output as the text a model reads: what a person would see, in the fewest tokens.

The notebook keeps the raw MIME bundle untouched; only what a result carries
is rendered here, choosing among a bundle's representations the one that
holds the content. A ``text/plain`` that is only an object's repr
(``<IPython.core.display.HTML object>``, ``<Foo at 0x7f…>``) loses to any
readable type: HTML reads as its text (``html_text``: tables as Markdown with
their exact shape), JSON compact, Markdown and LaTeX as they are. A chart
(Plotly, Vega-Lite, Bokeh) reads as a summary of what it shows
(``chart_text``), a widget as its text form said to be a widget, and when the
notebook saved the widgets' state (``metadata.widgets``), what its ``Output``
widgets hold (:func:`widget_text`). Terminal
escapes are gone and a progress bar redrawn with ``\\r`` is its last state;
a traceback is folded from the whole of it (``_kernels.tracebacks``). No
output reads as nothing: one with no readable type says what it holds. The
same text is what ``read_output`` pages, so the line numbers a cut result
names are the ones it reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jupyter_mcp_server._kernels.outputs import strip_ansi
from jupyter_mcp_server._kernels.tracebacks import compact_traceback, unaligned
from jupyter_mcp_server._rendering.chart_text import chart_text, html_chart_text
from jupyter_mcp_server._rendering.html_text import MAX_HTML_CHARS, html_as_text

IMAGE_TYPES = ("image/png", "image/jpeg")

# A '\r' not followed by '\n' returns to the start of the line: what was
# before it on that line is overwritten (as the collector does on storage;
# notebooks written elsewhere may still hold the whole redraw history).
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n])")
WIDGET = "application/vnd.jupyter.widget-view+json"
# An object's default repr: all it says is the object's type (and where it lives).
_BARE_REPR = re.compile(r"^<[^<>\n]*?(?:\bobject\b|\bat 0x[0-9a-fA-F]+)[^<>\n]*>$")


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


#: Saved widget models, by model id (``metadata.widgets``, :func:`~.widgets.widget_models`).
WidgetModels = Mapping[str, Any]


def output_text(output: Any, widgets: WidgetModels | None = None) -> str | None:
    """The text a model reads for one output; None when it has none (an image alone).
    `widgets` are the notebook's saved widget models, read into a widget's text."""
    kind = output.get("output_type")
    if kind == "stream":
        return plain(joined(output.get("text", "")))
    if kind == "error":
        traceback = output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]
        return "\n".join(compact_traceback([unaligned(plain(str(entry))) for entry in traceback]))
    return bundle_text(output.get("data") or {}, widgets)


def is_bare_repr(text: str) -> bool:
    """Whether `text` is only an object's default repr (``<… object>``, ``<… at 0x…>``), maybe
    followed by a renderer's advice (Altair's "If you see this message…")."""
    lines = text.strip().splitlines()
    if not lines or not _BARE_REPR.match(lines[0].strip()):
        return False
    return len(lines) == 1 or "renderer" in text


def bundle_text(data: dict[str, Any], widgets: WidgetModels | None = None) -> str | None:
    """The text of a display's MIME bundle: the representation that holds its content."""
    has_image = any(mime in data for mime in IMAGE_TYPES)
    text = plain(joined(data["text/plain"])) if "text/plain" in data else None
    if WIDGET in data:
        return widget_text(data[WIDGET], text, widgets)
    chart = chart_text(data)
    if chart is not None:
        return chart
    html = joined(data["text/html"]) if "text/html" in data else None
    if html is not None and ("Plotly.newPlot" in html or "vegaEmbed" in html):
        chart = html_chart_text(html)
        if chart is not None:
            return chart
    bare = text is not None and is_bare_repr(text)
    if html is not None and "<table" in html[:MAX_HTML_CHARS].lower():
        return html_as_text(html)
    if "text/markdown" in data:
        return joined(data["text/markdown"])
    if text is not None and not bare and not has_image:
        return text
    rich = _rich_text(data, html)
    if rich is not None:
        return rich
    if text is not None and not has_image:
        return text
    if has_image:
        return None
    kinds = ", ".join(sorted(data)) or "no representation at all"
    return f"[jupyter-mcp-server: an output in {kinds}, with no text to read]"


def _rich_text(data: dict[str, Any], html: str | None) -> str | None:
    """The first readable representation other than text/plain, in the order a person reads them."""
    if html is not None:
        shown = html_as_text(html)
        if shown:
            return shown
    if "application/json" in data:
        return json_text(data["application/json"])
    if "text/latex" in data:
        return joined(data["text/latex"])
    if "image/svg+xml" in data:
        words = html_as_text(joined(data["image/svg+xml"]))
        said = f"; the text in it: {' '.join(words.split())[:500]}" if words else ""
        return f"[an SVG image{said}]"
    if html is not None:
        return f"[jupyter-mcp-server: HTML with no visible text ({len(html)} characters of markup, scripts or styles for a browser)]"
    if "application/javascript" in data:
        return f"[jupyter-mcp-server: JavaScript for a browser to run ({len(joined(data['application/javascript']))} characters), no text to read]"
    return None


def json_text(value: Any) -> str:
    """JSON compact; a string that is not JSON as it is, said to be so."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return f"[jupyter-mcp-server: this application/json output is not valid JSON; its text follows]\n{value}"
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return str(value)


def widget_text(view: Any, text: str | None, widgets: WidgetModels | None = None) -> str:
    """A widget: its text form (``IntSlider(value=3)``), and the word that only a browser shows
    it; with the notebook's saved `widgets`, what its Output widgets hold (:func:`held_text`)."""
    model = view.get("model_id") if isinstance(view, dict) else None
    said = f" (model {model})" if model else ""
    note = f"[jupyter-mcp-server: an interactive Jupyter widget{said}: only a browser running the notebook's kernel shows it"
    shown = f"{text}\n{note}; above is its text form]" if text else f"{note}; it has no text form]"
    held = held_text(model, widgets) if isinstance(model, str) and widgets else None
    return f"{shown}\n{held}" if held else shown


#: How deep widgets inside widgets (a box's children, an Output showing a widget) are read.
MAX_WIDGET_DEPTH = 4
MODEL_REFERENCE = "IPY_MODEL_"


def held_text(model_id: str, widgets: WidgetModels, depth: int = 0) -> str | None:
    """What the Output widgets of model `model_id` hold (itself, or inside it: a box's
    children), as a model reads outputs; None when it holds none."""
    entry = widgets.get(model_id)
    if not isinstance(entry, dict) or depth > MAX_WIDGET_DEPTH:
        return None
    state = entry.get("state")
    if not isinstance(state, dict):
        return None
    parts: list[str] = []
    if entry.get("model_name") == "OutputModel":
        outputs = [output for output in state.get("outputs") or [] if isinstance(output, dict)]
        # A widget shown inside reads as its text form only: an Output showing itself
        # (or one showing it) must not be read round and round.
        texts = [output_text(output) for output in outputs]
        shown = "\n".join(text for text in texts if text)
        parts.append(
            f"[jupyter-mcp-server: the Output widget (model {model_id}) holds {len(outputs)} "
            f"output(s), saved in the notebook's widget state{':' if shown else ''}]"
            + (f"\n{shown}" if shown else "")
        )
    children = state.get("children")
    for child in children if isinstance(children, list) else []:
        if isinstance(child, str) and child.startswith(MODEL_REFERENCE):
            inner = held_text(child[len(MODEL_REFERENCE) :], widgets, depth + 1)
            if inner:
                parts.append(inner)
    return "\n".join(parts) or None
