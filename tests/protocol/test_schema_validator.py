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


def _every_way_broken(cell: dict) -> list[dict]:
    """`cell`, and `cell` with each key gone, each value replaced by each kind of JSON value,
    a key added, and (in a code cell) the same done to each of its outputs."""
    kinds = [
        None,
        1,
        -1,
        "x",
        "code",
        "markdown",
        "raw",
        "stream",
        "error",
        [],
        ["code"],
        ["a", 1],
        {},
    ]
    variants = [cell, {**cell, "surprise": 1}]
    for key in cell:
        variants.append({k: v for k, v in cell.items() if k != key})
        variants.extend({**cell, key: kind} for kind in kinds)
    for index, output in enumerate(cell.get("outputs") or []):
        for broken in _every_way_broken(output) if isinstance(output, dict) else []:
            outputs = list(cell["outputs"])
            outputs[index] = broken
            variants.append({**cell, "outputs": outputs})
    return variants


def test_checking_a_cell_by_its_type_gives_every_verdict_the_schemas_one_of_gives(
    tmp_path: Path, monkeypatch
) -> None:
    import fastjsonschema
    import nbformat
    from nbformat import v4, validator

    from jupyter_mcp_server._store import schema_validator

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    schema = validator._get_schema_json(nbformat.v4, version=4, version_minor=5)
    by_type = schema_validator._load(schema, nbformat.__version__, fastjsonschema.VERSION)
    one_of = fastjsonschema.compile(schema)  # as nbformat compiles it: each alternative in turn
    assert by_type.__globals__["validate___definitions_cell"].__name__ == "by_type"
    assert (
        by_type.__globals__["validate___definitions_misc_multiline_string"].__name__
        == "text_or_lines"
    )

    code = v4.new_code_cell(
        "x",
        outputs=[
            v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1),
            v4.new_output("display_data", data={"image/png": "iVBO"}),
            v4.new_output("stream", name="stdout", text="1\n"),
            v4.new_output("error", ename="E", evalue="v", traceback=["t"]),
        ],
    )
    cells = [
        json.loads(json.dumps(cell))
        for cell in (code, v4.new_markdown_cell("# t"), v4.new_raw_cell("r"))
    ]
    checked = valid = 0
    for cell in cells:
        for variant in [*_every_way_broken(cell), "not a cell", None]:
            notebook = json.loads(nbformat.writes(v4.new_notebook()))
            notebook["cells"] = [variant]
            verdicts = []
            for check in (one_of, by_type):
                try:
                    check(notebook)
                    verdicts.append(True)
                except fastjsonschema.JsonSchemaException:
                    verdicts.append(False)
            assert verdicts[0] == verdicts[1], variant
            checked += 1
            valid += verdicts[0]
    assert checked > 300 and 0 < valid < checked


def test_names_written_as_f_strings_name_every_failure_as_the_generated_code_did() -> None:
    """fastjsonschema names each item ``"...[{i}]".format(**locals())``; the module kept in the
    cache writes those as f-strings, and names every failure exactly as before."""
    import fastjsonschema
    import nbformat
    from nbformat import v4, validator

    from jupyter_mcp_server._store import schema_validator

    schema = validator._get_schema_json(nbformat.v4, version=4, version_minor=5)
    generated = fastjsonschema.compile_to_code(schema)
    rewritten = schema_validator._names_as_f_strings(generated)
    assert ".format(**locals())" in generated and ".format(**locals())" not in rewritten
    validators = []
    for code in (generated, rewritten):
        namespace: dict = {}
        exec(compile(code, "<generated>", "exec"), namespace)
        validators.append(namespace["validate"])

    cell = v4.new_code_cell("x", outputs=[v4.new_output("stream", name="stdout", text="1\n")])
    cell.metadata.update(tags=["a"], execution={"shell.execute_reply": "t"})
    base = json.loads(nbformat.writes(v4.new_notebook(cells=[v4.new_markdown_cell("m"), cell])))
    brokens = []
    for path, value in [
        (("cells", 1, "outputs", 0, "text"), 5),
        (("cells", 1, "outputs", 0, "text"), ["a", 5]),
        (("cells", 1, "metadata", "tags"), ["a", 5]),
        (("cells", 1, "metadata", "tags"), ["a,b"]),
        (("cells", 1, "metadata", "execution", "shell.execute_reply"), 5),
        (("cells", 0, "source"), ["a", 5]),
        (("cells", 1, "outputs", 0), {"output_type": "stream"}),
    ]:
        broken = json.loads(json.dumps(base))
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        brokens.append(broken)
    for broken in brokens:
        said = []
        for validate in validators:
            try:
                validate(broken)
                said.append(None)
            except fastjsonschema.JsonSchemaException as error:
                said.append((error.name, error.message, error.rule))
        assert said[0] is not None and said[0] == said[1], said
