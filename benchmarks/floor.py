"""The floor: what each workload costs with no MCP server in between.

Measured in the harness process, in the same run as our server and
alternating with it, so the ratio in the table is ours over the least that
work can cost on this machine at that moment:

- execution: raw ``jupyter_client`` on a warm ``ipykernel`` (execute, read
  iopub until the kernel reports idle for that request, which is what our
  server waits for, then take the shell reply);
- a first execution: ``AsyncKernelManager.start_kernel`` to ready, plus 1+1;
- reading: ``nbformat.read`` of the same file;
- writing once: serializing a notebook and writing it atomically (fsync),
  our store's own way, which the insert targets allow on top of an insert.

The spawn floor is not here: it is the SDK's minimal server, a profile
(``profiles.MINIMAL``) spawned by the harness like any other server.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any


class RawKernel:
    """A kernel started and driven with jupyter_client and nothing else."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.manager: Any = None
        self.client: Any = None

    async def start(self) -> None:
        from jupyter_client.manager import AsyncKernelManager

        self.manager = AsyncKernelManager(kernel_name="python3")
        await self.manager.start_kernel(cwd=str(self.cwd), stderr=subprocess.DEVNULL)
        self.client = self.manager.client()
        self.client.start_channels()
        await self.client.wait_for_ready(timeout=60)

    async def execute(self, code: str) -> list[dict[str, Any]]:
        """Run code; wait for idle on iopub (as our server does), then the shell reply."""
        client = self.client
        msg_id = client.execute(code, store_history=True, allow_stdin=False)
        outputs: list[dict[str, Any]] = []
        while True:
            message = await client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if kind == "status":
                if message["content"]["execution_state"] == "idle":
                    break
                continue
            outputs.append(message["content"])
        while True:
            reply = await client.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        return outputs

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        with contextlib.suppress(Exception):
            await self.manager.shutdown_kernel(now=True)
        with contextlib.suppress(Exception):
            self.manager.cleanup_connection_file()


@contextlib.asynccontextmanager
async def warm_kernel(cwd: Path) -> AsyncIterator[RawKernel]:
    """A raw kernel, started and ready, shut down on leaving."""
    kernel = RawKernel(cwd)
    try:
        await kernel.start()
        yield kernel
    finally:
        await kernel.stop()


async def first_execution(cwd: Path) -> float:
    """Seconds from a raw kernel start to the reply of 1+1 on it (the shutdown is not timed)."""
    kernel = RawKernel(cwd)
    try:
        started = time.perf_counter()
        await kernel.start()
        await kernel.execute("1+1")
        return time.perf_counter() - started
    finally:
        await kernel.stop()


def read_notebook(path: Path) -> Any:
    import nbformat

    return nbformat.read(str(path), as_version=4)


def read_in_a_new_process(path: Path) -> float:
    """Seconds a new Python process of this environment takes to import nbformat and read
    `path`: what any server that reads notebooks with nbformat pays from its spawn."""
    import subprocess
    import sys
    import time

    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, nbformat; nbformat.read(sys.argv[1], as_version=4)",
            str(path),
        ],
        check=True,
    )
    return time.perf_counter() - started


def atomic_writer(directory: Path) -> Callable[[Any], None]:
    """Write a notebook to ``directory/copy.ipynb`` as our store does: serialize, atomic write."""
    from jupyter_mcp_server._store import formats
    from jupyter_mcp_server._workspace import Workspace

    space = Workspace(directory)

    def write(notebook: Any) -> None:
        space.write_atomic("copy.ipynb", formats.serialize_notebook(notebook, formats.IPYNB))

    return write


def nbformat_durable_writer(directory: Path) -> Callable[[Any], None]:
    """Write a notebook to ``directory/durable.ipynb`` durably with nbformat alone: the least
    any change to a notebook costs, since the whole file is rewritten. ``nbformat.writes``
    (its validation included), a temporary file, ``fsync``, rename, ``fsync`` of the directory."""
    import os

    import nbformat

    target = directory / "durable.ipynb"
    temporary = directory / ".durable.ipynb.tmp"

    def write(notebook: Any) -> None:
        data = nbformat.writes(notebook).encode("utf-8")
        with open(temporary, "wb") as file:
            file.write(data)
            if not data.endswith(b"\n"):
                file.write(b"\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    return write
