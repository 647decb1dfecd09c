"""The IRI grammar and the duration parser beside JupyterLab are loaded when something validates
such a value, not at start."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
STAND_INS_NAMES = (
    "rfc3987_syntax",
    "isoduration",
    "rfc3986_validator",
    "rfc3339_validator",
    "uri_template",
    "webcolors",
    "fqdn",
)

CHECK = """
import sys, time
sys.path.insert(0, {src!r})
from jupyter_mcp_server._cli import main  # what the server's process imports first: it defers
from jupyter_mcp_server._process.deferred_imports import defer_format_checkers
assert getattr(sys.modules["rfc3987_syntax"], "__file__", None) is None, "the stand-in is in place"
assert not defer_format_checkers()  # once is enough
import nbformat, jsonschema
from jupyter_mcp_server._store.formats import parse_notebook
parse_notebook(nbformat.writes(nbformat.v4.new_notebook()).encode(), "ipynb", "x.ipynb")
assert "lark" not in sys.modules, "the grammar was built on the way to the first notebook"
checker = jsonschema.Draft7Validator.FORMAT_CHECKER
iri = jsonschema.Draft7Validator({{"format": "iri"}}, format_checker=checker)
assert list(iri.iter_errors("http://ex ample.org/")), "a bad IRI still fails"
assert not list(iri.iter_errors("http://example.org/ü")), "a good IRI still passes"
assert "lark" in sys.modules
print("ok")
"""

DURATION_CHECK = """
import sys
sys.path.insert(0, {src!r})
from jupyter_mcp_server._cli import main
assert getattr(sys.modules["isoduration"], "__file__", None) is None, "the stand-in is in place"
import nbformat, jsonschema
from jupyter_mcp_server._store.formats import parse_notebook
parse_notebook(nbformat.writes(nbformat.v4.new_notebook()).encode(), "ipynb", "x.ipynb")
assert "arrow" not in sys.modules, "arrow was imported on the way to the first notebook"
checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
duration = jsonschema.Draft202012Validator({{"format": "duration"}}, format_checker=checker)
assert list(duration.iter_errors("P1Q")), "a bad duration still fails"
assert list(duration.iter_errors("P")), "an empty duration still fails"
assert not list(duration.iter_errors("P3DT4H")), "a good duration still passes"
assert "arrow" in sys.modules and getattr(sys.modules["isoduration"], "__file__", None)
print("ok")
"""


@pytest.mark.skipif(
    importlib.util.find_spec("rfc3987_syntax") is None,
    reason="rfc3987-syntax is not installed here",
)
def test_reading_a_notebook_does_not_build_the_iri_grammar_and_iris_still_validate():
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(src=str(SRC))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("isoduration") is None, reason="isoduration is not installed here"
)
def test_reading_a_notebook_does_not_import_the_duration_parser_and_durations_still_validate():
    done = subprocess.run(
        [sys.executable, "-c", DURATION_CHECK.format(src=str(SRC))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


FORMATS_CHECK = """
import sys
sys.path.insert(0, {src!r})
from jupyter_mcp_server._cli import main
from jupyter_mcp_server._process.deferred_imports import STAND_INS
deferred = [name for name in STAND_INS if name in sys.modules]
import nbformat, jsonschema
from jupyter_mcp_server._store.formats import parse_notebook
parse_notebook(nbformat.writes(nbformat.v4.new_notebook()).encode(), "ipynb", "x.ipynb")
real = [name for name in deferred if getattr(sys.modules[name], "__file__", None)]
assert not real, f"imported on the way to the first notebook: {{real}}"
# Each format these packages check still fails a bad value and passes a good one.
for draft, fmt, bad, good in (
    (jsonschema.Draft7Validator, "uri", "no scheme", "http://example.org/a"),
    (jsonschema.Draft7Validator, "uri-reference", "http://[bad", "../a?b"),
    (jsonschema.Draft7Validator, "date-time", "2026-13-01T00:00:00Z", "2026-12-06T10:00:00Z"),
    (jsonschema.Draft7Validator, "time", "25:00:00Z", "10:00:00Z"),
    (jsonschema.Draft7Validator, "uri-template", "http://a/{{x", "http://a/{{x}}"),
    (jsonschema.Draft3Validator, "color", "not-a-colour", "red"),
    (jsonschema.Draft7Validator, "hostname", "-bad-.example", "example.org"),
):
    validator = draft({{"format": fmt}}, format_checker=draft.FORMAT_CHECKER)
    assert list(validator.iter_errors(bad)), f"a bad {{fmt}} passed"
    assert not list(validator.iter_errors(good)), f"a good {{fmt}} failed"
print("ok", *sorted(deferred))
"""


def test_reading_a_notebook_imports_no_format_checker_package_and_each_format_still_validates():
    done = subprocess.run(
        [sys.executable, "-c", FORMATS_CHECK.format(src=str(SRC))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr
    # Beside JupyterLab, as users have it, each of them is installed and was deferred.
    installed = [name for name in STAND_INS_NAMES if importlib.util.find_spec(name) is not None]
    assert done.stdout.split()[1:] == sorted(installed), done.stdout


REACTOR_CHECK = """
import sys
sys.path.insert(0, {src!r})
from jupyter_mcp_server._cli import main  # the server's process: the extension layer is loaded
from jupyter_mcp_server._app import build_application
from jupyter_mcp_server._config import read_config
import logging
handlers = list(logging.getLogger().handlers)
build_application(read_config({{"workspace_root": {root!r}}})).build_configured()
assert logging.getLogger().handlers == handlers, "making a server configured the root logger"
assert "rich" not in sys.modules, "making a server imported rich"
assert "reactor" in sys.modules and "fastapi" not in sys.modules, sorted(m for m in sys.modules if "fastapi" in m)
assert "jupyter_client" not in sys.modules, "the handshake waited for jupyter_client"
import reactor
assert callable(reactor.PluginPlatform) and "PluginPlatform" in reactor.__all__
assert callable(reactor.create_reactor_app) and "fastapi" in sys.modules  # still there when used
try:
    reactor.no_such_name
except AttributeError as error:
    assert "no_such_name" in str(error)
else:
    raise AssertionError("an unknown name resolved")
print("ok")
"""


def test_the_server_starts_without_the_web_host_its_plugin_platform_re_exports(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", REACTOR_CHECK.format(src=str(SRC), root=str(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_package_whose_init_does_more_than_re_export_is_imported_normally(tmp_path: Path):
    from jupyter_mcp_server._process.deferred_imports import _reexports

    assert _reexports(ast.parse('"""doc"""\nfrom .a import b as c, d\n__all__ = ["c", "d"]\n')) == {
        "c": "a",
        "d": "a",
    }
    assert _reexports(ast.parse("from .a import b\nSETTING = load()\n")) is None
    assert _reexports(ast.parse("from .a import *\n")) is None
    assert _reexports(ast.parse("import os\nfrom .a import b\n")) is None
