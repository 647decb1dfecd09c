"""Optional packages another library imports eagerly, imported when first used instead.

``nbformat`` imports ``jsonschema``, and ``jsonschema`` imports every format
checker it can find. Beside JupyterLab one of them is ``rfc3987-syntax``,
which builds about thirty Earley parsers for IRIs when it is imported: 0.8 s
of CPU on the way to the first notebook the server reads, for a format no
notebook schema uses; another is ``isoduration``, which imports ``arrow``
(2.4 MiB of a server at rest) for the ``duration`` format, which no
notebook schema uses either; the URI, date-time, URI-template, colour and
host-name checkers' packages cost 10-20 ms of the first read between them,
for formats no notebook schema names. The packages stay installed and work; this
module puts a stand-in under each name that imports the real module the
first time anything validates such a value (``jsonschema`` takes the
function by name, so a lazy module object alone would not defer anything).

Only a process that has not imported it yet is affected: inside Jupyter
Server, ``jsonschema`` is already loaded by then and this does nothing.

The same holds for the ``reactor`` plugin platform under our extension
layer: its package ``__init__`` re-exports its web host, which imports
FastAPI (60 ms and 5 MiB of a 0.6 s start) for an HTTP application this
server never builds. :func:`defer_package_exports` reads the names the
``__init__`` re-exports off its own source and imports each one's
submodule the first time the name is used, which is what the ``__init__``
would have done, minus the eagerness. A package whose ``__init__`` does
anything else is imported normally.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from typing import Any

IRI_GRAMMAR = "rfc3987_syntax"
DURATION_PARSER = "isoduration"
#: Packages another library imports eagerly, each with what it takes from them at import time:
#: a function (called through to the real one) or a value (kept as given).
STAND_INS: dict[str, dict[str, str | type[BaseException]]] = {
    IRI_GRAMMAR: {"is_valid_syntax": "function"},
    # jsonschema takes the exception class at import (``raises=``) and catches it around
    # `parse_duration`: the real one is a ValueError, so catching ValueError catches it.
    DURATION_PARSER: {"parse_duration": "function", "DurationParsingException": ValueError},
    # The rest are looked up when a value is checked (``webcolors.name_to_hex``), or taken
    # as a function at import; what they raise is a builtin exception jsonschema names.
    "rfc3986_validator": {"validate_rfc3986": "function"},
    "rfc3339_validator": {"validate_rfc3339": "function"},
    "uri_template": {},
    "webcolors": {},
    "fqdn": {"FQDN": "function"},
}
#: Packages whose ``__init__`` re-exports something heavy the server never uses.
EAGER_PACKAGES = ("reactor",)


def defer_format_checkers() -> bool:
    """Stand in for jsonschema's format checkers' packages (``rfc3987_syntax``, ``isoduration``
    with ``arrow``, 3 MiB at rest, and the others of `STAND_INS`) until their first use;
    whether a stand-in was put for any."""
    return any([_stand_in_for(name) for name in STAND_INS])


def _stand_in_for(package: str) -> bool:
    if package in sys.modules or importlib.util.find_spec(package) is None:
        return False
    stand_in = types.ModuleType(package, f"Stands in for {package} until it is first used.")

    def real() -> Any:
        if sys.modules.get(package) is stand_in:
            del sys.modules[package]
        return importlib.import_module(package)

    def calling_through(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(real(), name)(*args, **kwargs)

        call.__name__ = name
        return call

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # the import system probing (``__path__``): not a use
            raise AttributeError(name)
        return getattr(real(), name)

    for name, taken in STAND_INS[package].items():
        setattr(stand_in, name, calling_through(name) if taken == "function" else taken)
    setattr(stand_in, "__getattr__", __getattr__)  # noqa: B010 (a module-level __getattr__, PEP 562)
    sys.modules[package] = stand_in
    return True


def defer_package_exports(package: str) -> bool:
    """Load ``package`` without running its ``__init__``: each name it re-exports is imported
    from its submodule on first use (PEP 562). Whether the package was deferred."""
    if package in sys.modules:
        return False
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None or spec.submodule_search_locations is None:
        return False
    try:
        with open(spec.origin, encoding="utf-8") as file:
            exports = _reexports(ast.parse(file.read()))
    except (OSError, SyntaxError, ValueError):
        exports = None
    if exports is None:
        return False
    module = importlib.util.module_from_spec(spec)  # __path__, __spec__, __file__; nothing run

    def __getattr__(name: str) -> Any:
        submodule = exports.get(name)
        if submodule is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        setattr(module, name, value)
        return value

    setattr(module, "__getattr__", __getattr__)  # noqa: B010 (a module-level __getattr__, PEP 562)
    module.__all__ = [name for name in exports if not name.startswith("_")]  # type: ignore[attr-defined]
    sys.modules[package] = module
    return True


def _reexports(tree: ast.Module) -> dict[str, str] | None:
    """Name -> submodule for an ``__init__`` that only re-exports (``from .x import a, b``, a
    docstring, ``__all__``); None for one that does anything else, which must then run."""
    exports: dict[str, str] = {}
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                if alias.name == "*":
                    return None
                exports[alias.asname or alias.name] = node.module
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "__all__"
        ]:
            continue
        return None
    return exports
