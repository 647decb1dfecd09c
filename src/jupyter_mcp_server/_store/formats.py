"""Notebook bytes on disk <-> the nbformat document the tools work on.

Two formats live on disk: ``.ipynb`` JSON and Jupytext ``py:percent`` scripts.
In memory both are the same thing, an nbformat 4.5 ``NotebookNode`` whose
cells all carry an ``id`` and a ``str`` source, so nothing above this module
ever asks which format a notebook came from. Parsing validates once; writing
does not validate again, because every change goes through tools that keep
the document valid and re-validating thousands of cells per edit is slow.
A file in an older nbformat (2, 3, 4.0 to 4.4) is upgraded in memory and
written as 4.5 at its next write, which older tools may no longer open: the
parse names its version (``Parsed.older_format``) so the user hears of it. A
file in a newer 4.x (4.99: cells of types 4.5 does not know) is kept in its own
version, which this server cannot convert: the parse names that too
(``Parsed.newer_format``), and every result says so.

nbformat and jupytext are imported inside the functions: the server must
start fast, and jupytext is only needed once a script is touched.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

from .._errors import INVALID_ARGUMENT, INVALID_PATH, ToolFailure
from . import verdicts
from .layout import CellTexts, NotPlainJson, indented_json
from .schema_validator import prepare as prepare_validator

if TYPE_CHECKING:
    from nbformat import NotebookNode

IPYNB = "ipynb"
PY_PERCENT = "py:percent"

#: The nbformat version every notebook is written in, whatever it was read in.
WRITTEN_VERSION = "4.5"

_FORMAT_OF_SUFFIX = {".ipynb": IPYNB, ".py": PY_PERCENT}

#: What nbformat drops when it writes a file (``strip_transient``).
_TRANSIENT_NOTEBOOK_KEYS = frozenset({"orig_nbformat", "orig_nbformat_minor", "signature"})
#: Mime types nbformat splits into lines besides ``text/*`` (``split_lines``).
_SPLIT_MIMES = frozenset({"application/javascript", "image/svg+xml"})

_CELL_TYPES = ("code", "markdown", "raw")


def format_of(path: str) -> str:
    """The format a notebook path is stored in, refusing anything else."""
    fmt = _FORMAT_OF_SUFFIX.get(PurePosixPath(path).suffix.lower())
    if fmt is None:
        raise ToolFailure(
            INVALID_PATH,
            f"{path!r} is not a notebook path: notebooks are .ipynb files or "
            ".py Jupytext percent scripts.",
        )
    return fmt


def warm_up() -> None:
    """Import nbformat and build its 4.5 schema validator, ahead of the first notebook.

    Both are deferred so the server starts fast; together they cost the first
    notebook call about a tenth of a second. Meant for a worker thread while
    the server idles after its handshake; safe to call any number of times.
    """
    import nbformat  # noqa: F401  (nbformat.v4 and the validator module come with it)
    from nbformat.validator import get_validator

    prepare_validator()
    get_validator(version=4, version_minor=5)


def new_cell_id() -> str:
    """A fresh cell id the way nbformat makes them (8 hex characters)."""
    return uuid.uuid4().hex[:8]


def new_notebook(kernelspec: dict[str, str] | None = None) -> NotebookNode:
    """An empty nbformat 4.5 notebook, optionally bound to a kernelspec.

    Built the way ``nbformat.v4.new_notebook`` builds it, minus its validation:
    the document is valid by construction, and nbformat's first validation
    compiles the whole schema (tens of milliseconds on a new notebook).
    """
    from nbformat import NotebookNode

    notebook = NotebookNode(nbformat=4, nbformat_minor=5, metadata=NotebookNode(), cells=[])
    if kernelspec:
        known = ("display_name", "language", "name")
        notebook.metadata["kernelspec"] = {k: kernelspec[k] for k in known if k in kernelspec}
        if kernelspec.get("language"):
            notebook.metadata["language_info"] = {"name": kernelspec["language"]}
    return notebook


def new_cell(cell_type: str, source: str) -> NotebookNode:
    """A new cell with a fresh id; ``cell_type`` is code, markdown or raw.

    The cells ``nbformat.v4.new_*_cell`` make, without validating each one
    against the schema (half a millisecond per insert): valid by construction.
    """
    from nbformat import NotebookNode

    if cell_type not in _CELL_TYPES:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"Unknown cell_type {cell_type!r}: use one of {', '.join(_CELL_TYPES)}.",
            known=list(_CELL_TYPES),
        )
    cell = NotebookNode(
        id=new_cell_id(), cell_type=cell_type, metadata=NotebookNode(), source=source
    )
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


class Parsed(NamedTuple):
    """A file's document, and the older nbformat version it is in, if any."""

    notebook: NotebookNode
    #: The file's nbformat version ("3.0", "4.4") when it is older than
    #: :data:`WRITTEN_VERSION`: the next write upgrades the file to it.
    older_format: str | None = None
    #: The file's nbformat version ("4.99") when it is newer than
    #: :data:`WRITTEN_VERSION`: it is written back in that version.
    newer_format: str | None = None


def parse_notebook(
    data: bytes,
    fmt: str,
    name: str,
    previous: NotebookNode | None = None,
    remembered: Callable[[], NotebookNode | None] | None = None,
) -> Parsed:
    """The validated 4.5 document in ``data``, or ``ToolFailure(invalid_argument)``.

    Cells without an id on disk (older versions, scripts, 4.5 files written
    without ids) get one in memory. When ``previous`` is the document this
    file held before an outside change, such cells take over the id of the
    previous cell with the same type and source, in order, so ids stay
    stable while the server runs even though the file does not store them.
    Without ``previous`` (the first read since the server started),
    ``remembered`` is asked for the document as the notebook's history last
    kept it, and its ids are taken over the same way (its outputs are not):
    ids the server gave survive a restart. A cell matched by neither gets an
    id derived from its type and source (:func:`derived_cell_id`), the same
    at every start.
    """
    older_format = newer_format = None
    try:
        if fmt == IPYNB:
            notebook, generated, older_format = _parse_ipynb(data)
            minor = notebook.get("nbformat_minor")
            if isinstance(minor, int) and minor > int(WRITTEN_VERSION.split(".")[1]):
                newer_format = f"{notebook.get('nbformat')}.{minor}"
        else:
            notebook = _parse_percent(data)
            generated = list(range(len(notebook.cells)))
    except ToolFailure:
        raise
    except Exception as error:  # whatever nbformat or jupytext trip over in a broken file
        raise _invalid(name, _describe(error)) from error
    carry_outputs = fmt == PY_PERCENT
    if generated and previous is None and remembered is not None:
        previous, carry_outputs = remembered(), False
    _carry_identity(notebook, generated, previous, carry_outputs=carry_outputs)
    return Parsed(notebook, older_format, newer_format)


def maybe_half_written(data: bytes, fmt: str) -> bool:
    """Whether a notebook that failed to parse may be a write still under way: empty, or not
    JSON at all (a prefix of a document is not). Jupyter Server saves in place, so a reader
    can see the file truncated, or half written; whether it is still changing tells."""
    if not data.strip():
        return True
    if fmt != IPYNB:
        return False
    try:
        json.loads(data)
    except ValueError:  # JSONDecodeError, and UnicodeDecodeError for a cut character
        return True
    except RecursionError:  # nested too deep to parse: whole, and hostile
        return False
    return False


def serialize_notebook(
    notebook: NotebookNode, fmt: str, cell_texts: CellTexts | None = None
) -> bytes:
    """The bytes to store, exactly as nbformat (or jupytext) would write them.

    ``cell_texts``, kept by the caller from one write of this notebook to
    the next, spares re-encoding the cells that did not change.
    """
    if fmt == IPYNB:
        try:
            cells = (cell_texts or CellTexts()).cells_text(notebook["cells"], disk_cell)
            text = indented_json({**disk_form(notebook, with_cells=False), "cells": cells})
        except NotPlainJson:
            from nbformat.v4.nbjson import BytesEncoder

            text = json.dumps(
                disk_form(notebook),
                cls=BytesEncoder,
                indent=1,
                sort_keys=True,
                separators=(",", ": "),
                ensure_ascii=False,
            )
        return (text + "\n").encode("utf-8")
    return _percent_script(notebook).encode("utf-8")


def _percent_script(notebook: NotebookNode) -> str:
    """The script jupytext writes, with the header the file was read with.

    jupytext puts its own ``text_representation`` (its version, the format's) into
    every header it writes. A script read from disk carries in memory whatever its
    header held: written back as it is, a person's header (a kernelspec, or none)
    stays as they wrote it, where jupytext would add six lines to it at the first
    edit. The ``text_representation`` jupytext's reader supplies for a header that
    had none (no ``format_version``) is left out. A notebook the server made (no
    ``jupytext`` metadata) gets jupytext's usual header.
    """
    import jupytext
    from jupytext import header

    representation = (notebook["metadata"].get("jupytext") or {}).get("text_representation")
    if representation is None:
        return str(jupytext.writes(notebook, fmt=PY_PERCENT))
    if "format_version" not in representation:
        section = {
            k: v for k, v in notebook["metadata"]["jupytext"].items() if k != "text_representation"
        }
        metadata = {k: v for k, v in notebook["metadata"].items() if k != "jupytext"}
        if section:
            metadata["jupytext"] = section
        notebook = type(notebook)({**notebook, "metadata": type(notebook["metadata"])(metadata)})
    # Module state, but writes run on the event loop's thread, one at a time, and
    # nothing awaits in between.
    inserting = header.INSERT_AND_CHECK_VERSION_NUMBER
    header.INSERT_AND_CHECK_VERSION_NUMBER = False
    try:
        return str(jupytext.writes(notebook, fmt=PY_PERCENT))
    finally:
        header.INSERT_AND_CHECK_VERSION_NUMBER = inserting


def _parse_ipynb(data: bytes) -> tuple[NotebookNode, list[int], str | None]:
    import nbformat
    from nbformat.reader import get_version
    from nbformat.validator import iter_validate

    # Every object a NotebookNode as it is decoded (nbformat's from_dict walks the whole
    # document again, value by value: a third of a read).
    raw = json.loads(data.decode("utf-8"), object_hook=_decoded_node_type())
    if b"\\u" in data and _has_lone_surrogate(raw):
        # JSON can spell half of a UTF-16 pair ("\ud800"); such a string is not
        # text, cannot be written back as UTF-8, and must not reach an answer.
        raise ValueError(
            "a string holds a lone surrogate escape such as \\ud800, which is not Unicode text"
        )
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise ValueError("the JSON has no nbformat version, so it is not a notebook")
    major, minor = get_version(raw)
    if major not in nbformat.versions:
        raise ValueError(f"nbformat version {major!r} is not supported")
    older_format = None
    digest = verdicts.digest_of(data)
    try:
        if major == 4:
            # What v4's reader does after from_dict: split lines rejoined, transient keys dropped.
            notebook = _rejoined_v4(raw)
        else:
            # The version's own reader rejoins split lines and drops transient keys.
            notebook = nbformat.versions[major].to_notebook_json(raw, minor=minor)
        if (major, minor) < (4, 5):
            older_format = f"{major}.{minor}"
            with _upgrade_logs_left_out():
                notebook = nbformat.convert(notebook, 4)
            notebook = nbformat.v4.upgrade(
                notebook, from_version=4, from_minor=notebook.get("nbformat_minor")
            )
            for key in _TRANSIENT_NOTEBOOK_KEYS:
                notebook.metadata.pop(key, None)
            generated = list(range(len(notebook.cells)))
        else:
            generated = _ids_from_disk(notebook)
        if not verdicts.known_valid(digest):
            prepare_validator()  # at once when the warm-up did it; else nbformat's validator is the generated one
            # Public validate would silently "repair" duplicate ids; they were refused above.
            nbformat.validate(notebook)
            verdicts.remember_valid(digest)
    except (AttributeError, KeyError, TypeError):
        # A broken structure trips nbformat's readers before its schema names the problem.
        prepare_validator()
        problem = next(iter_validate(nbformat.from_dict(raw)), None)
        if problem is not None:
            raise problem from None
        raise
    return notebook, generated, older_format


@functools.cache
def _decoded_node_type() -> type[NotebookNode]:
    """The NotebookNode the JSON decoder builds each object as.

    NotebookNode's own ``__init__`` is Python and gives every node an instance
    attribute (``_allownew``, which its class already says): for a 2,000-cell
    notebook that is 3.3 of the 8.5 ms the decoder takes, and a dict per node
    kept for as long as the document. This subclass is built by dict's
    ``__init__``, in C; everything else about it is NotebookNode's.
    """
    from nbformat import NotebookNode

    return type("DecodedNotebookNode", (NotebookNode,), {"__init__": dict.__init__})


def _rejoined_v4(notebook: Any) -> NotebookNode:
    """nbformat v4's ``rejoin_lines`` and ``strip_transient`` in one pass over the cells.

    The same changes, in place, by item access: NotebookNode's attribute
    access is a Python call per lookup, which made nbformat's two passes the
    largest part of a parse (11 against 4 ms for 2,000 cells). A structure
    they would trip over trips this too, with a KeyError, AttributeError or
    TypeError: the caller has the schema name the problem.
    tests/notebooks/test_corpora.py checks it against nbformat's on every corpus
    notebook.
    """
    metadata = notebook["metadata"]
    for key in _TRANSIENT_NOTEBOOK_KEYS:
        metadata.pop(key, None)
    for cell in notebook["cells"]:
        source = cell.get("source")
        if isinstance(source, list):
            cell["source"] = "".join(source)
        for attachment in cell.get("attachments", {}).values():
            _rejoin_bundle(attachment)
        if cell.get("cell_type") == "code":
            for output in cell.get("outputs", []):
                output_type = output.get("output_type", "")
                if output_type in ("execute_result", "display_data"):
                    _rejoin_bundle(output.get("data", {}))
                elif output_type and isinstance(text := output.get("text", ""), list):
                    output["text"] = "".join(text)
        cell["metadata"].pop("trusted", None)
    return notebook


def _rejoin_bundle(bundle: dict[str, Any]) -> None:
    for mime, value in bundle.items():
        if (
            isinstance(value, list)
            and not _is_json_mime(mime)
            and all(isinstance(line, str) for line in value)
        ):
            bundle[mime] = "".join(value)


def _is_json_mime(mime: str) -> bool:
    """nbformat's test for a JSON mime type, whose value is data and is never joined."""
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


class _NotAboutTheResult(logging.Filter):
    """nbformat's upgrade logs the whole validation error of the older version's
    schema (a dump of the document): the upgraded document is validated next, and
    its verdict is what a caller hears, once, as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Notebook JSON is not valid v")


_QUIET = _NotAboutTheResult()


@contextlib.contextmanager
def _upgrade_logs_left_out() -> Iterator[None]:
    from traitlets.log import get_logger

    found = get_logger()
    logger = found.logger if isinstance(found, logging.LoggerAdapter) else found
    logger.addFilter(_QUIET)
    try:
        yield
    finally:
        logger.removeFilter(_QUIET)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string (key or value) in a parsed JSON document holds a lone surrogate."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _parse_percent(data: bytes) -> NotebookNode:
    import jupytext

    return jupytext.reads(data.decode("utf-8"), fmt=PY_PERCENT)


def _ids_from_disk(notebook: NotebookNode) -> list[int]:
    """Refuse duplicate ids, give missing ones; the indices of the cells given one."""
    cells = notebook.get("cells")
    generated: list[int] = []
    seen: set[str] = set()
    for index, cell in enumerate(cells if isinstance(cells, list) else ()):
        if not isinstance(cell, dict):
            continue  # validation names the problem
        if "id" not in cell:
            cell["id"] = new_cell_id()
            generated.append(index)
        elif isinstance(cell["id"], str) and cell["id"] in seen:
            raise ValueError(
                f"cell id {cell['id']!r} is used by more than one cell, again at cell {index}"
            )
        elif isinstance(cell["id"], str):
            seen.add(cell["id"])
    return generated


def _carry_identity(
    notebook: NotebookNode,
    generated: list[int],
    previous: NotebookNode | None,
    carry_outputs: bool,
) -> None:
    if not generated:
        return  # every cell has its id from the file
    cells = notebook.cells
    is_generated = set(generated)
    used = {cell.id for index, cell in enumerate(cells) if index not in is_generated}
    # Cells of a type newer than 4.5 (a 4.99 "future cell") may have no source.
    pool: dict[tuple[str, str | None], deque[Any]] = {}
    for old in previous.cells if previous is not None else ():
        if old.id not in used:
            pool.setdefault((old.cell_type, old.get("source")), deque()).append(old)
    unmatched = []
    for index in generated:
        cell = cells[index]
        candidates = pool.get((cell.cell_type, cell.get("source")))
        if not candidates:
            unmatched.append(cell)
            continue
        old = candidates.popleft()
        cell.id = old.id
        if carry_outputs and cell.cell_type == "code":
            # Scripts do not store outputs: an unchanged cell keeps the ones it had.
            cell.outputs = old.get("outputs", [])
            cell.execution_count = old.get("execution_count")
        used.add(cell.id)
    occurrences: dict[tuple[str, str | None], int] = {}
    for cell in unmatched:
        content = (cell.cell_type, cell.get("source"))
        occurrence = occurrences[content] = occurrences.get(content, 0) + 1
        attempt = 0
        cell.id = derived_cell_id(*content, occurrence)
        while cell.id in used:  # a stored id it collides with, however unlikely: the next one
            attempt += 1
            cell.id = derived_cell_id(*content, occurrence, attempt)
        used.add(cell.id)


def derived_cell_id(cell_type: str, source: str | None, occurrence: int, attempt: int = 0) -> str:
    """The id of a cell whose file stores none: 8 hex characters (as nbformat's) of a digest of
    its type, source and which occurrence of that content it is. The same file gives the same
    ids at every start of every server, so an id a caller noted still names its cell."""
    text = f"{cell_type}\0{source or ''}\0{occurrence}\0{attempt}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def disk_form(notebook: NotebookNode, *, with_cells: bool = True) -> dict[str, Any]:
    """nbformat's ``split_lines`` + ``strip_transient``, without its deep copy.

    Only the containers that differ on disk are rebuilt; everything else is
    shared with the live document, which is never modified here. Item access
    rather than attributes: this runs for every cell of every write.
    """
    metadata = {
        key: value
        for key, value in notebook["metadata"].items()
        if key not in _TRANSIENT_NOTEBOOK_KEYS
    }
    if not with_cells:
        return {**notebook, "metadata": metadata}
    return {**notebook, "metadata": metadata, "cells": [disk_cell(c) for c in notebook["cells"]]}


def disk_cell(cell: dict[str, Any]) -> dict[str, Any]:
    disk = dict(cell)
    source = cell.get("source")
    if isinstance(source, str):
        disk["source"] = source.splitlines(True)
    if "trusted" in cell["metadata"]:
        disk["metadata"] = {k: v for k, v in cell["metadata"].items() if k != "trusted"}
    if cell.get("attachments"):
        disk["attachments"] = {name: _split_bundle(b) for name, b in cell["attachments"].items()}
    if cell["cell_type"] == "code":
        disk["outputs"] = [_disk_output(output) for output in cell["outputs"]]
    return disk


def _disk_output(output: dict[str, Any]) -> dict[str, Any]:
    kind = output["output_type"]
    if kind in ("execute_result", "display_data") and "data" in output:
        return {**output, "data": _split_bundle(output["data"])}
    if kind == "stream" and isinstance(output.get("text"), str):
        return {**output, "text": output["text"].splitlines(True)}
    return output


def _split_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    return {
        mime: value.splitlines(True)
        if isinstance(value, str) and (mime.startswith("text/") or mime in _SPLIT_MIMES)
        else value
        for mime, value in bundle.items()
    }


def _describe(error: Exception) -> str:
    """A one-line account of what is wrong with a file, with where it is."""
    if isinstance(error, json.JSONDecodeError):
        return f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 text (byte {error.start})"
    key = error.args[0] if isinstance(error, (AttributeError, KeyError)) and error.args else None
    if isinstance(key, str) and key.isidentifier():
        # nbformat's readers reach for keys a broken file does not have.
        return f"the required key {key!r} is missing"
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    message = message.splitlines()[0]
    path = list(getattr(error, "absolute_path", None) or ())
    if path:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
        message = f"{message} at {where.lstrip('.')}"
    return message if len(message) <= 300 else message[:297] + "..."


def _invalid(name: str, problem: str) -> ToolFailure:
    return ToolFailure(
        INVALID_ARGUMENT,
        f"{name} is not a valid notebook ({problem}). The file was left untouched; "
        "fix it in an editor or with nbformat, then try again.",
        path=name,
    )
