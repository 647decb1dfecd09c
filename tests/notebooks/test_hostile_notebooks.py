"""Hostile notebooks: broken, forged and enormous files, through the real server.

The deliberately invalid notebooks of nbformat's own tests
(``../shared/corpora/nbformat/``) and generated ones (truncated JSON at every
kind of cut, duplicate and malformed ids, lone surrogates, deep nesting,
wrong types, special files) are opened, read, edited and run through every
door: each call is refused with ``invalid_argument`` naming the file, the
file keeps its bytes and its mtime, nothing is left beside it, and the server
goes on serving. A valid notebook with a huge single output reads, with an
answer of bounded size.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rpc import RawServer, error_code, rss_bytes, text_of

SERVER_ARGS = ("--capability", "kernel.prestart=off")
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "nbformat"
NO_KERNEL = "no-such-kernelspec"


def valid_notebook() -> dict[str, Any]:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("print('hello')"),
    ]
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    return json.loads(nbformat.writes(notebook))


def nested(depth: int, leaf: Any = 1, kind: str = "list") -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


def deep_json(depth: int, kind: str) -> bytes:
    """A notebook whose metadata nests `depth` deep, written without recursion."""
    opening, closing = ("[", "]") if kind == "list" else ('{"k": ', "}")
    notebook = json.dumps(valid_notebook())
    return notebook.replace(
        '"metadata": {', '"metadata": {"deep": ' + opening * depth + "1" + closing * depth + ", ", 1
    ).encode()


def generated() -> dict[str, bytes]:
    """Invalid notebooks, by name."""
    base = valid_notebook()
    good = json.dumps(base, indent=1).encode()
    cases: dict[str, bytes] = {
        "empty.ipynb": b"",
        "whitespace.ipynb": b"  \n\t\n",
        "truncated-half.ipynb": good[: len(good) // 2],
        "truncated-last-brace.ipynb": good[:-2],
        "not-utf8.ipynb": good.replace(b"Title", b"Ti\xfftle"),
        "utf16.ipynb": json.dumps(base).encode("utf-16"),
        "array.ipynb": b"[1, 2, 3]",
        "string.ipynb": b'"notebook"',
        "null.ipynb": b"null",
        "no-version.ipynb": json.dumps({k: v for k, v in base.items() if k != "nbformat"}).encode(),
        "future-version.ipynb": json.dumps({**base, "nbformat": 5}).encode(),
        "version-string.ipynb": json.dumps({**base, "nbformat": "4"}).encode(),
        "cells-not-list.ipynb": json.dumps({**base, "cells": {"0": base["cells"][0]}}).encode(),
        "cell-not-object.ipynb": json.dumps({**base, "cells": ["print(1)"]}).encode(),
        "unknown-cell-type.ipynb": json.dumps(
            {**base, "cells": [{**base["cells"][0], "cell_type": "evil"}]}
        ).encode(),
        "output-not-list.ipynb": json.dumps(
            {**base, "cells": [base["cells"][0], {**base["cells"][1], "outputs": "x"}]}
        ).encode(),
        "bad-output-type.ipynb": json.dumps(
            {
                **base,
                "cells": [
                    base["cells"][0],
                    {**base["cells"][1], "outputs": [{"output_type": "evil"}]},
                ],
            }
        ).encode(),
        "metadata-not-object.ipynb": json.dumps({**base, "metadata": []}).encode(),
        "duplicate-ids.ipynb": json.dumps(
            {
                **base,
                "cells": [base["cells"][0], {**base["cells"][1], "id": base["cells"][0]["id"]}],
            }
        ).encode(),
        "empty-id.ipynb": json.dumps({**base, "cells": [{**base["cells"][0], "id": ""}]}).encode(),
        "id-with-slash.ipynb": json.dumps(
            {**base, "cells": [{**base["cells"][0], "id": "../../etc"}]}
        ).encode(),
        "id-too-long.ipynb": json.dumps(
            {**base, "cells": [{**base["cells"][0], "id": "x" * 100}]}
        ).encode(),
        "id-not-string.ipynb": json.dumps(
            {**base, "cells": [{**base["cells"][0], "id": 7}]}
        ).encode(),
        "source-number.ipynb": json.dumps(
            {**base, "cells": [{**base["cells"][0], "source": 42}]}
        ).encode(),
        "deep-list-100000.ipynb": deep_json(100_000, "list"),
        "deep-dict-100000.ipynb": deep_json(100_000, "dict"),
        "duplicate-keys.ipynb": good.replace(b'"nbformat": 4', b'"nbformat": 4, "nbformat": 99', 1),
        "nan.ipynb": good.replace(b'"nbformat_minor": 5', b'"nbformat_minor": NaN', 1),
        "huge-number.ipynb": good.replace(b'"nbformat_minor": 5', b'"nbformat_minor": 1e999', 1),
    }
    assert all(case != good for case in cases.values())
    return cases


def lone_surrogate() -> bytes:
    """Valid JSON, but its text cannot be UTF-8 encoded again: reading it must not break writing answers."""
    base = valid_notebook()
    text = json.dumps(base)
    return text.replace("# Title", "\\ud800 title", 1).encode()


class Doors:
    """Every way a notebook is reached through the server, and what each answered."""

    def __init__(self, server: RawServer) -> None:
        self.server = server
        self.calls = 0

    def all(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        server = self.server
        answers = []
        calls = [
            ("read_notebook", {"notebook_name": name}),
            ("read_notebook", {"notebook_name": name, "response_format": "detailed"}),
            ("get_notebook_revision", {"notebook_name": name}),
            ("read_cell", {"notebook_name": name, "cell_index": 0}),
            (
                "insert_cell",
                {
                    "notebook_name": name,
                    "cell_index": 0,
                    "cell_type": "code",
                    "cell_source": "x = 1",
                },
            ),
            ("overwrite_cell_source", {"notebook_name": name, "cell_index": 0, "cell_source": "y"}),
            ("delete_cell", {"notebook_name": name, "cell_indices": [0]}),
            ("move_cell", {"notebook_name": name, "source_index": 0, "target_index": 1}),
            ("clear_cell_output", {"notebook_name": name, "cell_index": 0}),
            ("use_notebook", {"notebook_name": name, "kernel_name": NO_KERNEL}),
            ("execute_cell", {"notebook_name": name, "cell_index": 0, "timeout": 5}),
            (
                "insert_execute_code_cell",
                {"notebook_name": name, "cell_index": -1, "cell_source": "1", "timeout": 5},
            ),
        ]
        for tool, arguments in calls:
            answers.append((tool, server.call(tool, arguments)))
            self.calls += 1
        answer = server.wait(
            server.start("resources/read", {"uri": f"notebook:///{name}"}), timeout=60
        )
        answers.append(("resources/read", answer))
        self.calls += 1
        return answers


def assert_refused_untouched(doors: Doors, workspace: Path, name: str, data: bytes) -> None:
    path = workspace / name
    before = path.stat().st_mtime_ns
    for door, answer in doors.all(name):
        if door == "resources/read":
            assert "error" in answer, (
                f"{name}: resources/read served a broken notebook: {str(answer)[:300]}"
            )
            message = answer["error"]["message"]
            assert message.startswith("invalid_argument:") and name in message, (name, message)
            continue
        assert answer.get("isError"), (
            f"{name}: {door} succeeded on a broken notebook: {str(answer)[:300]}"
        )
        assert error_code(answer) == "invalid_argument", (name, door, answer)
        text = text_of(answer)
        assert name in text and "not a valid notebook" in text and "untouched" in text, (
            name,
            door,
            text,
        )
    assert path.read_bytes() == data, f"{name} was changed"
    assert path.stat().st_mtime_ns == before, f"{name} was rewritten"
    assert sorted(p.name for p in workspace.iterdir() if p.name.endswith(".jmcp-tmp")) == []
    # Still serving, and a good notebook still reads.
    assert doors.server.ok("read_notebook", {"notebook_name": "good.ipynb"})["cell_count"] == 2


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory):
    workspace = tmp_path_factory.mktemp("hostile-notebooks")
    (workspace / "good.ipynb").write_text(json.dumps(valid_notebook()))
    with RawServer(
        workspace, *SERVER_ARGS, stderr=workspace.parent / "hostile-notebooks.log"
    ) as server:
        yield Doors(server), workspace
        assert server.process.poll() is None


def invalid_corpus() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    from test_corpora import nbformat_rejects

    return [path for path in sorted(CORPUS.glob("*.ipynb")) if nbformat_rejects(path.read_text())]


@pytest.mark.parametrize("name", ["corpus"])
def test_the_invalid_nbformat_notebooks(doors, name) -> None:
    refused = invalid_corpus()
    if not refused:
        pytest.skip(f"{CORPUS} is not beside this checkout")
    opener, workspace = doors
    assert {"invalid.ipynb", "invalid_cell_id.ipynb", "invalid_unique_cell_id.ipynb"} <= {
        p.name for p in refused
    }
    for source in refused:
        shutil.copyfile(source, workspace / source.name)
        assert_refused_untouched(opener, workspace, source.name, source.read_bytes())


@pytest.mark.parametrize("name", sorted(generated()))
def test_generated_broken_notebooks(doors, name: str) -> None:
    opener, workspace = doors
    data = generated()[name]
    (workspace / name).write_bytes(data)
    assert_refused_untouched(opener, workspace, name, data)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_truncated_at_any_byte(doors, cut: int) -> None:
    opener, workspace = doors
    good = json.dumps(valid_notebook(), indent=1).encode()
    data = good[: cut % len(good)]
    (workspace / "cut.ipynb").write_bytes(data)
    assert_refused_untouched(opener, workspace, "cut.ipynb", data)


def test_special_files_named_like_notebooks(doors) -> None:
    opener, workspace = doors
    os.mkfifo(workspace / "fifo.ipynb")
    (workspace / "folder.ipynb").mkdir()
    for name in ("fifo.ipynb", "folder.ipynb"):
        answer = opener.server.call("read_notebook", {"notebook_name": name})
        assert error_code(answer) in ("invalid_path", "invalid_argument"), answer
        answer = opener.server.call(
            "insert_cell",
            {"notebook_name": name, "cell_index": 0, "cell_type": "raw", "cell_source": "x"},
        )
        assert error_code(answer) in ("invalid_path", "invalid_argument"), answer
    assert (workspace / "fifo.ipynb").is_fifo() and (workspace / "folder.ipynb").is_dir()
    assert opener.server.ok("read_notebook", {"notebook_name": "good.ipynb"})["cell_count"] == 2


def test_a_lone_surrogate_is_refused_and_the_server_lives(doors) -> None:
    # Valid JSON, but "\ud800" is half a UTF-16 pair: not text. Answering with
    # it once killed the stdio server (its writer could not encode the answer).
    opener, workspace = doors
    data = lone_surrogate()
    (workspace / "surrogate.ipynb").write_bytes(data)
    assert_refused_untouched(opener, workspace, "surrogate.ipynb", data)


def _still_valid(path: Path) -> bool:
    nbformat.validate(nbformat.read(path, as_version=4))
    return True


def test_deep_but_parseable_nesting_is_handled(doors) -> None:
    opener, workspace = doors
    for depth in (200, 900):
        for kind in ("list", "dict"):
            name = f"deep-{kind}-{depth}.ipynb"
            data = deep_json(depth, kind)
            (workspace / name).write_bytes(data)
            answer = opener.server.call("read_notebook", {"notebook_name": name})
            if answer.get("isError"):
                assert error_code(answer) == "invalid_argument", answer
                assert (workspace / name).read_bytes() == data
                continue
            edited = opener.server.call(
                "insert_cell",
                {"notebook_name": name, "cell_index": 0, "cell_type": "raw", "cell_source": "x"},
            )
            assert not edited.get("isError") or error_code(edited) == "invalid_argument", edited
            _still_valid(workspace / name)
    assert opener.server.ok("read_notebook", {"notebook_name": "good.ipynb"})["cell_count"] == 2


def test_a_huge_single_output_reads_with_a_bounded_answer(doors) -> None:
    opener, workspace = doors
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print('x' * 10**8)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (40 * 1024 * 1024))]
    notebook.cells = [cell, nbformat.v4.new_markdown_cell("after")]
    nbformat.write(notebook, workspace / "huge.ipynb")
    rss_before = rss_bytes(opener.server.pid)
    for arguments in (
        {"notebook_name": "huge.ipynb"},
        {"notebook_name": "huge.ipynb", "response_format": "detailed"},
    ):
        result = opener.server.ok("read_notebook", arguments, timeout=120)
        assert result["cell_count"] == 2
    read = opener.server.call(
        "read_cell", {"notebook_name": "huge.ipynb", "cell_index": 0}, timeout=120
    )
    # structuredContent carries the output as stored; content cuts it and links to the whole.
    assert len(json.dumps(read["content"])) < 1024 * 1024, (
        "a 40 MB output came back inline in content"
    )
    assert any(
        block.get("type") == "resource_link" or "notebook-output" in json.dumps(block)
        for block in read["content"]
    )
    # An edit elsewhere keeps the output, byte for byte.
    opener.server.ok(
        "overwrite_cell_source",
        {"notebook_name": "huge.ipynb", "cell_index": 1, "cell_source": "edited"},
        timeout=120,
    )
    stored = nbformat.read(workspace / "huge.ipynb", as_version=4)
    assert len("".join(stored.cells[0].outputs[0]["text"])) == 40 * 1024 * 1024
    grown = rss_bytes(opener.server.pid) - rss_before
    print(f"\nhuge output: server RSS grew by {grown / 2**20:.0f} MiB for a 40 MiB output")
    assert grown < 1024 * 1024 * 1024
    assert opener.server.ok("read_notebook", {"notebook_name": "good.ipynb"})["cell_count"] == 2
