"""The workspace boundary, end to end: every way a path can leave the root is
refused with invalid_path before any file is touched, notebook:/// URIs are
decoded exactly as RFC 3986 says, and kernels keep their connection files out
of the workspace.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from conftest import ok, refused, serve, text_of
from mcp.shared.exceptions import MCPError

NESTED = "nested folder/分析.ipynb"
NESTED_URI = "notebook:///nested%20folder/%E5%88%86%E6%9E%90.ipynb"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` (hidden ones included) and its bytes."""
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            if not path.is_symlink():
                files[str(path.relative_to(root))] = path.read_bytes()
    return files


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a notebook nobody may reach."""
    directory = tmp_path / "outside"
    directory.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("secret = 42")]
    nbformat.write(notebook, directory / "secret.ipynb")
    return directory


async def test_paths_outside_the_workspace_are_refused(workspace, outside):
    (workspace / "escape").symlink_to(outside, target_is_directory=True)
    (workspace / "link.ipynb").symlink_to(outside / "secret.ipynb")
    (workspace / "notes.txt").write_text("not a notebook")
    nbformat.write(nbformat.v4.new_notebook(), workspace / "real.ipynb")
    (workspace / "alias.ipynb").symlink_to(workspace / "real.ipynb")
    (workspace / "folder.ipynb").mkdir()
    outside_before = snapshot(outside)
    bad_paths = [
        str(outside / "secret.ipynb"),
        "/etc/passwd.ipynb",
        "../outside/secret.ipynb",
        "sub/../../outside/secret.ipynb",
        "sub/../real.ipynb",
        "..\\outside\\secret.ipynb",
        "C:/secret.ipynb",
        "a\x00b.ipynb",
        "bad\nname.ipynb",
        "escape/secret.ipynb",
        "escape/new.ipynb",
        "link.ipynb",
        "notes.txt",
        "real.json",
        "real",
    ]
    async with serve(workspace) as client:
        for path in bad_paths:
            for mode in ("connect", "create"):
                result = await refused(
                    client, "use_notebook", {"notebook_name": path, "mode": mode}, "invalid_path"
                )
                assert "secret = 42" not in text_of(result)
            await refused(
                client,
                "use_notebook",
                {"notebook_name": "ok", "notebook_path": path, "mode": "create"},
                "invalid_path",
            )
            await refused(client, "read_notebook", {"notebook_name": path}, "invalid_path")
            await refused(
                client,
                "insert_cell",
                {"notebook_name": path, "cell_index": -1, "cell_type": "code", "cell_source": "x"},
                "invalid_path",
            )
            await refused(
                client, "execute_code", {"notebook_name": path, "code": "1"}, "invalid_path"
            )
        absolute = await refused(
            client, "read_notebook", {"notebook_name": "/etc/passwd.ipynb"}, "invalid_path"
        )
        assert "absolute" in text_of(absolute) and "relative" in text_of(absolute)
        dots = await refused(
            client, "read_notebook", {"notebook_name": "../outside/secret.ipynb"}, "invalid_path"
        )
        assert "'..'" in text_of(dots)
        link = await refused(
            client, "read_notebook", {"notebook_name": "link.ipynb"}, "invalid_path"
        )
        assert "outside the workspace" in text_of(link)
        suffix = await refused(
            client, "read_notebook", {"notebook_name": "notes.txt"}, "invalid_path"
        )
        assert ".ipynb" in text_of(suffix)
        folder = await refused(
            client, "read_notebook", {"notebook_name": "folder.ipynb"}, "invalid_path"
        )
        assert "directory" in text_of(folder)
        await refused(
            client,
            "use_notebook",
            {"notebook_name": "folder.ipynb", "mode": "create"},
            "already_exists",
        )

        for path in ("..", "/", "/etc", "escape", "escape/", "sub/../.."):
            await refused(client, "list_files", {"path": path}, "invalid_path")
        listed = [
            entry["path"] for entry in (await ok(client, "list_files", {"max_depth": 3}))["files"]
        ]
        assert "escape" not in listed and "link.ipynb" not in listed
        assert {"real.ipynb", "notes.txt"} <= set(listed)

        # A symlink that stays inside is the file it points to.
        used = await ok(client, "use_notebook", {"notebook_name": "alias.ipynb"})
        assert used["notebook_path"] == "real.ipynb"

    assert snapshot(outside) == outside_before
    assert sorted(os.listdir(workspace)) == [
        "alias.ipynb",
        "escape",
        "folder.ipynb",
        "link.ipynb",
        "notes.txt",
        "real.ipynb",
    ]
    assert os.listdir(workspace / "folder.ipynb") == []


async def test_notebook_resources_and_kernel_files(workspace, outside):
    (workspace / "escape").symlink_to(outside, target_is_directory=True)
    (workspace / "notes.txt").write_text("not a notebook")
    async with serve(workspace) as client:
        templates = [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ]
        assert any(template.startswith("notebook:///") for template in templates), templates

        created = await ok(client, "use_notebook", {"notebook_name": NESTED, "mode": "create"})
        assert created["notebook_path"] == NESTED
        placed = await ok(
            client,
            "insert_cell",
            {"cell_index": -1, "cell_type": "markdown", "cell_source": "# 分析"},
        )
        assert (workspace / "nested folder" / "分析.ipynb").is_file()

        for uri in (NESTED_URI, NESTED_URI.lower()):
            read = await client.read_resource(uri)
            (content,) = read.contents
            assert content.mime_type == "application/x-ipynb+json"
            notebook = json.loads(content.text)
            assert notebook["nbformat"] == 4
            assert [(c["id"], c["source"]) for c in notebook["cells"]] == [
                (placed["cell_id"], "# 分析")
            ]

        rejected = [
            ("notebook:///nested folder/分析.ipynb", "invalid_path"),  # not percent-encoded
            (
                "notebook:///nested%20folder/%E5%88%86%E6%9E%90",
                "invalid_path",
            ),  # not a notebook name
            ("notebook:///nested%2", "invalid_path"),
            ("notebook:///%ZZ.ipynb", "invalid_path"),
            ("notebook:///%FF%FE.ipynb", "invalid_path"),  # not UTF-8
            ("notebook:///../outside/secret.ipynb", "invalid_path"),
            ("notebook:///%2E%2E/outside/secret.ipynb", "invalid_path"),
            ("notebook:///nested%20folder%2F..%2F..%2Foutside%2Fsecret.ipynb", "invalid_path"),
            ("notebook:///nested%20folder//%E5%88%86%E6%9E%90.ipynb", "invalid_path"),
            ("notebook:///escape/secret.ipynb", "invalid_path"),
            ("notebook:///a%00.ipynb", "invalid_path"),
            ("notebook:///notes.txt", "invalid_path"),
            ("notebook:////etc/passwd.ipynb", "invalid_path"),
            # Relative to the workspace, so merely missing.
            (f"notebook:///{outside.as_posix().lstrip('/')}/secret.ipynb", "not_found"),
            ("notebook:///nested%20folder/other.ipynb", "not_found"),
            # Not notebook:/// at all, or more than a notebook's name.
            (NESTED_URI + "?raw=1", None),
            (NESTED_URI + "#cell", None),
            ("notebook://localhost/nested%20folder/%E5%88%86%E6%9E%90.ipynb", None),
            ("notebook:/nested%20folder/%E5%88%86%E6%9E%90.ipynb", None),
        ]
        for uri, code in rejected:
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            message = str(raised.value)
            assert "secret = 42" not in message
            if code is not None:
                assert message.startswith(f"{code}:"), (uri, message)

        # Kernel connection files (keys, ports) never land in the workspace.
        ran = await client.call_tool(
            "execute_code",
            {
                "code": "from ipykernel.connect import get_connection_file\nprint(get_connection_file())"
            },
        )
        assert not ran.is_error, text_of(ran)
        connection_file = Path(text_of(ran).strip())
        assert connection_file.is_absolute() and connection_file.is_file()
        assert not connection_file.resolve().is_relative_to(workspace.resolve())
        assert not connection_file.resolve().is_relative_to(outside.resolve())
        strays = [
            path
            for path in snapshot(workspace)
            if Path(path).name.startswith("kernel-") or path.endswith(".json") or "jmcp-tmp" in path
        ]
        assert strays == []


#: Names an agent almost certainly did not mean literally, and what the refusal says it meant.
MISTAKES = {
    "~/analysis.ipynb": "'~' is not expanded",
    "~": "'~' is not expanded",
    "$HOME/analysis.ipynb": "'$HOME' is not expanded",
    "${HOME}/work/analysis.ipynb": "'${HOME}' is not expanded",
    "file:analysis.ipynb": "'file:' URI",
    "file:///home/me/analysis.ipynb": "'file:' URI",
    "%2e%2e/analysis.ipynb": "'%2e' is percent-encoded '.'",
    "work%2fanalysis.ipynb": "'%2f' is percent-encoded '/'",
    "\u2024\u2024/analysis.ipynb": "U+2024 ONE DOT LEADER",
    "\uff0e\uff0e/analysis.ipynb": "U+FF0E FULLWIDTH FULL STOP",
    "work/analysis\uff0eipynb": "U+FF0E FULLWIDTH FULL STOP",
}


async def test_names_that_are_almost_certainly_mistakes_are_refused_with_what_was_meant(workspace):
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        for path, meant in MISTAKES.items():
            notebook = path if path.endswith("ipynb") else path + "/analysis.ipynb"
            calls = [
                (
                    "use_notebook",
                    {
                        "notebook_name": "n",
                        "notebook_path": notebook,
                        "mode": "create",
                        "kernel_name": "none",
                    },
                ),
                (
                    "use_notebook",
                    {"notebook_name": notebook, "mode": "connect", "kernel_name": "none"},
                ),
                (
                    "insert_cell",
                    {
                        "notebook_name": notebook,
                        "cell_index": -1,
                        "cell_type": "raw",
                        "cell_source": "x",
                    },
                ),
                ("read_notebook", {"notebook_name": notebook}),
                ("list_files", {"path": path}),
            ]
            for tool, arguments in calls:
                result = await refused(client, tool, arguments, "invalid_path")
                assert meant in text_of(result), f"{tool} {path!r}: {text_of(result)}"
                assert "relative to the workspace" in text_of(result)
    assert os.listdir(workspace) == [], "a refused name created something"


async def test_such_a_name_that_really_exists_is_served(workspace):
    for name in ("~", "$HOME", "%2e%2e", "\uff0e\uff0e"):
        (workspace / name).mkdir()
        nbformat.write(nbformat.v4.new_notebook(), workspace / name / "analysis.ipynb")
    async with serve(workspace, "--capability", "kernel.prestart=off") as client:
        for name in ("~", "$HOME", "%2e%2e", "\uff0e\uff0e"):
            listed = await ok(client, "list_files", {"path": name})
            assert [entry["path"] for entry in listed["files"]] == [f"{name}/analysis.ipynb"]
            await ok(
                client,
                "insert_cell",
                {
                    "notebook_name": f"{name}/analysis.ipynb",
                    "cell_index": -1,
                    "cell_type": "raw",
                    "cell_source": "x",
                },
            )
            # A new file inside the existing folder is fine too: the folder is what was meant.
            await refused(
                client,
                "use_notebook",
                {
                    "notebook_name": "n",
                    "notebook_path": f"{name}/new.ipynb",
                    "mode": "create",
                    "kernel_name": "none",
                },
                "not_found",  # the kernelspec, checked after the path
            )
    for name in ("~", "$HOME", "%2e%2e", "\uff0e\uff0e"):
        assert len(nbformat.read(workspace / name / "analysis.ipynb", as_version=4).cells) == 1
