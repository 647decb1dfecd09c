"""Terminal escape sequences: notebooks keep them as the kernel sent them, as Jupyter does
(colours in a traceback, a progress bar's cursor moves), and no model reads them.

Defined once, at the bottom of the import graph, because both the kernel layer (which
makes the model's text) and redaction (which must see a secret that colour codes split)
need the same definition.
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks)
# and the two-character escapes: everything a terminal would not print.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences: what a model reads (colours mean nothing to it)."""
    return ANSI.sub("", text) if "\x1b" in text else text
