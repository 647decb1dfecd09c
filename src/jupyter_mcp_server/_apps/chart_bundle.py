"""The output app's charts: Vega-Lite, Vega and Plotly outputs drawn by their own libraries.

An output that carries a chart's spec (``application/vnd.vegalite.v4/v5/v6+json``,
``application/vnd.vega.v5/v6+json``, ``application/vnd.plotly.v1+json``) is drawn as
JupyterLab draws it, interactive, by the projects' own minified builds: vega, vega-lite,
vega-embed and plotly.js-basic, vendored under ``chart_libraries/`` with their licences
(``scripts/vendor_charts.py`` fetched them from npm, pinned by version and hash). Each is
inlined into the output app as inert text, run (once) as an inline script the page's
policy names by its hash when a chart first needs it: the app stays one document that
loads nothing, and a result with no chart runs none of them.

A spec is the notebook's, so untrusted:

- nothing is loaded: Vega's loader is replaced by one that refuses every URL (data,
  images but ``data:`` ones), and the refusal is shown under the chart; a mark's link
  (``href``) is the host's to open (``ui/open-link``), as a link in HTML is; the spec's own
  ``usermeta.embedOptions`` are dropped, so a spec cannot choose its loader or actions;
  Plotly gets the figure's ``data`` and ``layout`` only, its layout images kept only when
  they are ``data:`` images; the page's CSP (``connect-src 'none'``, ``img-src data:``)
  would refuse a load anyway;
- no code: Vega's expressions run in its interpreter (vega-embed ``ast: true``), not as
  ``Function``, so the policy needs no ``'unsafe-eval'``; plotly.js-basic evaluates nothing;
- drawn as SVG, in the page, where the page's policy holds.

What cannot be drawn here (a Plotly trace type the basic bundle has not, a spec that
fails) shows the output's other representations, as before, under a note saying why.
"""

from __future__ import annotations

import functools
from importlib import resources

#: The vendored builds by the name the page runs them by (vega-embed needs vega and vega-lite).
LIBRARIES = (
    ("vega", "vega.min.js"),
    ("vega-lite", "vega-lite.min.js"),
    ("vega-embed", "vega-embed.min.js"),
    ("plotly", "plotly-basic.min.js"),
)


@functools.cache
def chart_libraries() -> tuple[tuple[str, str], ...]:
    """``(name, source)`` of each library, for the output app to inline (run when needed)."""
    folder = resources.files("jupyter_mcp_server._apps") / "chart_libraries"
    libraries = tuple(
        (name, (folder / file).read_text(encoding="utf-8")) for name, file in LIBRARIES
    )
    for name, source in libraries:
        # An HTML parser would end (or nest) the inline script there: never inline such a build.
        if "</script" in source.lower() or "<!--" in source:
            raise ValueError(f"{name} cannot be inlined in a <script> element")
    return libraries
