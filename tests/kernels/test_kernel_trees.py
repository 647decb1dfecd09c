"""Every process a kernel starts ends with the kernel: no orphans left running.

A cell starts five kinds of processes: a `subprocess` child, an `os.fork()`
worker, a `multiprocessing` process, a child in a session of its own
(`start_new_session=True`), and a daemon (fork, `setsid()`, fork again, the
middle process exits, so the daemon is nobody's child the kernel knows). Then
the kernel goes away in each way it can: the server is SIGKILLed, the
notebook is restarted, released, or its idle kernel is culled. Every process
of the kernel's tree must be gone within seconds. Before the kernels were
kept (``_kernels/keeper.py``) the SIGKILLed server left all five running, and
a restart or release left the two that had left the kernel's session.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, install_packages
from rpc import RawServer, alive, descendants, error_code, text_of, wait_until_gone

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="process trees are tied to the server on Linux"
)

NOTEBOOK = "tree.ipynb"

#: Prints the pids of the processes it started, all sleeping for ten minutes.
START_A_TREE = """\
import multiprocessing, os, subprocess, time
started = [subprocess.Popen(['sleep', '600']).pid]
started.append(subprocess.Popen(['sleep', '600'], start_new_session=True).pid)
worker = os.fork()
if worker == 0:
    time.sleep(600)
    os._exit(0)
started.append(worker)
process = multiprocessing.get_context('fork').Process(target=time.sleep, args=(600,))
process.start()
started.append(process.pid)
read_end, write_end = os.pipe()
middle = os.fork()
if middle == 0:
    os.setsid()
    daemon = os.fork()
    if daemon == 0:
        time.sleep(600)
        os._exit(0)
    os.write(write_end, str(daemon).encode())
    os._exit(0)
os.waitpid(middle, 0)
started.append(int(os.read(read_end, 32)))
print(' '.join(map(str, started)))
"""

#: How long a kernel's tree may take to go once its kernel is stopped or its server killed.
GONE_WITHIN = 10.0


def started_at(pid: int) -> int | None:
    """A process's start time (clock ticks since boot): with its pid, it names one process."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    return None


@pytest.fixture
def started_processes() -> Iterator[dict[int, int | None]]:
    """The processes a test started through a kernel (pid: start time); whatever the
    server left alive is killed afterwards, so a failing run leaves no ten-minute
    sleepers behind. A pid reused since by another process is left alone."""
    processes: dict[int, int | None] = {}
    yield processes
    for pid, start in processes.items():
        if start is not None and alive(pid) and started_at(pid) == start:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def server_in(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> RawServer:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    return RawServer(
        workspace,
        "--capability",
        "kernel.prestart=off",
        *args,
        env={"JUPYTER_RUNTIME_DIR": str(runtime), **(env or {})},
        stderr=tmp_path / "server.log",
    )


def keepers(server: int) -> set[int]:
    """The keeper processes below `server` (one, once a kernel was started)."""
    found = set()
    for pid in descendants(server):
        with contextlib.suppress(OSError):
            if b"keeper.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
    return found


def kernel_pid(server: RawServer, notebook: str) -> int:
    result = server.call(
        "execute_code", {"notebook_name": notebook, "code": "import os; print(os.getpid())"}
    )
    assert not result.get("isError"), text_of(result)
    return int(text_of(result).split()[0])


def start_a_tree(
    server: RawServer, started: dict[int, int | None], notebook: str = NOTEBOOK
) -> set[int]:
    """Run the cell on the notebook's kernel; the kernel's whole tree (the kernel and all
    below it, never the keeper), every process of it running."""
    kernel = kernel_pid(server, notebook)
    result = server.call(
        "execute_code", {"notebook_name": notebook, "code": START_A_TREE, "timeout": 60}
    )
    assert not result.get("isError"), text_of(result)
    children = {int(pid) for pid in text_of(result).split()}
    started.update({pid: started_at(pid) for pid in children})
    tree = {kernel} | descendants(kernel)
    assert children <= tree, f"the kernel's tree {sorted(tree)} lacks some of {sorted(children)}"
    assert len(children) == 5 and all(alive(pid) for pid in children), text_of(result)
    assert not tree & keepers(server.pid)
    return tree


def test_a_sigkilled_servers_kernel_takes_its_whole_tree_with_it(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    server = server_in(tmp_path)
    server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
    tree = start_a_tree(server, started_processes)
    server.kill()
    left = wait_until_gone(tree, GONE_WITHIN)
    assert not left, (
        f"{len(left)} of the kernel's {len(tree)} processes outlived the SIGKILLed server: {sorted(left)}"
    )


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_one_keeper_ends_one_kernels_tree_and_leaves_anothers_running(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    server = server_in(tmp_path)
    server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
    server.ok("use_notebook", {"notebook_name": "other.ipynb", "mode": "create"})
    tree = start_a_tree(server, started_processes)
    other = start_a_tree(server, started_processes, "other.ipynb")
    (keeper,) = keepers(server.pid)
    assert {parent_of(kernel_pid(server, each)) for each in (NOTEBOOK, "other.ipynb")} == {keeper}
    server.ok("restart_notebook", {"notebook_name": NOTEBOOK})
    left = wait_until_gone(tree, GONE_WITHIN)
    assert not left, f"{len(left)} of the restarted kernel's tree outlived it: {sorted(left)}"
    assert all(alive(pid) for pid in other), "ending one kernel's tree ended another's"
    assert keepers(server.pid) == {keeper}, "the restart started a second keeper"
    server.kill()
    left = wait_until_gone(other | {keeper}, GONE_WITHIN)
    assert not left, f"{len(left)} processes outlived the SIGKILLed server: {sorted(left)}"


def test_a_killed_keeper_takes_its_kernels_and_a_new_one_starts_the_next(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    with server_in(tmp_path) as server:
        server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
        kernel = kernel_pid(server, NOTEBOOK)
        (keeper,) = keepers(server.pid)
        os.kill(keeper, signal.SIGKILL)
        assert not wait_until_gone({kernel}, GONE_WITHIN), "the kernel outlived its keeper"
        deadline = time.monotonic() + 60
        while True:
            result = server.call(
                "execute_code", {"notebook_name": NOTEBOOK, "code": "import os; print(os.getpid())"}
            )
            if not result.get("isError"):
                break
            assert time.monotonic() < deadline, text_of(result)
            server.ok("restart_notebook", {"notebook_name": NOTEBOOK})
        (new_keeper,) = keepers(server.pid)
        assert new_keeper != keeper
        assert parent_of(int(text_of(result).split()[0])) == new_keeper


def test_restart_notebook_stops_the_whole_tree(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    with server_in(tmp_path) as server:
        server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
        tree = start_a_tree(server, started_processes)
        server.ok("restart_notebook", {"notebook_name": NOTEBOOK})
        left = wait_until_gone(tree, GONE_WITHIN)
        assert not left, (
            f"{len(left)} of the kernel's {len(tree)} processes outlived restart_notebook: {sorted(left)}"
        )


def test_unuse_notebook_stops_the_whole_tree(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    with server_in(tmp_path) as server:
        server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
        tree = start_a_tree(server, started_processes)
        server.ok("unuse_notebook", {"notebook_name": NOTEBOOK})
        left = wait_until_gone(tree, GONE_WITHIN)
        assert not left, (
            f"{len(left)} of the kernel's {len(tree)} processes outlived unuse_notebook: {sorted(left)}"
        )
        assert descendants(server.pid) == keepers(server.pid), (
            "a released notebook's kernel left processes under the server"
        )


def test_a_culled_kernel_stops_its_whole_tree(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    with server_in(tmp_path, "--idle-timeout", "2") as server:
        server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
        started = time.monotonic()
        tree = start_a_tree(server, started_processes)
        left = wait_until_gone(tree, 2 + GONE_WITHIN)
        assert not left, (
            f"{len(left)} of the kernel's {len(tree)} processes outlived its culling: {sorted(left)}"
        )
        assert time.monotonic() - started > 2, "culled before it was idle for --idle-timeout"


def test_a_kernel_a_local_provisioner_starts_is_kept_too(
    tmp_path: Path, started_processes: dict[int, int | None]
) -> None:
    """A kernelspec naming a kernel provisioner (``metadata.kernel_provisioner``) is started
    through it; one that starts the kernel here (a LocalProvisioner) runs it under the keeper,
    whose tree ends with the SIGKILLed server as any local kernel's."""
    site = install_packages(
        tmp_path / "site", REPO / "tests" / "fixtures" / "recording-provisioner"
    )
    specs = tmp_path / "share"
    (specs / "kernels" / "recorded").mkdir(parents=True)
    (specs / "kernels" / "recorded" / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python, recorded",
                "language": "python",
                "metadata": {"kernel_provisioner": {"provisioner_name": "recording-provisioner"}},
            }
        )
    )
    launches = tmp_path / "launches.jsonl"
    server = server_in(
        tmp_path,
        "--kernel",
        "recorded",
        env={
            "PYTHONPATH": str(site),
            "JUPYTER_PATH": str(specs),
            "RECORDING_PROVISIONER_LOG": str(launches),
        },
    )
    server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
    tree = start_a_tree(server, started_processes)
    command = json.loads(launches.read_text().splitlines()[0])
    # Its command is the kernelspec's, and the keeper started it.
    assert command[:3] == [sys.executable, "-m", "ipykernel_launcher"], command
    kernel = kernel_pid(server, NOTEBOOK)
    assert parent_of(kernel) in keepers(server.pid), "the provisioned kernel is not the keeper's"
    server.kill()
    left = wait_until_gone(tree, GONE_WITHIN)
    assert not left, (
        f"{len(left)} of the provisioned kernel's {len(tree)} processes outlived the SIGKILLed "
        f"server: {sorted(left)}"
    )


def test_a_kernel_that_cannot_start_is_said_and_the_keeper_starts_the_next(
    tmp_path: Path,
) -> None:
    """A kernelspec whose program is missing: the keeper reports the failed start (as Popen
    would raise it), the call says what failed with a stable code (it was the SDK's bare
    "Error executing tool use_notebook"), and the same keeper starts the next kernel."""
    specs = tmp_path / "share"
    (specs / "kernels" / "broken").mkdir(parents=True)
    (specs / "kernels" / "broken" / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(tmp_path / "no-such-kernel"), "-f", "{connection_file}"],
                "display_name": "Broken",
                "language": "python",
            }
        )
    )
    with server_in(tmp_path, env={"JUPYTER_PATH": str(specs)}) as server:
        result = server.call(
            "use_notebook",
            {"notebook_name": "broken.ipynb", "mode": "create", "kernel_name": "broken"},
        )
        assert result.get("isError") and "no-such-kernel" in text_of(result), text_of(result)
        assert error_code(result) == "invalid_argument", result
        (keeper,) = keepers(server.pid)
        server.ok("use_notebook", {"notebook_name": NOTEBOOK, "mode": "create"})
        assert parent_of(kernel_pid(server, NOTEBOOK)) == keeper
        assert keepers(server.pid) == {keeper}
