"""The code that looks at a Python kernel's variables from inside it (stdlib only).

The server never imports this module: :mod:`.introspection` sends its text to
the kernel, where it is executed in a private namespace and ``main`` is
called once. So it must leave nothing behind: no name in the user's
namespace, no module imported that was not already loaded (it uses only what
every IPython kernel has loaded at start), no change to ``sys.last_*`` (an
exception is never let out: IPython would record it), no output.

User code (``__repr__``, ``__len__``, properties, ``__dir__``) runs only in a
worker thread under a budget per object and per call: a ``__repr__`` that
sleeps or loops is abandoned when its budget is spent, and the call goes on
with the next object. A thread cannot be killed, so an abandoned one is left
to finish; a trace function makes it stop at its next line of Python, so a
loop in Python ends at once and a sleep in C when it returns. Nothing is
called on an object to learn about it that the user did not ask for: no
``len`` of a lazy object, no iteration of a generator, no attribute read
beyond the cheap facts of builtin containers, numpy arrays and pandas frames.
"""

import json
import linecache
import reprlib
import sys
import threading
import time
from types import FunctionType, MethodType, ModuleType
from typing import Any

#: Builtin types whose repr reprlib bounds (their elements' reprs are cut too).
_CONTAINERS = (list, tuple, dict, set, frozenset)
#: Builtin types whose repr runs no user code at all.
_PLAIN = (int, float, complex, bool, str, bytes, bytearray, range, type(None))
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray, range)
#: Frames of IPython's own machinery, between the kernel and the cell.
_MACHINERY = ("/IPython/core/", "/ipykernel/", "/asyncio/", "/tornado/", "/zmq/")


class _Stop(BaseException):
    """Raised in an abandoned worker by its trace function."""


class _Failed:
    def __init__(self, error):
        self.text = f"{type(error).__name__}: {_plain_cut(str(error), 200)}"


def _plain_cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "…"


def _reprer(limit):
    bounded = reprlib.Repr()
    bounded.maxlevel = 3
    bounded.maxstring = limit
    bounded.maxother = limit
    bounded.maxlong = min(limit, 400)
    bounded.maxlist = bounded.maxtuple = bounded.maxset = bounded.maxfrozenset = 20
    bounded.maxdeque = bounded.maxarray = 20
    bounded.maxdict = 12
    return bounded


def _repr_of(value, limit):
    """The repr, cut at `limit` characters: (text, cut). Runs user code."""
    kind = type(value)
    if kind in _PLAIN or kind in _CONTAINERS:
        try:
            # reprlib bounds str but formats bytes whole: cut them first.
            text = repr(value[:limit]) if kind in (bytes, bytearray) else _reprer(limit).repr(value)
        except ValueError:  # an int past the digit limit
            text = f"<int of {value.bit_length()} bits>" if kind is int else "<unprintable>"
            cut = True
        else:
            if kind in (str, bytes, bytearray):
                cut = len(value) > limit - 2
            else:
                cut = kind in _CONTAINERS and "..." in text
    else:
        text = repr(value)
        if not isinstance(text, str):
            text = f"<__repr__ returned {type(text).__name__}>"
        cut = len(text) > limit
    return (text[:limit] + "…" if len(text) > limit else text), bool(cut)


def _type_name(kind):
    module = getattr(kind, "__module__", "builtins")
    name = getattr(kind, "__qualname__", kind.__name__)
    return name if module == "builtins" else f"{module}.{name}"


def _tracer(stop):
    """A trace function that ends its thread's Python at the next line once `stop[0]` is set.

    Made by a function of its own so that the ``tracer`` it returns for each frame is
    itself, never the next worker's (a closure over a loop variable would be)."""

    def tracer(frame, event, arg):
        if stop[0]:
            raise _Stop()
        return tracer

    return tracer


def _guarded(tasks, per_task, total):
    """Run each of `tasks` (callables) in a worker thread, each within `per_task`
    seconds and all within `total`: [(status, value)] with status ok, error,
    timeout or skipped."""
    results: list[tuple[str, Any]] = [("skipped", None)] * len(tasks)
    end = time.monotonic() + total
    start = 0
    while start < len(tasks):
        stop = [False]
        progress: list[Any] = [start, time.monotonic()]

        tracer = _tracer(stop)

        def work(start=start, stop=stop, progress=progress, tracer=tracer):
            try:
                for index in range(start, len(tasks)):
                    if stop[0]:
                        return
                    progress[0], progress[1] = index, time.monotonic()
                    sys.settrace(tracer)
                    try:
                        value, status = tasks[index](), "ok"
                    except _Stop:
                        return
                    except BaseException as error:  # the object's own failure, reported
                        value, status = _Failed(error).text, "error"
                    finally:
                        sys.settrace(None)
                    if stop[0]:
                        return
                    results[index] = (status, value)
                progress[0] = len(tasks)
            except BaseException:  # abandoned: nothing may reach the kernel's stderr
                return

        worker = threading.Thread(target=work, name="jupyter-mcp-introspection", daemon=True)
        worker.start()
        timed_out = False
        while worker.is_alive():
            worker.join(0.01)
            now = time.monotonic()
            if worker.is_alive() and (now > end or now - progress[1] > per_task):
                timed_out = True
                break
        if not timed_out:
            break
        stop[0] = True
        index = progress[0]
        if index < len(tasks):
            results[index] = ("timeout", None)
        if time.monotonic() > end:
            break
        start = index + 1
    return results


def _shell():
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _is_hidden(name, value, hidden):
    return name.startswith("_") or (name in hidden and hidden[name] is value)


def _matches_type(kind, wanted):
    for klass in getattr(kind, "__mro__", (kind,)):
        if wanted in (klass.__name__, _type_name(klass)):
            return True
    return False


def _glob(pattern):
    """A glob (``*``, ``?``, ``[seq]``, ``[!seq]``) as a compiled regular expression."""
    import re  # loaded by every kernel: no new module

    parts, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        close = pattern.find("]", i + 2) if c == "[" else -1
        if c == "*":
            parts.append(".*")
        elif c == "?":
            parts.append(".")
        elif close != -1:
            body = pattern[i + 1 : close].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body
            parts.append("[" + body + "]")
            i = close
        else:
            parts.append(re.escape(c))
        i += 1
    return re.compile("".join(parts) + r"\Z")


def _cheap_facts(value, subclasses=False):
    """len, shape, dtype, bytes: only where they cost nothing.

    Of builtin containers, and of numpy arrays and pandas frames and series, whose
    methods are the libraries' own: read at once. A subclass of those may have
    overridden them (user code), so with `subclasses` only those are read, and only
    in a guarded task."""
    kind = type(value)
    facts: dict[str, Any] = {}
    numpy = sys.modules.get("numpy")
    pandas = sys.modules.get("pandas")
    array = numpy is not None and issubclass(kind, numpy.ndarray)
    frame = pandas is not None and issubclass(kind, pandas.DataFrame)
    series = pandas is not None and issubclass(kind, pandas.Series)
    libraries = (
        getattr(numpy, "ndarray", None),
        getattr(pandas, "DataFrame", None),
        getattr(pandas, "Series", None),
    )
    subclassed = (array or frame or series) and kind not in libraries
    if subclasses != subclassed:
        return facts
    if kind in _SIZED:
        facts["len"] = len(value)
        facts["bytes"] = sys.getsizeof(value)
    elif kind in _PLAIN:
        facts["bytes"] = sys.getsizeof(value)
    elif array:
        facts.update(shape=list(value.shape), dtype=str(value.dtype), bytes=int(value.nbytes))
    elif frame:
        facts["shape"] = list(value.shape)
        facts["bytes"] = int(value.memory_usage(index=True, deep=False).sum())
    elif series:
        facts.update(shape=list(value.shape), dtype=str(value.dtype))
        facts["bytes"] = int(value.memory_usage(index=True, deep=False))
    return facts


_MISSING = object()


def _items(namespace):
    """The namespace's (name, value) pairs, sorted by name, taken from a copy.

    With subshells a cell may be running in the main thread and binding names meanwhile:
    iterating the dict itself could fail as it changes size; copying its keys cannot
    (one C call under the GIL), and a name gone since is skipped."""
    for name in sorted(key for key in list(namespace) if isinstance(key, str)):
        value = namespace.get(name, _MISSING)
        if value is not _MISSING:
            yield name, value


def _list(request, namespace, hidden):
    wanted = request.get("type_filter")
    pattern = _glob(request["name_pattern"]) if request.get("name_pattern") else None
    modules = request.get("include_modules", False)
    chosen = []
    for name, value in _items(namespace):
        kind = type(value)
        if _is_hidden(name, value, hidden) or (issubclass(kind, ModuleType) and not modules):
            continue
        if pattern is not None and not pattern.match(name):
            continue
        if wanted and not _matches_type(kind, wanted):
            continue
        chosen.append((name, value))
    offset, limit = request.get("offset", 0), request.get("limit", 50)
    page = chosen[offset : offset + limit]
    width = request.get("repr_chars", 120)
    tasks = [lambda v=v: (_repr_of(v, width), _cheap_facts(v, subclasses=True)) for _, v in page]
    reprs = _guarded(tasks, request["per_object"], request["total"])
    entries = []
    for (name, value), (status, shown) in zip(page, reprs):
        entry = {"name": name, "type": _type_name(type(value))}
        try:
            entry.update(_cheap_facts(value))
        except Exception:  # a broken object: its facts are left out
            pass
        if status == "ok":
            entry.update(shown[1])
            shown = shown[0]
        entry.update(_shown(status, shown))
        entries.append(entry)
    return {"total": len(chosen), "offset": offset, "variables": entries}


def _shown(status, shown):
    if status == "ok":
        return {"repr": shown[0], "repr_cut": shown[1]}
    if status == "error":
        return {"repr": None, "repr_note": "its __repr__ raised " + shown}
    if status == "timeout":
        return {
            "repr": None,
            "repr_note": "its __repr__ took longer than the budget and was abandoned",
        }
    return {"repr": None, "repr_note": "not shown: the call's time budget was spent"}


def _frame_text(frame, limit):
    """A dataframe's head as text, bounded."""
    return _plain_cut(frame.head(5).to_string(max_cols=20, max_colwidth=40), limit)


def _array_stats(array, numpy):
    if array.dtype.kind not in "biuf" or array.size == 0 or array.size > 50_000_000:
        return None
    finite = array[numpy.isfinite(array)] if array.dtype.kind == "f" else array
    if finite.size == 0:
        return {"finite": 0}
    return {
        "min": finite.min().item(),
        "max": finite.max().item(),
        "mean": float(finite.mean()),
        "std": float(finite.std()),
        "finite": int(finite.size),
    }


def _describe(request, namespace, hidden):
    name = request["name"]
    value = namespace.get(name, _MISSING)
    if value is _MISSING:
        names = [n for n, v in _items(namespace) if not _is_hidden(n, v, hidden)]
        return {"missing": True, "names": names[:5000]}
    kind = type(value)
    limit = request.get("repr_chars", 2000)
    described = {"name": name, "type": _type_name(kind)}
    try:
        described.update(_cheap_facts(value))
    except Exception:  # a broken object: its facts are left out
        pass
    numpy = sys.modules.get("numpy")
    pandas = sys.modules.get("pandas")
    tasks = {
        "repr": lambda: _repr_of(value, limit),
        "facts": lambda: _cheap_facts(value, subclasses=True),
    }
    if pandas is not None and issubclass(kind, pandas.DataFrame):
        described["kind"] = "dataframe"

        def columns():
            listed = value.iloc[:, :100].dtypes.items()
            return {
                "columns_total": int(value.shape[1]),
                "columns": [{"name": str(c), "dtype": str(d), "non_null": None} for c, d in listed],
            }

        def non_null():
            # Counting reads every value: a task of its own, so a slow count loses no dtype.
            return [int(n) for n in value.iloc[:, :100].count()]

        tasks.pop("repr")
        tasks.update(columns=columns, non_null=non_null, head=lambda: _frame_text(value, limit))
    elif pandas is not None and issubclass(kind, pandas.Series):
        described["kind"] = "series"
        tasks.pop("repr")
        tasks.update(
            non_null=lambda: int(value.count()),
            head=lambda: _plain_cut(value.head(5).to_string(), limit),
        )
    elif numpy is not None and issubclass(kind, numpy.ndarray):
        described["kind"] = "array"
        tasks["stats"] = lambda: _array_stats(value, numpy)
    elif issubclass(kind, type):
        described["kind"] = "class"
        tasks.update(_callable_tasks(value, limit))
    elif callable(value):
        described["kind"] = (
            "function" if issubclass(kind, (FunctionType, MethodType)) else "callable"
        )
        tasks.update(_callable_tasks(value, limit))
    elif kind.__name__ in ("generator", "coroutine", "async_generator") or hasattr(
        kind, "__next__"
    ):
        described["kind"] = "iterator"
        described["note"] = (
            "An iterator is described without being advanced: nothing of it was consumed."
        )
    else:
        described["kind"] = "object"
        tasks["attributes"] = lambda: [a for a in dir(value) if not a.startswith("_")][:100]
    outcomes = _guarded(list(tasks.values()), request["per_object"], request["total"])
    for key, (status, result) in zip(tasks, outcomes):
        if key == "repr":
            described.update(_shown(status, result))
        elif key in ("facts", "columns") and status == "ok":
            described.update(result)
        elif status == "ok":
            described[key] = result
        else:
            took = "took longer than the budget" if status == "timeout" else result or status
            described.setdefault("notes", []).append(f"{key}: {took}")
    if described.get("kind") == "dataframe" and isinstance(described.get("non_null"), list):
        for column, count in zip(described.get("columns") or [], described.pop("non_null")):
            column["non_null"] = count
    return described


def _callable_tasks(value, limit):
    import inspect  # loaded by every IPython kernel

    def signature():
        try:
            return str(inspect.signature(value))
        except (TypeError, ValueError):
            return None

    return {
        "signature": signature,
        "doc": lambda: _plain_cut(inspect.getdoc(value) or "", limit) or None,
        "module": lambda: getattr(value, "__module__", None),
    }


def _is_cell_file(filename):
    return filename.startswith("<") or "ipykernel_" in filename


def _package_of(filename):
    """The installed package or standard-library module a file belongs to, else its name."""
    path = filename.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1].split("/", 1)[0].replace(".py", "")
    parts = path.split("/")
    for index, part in enumerate(parts[:-1]):
        if part.startswith("python3") and index > 0 and parts[index - 1] == "lib":
            return parts[index + 1].replace(".py", "")
    return parts[-1]


def _chosen_frames(is_cell, max_frames):
    """Which frames a report shows, at most `max_frames`: the notebook's own cells first (the
    outermost, the line the agent ran, and the innermost), then the innermost of the rest."""
    cells = [index for index, cell in enumerate(is_cell) if cell]
    room = max(max_frames - 1, 1) if len(is_cell) > len(cells) else max_frames
    if len(cells) > room:
        outer = max(room // 2, 1)
        cells = (
            cells[:outer] + cells[len(cells) - (room - outer) :] if room > outer else cells[:outer]
        )
    chosen = set(cells)
    for index in range(len(is_cell) - 1, -1, -1):
        if len(chosen) >= max_frames:
            break
        chosen.add(index)
    return sorted(chosen)[-max_frames:] if len(chosen) > max_frames else sorted(chosen)


def _debug(request, namespace):
    traceback = getattr(sys, "last_traceback", None)
    if traceback is None:
        return {"error": None}
    error = getattr(sys, "last_value", None)
    context = request.get("context_lines", 3)
    width = request.get("repr_chars", 200)
    frames = []
    while traceback is not None:
        frame = traceback.tb_frame
        filename = frame.f_code.co_filename
        if not any(part in filename for part in _MACHINERY):
            frames.append((frame, traceback.tb_lineno))
        traceback = traceback.tb_next
    total = len(frames)
    chosen = _chosen_frames(
        [_is_cell_file(frame.f_code.co_filename) for frame, _ in frames],
        request.get("max_frames", 10),
    )
    described, tasks, slots = [], [], []
    previous = -1
    for position in chosen:
        frame, line = frames[position]
        filename = frame.f_code.co_filename
        lines = linecache.getlines(filename)
        first = max(line - context, 1)
        entry = {
            "file": filename,
            "line": line,
            "function": frame.f_code.co_name,
            "first_line": first,
            "source": [
                _plain_cut(text.rstrip("\n"), 300) for text in lines[first - 1 : line + context]
            ],
        }
        if position > previous + 1:
            skipped = frames[previous + 1 : position]
            packages = sorted({_package_of(f.f_code.co_filename) for f, _ in skipped})
            entry["folded_before"] = {"frames": len(skipped), "packages": packages}
        previous = position
        if _is_cell_file(filename):
            entry["cell_source"] = _plain_cut("".join(lines), 20000)
        if frame.f_locals is namespace or frame.f_globals is frame.f_locals:
            entry["locals"] = None  # the notebook's namespace: list_variables shows it
        else:
            entry["locals"] = {}
            for name, value in list(frame.f_locals.items())[:40]:
                if name.startswith("__"):
                    continue
                tasks.append(lambda v=value: _repr_of(v, width))
                slots.append((entry["locals"], name, value))
        described.append(entry)
    outcomes = _guarded(tasks, 1.0, 5.0)
    for (where, name, value), (status, shown) in zip(slots, outcomes):
        where[name] = {"type": _type_name(type(value)), **_shown(status, shown)}
    ename = type(error).__name__ if error is not None else None
    evalue = _plain_cut(str(error), 1000) if error is not None else None
    return {"error": {"ename": ename, "evalue": evalue}, "frames": described, "frames_total": total}


def main(request_text):
    """Answer one request (JSON text) with JSON text; never raises."""
    try:
        request = json.loads(request_text)
        shell = _shell()
        if shell is None:
            return json.dumps({"failure": "not an IPython kernel"})
        namespace, hidden = shell.user_ns, shell.user_ns_hidden
        operation = request["op"]
        if operation == "list":
            answer = _list(request, namespace, hidden)
        elif operation == "describe":
            answer = _describe(request, namespace, hidden)
        else:
            answer = _debug(request, namespace)
        return json.dumps(answer, default=str)
    except BaseException as error:  # never IPython's to record in sys.last_*
        return json.dumps({"failure": _Failed(error).text})
