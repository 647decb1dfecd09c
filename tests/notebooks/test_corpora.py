"""Real notebooks written by other projects go through the store unharmed.

Every valid notebook reads and writes back equal in meaning (ids are added
where missing, and the version is upgraded to 4.5 on that first write, nothing
else); every invalid one is refused and left byte for byte as it was.
"""

from __future__ import annotations

import copy
import json
import shutil
import warnings
from pathlib import Path

import nbformat
import pytest
from nbformat import validator
from nbformat.reader import reads as read_without_validating

from jupyter_mcp_server._errors import INVALID_ARGUMENT, ToolFailure
from jupyter_mcp_server._store import NotebookStore, formats
from jupyter_mcp_server._workspace import Workspace

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"


def corpus(folder: str, pattern: str) -> list[Path]:
    return sorted((CORPORA / folder).glob(pattern)) if (CORPORA / folder).is_dir() else []


def ids_of(paths: list[Path]) -> list[str]:
    return [str(path.relative_to(CORPORA)) for path in paths]


JUPYTEXT = corpus("jupytext", "**/*.ipynb")
NBFORMAT = corpus("nbformat", "*.ipynb")
PERCENT = corpus("jupytext-percent", "**/*.py")


def nbformat_rejects(text: str) -> bool:
    """nbformat's own verdict: missing ids are given, as its validate does, but
    duplicate ids are not silently "repaired"."""
    try:
        notebook = nbformat.convert(read_without_validating(text), 4)
    except Exception:
        return True
    if notebook.get("nbformat_minor", 0) >= 5:
        for index, cell in enumerate(notebook.cells):
            cell.setdefault("id", f"given-{index}")
    return not validator.isvalid(notebook)


def meaning(text: str, drop_ids: list[bool]) -> nbformat.NotebookNode:
    """A notebook as nbformat reads it, without what the first write may add."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        notebook = nbformat.reads(text, as_version=4)
    for cell, drop in zip(notebook.cells, drop_ids, strict=True):
        if drop:
            cell.pop("id", None)
    notebook.pop("nbformat_minor")
    for key in ("orig_nbformat", "orig_nbformat_minor"):
        notebook.metadata.pop(key, None)
    return notebook


def cells_without_ids(text: str) -> list[bool]:
    raw = read_without_validating(text)
    if raw.nbformat < 4:
        return [True] * len(nbformat.convert(raw, 4).cells)
    return ["id" not in cell or raw.nbformat_minor < 5 for cell in raw.cells]


def store_holding(source: Path, tmp_path: Path) -> tuple[NotebookStore, Path]:
    if not source.exists():
        pytest.skip(f"{CORPORA} is not available")
    copied = tmp_path / source.name
    shutil.copyfile(source, copied)
    return NotebookStore(Workspace(tmp_path)), copied


def require(paths: list[Path]) -> None:
    if not paths:
        pytest.skip(f"no corpus under {CORPORA}")


@pytest.mark.parametrize("source", JUPYTEXT or [CORPORA / "missing"], ids=ids_of(JUPYTEXT) or None)
async def test_a_notebook_writes_back_equal_in_meaning(source: Path, tmp_path: Path) -> None:
    require(JUPYTEXT)
    store, copied = store_holding(source, tmp_path)
    original = copied.read_text(encoding="utf-8")

    view = await store.read(copied.name)
    assert copied.read_text(encoding="utf-8") == original, "reading never writes"
    memory_ids = [cell.id for cell in view.notebook.cells]
    await store.mutate(copied.name, lambda notebook: None)

    written = copied.read_text(encoding="utf-8")
    on_disk = nbformat.reads(written, as_version=nbformat.NO_CONVERT)
    nbformat.validate(on_disk)
    assert (on_disk.nbformat, on_disk.nbformat_minor) >= (4, 5)
    assert [cell.id for cell in on_disk.cells] == memory_ids
    missing = cells_without_ids(original)
    assert meaning(written, missing) == meaning(original, missing)


WELL_FORMED = [path for path in JUPYTEXT + NBFORMAT if not nbformat_rejects(path.read_text())]


@pytest.mark.parametrize(
    "source", WELL_FORMED or [CORPORA / "missing"], ids=ids_of(WELL_FORMED) or None
)
def test_serialization_is_byte_identical_to_nbformat_writes(source: Path) -> None:
    require(WELL_FORMED)
    data = source.read_bytes()
    notebook = formats.parse_notebook(data, formats.IPYNB, source.name).notebook
    expected = nbformat.writes(copy.deepcopy(notebook)) + "\n"
    assert formats.serialize_notebook(notebook, formats.IPYNB) == expected.encode()


@pytest.mark.parametrize("source", NBFORMAT or [CORPORA / "missing"], ids=ids_of(NBFORMAT) or None)
async def test_nbformat_test_notebooks_read_or_are_refused_untouched(
    source: Path, tmp_path: Path
) -> None:
    require(NBFORMAT)
    store, copied = store_holding(source, tmp_path)
    data = copied.read_bytes()
    if nbformat_rejects(data.decode()):
        with pytest.raises(ToolFailure) as caught:
            await store.read(copied.name)
        assert caught.value.code == INVALID_ARGUMENT
        assert copied.name in caught.value.message
        with pytest.raises(ToolFailure):
            await store.mutate(copied.name, lambda notebook: None)
        assert copied.read_bytes() == data
        assert sorted(p.name for p in tmp_path.iterdir()) == [copied.name]
        return

    view = await store.read(copied.name)
    assert copied.read_bytes() == data, "older versions are upgraded on the first write only"
    assert all(isinstance(cell.id, str) for cell in view.notebook.cells)
    known = [cell for cell in view.notebook.cells if cell.cell_type in ("code", "markdown", "raw")]
    assert all(isinstance(cell.source, str) for cell in known)
    await store.mutate(copied.name, lambda notebook: None)
    written = copied.read_text(encoding="utf-8")
    nbformat.validate(nbformat.reads(written, as_version=nbformat.NO_CONVERT))
    missing = cells_without_ids(data.decode())
    assert meaning(written, missing) == meaning(data.decode(), missing)


def test_the_deliberately_invalid_nbformat_notebooks_are_among_the_refused() -> None:
    require(NBFORMAT)
    refused = {path.name for path in NBFORMAT if nbformat_rejects(path.read_text())}
    # The duplicate ids one only fails when nbformat is not allowed to "repair" it.
    assert {"invalid.ipynb", "invalid_cell_id.ipynb", "invalid_unique_cell_id.ipynb"} <= refused
    assert {"test4.5.ipynb", "test3.ipynb", "v4_5_no_cell_id.ipynb"}.isdisjoint(refused)


@pytest.mark.parametrize("source", PERCENT or [CORPORA / "missing"], ids=ids_of(PERCENT) or None)
async def test_a_percent_script_reads_as_jupytext_reads_it(source: Path, tmp_path: Path) -> None:
    import jupytext

    require(PERCENT)
    store, copied = store_holding(source, tmp_path)
    text = copied.read_text(encoding="utf-8")
    expected = [(c.cell_type, c.source) for c in jupytext.reads(text, fmt="py:percent").cells]

    view = await store.read(copied.name)
    assert view.format == "py:percent"
    assert [(c.cell_type, c.source) for c in view.notebook.cells] == expected
    ids = [cell.id for cell in view.notebook.cells]
    assert len(set(ids)) == len(ids)

    await store.mutate(copied.name, lambda notebook: None)
    store.forget(copied.name)
    reread = await store.read(copied.name)
    assert [(c.cell_type, c.source) for c in reread.notebook.cells] == expected


def _nbformat_v4_reading(text: str) -> object:
    """What nbformat v4's reader makes of the JSON before validating: the document, or
    the kind of error its rejoin and strip trip over."""
    from nbformat.v4.rwbase import rejoin_lines, strip_transient

    try:
        return strip_transient(rejoin_lines(nbformat.from_dict(json.loads(text))))
    except (AttributeError, KeyError, TypeError):
        return "trips"


def _our_v4_reading(text: str) -> object:
    try:
        return formats._rejoined_v4(json.loads(text, object_hook=formats._decoded_node_type()))
    except (AttributeError, KeyError, TypeError):
        return "trips"


SPLIT_LINES = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {"signature": "sha256:x", "orig_nbformat": 3, "kernelspec": {"name": "p"}},
    "cells": [
        {
            "cell_type": "markdown",
            "id": "m",
            "metadata": {"trusted": True, "tags": ["a"]},
            "source": ["# A\n", "b"],
            "attachments": {"x.png": {"image/png": "AAA", "text/plain": ["a\n", "b"]}},
        },
        {
            "cell_type": "code",
            "id": "c",
            "metadata": {},
            "execution_count": 1,
            "source": "print(1)",
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["1\n", "2\n"]},
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {
                        "text/plain": ["a\n", "b"],
                        "application/json": ["kept", "as a list"],
                        "application/vnd.x+json": ["kept"],
                        "image/svg+xml": ["<svg>\n", "</svg>"],
                        "text/html": ["<b>", 1],
                    },
                },
                {"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t1", "t2"]},
            ],
        },
        {"cell_type": "raw", "id": "r", "metadata": {"trusted": False}, "source": []},
    ],
}
BROKEN = [
    {**SPLIT_LINES, "cells": "not a list"},
    {**SPLIT_LINES, "cells": [1]},
    {**SPLIT_LINES, "cells": [{"cell_type": "code", "source": ["a", 1], "metadata": {}}]},
    {**SPLIT_LINES, "cells": [{"cell_type": "code", "source": "a"}]},
    {k: v for k, v in SPLIT_LINES.items() if k != "metadata"},
    {k: v for k, v in SPLIT_LINES.items() if k != "cells"},
    {**SPLIT_LINES, "metadata": ["a list"]},
    {**SPLIT_LINES, "cells": [{"cell_type": "code", "metadata": {}, "outputs": [3]}]},
    {
        **SPLIT_LINES,
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [{"output_type": "stream", "text": ["a", None]}],
            }
        ],
    },
]


@pytest.mark.parametrize("document", [SPLIT_LINES, *BROKEN])
def test_the_parse_rejoins_and_strips_as_nbformat_v4_does(document: dict[str, object]) -> None:
    text = json.dumps(document)
    ours = _our_v4_reading(text)
    assert ours == _nbformat_v4_reading(text)
    if ours != "trips":
        # Every object is a NotebookNode, as nbformat's from_dict makes it.
        assert isinstance(ours, nbformat.NotebookNode)
        assert ours.cells[1].outputs[1].data["text/plain"] == "a\nb"  # type: ignore[attr-defined]


V4 = [path for path in JUPYTEXT + NBFORMAT if '"nbformat": 4' in path.read_text()]


@pytest.mark.parametrize("source", V4 or [CORPORA / "missing"], ids=ids_of(V4) or None)
def test_corpus_notebooks_rejoin_and_strip_as_nbformat_v4_does(source: Path) -> None:
    require(V4)
    text = source.read_text(encoding="utf-8")
    assert _our_v4_reading(text) == _nbformat_v4_reading(text)


def test_a_decoded_node_is_a_notebook_node_built_by_dicts_init() -> None:
    """The decoder's node skips NotebookNode's __init__, which only sets `_allownew` (True,
    what the class already says) and then calls dict's: should nbformat's __init__ ever do
    more, this fails and the parse must build nodes its way again."""
    import inspect

    from nbformat._struct import Struct

    source = inspect.getsource(Struct.__init__)
    body = [line.strip() for line in source.splitlines() if line.strip()]
    assert body[-2:] == [
        'object.__setattr__(self, "_allownew", True)',
        "dict.__init__(self, *args, **kw)",
    ]
    assert "__init__" not in nbformat.NotebookNode.__dict__
    assert Struct._allownew is True
    node = formats._decoded_node_type()({"a": {"b": 1}, "c": [1]})
    expected = nbformat.NotebookNode({"a": {"b": 1}, "c": [1]})
    assert isinstance(node, nbformat.NotebookNode) and node == expected
    assert node.a == {"b": 1} and vars(node) == {}
    node.d = 2  # attribute writes are items, as on any NotebookNode
    assert node["d"] == 2
