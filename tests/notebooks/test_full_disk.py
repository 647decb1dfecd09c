"""Full disks, quotas, read-only mounts and refused permissions, on real small file systems.

Each test mounts a size-limited tmpfs (root is needed: without it, or where
mounting is not allowed, the test skips and says why), puts the workspace or
the history directory on it, and fills it up between calls and during them
(a cell whose code fills the disk, a notebook larger than the space left).
Every refused write must leave the last good notebook on disk, no temporary
file behind, a coded failure saying what to do, and a server whose next call
succeeds once the disk has room again. The server is the real one over stdio,
with the official client.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ok, refused, server_command, text_of
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from rpc import environment as server_environment

#: Root drops these before starting the server, so that file modes bind it as they bind
#: anyone else (root's CAP_DAC_OVERRIDE ignores them) and quotas too (CAP_SYS_RESOURCE).
AS_ANYONE = "-dac_override,-dac_read_search,-sys_resource"
#: The names a writer's temporary files have (the notebook store's, a history's).
TEMPORARY_SUFFIXES = (".jmcp-tmp", ".tmp")


def mount_tmpfs(where: Path, options: str) -> Path:
    """A tmpfs mounted at `where` (unmounted by `unmount`); skips when this cannot be done."""
    if os.geteuid() != 0:
        pytest.skip(
            "mounting a size-limited tmpfs needs root (run the tests as root, or in a container)"
        )
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs with {options!r} here: {mounted.stderr.strip() or mounted.returncode}"
        )
    return where


def unmount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "2m", options: str = "") -> Iterator[Path]:
    mount_tmpfs(where, f"size={size},mode=0755{',' + options if options else ''}")
    try:
        yield where
    finally:
        unmount(where)


def fill(where: Path, leave: int = 0) -> Path:
    """Fill the file system holding `where` to the last byte, then give back `leave` bytes."""
    filler = where / "filler.bin"
    with open(filler, "wb", buffering=0) as file:
        for chunk in (1 << 16, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    file.write(b"\0" * chunk)
    if leave:
        os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def free_bytes(where: Path) -> int:
    status = os.statvfs(where)
    return status.f_bavail * status.f_frsize


def temporary_files(*roots: Path) -> list[str]:
    return [
        str(p)
        for root in roots
        for p in root.rglob("*")
        if p.name.startswith(".") and p.name.endswith(TEMPORARY_SUFFIXES)
    ]


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True, capture_output=True)


@contextlib.asynccontextmanager
async def serving(
    workspace: Path, log: Path, *args: str, history: Path, as_anyone: bool = False
) -> AsyncIterator[Client]:
    """The real server over stdio, its stderr in `log`; `as_anyone`: root without the
    capabilities that let it ignore file modes and quotas."""
    command = server_command(workspace, "--capability", "kernel.prestart=off", *args)
    if as_anyone:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip(
                "setpriv (util-linux) is needed to run the server as root without CAP_DAC_OVERRIDE"
            )
        command = [setpriv, f"--bounding-set={AS_ANYONE}", *command]
    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        env=server_environment(JUPYTER_MCP_HISTORY_DIR=str(history)),
        cwd=str(workspace),
    )
    with log.open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            yield client


def cells_of(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(path.read_bytes())["cells"]]


async def refused_unchanged(
    client: Client, tool: str, arguments: dict[str, Any], code: str, notebook: Path, *roots: Path
) -> str:
    """`tool` fails with `code`, the notebook keeps its bytes, and no temporary file is left."""
    before = notebook.read_bytes()
    result = await refused(client, tool, arguments, code)
    assert notebook.read_bytes() == before, f"{tool} changed the notebook although it failed"
    assert temporary_files(*roots) == [], f"{tool} left temporary files"
    return text_of(result)


async def test_a_full_disk_refuses_every_write_with_disk_full_and_the_next_call_succeeds_once_there_is_room(
    tmp_path,
):
    with small_filesystem(tmp_path / "disk") as disk:
        workspace = disk / "workspace"
        workspace.mkdir()
        notebook = workspace / "n.ipynb"
        async with serving(
            workspace, tmp_path / "server.log", history=tmp_path / "history"
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            cell = await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "print(6 * 7)"},
            )
            await ok(client, "execute_cell", {"cell_id": cell["cell_id"]})

            # Between calls: the disk is full to the last byte.
            filler = fill(disk)
            said = await refused_unchanged(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "y = 2"},
                "disk_full",
                notebook,
                disk,
            )
            assert "full" in said and "Free some space" in said and "unchanged" in said, said
            await refused_unchanged(
                client,
                "overwrite_cell_source",
                {"cell_id": cell["cell_id"], "cell_source": "print(7 * 6)"},
                "disk_full",
                notebook,
                disk,
            )
            await refused_unchanged(
                client,
                "use_notebook",
                {"notebook_name": "other.ipynb", "mode": "create"},
                "disk_full",
                notebook,
                disk,
            )
            assert not (workspace / "other.ipynb").exists()
            # The cell runs; only storing its outputs fails, and the answer says both.
            said = await refused_unchanged(
                client, "execute_cell", {"cell_id": cell["cell_id"]}, "disk_full", notebook, disk
            )
            assert "ran" in said and "not stored" in said and "42" in said, said

            # Room again: the same calls succeed on the same server.
            filler.unlink()
            await ok(
                client,
                "overwrite_cell_source",
                {"cell_id": cell["cell_id"], "cell_source": "print(7 * 6)"},
            )
            added = await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "y = 2"},
            )
            await ok(client, "execute_cell", {"cell_id": added["cell_id"]})
            assert cells_of(notebook) == ["print(7 * 6)", "y = 2"]
            assert temporary_files(disk) == []


async def test_a_disk_that_fills_up_during_a_call_leaves_the_last_good_notebook_and_no_temporary_file(
    tmp_path,
):
    with small_filesystem(tmp_path / "disk") as disk:
        workspace = disk / "workspace"
        workspace.mkdir()
        notebook = workspace / "n.ipynb"
        async with serving(
            workspace, tmp_path / "server.log", history=tmp_path / "history"
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            big = "# " + "x" * 100_000
            await ok(
                client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": big}
            )

            # The next write is ~100 KiB and only 16 KiB are left: it fails part way through.
            filler = fill(disk, leave=16_384)
            room = free_bytes(disk)
            await refused_unchanged(
                client,
                "insert_cell",
                {"cell_index": 0, "cell_type": "markdown", "cell_source": "# Title"},
                "disk_full",
                notebook,
                disk,
            )
            assert free_bytes(disk) == room, "the half-written temporary file still takes space"
            filler.unlink()

            # The cell's own code fills the disk while it runs: the outputs cannot be stored.
            filling = (
                "n = 0\n"
                "with open('fill.bin', 'wb', buffering=0) as f:\n"
                "    try:\n"
                "        while True:\n"
                "            n += f.write(b'\\0' * 4096)\n"
                "    except OSError as e:\n"
                "        print('filled', n, e.errno)\n"
            )
            runs = await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": filling},
            )
            said = await refused_unchanged(
                client, "execute_cell", {"cell_id": runs["cell_id"]}, "disk_full", notebook, disk
            )
            assert "filled" in said and str(errno.ENOSPC) in said, said
            # Code that writes no notebook frees the space again; then everything works.
            freed = await ok(
                client, "execute_code", {"code": "import os; os.remove('fill.bin'); print('freed')"}
            )
            assert freed["status"] == "ok", freed
            done = await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "print('after')"},
            )
            await ok(client, "execute_cell", {"cell_id": done["cell_id"]})
            assert cells_of(notebook)[-1] == "print('after')"
            assert temporary_files(disk) == []


async def test_a_read_only_file_system_refuses_writes_with_read_only_until_it_is_writable_again(
    tmp_path,
):
    with small_filesystem(tmp_path / "disk") as disk:
        workspace = disk / "workspace"
        workspace.mkdir()
        notebook = workspace / "n.ipynb"
        async with serving(
            workspace, tmp_path / "server.log", history=tmp_path / "history"
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            cell = await ok(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "1 + 1"},
            )
            remount(disk, "ro")
            try:
                said = await refused_unchanged(
                    client,
                    "insert_cell",
                    {"cell_index": -1, "cell_type": "code", "cell_source": "2"},
                    "read_only",
                    notebook,
                    disk,
                )
                assert "read-only" in said and "Remount" in said, said
                said = await refused_unchanged(
                    client,
                    "execute_cell",
                    {"cell_id": cell["cell_id"]},
                    "read_only",
                    notebook,
                    disk,
                )
                assert "ran" in said and "2" in said
                await refused_unchanged(
                    client,
                    "use_notebook",
                    {"notebook_name": "o.ipynb", "mode": "create"},
                    "read_only",
                    notebook,
                    disk,
                )
                # Reading goes on.
                assert (await ok(client, "read_notebook", {}))["cells"]
            finally:
                remount(disk, "rw")
            await ok(
                client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "2"}
            )
            assert cells_of(notebook) == ["1 + 1", "2"]


async def test_a_directory_the_server_may_not_write_refuses_with_permission_denied(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    notebook = workspace / "n.ipynb"
    # As root, modes bind only without CAP_DAC_OVERRIDE: the server runs without it.
    async with serving(
        workspace,
        tmp_path / "server.log",
        history=tmp_path / "history",
        as_anyone=os.geteuid() == 0,
    ) as client:
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        await ok(client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "1"})
        workspace.chmod(0o555)
        try:
            said = await refused_unchanged(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "2"},
                "permission_denied",
                notebook,
                workspace,
            )
            assert "permission" in said.lower() and "write access" in said, said
        finally:
            workspace.chmod(0o755)
        await ok(client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "2"})
        assert cells_of(notebook) == ["1", "2"]


@contextlib.contextmanager
def quota_filesystem(where: Path) -> Iterator[Path]:
    """A folder under a 1 MiB quota that binds root as well, or a skip saying why not: a
    tmpfs with a default user quota (Linux 6.6, CONFIG_TMPFS_QUOTA; root bound once it lacks
    CAP_SYS_RESOURCE, which the server is started without), else a btrfs subvolume with a
    qgroup limit on a loop device (btrfs-progs; qgroups need no CONFIG_QUOTA and bind everyone)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a file system with a quota needs root")
    where.mkdir(parents=True, exist_ok=True)
    tmpfs = subprocess.run(
        [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            "size=4m,quota,usrquota_block_hardlimit=1m",
            "tmpfs",
            str(where),
        ],
        capture_output=True,
        text=True,
    )
    if tmpfs.returncode == 0:
        try:
            (where / "quota").mkdir()
            yield where / "quota"
        finally:
            unmount(where)
        return
    if shutil.which("mkfs.btrfs") is None or shutil.which("btrfs") is None:
        pytest.skip(
            f"no quota here: tmpfs refuses quotas ({tmpfs.stderr.strip()}) and btrfs-progs is "
            "not installed (apt-get install btrfs-progs)"
        )
    image = where.parent / f"{where.name}.img"
    with open(image, "wb") as file:
        file.truncate(128 * 1024 * 1024)  # btrfs' smallest with its default profiles
    steps = (
        ["mkfs.btrfs", "-q", "-f", str(image)],
        ["mount", "-o", "loop", str(image), str(where)],
        ["btrfs", "quota", "enable", str(where)],
        ["btrfs", "subvolume", "create", str(where / "quota")],
        ["btrfs", "qgroup", "limit", "1M", str(where / "quota")],
    )
    mounted = False
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(
                    f"cannot make a btrfs quota here ({' '.join(step[:3])}): {done.stderr.strip()}"
                )
            mounted = mounted or step[0] == "mount"
        yield where / "quota"
    finally:
        if mounted:
            unmount(where)
        image.unlink(missing_ok=True)


def sync_filesystem(where: Path) -> None:
    """Let the file system account for what was freed (btrfs counts a qgroup at commit)."""
    if shutil.which("btrfs"):
        subprocess.run(
            ["btrfs", "filesystem", "sync", str(where)], capture_output=True, check=False
        )
    os.sync()


async def test_a_used_up_quota_refuses_with_disk_full(tmp_path):
    with quota_filesystem(tmp_path / "disk") as quota:
        workspace = quota / "workspace"
        workspace.mkdir()
        notebook = workspace / "n.ipynb"
        async with serving(
            workspace, tmp_path / "server.log", history=tmp_path / "history", as_anyone=True
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            before = notebook.read_bytes()
            filler = quota / "filler.bin"
            with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as file:
                while True:  # a tmpfs quota does not bind this process; a qgroup does
                    file.write(b"\0" * 65536)
                    if filler.stat().st_size > 1_100_000:
                        break
            sync_filesystem(quota)
            try:
                with open(quota / "probe", "wb") as probe:
                    probe.write(b"\0" * 65536)
                    probe.flush()
                    os.fsync(probe.fileno())
            except OSError as error:
                assert error.errno == errno.EDQUOT, error
            (quota / "probe").unlink(missing_ok=True)
            said = await refused_unchanged(
                client,
                "insert_cell",
                {"cell_index": -1, "cell_type": "code", "cell_source": "1" * 200_000},
                "disk_full",
                notebook,
                quota,
            )
            assert "quota" in said, said
            assert notebook.read_bytes() == before
            filler.unlink()
            sync_filesystem(quota)
            await ok(
                client, "insert_cell", {"cell_index": -1, "cell_type": "code", "cell_source": "1"}
            )


async def test_a_full_history_disk_never_fails_an_edit_and_is_logged_in_one_line(
    tmp_path, workspace, history_toolset
):
    with small_filesystem(tmp_path / "state", "1m") as state:
        history = state / "history"
        log = tmp_path / "server.log"
        notebook = workspace / "n.ipynb"
        async with serving(workspace, log, *history_toolset, history=history) as client:
            await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
            await ok(client, "apply_edits", {"operations": [{"op": "insert", "source": "x = 1"}]})
            await ok(client, "checkpoint", {"name": "before"})

            filler = fill(state)
            done = await ok(
                client, "apply_edits", {"operations": [{"op": "insert", "source": "y = 2"}]}
            )
            assert done["history"] and "No space left on device" in done["history"], done
            assert cells_of(notebook) == ["x = 1", "y = 2"]
            big = await ok(
                client, "apply_edits", {"operations": [{"op": "insert", "source": "z" * 50_000}]}
            )
            assert big["history"], big
            assert temporary_files(state) == []
            # What needs the history says why it cannot be had, with the disk's code.
            said = text_of(await refused(client, "checkpoint", {"name": "after"}, "disk_full"))
            assert "full" in said and "Free some space" in said

            filler.unlink()
            await ok(client, "apply_edits", {"operations": [{"op": "delete", "cell_index": 2}]})
            newest = (await ok(client, "notebook_history", {}))["entries"][0]
            assert (
                newest["tool"] == "apply_edits"
                and newest["revision"]
                == (await ok(client, "get_notebook_revision", {}))["revision"]
            )
            await ok(client, "checkpoint", {"name": "after"})
        logged = log.read_text()
        assert "could not be written in" in logged and "No space left on device" in logged, logged
        assert "Traceback" not in logged, logged


def test_the_disk_errors_map_to_the_three_codes():
    from jupyter_mcp_server._workspace.storage_errors import storage_failure

    for number, code in (
        (errno.ENOSPC, "disk_full"),
        (errno.EDQUOT, "disk_full"),
        (errno.EROFS, "read_only"),
        (errno.EACCES, "permission_denied"),
        (errno.EPERM, "permission_denied"),
    ):
        failure = storage_failure(
            OSError(number, os.strerror(number)), "'n.ipynb'", "/somewhere", "Nothing changed."
        )
        assert failure is not None and failure.code == code
        assert failure.details["errno"] == errno.errorcode[number]
        assert "Nothing changed." in failure.message and "then call again" in failure.message
    assert storage_failure(OSError(errno.EIO, "I/O error"), "x", "/", "") is None
