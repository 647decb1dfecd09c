"""The notebook schema's validator, generated once per installation instead of at every start.

nbformat validates with ``fastjsonschema``, which turns the nbformat 4.5
schema into 176 KB of Python and compiles it when a process first
validates: 25 ms of CPU and a 10 MiB peak of which 3 MiB stays resident
for good. ``fastjsonschema.compile_to_code`` exists for exactly this: the
code is generated once, kept as a module in the user's cache directory
(named by a hash of the schema and of both libraries' versions, so an
upgrade generates a new one), and later starts import it like any module,
from its bytecode. nbformat then validates with that function, through its
own validator class and its own error handling.

The generated code checks each cell against the schema's ``oneOf`` of the
three cell types by trying each in turn, and each output against the four
output types the same way: a code cell is validated as a raw cell and as a
markdown cell first, and each failure raises an exception (seven per cell
of a notebook like the benchmarks' 2,000-cell one, most of what validating
it costs). The alternatives are told apart by one field, ``cell_type`` (or
``output_type``), each requiring a single value of its own; so a cell whose
type names one of them is valid by the ``oneOf`` exactly when it is valid
by that alternative, the others failing on that field. :func:`_by_type`
makes the two checks go straight to it (and a source or a text that is a
string skips the try of a list of lines), which gives every verdict the
``oneOf`` gives (``tests/protocol/test_schema_validator.py`` compares them
over cells broken every way); a cell of any other type, or not an object,
gets the ``oneOf`` itself. What is wrong with an invalid notebook is never these functions'
words: nbformat asks ``jsonschema`` to name the error.

The generated code also names each item it descends into, valid or not, with
``"...[{data__cells_x}]".format(**locals())``: a dictionary of every local
variable built per cell and per output, a tenth of validating a notebook.
:func:`_names_as_f_strings` writes each such name as the f-string it means,
which reads the same variables and formats them the same way.

Nothing changes when anything is unusual: another validator chosen with
``NBFORMAT_VALIDATOR``, no fastjsonschema, a cache that cannot be written,
a module that will not load, or an nbformat whose validator cache is not
the one this expects. nbformat then compiles its own, as it always did.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

VERSION, MINOR = 4, 5
_lock = threading.Lock()
_settled = threading.Event()


def cache_dir() -> Path:
    """Where generated validators are kept: the platform's user cache directory."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("jupyter-mcp-server", appauthor=False)) / "validators"


def prepare() -> bool:
    """Make nbformat validate 4.5 notebooks with the generated code (generating it the first
    time); whether it does. Safe to call from any thread, any number of times."""
    if _settled.is_set():
        return _installed()
    with _lock:
        if _settled.is_set():
            return _installed()
        _settled.set()
        try:
            return _install()
        except Exception:
            logger.debug("The cached notebook validator could not be used", exc_info=True)
            return False


def _key() -> tuple[str, int, int, bool]:
    return ("fastjsonschema", VERSION, MINOR, False)


def _installed() -> bool:
    from nbformat import validator

    return type(validator.validators.get(_key())).__name__ == "GeneratedValidator"


def _install() -> bool:
    import fastjsonschema
    import nbformat
    from nbformat import json_compat, validator

    if (
        validator.get_current_validator() is not json_compat.FastJsonSchemaValidator
        or _key() in validator.validators
    ):
        return False
    schema = validator._get_schema_json(nbformat.v4, version=VERSION, version_minor=MINOR)
    compiled = _load(schema, nbformat.__version__, fastjsonschema.VERSION)

    class GeneratedValidator(json_compat.FastJsonSchemaValidator):
        def __init__(self, schema: dict[str, Any]) -> None:
            json_compat.JsonSchemaValidator.__init__(self, schema)
            self._validator = compiled

    validator.validators[_key()] = GeneratedValidator(schema)
    if (
        validator.get_validator(version=VERSION, version_minor=MINOR)
        is not validator.validators[_key()]
    ):
        del validator.validators[_key()]  # looked up under another key: nbformat compiles its own
        return False
    return True


def _load(schema: dict[str, Any], nbformat_version: str, fastjsonschema_version: str) -> Any:
    """The generated ``validate`` function for `schema`, from the cache (written first if new)."""
    import fastjsonschema

    canonical = json.dumps(schema, sort_keys=True).encode()
    digest = hashlib.sha256(
        canonical + f"|{nbformat_version}|{fastjsonschema_version}|{GENERATED_AS}".encode()
    ).hexdigest()[:16]
    path = cache_dir() / f"nbformat_v{VERSION}_{MINOR}_{digest}.py"
    if not path.is_file():
        _write(path, _names_as_f_strings(fastjsonschema.compile_to_code(schema)))
    try:
        module = _import(path, digest)
    except Exception:
        # Damaged (cut short, edited): generated again, once.
        logger.info("Generating the notebook validator again: %s did not load", path, exc_info=True)
        _write(path, _names_as_f_strings(fastjsonschema.compile_to_code(schema)))
        module = _import(path, digest)
    _by_type(module, schema)
    return module.validate


#: What this module does to fastjsonschema's code, in the cache key: changing it regenerates.
GENERATED_AS = "names-as-f-strings"
#: A double-quoted literal whose only braces are ``{name}`` fields, formatted with the locals.
_NAME_FORMATTED_WITH_LOCALS = re.compile(
    r'"((?:[^"\\{}]|\{[A-Za-z_][A-Za-z0-9_]*\})*)"\.format\(\*\*locals\(\)\)'
)


def _names_as_f_strings(code: str) -> str:
    """`code` with each ``"...{name}...".format(**locals())`` written ``f"...{name}..."``."""
    return _NAME_FORMATTED_WITH_LOCALS.sub(r'f"\1"', code)


#: The schema's two ``oneOf`` checks told apart by one field: (the definition, where its
#: alternatives are listed, the field that tells them apart).
_ONE_OF_BY_FIELD = (
    ("cell", ("definitions", "cell", "oneOf"), "cell_type"),
    ("output", ("definitions", "output", "oneOf"), "output_type"),
)


def _by_type(module: Any, schema: dict[str, Any]) -> None:
    """Check a cell (an output) against the alternative its type names, not each in turn,
    where the schema makes that the same verdict (see the module's docstring)."""
    for definition, where, field in _ONE_OF_BY_FIELD:
        checks = _alternatives(module, schema, where, field)
        name = f"validate___definitions_{definition}"
        whole = getattr(module, name, None)
        if checks is None or whole is None:
            continue  # a schema or a generator this does not know: the oneOf as generated

        def by_type(
            data: Any,
            custom_formats: Any = None,
            name_prefix: str | None = None,
            *,
            _checks: dict[str, Any] = checks,
            _whole: Any = whole,
            _field: str = field,
        ) -> Any:
            kind = data.get(_field) if isinstance(data, dict) else None
            check = _checks.get(kind) if type(kind) is str else None
            if check is None:
                return _whole(data, custom_formats or {}, name_prefix)
            check(data, custom_formats or {}, name_prefix)
            return data

        setattr(module, name, by_type)
    # A source or a stream's text: one string, or a list of strings (oneOf, tried in that
    # order); a string is valid by the first and by nothing else, so it needs no other try.
    name = "validate___definitions_misc_multiline_string"
    whole = getattr(module, name, None)
    if whole is not None and schema["definitions"].get("misc", {}).get("multiline_string") == {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
    }:

        def text_or_lines(
            data: Any,
            custom_formats: Any = None,
            name_prefix: str | None = None,
            *,
            _whole: Any = whole,
        ) -> Any:
            if isinstance(data, str):
                return data
            return _whole(data, custom_formats or {}, name_prefix)

        setattr(module, name, text_or_lines)


def _alternatives(
    module: Any, schema: dict[str, Any], where: tuple[str, ...], field: str
) -> dict[str, Any] | None:
    """Each value of `field` and the function of the one alternative (listed at `where`, each
    a ``$ref``) that allows it; None unless each allows a single value of its own."""
    found: Any = schema
    for key in where:
        found = found.get(key) if isinstance(found, dict) else None
    if not isinstance(found, list):
        return None
    checks: dict[str, Any] = {}
    for alternative in found:
        reference = alternative.get("$ref", "") if isinstance(alternative, dict) else ""
        if not reference.startswith("#/definitions/") or len(alternative) != 1:
            return None
        name = reference.removeprefix("#/definitions/")
        allowed = schema["definitions"].get(name, {}).get("properties", {}).get(field, {})
        values = allowed.get("enum")
        check = getattr(module, f"validate___definitions_{name}", None)
        if not (isinstance(values, list) and len(values) == 1 and isinstance(values[0], str)):
            return None
        if check is None or values[0] in checks or set(allowed) - {"enum", "description"}:
            return None
        checks[values[0]] = check
    return checks or None


def _write(path: Path, code: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(code)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _import(path: Path, digest: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_jupyter_mcp_nbformat_validator_{digest}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
