"""The IRI grammar beside JupyterLab is built when something validates an IRI, not at start."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

CHECK = """
import sys, time
sys.path.insert(0, {src!r})
from jupyter_mcp_server.cli import main  # what the server's process imports first
from jupyter_mcp_server.deferred_imports import defer_iri_grammar
assert defer_iri_grammar()
assert not defer_iri_grammar()  # once is enough
import nbformat, jsonschema
from jupyter_mcp_server.store.formats import parse_notebook
parse_notebook(nbformat.writes(nbformat.v4.new_notebook()).encode(), "ipynb", "x.ipynb")
assert "lark" not in sys.modules, "the grammar was built on the way to the first notebook"
checker = jsonschema.Draft7Validator.FORMAT_CHECKER
iri = jsonschema.Draft7Validator({{"format": "iri"}}, format_checker=checker)
assert list(iri.iter_errors("http://ex ample.org/")), "a bad IRI still fails"
assert not list(iri.iter_errors("http://example.org/ü")), "a good IRI still passes"
assert "lark" in sys.modules
print("ok")
"""


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987-syntax is not installed here")
def test_reading_a_notebook_does_not_build_the_iri_grammar_and_iris_still_validate():
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(src=str(SRC))], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
