"""The notebook validator generated once per installation judges exactly as nbformat's own.

Each check runs in a fresh interpreter (which validator nbformat holds is
per process) with its own cache directory (``XDG_CACHE_HOME``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

JUDGE = """
import json, sys
sys.path.insert(0, {src!r})
import nbformat
from nbformat import validator
from jupyter_mcp_server._store import schema_validator
from jupyter_mcp_server._store.formats import parse_notebook
from jupyter_mcp_server._errors import ToolFailure

used = schema_validator.prepare()
verdicts = []
for text in json.loads(sys.stdin.read()):
    try:
        parse_notebook(text.encode(), "ipynb", "x.ipynb")
        verdicts.append("valid")
    except ToolFailure as error:
        verdicts.append(error.message)
print(json.dumps({{"generated": used, "kind": type(validator.get_validator(4, 5)).__name__, "verdicts": verdicts}}))
"""


def notebooks() -> list[str]:
    import nbformat
    from nbformat import v4

    good = v4.new_notebook(
        cells=[
            v4.new_code_cell("x = 1", outputs=[v4.new_output("stream", text="1\n")]),
            v4.new_markdown_cell("# t"),
        ]
    )
    wrong_output = json.loads(nbformat.writes(good))
    wrong_output["cells"][0]["outputs"] = [{"output_type": "nope"}]
    no_source = json.loads(nbformat.writes(good))
    del no_source["cells"][1]["source"]
    extra_key = json.loads(nbformat.writes(good))
    extra_key["cells"][0]["surprise"] = True
    bad_count = json.loads(nbformat.writes(good))
    bad_count["cells"][0]["execution_count"] = "one"
    return [
        nbformat.writes(good),
        *(json.dumps(nb) for nb in (wrong_output, no_source, extra_key, bad_count)),
    ]


def judge(cache: Path, *, generated: bool = True) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    if not generated:
        env["NBFORMAT_VALIDATOR"] = "jsonschema"
    done = subprocess.run(
        [sys.executable, "-c", JUDGE.format(src=str(SRC))],
        input=json.dumps(notebooks()),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def generated_files(cache: Path) -> list[Path]:
    return sorted((cache / "jupyter-mcp-server" / "validators").glob("nbformat_v4_5_*.py"))


def test_the_generated_validator_is_kept_and_judges_as_nbformat_does(tmp_path: Path) -> None:
    first = judge(tmp_path)
    assert first["generated"] and first["kind"] == "GeneratedValidator"
    [kept] = generated_files(tmp_path)
    again = judge(tmp_path)
    assert again == first and generated_files(tmp_path) == [kept]
    reference = judge(tmp_path / "other", generated=False)  # nbformat's jsonschema validator
    assert reference["kind"] != "GeneratedValidator"
    assert [v == "valid" for v in first["verdicts"]] == [
        v == "valid" for v in reference["verdicts"]
    ]
    assert first["verdicts"][0] == "valid" and all(v != "valid" for v in first["verdicts"][1:])


def test_a_damaged_generated_module_is_generated_again(tmp_path: Path) -> None:
    judge(tmp_path)
    [kept] = generated_files(tmp_path)
    kept.write_text("def validate(:\n")
    for cached in (kept.parent / "__pycache__").glob("*.pyc"):
        cached.unlink()
    result = judge(tmp_path)
    assert result["generated"] and result["verdicts"][0] == "valid"
    assert "def validate(data" in kept.read_text()


def test_a_cache_that_cannot_be_written_leaves_nbformat_compiling_its_own(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "cache"
    not_a_directory.write_text("a file where the cache directory would go")
    result = judge(not_a_directory)
    assert not result["generated"] and result["kind"] == "FastJsonSchemaValidator"
    assert result["verdicts"][0] == "valid" and all(v != "valid" for v in result["verdicts"][1:])
