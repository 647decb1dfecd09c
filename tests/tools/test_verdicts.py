"""A validation verdict is kept under the digest of the bytes validated, never past a change.

A fresh server's first read of a notebook validated before (by any server of this
installation) skips the schema; a file whose bytes differ by one is validated afresh,
and an invalid one is refused every time, before anything is written.
"""

from __future__ import annotations

import json

import nbformat
from conftest import ok, refused, serve

from jupyter_mcp_server._store import formats, verdicts


def _valid_bytes(seed: str) -> bytes:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(f"x = '{seed}'"),
        nbformat.v4.new_markdown_cell("# Title"),
    ]
    return nbformat.writes(notebook).encode()


def test_only_valid_bytes_are_remembered_and_each_byte_counts(tmp_path):
    import uuid

    data = _valid_bytes(uuid.uuid4().hex)
    digest = verdicts.digest_of(data)
    assert not verdicts.known_valid(digest)
    formats.parse_notebook(data, formats.IPYNB, "a.ipynb")
    assert verdicts.known_valid(digest)
    # The same bytes but for one: a cell type the schema does not know. Refused, not remembered.
    broken = data.replace(b'"cell_type": "markdown"', b'"cell_type": "markdowm"')
    assert len(broken) == len(data)
    for _ in range(2):
        try:
            formats.parse_notebook(broken, formats.IPYNB, "a.ipynb")
        except Exception as error:
            assert "not a valid notebook" in str(error)
        else:
            raise AssertionError("an invalid notebook was read")
    assert not verdicts.known_valid(verdicts.digest_of(broken))


async def test_a_fresh_server_refuses_a_file_changed_after_its_verdict_was_kept(workspace):
    import uuid

    data = _valid_bytes(uuid.uuid4().hex)
    path = workspace / "kept.ipynb"
    path.write_bytes(data)
    async with serve(workspace) as client:
        assert (await ok(client, "read_notebook", {"notebook_name": "kept.ipynb"}))[
            "cell_count"
        ] == 2
    assert verdicts.known_valid(verdicts.digest_of(data))
    document = json.loads(data)
    document["cells"][1]["outputs"] = []  # a markdown cell with outputs: invalid
    path.write_text(json.dumps(document))
    async with serve(workspace) as client:
        await refused(client, "read_notebook", {"notebook_name": "kept.ipynb"}, "invalid_argument")
        await refused(
            client,
            "insert_cell",
            {"notebook_name": "kept.ipynb", "cell_index": 0, "cell_source": "y = 1"},
            "invalid_argument",
        )
    assert json.loads(path.read_text()) == document  # nothing written
    path.write_bytes(data)
    async with serve(workspace) as client:
        assert (await ok(client, "read_notebook", {"notebook_name": "kept.ipynb"}))[
            "cell_count"
        ] == 2
