"""Searching a workspace of many notebooks (issue 14).

A corpus of generated notebooks (1,000 of about 100 KB in full mode, about
100 MB; a tenth in quick mode), each of fifty code cells with a source and a
printed output, is searched literally for a name defined in one cell of one
notebook: the first search after the server started (every file is read),
repeated searches (nothing changed), and a search right after another
program rewrote one notebook with a new name in it, which must be found by
that very search. The floor is reading and parsing every file of the corpus
as JSON once, the least any search of it must do the first time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness import Harness, response_bytes

CELLS = 50


def _template(notebook_bytes: int) -> str:
    """One notebook's JSON with ``@N@`` where its number goes, about `notebook_bytes` long."""
    per_cell = max(200, notebook_bytes // CELLS - 400)
    cells = []
    for index in range(CELLS):
        source = f"value_@N@_{index} = compute(@N@, {index})\nprint(value_@N@_{index})"
        line = f"value_@N@_{index} -> {'x' * 60}\n"
        text = line * max(1, per_cell // len(line))
        cells.append(
            {
                "cell_type": "code",
                "execution_count": index + 1,
                "id": f"cell-{index}",
                "metadata": {},
                "outputs": [{"name": "stdout", "output_type": "stream", "text": text}],
                "source": source,
            }
        )
    document = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1)


def write_corpus(root: Path, notebooks: int, notebook_bytes: int) -> int:
    """The corpus under ``root/corpus``, in ten folders; its total bytes."""
    template = _template(notebook_bytes)
    total = 0
    for number in range(notebooks):
        folder = root / "corpus" / f"part{number % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        text = template.replace("@N@", str(number))
        (folder / f"nb{number:04d}.ipynb").write_text(text)
        total += len(text)
    return total


def read_corpus(root: Path) -> None:
    for path in sorted((root / "corpus").rglob("*.ipynb")):
        json.loads(path.read_bytes())


async def search_corpus(h: Harness) -> None:
    r = h.results
    notebooks, size = h.sizes.corpus_notebooks, h.sizes.corpus_notebook_bytes
    for profile in h.serving("searching many notebooks", "search"):
        workspace = h.workspace("corpus")
        total = write_corpus(workspace, notebooks, size)
        r.note("search_first", f"{notebooks} notebooks, {total / 1e6:.0f} MB")
        # Written long enough ago that a file's timestamp proves its bytes.
        time.sleep(2.1)
        target = notebooks // 2
        async with h.connect(profile, workspace) as session:
            first = await h.measure("search_first", session, "search", query=f"value_{target}_7 =")
            r.add("search_bytes", profile.name, response_bytes(first))
            found = (first.structured_content or {}).get("total")
            r.note("search_found", f"first search: {found} match(es), 1 expected")
            for rep in range(h.sizes.repetitions):
                with r.timing("search_floor", "floor"):
                    read_corpus(workspace)
                for _ in range(3):
                    await h.measure("search_repeat", session, "search", query=f"value_{target}_7 =")
                # Another program rewrites one notebook: the next search must find its new text.
                changed = (
                    workspace
                    / "corpus"
                    / f"part{(target + rep) % 10}"
                    / f"nb{target + rep:04d}.ipynb"
                )
                changed.write_text(
                    changed.read_text().replace(f"value_{target + rep}_3 =", f"fresh_{rep}_3 =")
                )
                result = await h.measure(
                    "search_changed", session, "search", query=f"fresh_{rep}_3 ="
                )
                found = (result.structured_content or {}).get("total")
                r.note("search_changed_found", "yes" if found == 1 else f"no ({found} matches)")
