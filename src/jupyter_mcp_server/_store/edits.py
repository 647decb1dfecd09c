"""A batch of edits planned against a notebook, then applied whole or not at all.

:func:`plan_edits` works out what a list of operations does to a notebook
without touching it: the cells list is copied (references only) and a cell
is copied the first time an operation changes it, so untouched cells stay
shared and planning costs one list copy plus what the operations change,
even on a 2,000-cell notebook. An operation that cannot be applied raises
``ToolFailure`` naming its index and reason, and the notebook is as it was.
:meth:`EditPlan.commit` then puts the planned cells and metadata in place in
one step, inside the store's ``mutate`` (or on the shared document of a
notebook open in JupyterLab, which ``mutate`` hands it there).

Operations are plain dicts, ``op`` naming what each does:

- ``insert``: ``index`` (-1 appends), ``cell_type``, ``source``, optional
  ``cell_id`` (a new, unique id; later operations may name it; without it the id is
  derived from the batch, so a dry run shows the revision the batch makes) and ``metadata``;
- ``overwrite``: a cell, ``source``;
- ``replace``: a cell, ``old_string``, ``new_string``, ``replace_all``;
- ``delete``: a cell;
- ``move``: a cell, ``to_index`` (its index afterwards);
- ``set_cell_metadata``: a cell, ``metadata`` (merged in; a null value removes
  the key) and/or ``tags`` (the whole tags list);
- ``set_notebook_metadata``: ``metadata``, merged in the same way.

A cell is named by ``cell_id`` or ``cell_index`` (an index in the notebook as
the earlier operations of the batch left it). Metadata is checked against
the notebook format (nbformat 4.5's schema) as it is set.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import INVALID_ARGUMENT, NOT_FOUND, ToolFailure
from . import formats
from .diffs import cell_diff, metadata_diff

if TYPE_CHECKING:
    from nbformat import NotebookNode

#: The most operations one batch may hold.
MAX_OPERATIONS = 500

OPERATIONS = (
    "insert",
    "overwrite",
    "replace",
    "delete",
    "move",
    "set_cell_metadata",
    "set_notebook_metadata",
)

_CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class EditPlan:
    """What a batch does: the notebook's cells and metadata after it, and what each step did."""

    before_cells: list[Any]
    cells: list[Any]
    before_metadata: Any
    metadata: Any
    #: Per operation: what it did (``op``, ``cell_id``, ``cell_index`` where it names a cell).
    steps: list[dict[str, Any]] = field(default_factory=list)

    def diff(self) -> dict[str, Any]:
        """The batch's one cell-level diff (added, removed, moved, changed; ids throughout)."""
        result = cell_diff(self.before_cells, self.cells)
        result["metadata"] = metadata_diff(self.before_metadata, self.metadata)
        return result

    def commit(self, notebook: NotebookNode) -> None:
        """Put the planned cells and metadata in ``notebook``, in one step."""
        notebook["cells"] = self.cells
        if self.metadata is not self.before_metadata:
            notebook["metadata"] = self.metadata

    def as_notebook(self, notebook: NotebookNode) -> NotebookNode:
        """``notebook`` as it would be after the batch, sharing everything (for a dry run)."""
        from nbformat import NotebookNode

        return NotebookNode({**notebook, "cells": self.cells, "metadata": self.metadata})


def check_batch(operations: list[dict[str, Any]]) -> None:
    """Refuse an empty or oversized batch before anything is read."""
    if not operations:
        raise ToolFailure(INVALID_ARGUMENT, "operations is empty: give at least one operation.")
    if len(operations) > MAX_OPERATIONS:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"The batch has {len(operations)} operations; at most {MAX_OPERATIONS} are applied at once. "
            "Split it into batches (each its own revision).",
            limit=MAX_OPERATIONS,
            operations=len(operations),
        )


def plan_edits(notebook: NotebookNode, operations: list[dict[str, Any]]) -> EditPlan:
    """The plan of ``operations`` on ``notebook``; ``ToolFailure`` naming the first that fails."""
    check_batch(operations)
    planner = _Planner(notebook, operations)
    for index, operation in enumerate(operations):
        try:
            planner.steps.append(planner.apply(operation))
        except ToolFailure as failure:
            name = operation.get("op", "?")
            raise ToolFailure(
                failure.code,
                f"Operation {index} ({name}) failed: {failure.message} Nothing was applied: "
                "the notebook is as it was. Fix that operation and send the batch again.",
                **{**failure.details, "operation_index": index, "operation": name},
            ) from None
    return EditPlan(
        before_cells=notebook["cells"],
        cells=planner.cells,
        before_metadata=notebook["metadata"],
        metadata=planner.metadata,
        steps=planner.steps,
    )


class _Planner:
    def __init__(self, notebook: NotebookNode, operations: list[dict[str, Any]]) -> None:
        self.cells: list[Any] = list(notebook["cells"])
        self._ids = {cell["id"] for cell in self.cells}
        #: The cells' ids in order, kept beside ``cells``: finding a cell by id is then
        #: ``list.index`` (a C loop), not a Python loop over the cells for each operation,
        #: which made a batch cost operations x cells (50 of them on 20,000 cells: 0.35 s).
        self._order: list[str] = [cell["id"] for cell in self.cells]
        self.metadata: Any = notebook["metadata"]
        self._original_metadata = notebook["metadata"]
        #: Cells this batch made or copied: changing them again needs no copy.
        self._own: set[int] = set()
        #: Ids deleted by an earlier operation, with its index.
        self._deleted: dict[str, int] = {}
        self.steps: list[dict[str, Any]] = []
        # New cells' ids follow from the batch, so that a dry run makes the revision the
        # real run makes (and the same batch on the same notebook, the same ids).
        self._seed = hashlib.sha256(
            json.dumps(operations, sort_keys=True, default=str).encode()
        ).digest()
        self._made = 0

    def _new_id(self) -> str:
        self._made += 1
        return hashlib.sha256(self._seed + self._made.to_bytes(8, "big")).hexdigest()[:8]

    def apply(self, operation: dict[str, Any]) -> dict[str, Any]:
        kind = operation.get("op")
        handler = getattr(self, f"_{kind}", None) if kind in OPERATIONS else None
        if handler is None:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"Unknown op {kind!r}: use one of {', '.join(OPERATIONS)}.",
                known=list(OPERATIONS),
            )
        step: dict[str, Any] = {"op": kind, **handler(operation)}
        return step

    # Naming cells.

    def _position(self, operation: dict[str, Any]) -> int:
        cell_id = operation.get("cell_id")
        cell_index = operation.get("cell_index")
        if (cell_id is None) == (cell_index is None):
            raise ToolFailure(
                INVALID_ARGUMENT, "Name the cell with exactly one of cell_id or cell_index."
            )
        if cell_id is not None:
            with contextlib.suppress(ValueError):
                return self._order.index(cell_id)
            if cell_id in self._deleted:
                raise ToolFailure(
                    NOT_FOUND,
                    f"Cell {cell_id} was deleted by operation {self._deleted[cell_id]} of this batch.",
                    cell_id=cell_id,
                    deleted_by=self._deleted[cell_id],
                )
            raise ToolFailure(NOT_FOUND, f"No cell has id {cell_id!r}.", cell_id=cell_id)
        if not isinstance(cell_index, int) or not 0 <= cell_index < len(self.cells):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"cell_index {cell_index} is out of range: at this point of the batch the notebook has "
                f"{len(self.cells)} cells (indices 0 to {len(self.cells) - 1}).",
                cell_count=len(self.cells),
            )
        return cell_index

    def _own_copy(self, position: int) -> Any:
        """The cell at ``position``, copied first if the notebook still shares it."""
        from nbformat import NotebookNode

        cell = self.cells[position]
        if id(cell) not in self._own:
            cell = NotebookNode(cell)
            self.cells[position] = cell
            self._own.add(id(cell))
        return cell

    # The operations.

    def _insert(self, operation: dict[str, Any]) -> dict[str, Any]:
        index = operation.get("index", -1)
        if index == -1:
            index = len(self.cells)
        if not isinstance(index, int) or not 0 <= index <= len(self.cells):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"index {index} is out of range for inserting: at this point of the batch use 0 to "
                f"{len(self.cells)}, or -1 to append.",
                cell_count=len(self.cells),
            )
        source = operation.get("source", "")
        _check_source(source)
        cell = formats.new_cell(operation.get("cell_type", "code"), source)
        wanted = operation.get("cell_id")
        taken = self._ids
        if wanted is not None:
            if not isinstance(wanted, str) or not _CELL_ID.match(wanted):
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    f"cell_id {wanted!r} is not a valid cell id: 1 to 64 letters, digits, '-' or '_'.",
                )
            if wanted in taken:
                raise ToolFailure(
                    INVALID_ARGUMENT,
                    f"cell_id {wanted!r} is already used by another cell: ids are unique.",
                    cell_id=wanted,
                )
            cell["id"] = wanted
        else:
            cell["id"] = self._new_id()
            while cell["id"] in taken or cell["id"] in self._deleted:
                cell["id"] = self._new_id()
        self._deleted.pop(cell["id"], None)
        self._ids.add(cell["id"])
        if operation.get("metadata"):
            cell["metadata"] = _merged(cell["metadata"], operation["metadata"])
            _check_cell(cell)
        self.cells.insert(index, cell)
        self._order.insert(index, cell["id"])
        self._own.add(id(cell))
        return {"cell_id": cell["id"], "cell_index": index}

    def _overwrite(self, operation: dict[str, Any]) -> dict[str, Any]:
        source = operation.get("source")
        _check_source(source)
        position = self._position(operation)
        cell = self._own_copy(position)
        cell["source"] = source
        return {"cell_id": cell["id"], "cell_index": position}

    def _replace(self, operation: dict[str, Any]) -> dict[str, Any]:
        old, new = operation.get("old_string"), operation.get("new_string")
        if not isinstance(old, str) or old == "":
            raise ToolFailure(
                INVALID_ARGUMENT, "old_string is empty: give the exact text to replace."
            )
        _check_source(new, "new_string")
        position = self._position(operation)
        source = self.cells[position].get("source", "")
        count = source.count(old)
        if count == 0:
            raise ToolFailure(
                NOT_FOUND,
                f"old_string does not occur in cell {self.cells[position]['id']}'s source (as earlier "
                "operations of the batch left it). Copy the text exactly.",
            )
        if count > 1 and not operation.get("replace_all"):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"old_string occurs {count} times; include more surrounding text to make it unique, "
                "or set replace_all.",
                occurrences=count,
            )
        cell = self._own_copy(position)
        cell["source"] = source.replace(old, new)
        return {"cell_id": cell["id"], "cell_index": position}

    def _delete(self, operation: dict[str, Any]) -> dict[str, Any]:
        position = self._position(operation)
        cell = self.cells.pop(position)
        self._order.pop(position)
        self._ids.discard(cell["id"])
        self._deleted[cell["id"]] = len(self.steps)
        return {"cell_id": cell["id"], "cell_index": position}

    def _move(self, operation: dict[str, Any]) -> dict[str, Any]:
        position = self._position(operation)
        target = operation.get("to_index")
        if not isinstance(target, int) or not 0 <= target < len(self.cells):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"to_index {target} is out of range: it is the moved cell's index afterwards, 0 to "
                f"{len(self.cells) - 1} at this point of the batch.",
                cell_count=len(self.cells),
            )
        cell = self.cells.pop(position)
        self.cells.insert(target, cell)
        self._order.insert(target, self._order.pop(position))
        return {"cell_id": cell["id"], "cell_index": target}

    def _set_cell_metadata(self, operation: dict[str, Any]) -> dict[str, Any]:
        changes = operation.get("metadata")
        tags = operation.get("tags")
        if changes is None and tags is None:
            raise ToolFailure(
                INVALID_ARGUMENT,
                "Give metadata (keys to set; null removes one) or tags (the whole list).",
            )
        if changes is not None and not isinstance(changes, dict):
            raise ToolFailure(
                INVALID_ARGUMENT, "metadata must be an object of keys to set (null removes a key)."
            )
        position = self._position(operation)
        cell = self._own_copy(position)
        metadata = _merged(cell.get("metadata", {}), changes or {})
        if tags is not None:
            if tags == []:
                metadata.pop("tags", None)
            else:
                metadata["tags"] = tags
        cell["metadata"] = metadata
        _check_cell(cell)
        return {"cell_id": cell["id"], "cell_index": position}

    def _set_notebook_metadata(self, operation: dict[str, Any]) -> dict[str, Any]:
        changes = operation.get("metadata")
        if not isinstance(changes, dict) or not changes:
            raise ToolFailure(
                INVALID_ARGUMENT,
                "metadata must be a non-empty object of keys to set (null removes a key).",
            )
        metadata = _merged(self.metadata, changes)
        _check_notebook_metadata(metadata)
        self.metadata = metadata
        return {}


def _merged(metadata: Any, changes: dict[str, Any]) -> Any:
    """``metadata`` with ``changes`` merged in (a None value removes its key), as a new node."""
    from nbformat import NotebookNode, from_dict

    merged = NotebookNode(metadata)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = from_dict(value)
    return merged


def _check_source(source: Any, name: str = "source") -> None:
    if not isinstance(source, str):
        raise ToolFailure(INVALID_ARGUMENT, f"{name} must be a string.")


def _check_cell(cell: Any) -> None:
    # Only the metadata changed: the outputs (maybe megabytes) need no second look.
    checked = {**cell, "source": "", "outputs": []} if cell["cell_type"] == "code" else cell
    _check_against_format(f"#/definitions/{cell['cell_type']}_cell", formats.disk_cell(checked))


def _check_notebook_metadata(metadata: Any) -> None:
    _check_against_format("#/properties/metadata", metadata)


@functools.cache
def _format_validator(pointer: str) -> Any:
    """A validator of one part of nbformat 4.5's schema (the schema nbformat itself validates with)."""
    import jsonschema
    from nbformat import v4

    schema = json.loads((Path(v4.__file__).parent / v4.nbformat_schema[(4, 5)]).read_text("utf-8"))
    part = {**schema, "$ref": pointer}
    return jsonschema.validators.validator_for(schema)(part)


def _check_against_format(pointer: str, value: Any) -> None:
    """Refuse what nbformat 4.5's schema forbids, saying where and why."""
    import jsonschema

    problem = jsonschema.exceptions.best_match(_format_validator(pointer).iter_errors(value))
    if problem is None:
        return
    where = "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem.absolute_path
    )
    raise ToolFailure(
        INVALID_ARGUMENT,
        f"The notebook format (nbformat 4.5) does not allow this metadata: {problem.message}"
        + (f" (at {where.lstrip('.')})" if where else "")
        + ". Tags are unique strings without commas; a kernelspec needs name and display_name.",
        where=where.lstrip("."),
    )
