"""The workspace boundary: what a path may name, and how files are read and written."""

from __future__ import annotations

import errno
import fcntl
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_mcp_server._errors import ToolFailure
from jupyter_mcp_server._workspace import Workspace
from jupyter_mcp_server._workspace.notebook_uris import notebook_uri, path_of_uri


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "root"
    root.mkdir()
    return Workspace(root)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP-SECRET")
    return directory


def failure_code(call, *args, **kwargs) -> str:
    with pytest.raises(ToolFailure) as caught:
        call(*args, **kwargs)
    return caught.value.code


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError):
        Workspace(tmp_path / "file")


def test_root_is_resolved_through_symlinks(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert Workspace(tmp_path / "link").root == (tmp_path / "real").resolve()


def test_resolve_names_paths_inside_the_root(workspace: Workspace) -> None:
    assert workspace.resolve("") == workspace.root
    assert workspace.resolve("a/b.ipynb") == workspace.root / "a" / "b.ipynb"
    assert workspace.resolve("~notes.ipynb") == workspace.root / "~notes.ipynb"
    assert workspace.resolve("a/~") == workspace.root / "a" / "~"
    assert workspace.resolve("price $5.ipynb") == workspace.root / "price $5.ipynb"
    assert workspace.resolve("50% off.ipynb") == workspace.root / "50% off.ipynb"
    assert workspace.resolve("col\u00b7lecci\u00f3.ipynb").name == "col\u00b7lecci\u00f3.ipynb"
    assert workspace.resolve("./x") == workspace.root / "x"


@pytest.mark.parametrize(
    "relative",
    [
        "/etc/passwd",
        "\\\\server\\share\\x",
        "\\x",
        "C:\\x",
        "c:x",
        "a/../b",
        "..",
        "../x",
        "a/..",
        "./..",
        "a\\..\\b",
        "a\x00b",
        "a\nb",
        "a\x7fb",
        "x" * 256,
        "é" * 128,
        "a/" * 2049,
        "\ud800",
    ],
)
def test_resolve_rejects_paths_that_could_leave_the_root(
    workspace: Workspace, relative: str
) -> None:
    assert failure_code(workspace.resolve, relative) == "invalid_path"


def test_resolve_rejects_non_strings(workspace: Workspace) -> None:
    assert failure_code(workspace.resolve, b"x") == "invalid_path"
    assert failure_code(workspace.resolve, None) == "invalid_path"


def test_rejection_says_what_was_wrong_and_what_to_do(workspace: Workspace) -> None:
    with pytest.raises(ToolFailure) as caught:
        workspace.resolve("a/../b")
    assert "'..'" in caught.value.message
    assert str(workspace.root) in caught.value.message
    assert "notebook.ipynb" in caught.value.message


def test_longest_allowed_name_is_accepted(workspace: Workspace) -> None:
    assert workspace.resolve("x" * 255).name == "x" * 255


def test_unicode_names_are_not_normalised(workspace: Workspace) -> None:
    nfc, nfd = "caf\u00e9.ipynb", "cafe\u0301.ipynb"
    assert workspace.resolve(nfc).name == nfc
    assert workspace.resolve(nfd).name == nfd


def test_symlinks_escaping_the_root_are_rejected(workspace: Workspace, outside: Path) -> None:
    (workspace.root / "dir_link").symlink_to(outside)
    (workspace.root / "file_link").symlink_to(outside / "secret.txt")
    (workspace.root / "dangling").symlink_to(outside / "missing")
    for relative in ("dir_link", "dir_link/secret.txt", "file_link", "dangling"):
        assert failure_code(workspace.resolve, relative) == "invalid_path"
        assert failure_code(workspace.read_bytes, relative) == "invalid_path"
    assert failure_code(workspace.write_atomic, "dir_link/new.txt", b"x") == "invalid_path"
    assert not (outside / "new.txt").exists()


def test_symlinks_inside_the_root_are_followed(workspace: Workspace) -> None:
    (workspace.root / "real").mkdir()
    (workspace.root / "real" / "a.txt").write_text("hello")
    (workspace.root / "alias").symlink_to("real")
    assert workspace.resolve("alias/a.txt") == workspace.root / "real" / "a.txt"
    assert workspace.read_bytes("alias/a.txt") == b"hello"


def test_must_exist_reports_not_found(workspace: Workspace) -> None:
    assert failure_code(workspace.resolve, "missing.ipynb", must_exist=True) == "not_found"
    assert workspace.stat("missing.ipynb") is None
    assert failure_code(workspace.read_bytes, "missing.ipynb") == "not_found"


def test_relative_of(workspace: Workspace, outside: Path) -> None:
    assert workspace.relative_of(workspace.root / "a" / "b.ipynb") == "a/b.ipynb"
    assert workspace.relative_of(workspace.root) == ""
    assert failure_code(workspace.relative_of, outside) == "invalid_path"


def test_read_bytes_refuses_directories_and_special_files(workspace: Workspace) -> None:
    (workspace.root / "sub").mkdir()
    os.mkfifo(workspace.root / "fifo")
    for relative in ("", "sub", "fifo"):
        assert failure_code(workspace.read_bytes, relative) == "invalid_path"


def test_a_symlink_swapped_in_after_the_check_is_not_followed(
    workspace: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace.root / "sub").mkdir()
    (workspace.root / "sub" / "secret.txt").write_text("inside")
    checked = workspace.resolve

    def resolve_then_swap(relative: str, **kwargs: bool) -> Path:
        real = checked(relative, **kwargs)
        (workspace.root / "sub").rename(workspace.root / "moved")
        (workspace.root / "sub").symlink_to(outside)
        return real

    monkeypatch.setattr(workspace, "resolve", resolve_then_swap)
    with pytest.raises(ToolFailure) as caught:
        workspace.read_bytes("sub/secret.txt")
    assert caught.value.code == "invalid_path"
    assert "TOP-SECRET" not in caught.value.message


def test_a_file_swapped_for_a_symlink_is_not_followed(
    workspace: Workspace, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace.root / "data.txt").write_text("inside")
    checked = workspace.resolve

    def resolve_then_swap(relative: str, **kwargs: bool) -> Path:
        real = checked(relative, **kwargs)
        (workspace.root / "data.txt").unlink()
        (workspace.root / "data.txt").symlink_to(outside / "secret.txt")
        return real

    monkeypatch.setattr(workspace, "resolve", resolve_then_swap)
    assert failure_code(workspace.read_bytes, "data.txt") == "invalid_path"


def test_a_path_checked_before_is_checked_again_against_the_disk(
    workspace: Workspace, outside: Path
) -> None:
    """The checks of a path's text are remembered; nothing that depends on the disk is."""
    (workspace.root / "data.txt").write_text("inside")
    assert workspace.read_bytes("data.txt") == b"inside"
    (workspace.root / "data.txt").unlink()
    (workspace.root / "data.txt").symlink_to(outside / "secret.txt")
    assert failure_code(workspace.read_bytes, "data.txt") == "invalid_path"
    # A name that looks like a mistake passes only while it is really there.
    assert failure_code(workspace.resolve, "~/notes.ipynb") == "invalid_path"
    (workspace.root / "~").mkdir()
    assert workspace.resolve("~/notes.ipynb") == workspace.root / "~" / "notes.ipynb"
    (workspace.root / "~").rmdir()
    assert failure_code(workspace.resolve, "~/notes.ipynb") == "invalid_path"
    for hostile in ("../data.txt", "/etc/passwd", "a\x00b", "data.txt/../../x"):
        assert failure_code(workspace.resolve, hostile) == "invalid_path"
        assert failure_code(workspace.resolve, hostile) == "invalid_path"
    # What is remembered stays small, whatever a client sends.
    for number in range(3000):
        workspace.resolve(f"notebook-{number}.ipynb")
    workspace.resolve("long/" * 100 + "notebook.ipynb")
    assert 0 < len(workspace._well_formed) <= 1024
    assert all(len(path) <= 256 for path in workspace._well_formed)


def temporary_files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.name.endswith(".jmcp-tmp")]


def test_write_atomic_creates_and_replaces(workspace: Workspace) -> None:
    status = workspace.write_atomic("a.ipynb", b"first")
    assert (workspace.root / "a.ipynb").read_bytes() == b"first"
    assert status.st_size == 5
    assert workspace.stat("a.ipynb").st_ino == status.st_ino
    workspace.write_atomic("a.ipynb", b"second!")
    assert workspace.read_bytes("a.ipynb") == b"second!"
    assert temporary_files(workspace.root) == []


def test_write_atomic_gives_new_files_the_usual_mode(workspace: Workspace) -> None:
    umask = os.umask(0o022)
    try:
        workspace.write_atomic("new.ipynb", b"{}")
    finally:
        os.umask(umask)
    assert (workspace.root / "new.ipynb").stat().st_mode & 0o777 == 0o644


def test_symlink_loops_are_neither_read_nor_replaced(workspace: Workspace) -> None:
    (workspace.root / "a").symlink_to("b")
    (workspace.root / "b").symlink_to("a")
    assert failure_code(workspace.read_bytes, "a") == "invalid_path"
    assert failure_code(workspace.write_atomic, "a", b"x") == "invalid_path"
    assert failure_code(workspace.stat, "a") == "invalid_path"
    assert (workspace.root / "a").is_symlink()
    assert temporary_files(workspace.root) == []


def test_write_atomic_keeps_an_existing_files_mode(workspace: Workspace) -> None:
    target = workspace.root / "a.py"
    target.write_text("old")
    target.chmod(0o600)
    workspace.write_atomic("a.py", b"new")
    assert target.stat().st_mode & 0o777 == 0o600


def test_write_atomic_leaves_the_old_content_when_writing_fails(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace.root / "a.ipynb").write_bytes(b"old")
    real_fsync = os.fsync
    calls: list[int] = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(errno.EIO, "disk on fire")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        workspace.write_atomic("a.ipynb", b"new content")
    assert (workspace.root / "a.ipynb").read_bytes() == b"old"
    assert temporary_files(workspace.root) == []
    workspace.write_atomic("a.ipynb", b"new content")
    assert (workspace.root / "a.ipynb").read_bytes() == b"new content"


def test_write_atomic_exclusive_refuses_an_existing_file(workspace: Workspace) -> None:
    workspace.write_atomic("a.ipynb", b"one", exclusive=True)
    assert failure_code(workspace.write_atomic, "a.ipynb", b"two", exclusive=True) == (
        "already_exists"
    )
    assert workspace.read_bytes("a.ipynb") == b"one"
    assert temporary_files(workspace.root) == []


def test_write_atomic_creates_missing_parents(workspace: Workspace) -> None:
    workspace.write_atomic("analysis/deep/new.ipynb", b"{}")
    assert (workspace.root / "analysis" / "deep" / "new.ipynb").read_bytes() == b"{}"


def test_write_atomic_refuses_directories_and_file_parents(workspace: Workspace) -> None:
    (workspace.root / "sub").mkdir()
    (workspace.root / "file").write_text("x")
    assert failure_code(workspace.write_atomic, "sub", b"x") == "invalid_path"
    assert failure_code(workspace.write_atomic, "", b"x") == "invalid_path"
    assert failure_code(workspace.write_atomic, "file/x", b"x") == "invalid_path"
    assert temporary_files(workspace.root) == []


def test_remove_stale_temp_files(workspace: Workspace) -> None:
    root = workspace.root
    (root / "sub").mkdir()
    (root / ".git").mkdir()
    (root / ".a.ipynb.0123456789abcdef.jmcp-tmp").write_text("")
    (root / "sub" / ".b.0123456789abcdef.jmcp-tmp").write_text("")
    (root / ".git" / ".c.0123456789abcdef.jmcp-tmp").write_text("")
    (root / "keep.jmcp-tmp").write_text("")
    in_flight = root / ".busy.0123456789abcdef.jmcp-tmp"
    in_flight.write_text("")
    # Held, as a live writer (another server on this workspace) holds its own.
    with in_flight.open("rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert workspace.remove_stale_temp_files() == 2
    assert sorted(p.name for p in temporary_files(root)) == [
        ".busy.0123456789abcdef.jmcp-tmp",
        ".c.0123456789abcdef.jmcp-tmp",
        "keep.jmcp-tmp",
    ]


@pytest.fixture
def tree(workspace: Workspace, outside: Path) -> Workspace:
    root = workspace.root
    (root / "a" / "b" / "c" / "d").mkdir(parents=True)
    (root / "top.ipynb").write_text("{}")
    (root / "notes.txt").write_text("hello")
    (root / "a" / "inner.ipynb").write_text("{}")
    (root / "a" / "b" / "deeper.py").write_text("# %%")
    (root / "a" / "b" / "c" / "deepest.ipynb").write_text("{}")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.ipynb").write_text("{}")
    (root / ".dot.ipynb").write_text("{}")
    (root / ".x.ipynb.0123456789abcdef.jmcp-tmp").write_text("")
    (root / "escape").symlink_to(outside)
    (root / "alias.ipynb").symlink_to(root / "top.ipynb")
    return workspace


def paths(entries: list) -> list[str]:
    return [entry["path"] for entry in entries]


def test_list_files_direct_children(tree: Workspace) -> None:
    entries = tree.list_files()
    assert paths(entries) == ["a", "alias.ipynb", "notes.txt", "top.ipynb"]
    by_path = {entry["path"]: entry for entry in entries}
    assert by_path["a"]["type"] == "directory"
    assert by_path["a"]["size"] == 0
    assert by_path["top.ipynb"]["type"] == "notebook"
    assert by_path["notes.txt"] == {
        "path": "notes.txt",
        "type": "file",
        "size": 5,
        "last_modified": by_path["notes.txt"]["last_modified"],
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", by_path["notes.txt"]["last_modified"])


def test_list_files_depths(tree: Workspace) -> None:
    assert paths(tree.list_files("a", max_depth=0)) == ["a"]
    assert paths(tree.list_files("", max_depth=0)) == [""]
    assert paths(tree.list_files("a", max_depth=2)) == [
        "a/b",
        "a/b/c",
        "a/b/deeper.py",
        "a/inner.ipynb",
    ]
    deepest = paths(tree.list_files(max_depth=3))
    assert "a/b/c" in deepest
    assert "a/b/c/d" not in deepest
    for depth in (-1, 4, True, "1"):
        assert failure_code(tree.list_files, "", depth) == "invalid_argument"


def test_list_files_pattern_still_descends(tree: Workspace) -> None:
    assert paths(tree.list_files(max_depth=3, pattern="*.ipynb")) == [
        "a/inner.ipynb",
        "alias.ipynb",
        "top.ipynb",
    ]
    assert paths(tree.list_files(max_depth=3, pattern="*.py")) == ["a/b/deeper.py"]
    assert paths(tree.list_files("a/b/c", pattern="*.ipynb")) == ["a/b/c/deepest.ipynb"]
    assert paths(tree.list_files(max_depth=3, pattern="a/b/*")) == ["a/b/c", "a/b/deeper.py"]


def test_list_files_refuses_bad_paths(tree: Workspace) -> None:
    assert failure_code(tree.list_files, "missing") == "not_found"
    assert failure_code(tree.list_files, "top.ipynb") == "invalid_argument"
    assert failure_code(tree.list_files, "escape") == "invalid_path"
    assert failure_code(tree.list_files, "../") == "invalid_path"


SEED_PATH = "nested folder/分析.ipynb"
SEED_URI = "notebook:///nested%20folder/%E5%88%86%E6%9E%90.ipynb"


def test_the_seed_example_both_ways() -> None:
    assert notebook_uri(SEED_PATH) == SEED_URI
    assert path_of_uri(SEED_URI) == SEED_PATH


def test_reserved_characters_are_encoded() -> None:
    assert notebook_uri("a b/c?#%&.ipynb") == "notebook:///a%20b/c%3F%23%25%26.ipynb"
    assert path_of_uri("notebook:///a%20b/c%3F%23%25%26.ipynb") == "a b/c?#%&.ipynb"
    assert path_of_uri("NOTEBOOK:///x.ipynb") == "x.ipynb"


@pytest.mark.parametrize(
    "uri",
    [
        "notebook://host/x",
        "notebook:/x",
        "notebook:x",
        "notebook:////x",
        "notebook:///a//b",
        "notebook:///a/",
        "notebook:///",
        "notebook:///a%2Fb",
        "notebook:///a%2fb",
        "notebook:///a%00b",
        "notebook:///%2e%2e/x",
        "notebook:///%2E%2E",
        "notebook:///../x",
        "notebook:///./x",
        "notebook:///a/%2e",
        "notebook:///a%zz",
        "notebook:///a%2",
        "notebook:///%ff",
        "notebook:///%C3",
        "notebook:///a b",
        "notebook:///分析.ipynb",
        "notebook:///a%5C..%5Cb",
        "http:///x",
        "x",
        "notebook:///a?x",
        "notebook:///a#b",
    ],
)
def test_malformed_uris_are_rejected(uri: str) -> None:
    assert failure_code(path_of_uri, uri) == "invalid_path"


def test_notebook_uri_refuses_paths_it_cannot_round_trip() -> None:
    for relative in ("", "a//b", "./a", "a/", "../a", "/a", "a\x00"):
        assert failure_code(notebook_uri, relative) == "invalid_path"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_resolve_either_rejects_or_stays_inside(tmp_path_factory, relative: str) -> None:
    root = tmp_path_factory.getbasetemp() / "property-root"
    root.mkdir(exist_ok=True)
    workspace = Workspace(root)
    try:
        resolved = workspace.resolve(relative)
    except ToolFailure as failure:
        assert failure.code == "invalid_path"
    else:
        assert resolved == workspace.root or resolved.is_relative_to(workspace.root)


#: 'C:' leading a path is refused as a Windows drive, by design.
WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")

segment_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\"),
    min_size=1,
    max_size=20,
).filter(lambda segment: segment not in (".", "..") and not WINDOWS_DRIVE.match(segment))


@settings(max_examples=300, deadline=None)
@given(st.lists(segment_text, min_size=1, max_size=5))
def test_uris_round_trip(segments: list[str]) -> None:
    relative = "/".join(segments)
    uri = notebook_uri(relative)
    assert uri.isascii()
    assert path_of_uri(uri) == relative


def test_list_files_follows_symlinks_inside_and_keeps_the_callers_name(tree: Workspace) -> None:
    (tree.root / "linkdir").symlink_to(tree.root / "a")
    (tree.root / "dangling").symlink_to("nowhere")
    assert "linkdir" in paths(tree.list_files())
    assert "dangling" not in paths(tree.list_files())
    assert paths(tree.list_files("linkdir")) == ["linkdir/b", "linkdir/inner.ipynb"]
    assert paths(tree.list_files("./a//")) == ["a/b", "a/inner.ipynb"]


def test_a_started_server_sweeps_a_crash_leftovers_beside_serving(tmp_path: Path) -> None:
    """The walk happens after the handshake (a home directory is big); the leftovers still go."""
    import time

    from rpc import RawServer

    (tmp_path / "deep" / "er").mkdir(parents=True)
    leftovers = [
        tmp_path / ".a.ipynb.0123456789abcdef.jmcp-tmp",
        tmp_path / "deep" / "er" / ".b.0123456789abcdef.jmcp-tmp",
    ]
    for leftover in leftovers:
        leftover.write_text("half a notebook")
    server = RawServer(tmp_path, "--capability", "kernel.prestart=off")
    try:
        deadline = time.monotonic() + 30
        while any(p.exists() for p in leftovers) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not any(p.exists() for p in leftovers)
        assert server.ok("list_files", {"path": "", "max_depth": 3})
    finally:
        assert server.close() == 0


def test_a_writer_holding_others_back_makes_other_processes_wait(workspace: Workspace) -> None:
    """What a write that keeps losing races relies on: while it holds the
    directory, another process's write waits at its last check, and its own
    write inside goes through without waiting for itself."""
    import subprocess
    import sys
    import textwrap
    import time

    workspace.write_atomic("nb.ipynb", b"first")
    other = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2] / "src")!r})
        from jupyter_mcp_server._workspace import Workspace
        print("ready", flush=True)
        Workspace({str(workspace.root)!r}).write_atomic("nb.ipynb", b"theirs")
        print(time.time(), flush=True)
        """
    )
    with workspace.others_held_back("nb.ipynb"):
        process = subprocess.Popen([sys.executable, "-c", other], stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        time.sleep(0.5)
        assert workspace.read_bytes("nb.ipynb") == b"first", "the other process did not wait"
        workspace.write_atomic("nb.ipynb", b"mine")
        released = time.time()
    written_at = float(process.stdout.readline())
    assert process.wait(30) == 0
    assert written_at >= released
    assert workspace.read_bytes("nb.ipynb") == b"theirs"


@pytest.mark.parametrize(
    "relative, meant",
    [
        ("~", "'~' is not expanded"),
        ("~/x.ipynb", "'~' is not expanded"),
        ("~bob/x.ipynb", "'~bob' is not expanded"),
        ("$HOME/x.ipynb", "'$HOME' is not expanded"),
        ("${HOME}/x.ipynb", "'${HOME}' is not expanded"),
        ("a/$USER/x.ipynb", "'$USER' is not expanded"),
        ("%USERPROFILE%/x.ipynb", "'%USERPROFILE%' is not expanded"),
        ("file:x.ipynb", "'file:' URI"),
        ("FILE:///tmp/x.ipynb", "'file:' URI"),
        ("notebook:///x.ipynb", "'notebook:' URI"),
        ("%2e%2e/x.ipynb", "'%2e' is percent-encoded '.'"),
        ("%252e%252e/x.ipynb", "'%25' is percent-encoded '%'"),
        ("a%2Fb.ipynb", "'%2F' is percent-encoded '/'"),
        ("my%20notebook.ipynb", "'%20' is percent-encoded ' '"),
        ("caf%C3%A9.ipynb", "'%C3' is a percent-encoded byte"),
        ("\u2024\u2024/x.ipynb", "U+2024 ONE DOT LEADER"),
        ("\u2025/x.ipynb", "U+2025 TWO DOT LEADER"),
        ("\uff0e\uff0e/x.ipynb", "U+FF0E FULLWIDTH FULL STOP"),
        ("x\ufe52ipynb", "U+FE52 SMALL FULL STOP"),
        ("a\uff0fb.ipynb", "U+FF0F FULLWIDTH SOLIDUS"),
        ("..\u200b/x.ipynb", "U+200B ZERO WIDTH SPACE"),
    ],
)
def test_names_that_are_almost_certainly_mistakes_say_what_was_meant(
    workspace: Workspace, relative: str, meant: str
) -> None:
    with pytest.raises(ToolFailure) as caught:
        workspace.resolve(relative)
    assert caught.value.code == "invalid_path"
    assert meant in caught.value.message, caught.value.message
    assert "relative to the workspace" in caught.value.message
    with pytest.raises(ToolFailure):
        workspace.write_atomic(relative, b"x")
    assert os.listdir(workspace.root) == []


def test_such_a_name_that_really_exists_is_served(workspace: Workspace) -> None:
    for name in ("~", "$HOME", "%2e%2e", "\u2024\u2024", "file:x", "my%20notebook.ipynb"):
        (workspace.root / name).mkdir()
        assert workspace.resolve(name) == workspace.root / name
        assert workspace.resolve(f"{name}/new.ipynb") == workspace.root / name / "new.ipynb"
    workspace.write_atomic("~/new.ipynb", b"{}")
    assert (workspace.root / "~" / "new.ipynb").read_bytes() == b"{}"
    # Only the part that exists is vouched for: a mistake below it is still one.
    assert failure_code(workspace.resolve, "~/$HOME/x.ipynb") == "invalid_path"


LEFTOVER = ".nb.ipynb.0123456789abcdef.jmcp-tmp"


def make_deep_tree(parent: Path, levels: int, leftovers_at: set[int]) -> None:
    """parent/d/d/.../d, `levels` deep, made by descriptor (the absolute paths
    near the bottom are as long as the OS allows), with a crash's leftover at
    the given levels (1 is parent/d)."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(1, levels + 1):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if level in leftovers_at:
                os.close(os.open(LEFTOVER, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    finally:
        os.close(fd)


def remove_deep_tree(parent: Path) -> None:
    """Take parent/d/d/... apart from the top without ever going deep (rmtree recurses)."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while "d" in os.listdir(fd):
            top = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            try:
                for name in os.listdir(top):
                    if name == "d":
                        os.rename("d", "d-next", src_dir_fd=top, dst_dir_fd=fd)
                    else:
                        os.unlink(name, dir_fd=top)
            finally:
                os.close(top)
            os.rmdir("d", dir_fd=fd)
            if "d-next" in os.listdir(fd):
                os.rename("d-next", "d", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def deep_leftover_exists(parent: Path, level: int) -> bool:
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        directory = os.open("/".join(["d"] * level), os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        return LEFTOVER in os.listdir(directory)
    finally:
        os.close(directory)


def test_the_sweep_gets_through_a_2000_level_tree(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    """Python 3.11's os.walk recurses: 2,000 levels used to end the sweep with a
    RecursionError part way, leaving whatever it had not reached yet."""
    root = workspace.root
    make_deep_tree(root, 2000, leftovers_at={3, 1990})
    (root / "zz-after").mkdir()
    (root / "zz-after" / LEFTOVER).write_text("")
    try:
        with caplog.at_level("INFO", logger="jupyter_mcp_server._workspace"):
            assert workspace.remove_stale_temp_files() == 2
        assert not (root / "d" / "d" / "d" / LEFTOVER).exists()
        assert not (root / "zz-after" / LEFTOVER).exists()
        # Below the depth no path may have, nothing of ours can be: not looked into, and said so.
        assert deep_leftover_exists(root, 1990)
        assert "128 levels" in caplog.text
    finally:
        remove_deep_tree(root)


def test_the_sweep_stops_after_so_many_entries_and_says_so(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    for index in range(30):
        (workspace.root / f"file-{index}").write_text("")
    (workspace.root / LEFTOVER).write_text("")
    with caplog.at_level("INFO", logger="jupyter_mcp_server._workspace"):
        removed = workspace.remove_stale_temp_files(max_entries=10)
    assert removed <= 1
    assert "10 entries" in caplog.text
    assert workspace.remove_stale_temp_files() == 1 - removed


def test_paths_deeper_than_the_limit_are_refused_naming_it(workspace: Workspace) -> None:
    deepest = "/".join(["d"] * 127) + "/nb.ipynb"
    workspace.write_atomic(deepest, b"{}")
    assert workspace.read_bytes(deepest) == b"{}"
    too_deep = "/".join(["d"] * 128) + "/nb.ipynb"
    for call, arguments in (
        (workspace.resolve, (too_deep,)),
        (workspace.write_atomic, (too_deep, b"{}")),
        (workspace.list_files, ("/".join(["d"] * 129),)),
    ):
        with pytest.raises(ToolFailure) as caught:
            call(*arguments)
        assert caught.value.code == "invalid_path"
        assert "at most 128 levels" in caught.value.message
    assert failure_code(path_of_uri, "notebook:///" + too_deep) == "invalid_path"
    # './' and '//' are no levels.
    assert workspace.resolve("./" * 200 + "nb.ipynb") == workspace.root / "nb.ipynb"


def test_a_started_server_sweeps_beside_a_2000_level_tree_and_refuses_deeper_paths(
    tmp_path: Path,
) -> None:
    import time

    from rpc import RawServer, error_code, text_of

    make_deep_tree(tmp_path, 2000, leftovers_at={2, 1990})
    top = tmp_path / "d" / "d" / LEFTOVER
    log = tmp_path.parent / f"{tmp_path.name}-server.log"
    server = RawServer(
        tmp_path,
        "--capability",
        "kernel.prestart=off",
        env={"JUPYTER_MCP_LOG_LEVEL": "INFO"},
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 30
        while top.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not top.exists()
        too_deep = "/".join(["d"] * 200) + "/nb.ipynb"
        for tool, arguments in (
            (
                "insert_cell",
                {
                    "notebook_name": too_deep,
                    "cell_index": -1,
                    "cell_type": "raw",
                    "cell_source": "x",
                },
            ),
            ("use_notebook", {"notebook_name": "n", "notebook_path": too_deep, "mode": "create"}),
            ("list_files", {"path": "/".join(["d"] * 129)}),
        ):
            result = server.call(tool, arguments)
            assert error_code(result) == "invalid_path", result
            assert "at most 128 levels" in text_of(result)
        assert server.ok("list_files", {"path": "d", "max_depth": 3})
        assert deep_leftover_exists(tmp_path, 1990), "below any path's depth: left, and said"
        # The sweep says what it did when its walk ends, which on a loaded machine can be
        # after the calls above: wait for it rather than stop the server under it.
        deadline = time.monotonic() + 60
        while (
            "Did not look for temporary files" not in log.read_text()
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
    finally:
        assert server.close() == 0
        remove_deep_tree(tmp_path)
    said = log.read_text()
    assert "Looking for temporary files left by a crash failed" not in said, said
    assert "Removed 1 temporary files left by an earlier crash" in said
    assert "Did not look for temporary files left by a crash in 1 directories 128 levels" in said


def test_a_read_with_its_status_gives_the_status_of_the_very_file_read(workspace):
    (workspace.root / "a.ipynb").write_bytes(b"abc")
    data, status = workspace.read_with_status("a.ipynb")
    on_disk = (workspace.root / "a.ipynb").stat()
    assert data == b"abc"
    assert (status.st_ino, status.st_size, status.st_mtime_ns) == (
        on_disk.st_ino,
        on_disk.st_size,
        on_disk.st_mtime_ns,
    )
