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
        canonical + f"|{nbformat_version}|{fastjsonschema_version}".encode()
    ).hexdigest()[:16]
    path = cache_dir() / f"nbformat_v{VERSION}_{MINOR}_{digest}.py"
    if not path.is_file():
        _write(path, fastjsonschema.compile_to_code(schema))
    try:
        return _import(path, digest).validate
    except Exception:
        # Damaged (cut short, edited): generated again, once.
        logger.info("Generating the notebook validator again: %s did not load", path, exc_info=True)
        _write(path, fastjsonschema.compile_to_code(schema))
        return _import(path, digest).validate


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
