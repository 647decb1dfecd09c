"""Optional packages another library imports eagerly, imported when first used instead.

``nbformat`` imports ``jsonschema``, and ``jsonschema`` imports every format
checker it can find. Beside JupyterLab one of them is ``rfc3987-syntax``,
which builds about thirty Earley parsers for IRIs when it is imported: 0.8 s
of CPU on the way to the first notebook the server reads, for a format no
notebook schema uses. The package stays installed and works; this module
puts a stand-in under its name that imports the real module the first time
anything validates an IRI (``jsonschema`` takes the function by name, so a
lazy module object alone would not defer anything).

Only a process that has not imported it yet is affected: inside Jupyter
Server, ``jsonschema`` is already loaded by then and this does nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

IRI_GRAMMAR = "rfc3987_syntax"


def defer_iri_grammar() -> bool:
    """Stand in for ``rfc3987_syntax`` until its first use; whether a stand-in was put."""
    if IRI_GRAMMAR in sys.modules or importlib.util.find_spec(IRI_GRAMMAR) is None:
        return False
    stand_in = types.ModuleType(IRI_GRAMMAR, "Stands in for rfc3987_syntax until it is first used.")

    def real() -> Any:
        if sys.modules.get(IRI_GRAMMAR) is stand_in:
            del sys.modules[IRI_GRAMMAR]
        return importlib.import_module(IRI_GRAMMAR)

    def is_valid_syntax(term: str, value: str) -> bool:
        return bool(real().is_valid_syntax(term, value))

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # the import system probing (``__path__``): not a use
            raise AttributeError(name)
        return getattr(real(), name)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    setattr(stand_in, "__getattr__", __getattr__)  # noqa: B010 (a module-level __getattr__, PEP 562)
    sys.modules[IRI_GRAMMAR] = stand_in
    return True
