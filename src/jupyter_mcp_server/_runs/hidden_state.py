"""Names a cell uses before any cell above it defines them: state only the live kernel has.

A notebook run out of order works in its kernel and fails from the top: a
cell reads a name that a cell *below* it defines, or that no cell defines at
all (it was typed in a cell since deleted, or in scratch code). This reads
each Python code cell's top-level statements in order and answers, per cell,
the names it reads that nothing above it (nor its own earlier statements)
has bound, and which cells below bind them.

It is a static reading, on purpose conservative: a cell with a star import
ends it (anything may be bound from there on), IPython's own names and the
builtins are always bound, function bodies run later and are not read, and
a cell that does not parse as Python (magics aside) is passed over.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

#: Names IPython binds in every kernel.
IPYTHON_NAMES = frozenset(
    {
        "get_ipython",
        "display",
        "In",
        "Out",
        "exit",
        "quit",
        "_",
        "__",
        "___",
        "_i",
        "_ii",
        "_iii",
        "_ih",
        "_oh",
        "_dh",
    }
)
ALWAYS_BOUND = frozenset(dir(builtins)) | IPYTHON_NAMES
_MAGIC = re.compile(r"^\s*[%!]")
_IPYTHON_HISTORY = re.compile(r"^_i?\d+$")


@dataclass
class HiddenUse:
    """A cell reading names nothing above it binds."""

    index: int
    cell_id: str
    names: list[str]
    #: The cells below that bind some of them, in order.
    defined_below: list[str] = field(default_factory=list)


def hidden_uses(code_cells: list[tuple[int, str, str]]) -> list[HiddenUse]:
    """For ``(index, cell_id, source)`` of each code cell in order, the cells that read names
    no cell above them binds."""
    readings = [(index, cell_id, _reading(source)) for index, cell_id, source in code_cells]
    bound: set[str] = set()
    found: list[HiddenUse] = []
    for position, (index, cell_id, reading) in enumerate(readings):
        if reading is None:
            continue
        if reading.star:
            break
        missing = sorted(
            name for name in reading.reads_first if name not in bound and not _always(name)
        )
        if missing:
            below = [
                later_id
                for _, later_id, later in readings[position + 1 :]
                if later is not None and later.binds & set(missing)
            ]
            found.append(HiddenUse(index, cell_id, missing, below))
        bound |= reading.binds
    return found


def _always(name: str) -> bool:
    return name in ALWAYS_BOUND or bool(_IPYTHON_HISTORY.match(name))


@dataclass
class _Reading:
    #: Names read before the cell itself binds them.
    reads_first: set[str] = field(default_factory=set)
    binds: set[str] = field(default_factory=set)
    star: bool = False


def _reading(source: str) -> _Reading | None:
    # Magics and shell escapes are no Python: read the rest.
    text = "\n".join("pass" if _MAGIC.match(line) else line for line in source.splitlines())
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    reading = _Reading()
    _statements(tree.body, reading, set())
    return reading


def _statements(body: list[ast.stmt], reading: _Reading, local: set[str]) -> None:
    for statement in body:
        _statement(statement, reading, local)


def _statement(node: ast.stmt, reading: _Reading, local: set[str]) -> None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for expression in [*node.decorator_list, *_defaults(node.args)]:
            _reads(expression, reading, local)
        _bind(node.name, reading, local)
    elif isinstance(node, ast.ClassDef):
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            _reads(expression, reading, local)
        # A class body runs now, in a scope of its own; what it binds stays inside.
        _statements(
            node.body,
            _Reading(reading.reads_first, set(), reading.star),
            set(local) | reading.binds,
        )
        _bind(node.name, reading, local)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name == "*":
                reading.star = True
            else:
                _bind((alias.asname or alias.name).split(".")[0], reading, local)
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        _reads(node.iter, reading, local)
        _targets(node.target, reading, local)
        _statements(node.body, reading, local)
        _statements(node.orelse, reading, local)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            _reads(item.context_expr, reading, local)
            if item.optional_vars is not None:
                _targets(item.optional_vars, reading, local)
        _statements(node.body, reading, local)
    elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        _statements(node.body, reading, local)  # type: ignore[attr-defined]
        for handler in node.handlers:  # type: ignore[attr-defined]
            if handler.type is not None:
                _reads(handler.type, reading, local)
            if handler.name:
                _bind(handler.name, reading, local)
            _statements(handler.body, reading, local)
        _statements(node.orelse, reading, local)  # type: ignore[attr-defined]
        _statements(node.finalbody, reading, local)  # type: ignore[attr-defined]
    elif isinstance(node, (ast.If, ast.While)):
        _reads(node.test, reading, local)
        _statements(node.body, reading, local)
        _statements(node.orelse, reading, local)
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        value = node.value
        if value is not None:
            _reads(value, reading, local)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(node, ast.AugAssign):
                _reads(target, reading, local)  # x += 1 reads x first
            _targets(target, reading, local)
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        for name in node.names:
            _bind(name, reading, local)
    elif isinstance(node, ast.Delete):
        pass
    else:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                _statement(child, reading, local)
            elif isinstance(child, ast.expr):
                _reads(child, reading, local)


def _defaults(arguments: ast.arguments) -> list[ast.expr]:
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]


def _targets(target: ast.expr, reading: _Reading, local: set[str]) -> None:
    """Bind what an assignment target binds; read what it reads (``a[i] = …`` reads a and i)."""
    if isinstance(target, ast.Name):
        _bind(target.id, reading, local)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _targets(element, reading, local)
    elif isinstance(target, ast.Starred):
        _targets(target.value, reading, local)
    else:
        _reads(target, reading, local)


def _bind(name: str, reading: _Reading, local: set[str]) -> None:
    reading.binds.add(name)
    local.add(name)


def _reads(expression: ast.expr, reading: _Reading, local: set[str]) -> None:
    """Record the names `expression` reads that are not bound yet; bind what a walrus binds."""
    if isinstance(expression, ast.Lambda):
        for default in _defaults(expression.args):
            _reads(default, reading, local)
        return  # its body runs later
    if isinstance(expression, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        inner = set(local)
        for generator in expression.generators:
            _reads(generator.iter, reading, inner)
            _comprehension_targets(generator.target, inner)
            for condition in generator.ifs:
                _reads(condition, reading, inner)
        parts = (
            [expression.key, expression.value]
            if isinstance(expression, ast.DictComp)
            else [expression.elt]
        )
        for part in parts:
            _reads(part, reading, inner)
        return
    if isinstance(expression, ast.NamedExpr):
        _reads(expression.value, reading, local)
        _bind(expression.target.id, reading, local)
        return
    if isinstance(expression, ast.Name):
        if isinstance(expression.ctx, ast.Load) and expression.id not in local:
            reading.reads_first.add(expression.id)
        return
    for child in ast.iter_child_nodes(expression):
        if isinstance(child, ast.expr):
            _reads(child, reading, local)
        elif isinstance(child, ast.comprehension):  # pragma: no cover - handled above
            _reads(child.iter, reading, local)


def _comprehension_targets(target: ast.expr, local: set[str]) -> None:
    if isinstance(target, ast.Name):
        local.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _comprehension_targets(element, local)
    elif isinstance(target, ast.Starred):
        _comprehension_targets(target.value, local)
