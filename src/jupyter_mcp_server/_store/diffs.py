r"""Differences between texts and between notebooks, as a person and a model read them.

:func:`unified_diff` is a unified diff of two texts that says when one of
them gains or loses its final newline, as ``diff`` and ``git`` do (``\ No
newline at end of file``); the last line of a text without one still ends
the diff's line, so it and the line that replaces it never run together
(``-x+x``). When neither text ends with a newline, as most cell sources do,
the marker would say nothing the diff does not, and is left out. :func:`cell_diff` compares two notebooks cell by
cell, by id: which cells were added, removed, moved, and which changed their
source (with a unified diff), outputs (summarised), type or metadata.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

#: What ``diff`` writes after a line that has no newline at its end.
NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(before: str, after: str, context: int = 2) -> str:
    """The unified diff from ``before`` to ``after``; "" when they are equal."""
    marked = before.endswith("\n") != after.endswith("\n")
    lines = []
    for line in difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        "before",
        "after",
        n=context,
    ):
        lines.append(line)
        if line.splitlines() == [line]:  # no line break at its end: the text's last line
            lines.append("\n" + NO_NEWLINE if marked else "\n")
    return "".join(lines)


def _outputs_summary(outputs: Sequence[Any]) -> str:
    kinds: list[str] = []
    for output in outputs:
        kind = output.get("output_type", "?")
        if kind == "stream":
            kind = output.get("name", "stream")
        elif kind in ("execute_result", "display_data"):
            kind = "+".join(sorted(output.get("data", {}))) or kind
        kinds.append(kind)
    return f"{len(outputs)} output(s)" + (f" ({', '.join(kinds)})" if kinds else "")


def cell_diff(before_cells: Sequence[Any], after_cells: Sequence[Any]) -> dict[str, Any]:
    """What changed between two lists of cells, matched by id.

    ``added`` and ``removed`` name cells by id, index and type (with their
    source); ``moved`` lists cells present in both whose order relative to
    the others changed; ``changed`` has one entry per cell present in both
    whose content differs: ``source_diff`` (a unified diff), ``outputs``
    (a summary before -> after), ``cell_type``, ``metadata`` (the keys that
    differ), ``execution_count``.
    """
    before_at = {cell["id"]: index for index, cell in enumerate(before_cells)}
    after_at = {cell["id"]: index for index, cell in enumerate(after_cells)}
    added = [
        {
            "cell_id": cell["id"],
            "index": index,
            "cell_type": cell["cell_type"],
            "source": cell.get("source", ""),
        }
        for index, cell in enumerate(after_cells)
        if cell["id"] not in before_at
    ]
    removed = [
        {
            "cell_id": cell["id"],
            "index": index,
            "cell_type": cell["cell_type"],
            "source": cell.get("source", ""),
        }
        for index, cell in enumerate(before_cells)
        if cell["id"] not in after_at
    ]
    kept_before = [cell["id"] for cell in before_cells if cell["id"] in after_at]
    kept_after = [cell["id"] for cell in after_cells if cell["id"] in before_at]
    moved = [
        {"cell_id": cell_id, "from_index": before_at[cell_id], "to_index": after_at[cell_id]}
        for cell_id in _moved(kept_before, kept_after)
    ]
    changed = []
    for cell in after_cells:
        index = before_at.get(cell["id"])
        if index is None:
            continue
        old = before_cells[index]
        if old is cell or old == cell:
            continue
        entry: dict[str, Any] = {"cell_id": cell["id"], "index": after_at[cell["id"]]}
        if old.get("cell_type") != cell.get("cell_type"):
            entry["cell_type"] = f"{old.get('cell_type')} -> {cell.get('cell_type')}"
        if old.get("source", "") != cell.get("source", ""):
            entry["source_diff"] = unified_diff(old.get("source", ""), cell.get("source", ""))
        if old.get("outputs", []) != cell.get("outputs", []):
            entry["outputs"] = (
                f"{_outputs_summary(old.get('outputs', []))} -> {_outputs_summary(cell.get('outputs', []))}"
            )
        if old.get("execution_count") != cell.get("execution_count"):
            entry["execution_count"] = (
                f"{old.get('execution_count')} -> {cell.get('execution_count')}"
            )
        metadata_keys = _changed_keys(old.get("metadata", {}), cell.get("metadata", {}))
        if metadata_keys:
            entry["metadata"] = metadata_keys
        if old.get("attachments") != cell.get("attachments"):
            entry["attachments"] = "changed"
        changed.append(entry)
    return {"added": added, "removed": removed, "moved": moved, "changed": changed}


def _changed_keys(before: Any, after: Any) -> list[str]:
    keys = set(before) | set(after)
    return sorted(key for key in keys if before.get(key, _ABSENT) != after.get(key, _ABSENT))


_ABSENT = object()


def _moved(before: list[str], after: list[str]) -> list[str]:
    """The ids that moved: those outside a longest run kept in the same relative order."""
    if before == after:
        return []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    staying = set()
    for block in matcher.get_matching_blocks():
        staying.update(before[block.a : block.a + block.size])
    return [cell_id for cell_id in after if cell_id not in staying]


def metadata_diff(before: Any, after: Any) -> dict[str, Any] | None:
    """The notebook metadata keys that changed, with their values before and after; None if none."""
    keys = _changed_keys(before, after)
    if not keys:
        return None
    return {key: {"before": before.get(key), "after": after.get(key)} for key in keys}


def diff_text(diff: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    """The cell-level diff as text a model reads."""
    lines: list[str] = []
    for cell in diff["added"]:
        lines.append(f"+ added {cell['cell_type']} cell {cell['cell_id']} at {cell['index']}")
        lines.extend("  +" + line for line in cell["source"].splitlines())
    for cell in diff["removed"]:
        lines.append(
            f"- removed {cell['cell_type']} cell {cell['cell_id']} (was at {cell['index']})"
        )
        lines.extend("  -" + line for line in cell["source"].splitlines())
    for cell in diff["moved"]:
        lines.append(
            f"~ moved cell {cell['cell_id']} from {cell['from_index']} to {cell['to_index']}"
        )
    for cell in diff["changed"]:
        lines.append(f"* changed cell {cell['cell_id']} at {cell['index']}")
        for key in ("cell_type", "outputs", "execution_count"):
            if key in cell:
                lines.append(f"  {key}: {cell[key]}")
        if "metadata" in cell:
            lines.append(f"  metadata keys: {', '.join(cell['metadata'])}")
        if cell.get("source_diff"):
            lines.append(cell["source_diff"].rstrip("\n"))
    if metadata:
        lines.append(
            f"* notebook metadata: {json.dumps(metadata, ensure_ascii=False, default=str)[:2000]}"
        )
    return "\n".join(lines) if lines else "(no change)"
