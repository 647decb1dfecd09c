"""Remote faults: a real Jupyter Server and a real Kernel Gateway failing under ``--jupyter-url``.

Each fault is real: the remote process SIGKILLed (and started again on the
same port), every connection cut by a TCP proxy between the two servers,
every byte the remote sends held back by that proxy (1 s in the default suite,
2 s in the slow one), the remote refusing new kernels (a gateway at its kernel
limit, a remote that is not running). The 2 s-late variants are marked slow (a
gateway's kernel start alone is four round trips); the rest run by default.
Against each, every call ends with a stable code within seconds of the fault
being detectable (a refused connection, a closed socket), never at the end
of its timeout: a kernel that died with its server is ``kernel_gone``, not a
hung call; a kernel that outlived a dropped websocket is reconnected and
none of its output is lost; a slow remote is slow, not broken.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import error_code, free_port, jupyter_server_process, ok, refused, text_of
from test_gateway import TOKEN as GATEWAY_TOKEN
from test_gateway import kernel_gateway
from test_jupyter_server import NO_PRESTART, serve_logged, wait_for_file

SERVER_TOKEN = "remote-faults-token-3e8a1c"
KINDS = ["jupyter-server", "kernel-gateway"]
#: What "within seconds of the fault" means here, on a loaded 2-core machine.
PROMPTLY = 8.0


@contextlib.contextmanager
def remote(
    kind: str, tmp_path: Path, port: int | None, started: list[Any]
) -> Iterator[tuple[str, Path]]:
    """A real Jupyter Server or Kernel Gateway on `port` (None: any free one): (url, the
    kernels' directory)."""
    if kind == "jupyter-server":
        with jupyter_server_process(tmp_path, SERVER_TOKEN, port=port, started=started) as (
            url,
            root,
            _,
        ):
            yield url, root
    else:
        with kernel_gateway(tmp_path, port=port, started=started) as (url, root, _):
            yield url, root


def token_of(kind: str) -> str:
    return SERVER_TOKEN if kind == "jupyter-server" else GATEWAY_TOKEN


def kernel_processes_under(directory: Path) -> set[int]:
    """Kernels whose connection file is in a remote's runtime directory under `directory`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                arguments = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                if "ipykernel_launcher" in " ".join(arguments) and any(
                    argument.startswith(str(directory))
                    and "runtime" in argument
                    and "/kernel-" in argument
                    for argument in arguments
                ):
                    found.add(int(entry.name))
    return found


def end_orphans(directory: Path) -> set[int]:
    """SIGKILL the kernels a killed remote left behind (this test started them)."""
    orphans = kernel_processes_under(directory)
    for pid in orphans:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return orphans


class FaultyProxy:
    """A TCP proxy on loopback between this server and the remote: it can cut every
    connection, refuse new ones, and hold back everything the remote sends by `delay` s."""

    def __init__(self, target: str, delay: float = 0.0) -> None:
        host_port = target.split("//", 1)[1].split("/", 1)[0]
        self.target_port = int(host_port.rsplit(":", 1)[1])
        self.base = target.split(host_port, 1)[1]
        self.delay = delay
        self.refusing = False
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.base_events.Server | None = None
        self.cuts = 0
        self.delayed_chunks = 0

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}{self.base}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target_port
            )
        except OSError:
            writer.transport.abort()
            return
        self.writers.update({writer, upstream_writer})

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        async def held_back(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            # Each chunk leaves `delay` s after it came, in order: a slow link, not a slow server.
            chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

            async def read() -> None:
                try:
                    while data := await source.read(65536):
                        chunks.put_nowait((time.monotonic() + self.delay, data))
                except (ConnectionError, OSError):
                    pass
                chunks.put_nowait((time.monotonic() + self.delay, b""))

            reading = asyncio.ensure_future(read())
            try:
                while True:
                    due, data = await chunks.get()
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    if not data:
                        break
                    self.delayed_chunks += 1
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                reading.cancel()
                sink.close()

        answers = held_back if self.delay else pump
        await asyncio.gather(
            pump(reader, upstream_writer), answers(upstream_reader, writer), return_exceptions=True
        )
        self.writers.difference_update({writer, upstream_writer})

    def cut(self) -> None:
        """Every open connection ends at once, as when a network goes away."""
        self.cuts += len(self.writers)
        for writer in list(self.writers):
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


# --- The remote SIGKILLed mid-run, then started again -------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_a_remote_killed_mid_run_is_kernel_gone_within_seconds_then_restarted(
    workspace, tmp_path, kind
):
    port = free_port()
    started: list[Any] = []
    log = tmp_path / "server.log"
    with contextlib.ExitStack() as stack:
        url, root = stack.enter_context(remote(kind, tmp_path, port, started))
        async with serve_logged(
            workspace,
            log,
            "--jupyter-url",
            url,
            *NO_PRESTART,
            env={"JUPYTER_TOKEN": token_of(kind)},
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "killed.ipynb", "mode": "create"})
            await ok(client, "execute_code", {"code": "kept = 1"})
            code = "import time\nprint('before', flush=True)\nopen('go-kill', 'w').close()\ntime.sleep(60)"
            running = asyncio.create_task(
                client.call_tool("execute_code", {"code": code, "timeout": 120})
            )
            await wait_for_file(root / "go-kill")
            await asyncio.sleep(0.3)
            assert kernel_processes_under(tmp_path), (
                "the kernel's process is not where this test looks"
            )
            started[-1].send_signal(signal.SIGKILL)
            started[-1].wait()
            killed_at = time.monotonic()
            # Before: the call waited out the websocket's 60 s reconnect window.
            result = await asyncio.wait_for(running, 30)
            took = time.monotonic() - killed_at
            assert error_code(result) == "kernel_gone", text_of(result)
            assert took < PROMPTLY, f"kernel_gone came {took:.1f}s after the remote died"
            # It says why: the server is not running (the kernel ended with it), and what to do.
            assert "refused connections" in text_of(result) and "restart_notebook" in text_of(
                result
            ), text_of(result)
            # The next call is told at once; a restart while the remote is down says it cannot reach it.
            asked = time.monotonic()
            await refused(client, "execute_code", {"code": "kept"}, "kernel_gone")
            restart = await client.call_tool("restart_notebook", {})
            assert error_code(restart) == "not_found" and "Could not reach" in text_of(restart), (
                text_of(restart)
            )
            # A remote that is not running refuses new kernels: said at once, naming what to check.
            other = await refused(
                client,
                "use_notebook",
                {"notebook_name": "other.ipynb", "mode": "create"},
                "not_found",
            )
            assert "Could not reach" in text_of(other) and "the server is running" in text_of(
                other
            ), text_of(other)
            assert time.monotonic() - asked < PROMPTLY
            orphans = end_orphans(tmp_path)
            # The remote again, on the same port: a restart starts a kernel there, and it runs.
            stack.close()
            stack.enter_context(remote(kind, tmp_path, port, started))
            restarted = await ok(client, "restart_notebook", {})
            assert restarted["kernel_id"]
            assert text_of(await client.call_tool("execute_code", {"code": "'back'"})) == "'back'"
            await ok(client, "use_notebook", {"notebook_name": "other.ipynb"})
            assert text_of(await client.call_tool("execute_code", {"code": "6 * 7"})) == "42"
            await ok(client, "unuse_notebook", {"notebook_name": "killed.ipynb"})
            await ok(client, "unuse_notebook", {"notebook_name": "other.ipynb"})
    print(
        f"\n{kind}: kernel_gone {took:.1f}s after SIGKILL; kernels the killed remote left running: {len(orphans)}"
    )
    text = log.read_text()
    assert "refused connections" in text, text[-3000:]
    assert token_of(kind) not in text


# --- The websocket dropped, the kernel alive ---------------------------------------------


async def test_a_gateway_kernel_outlives_a_dropped_websocket_and_loses_no_output(
    workspace, tmp_path
):
    """As tests/jupyter/test_jupyter_server.py does for a Jupyter Server: every connection cut and
    new ones refused (by a proxy, the gateway alive) while the kernel prints."""
    with kernel_gateway(tmp_path) as (url, root, _):
        proxy = FaultyProxy(url)
        proxied = await proxy.start()
        log = tmp_path / "server.log"
        try:
            async with serve_logged(
                workspace,
                log,
                "--jupyter-url",
                proxied,
                *NO_PRESTART,
                env={"JUPYTER_TOKEN": GATEWAY_TOKEN},
            ) as client:
                await ok(client, "use_notebook", {"notebook_name": "drop.ipynb", "mode": "create"})
                await ok(client, "execute_code", {"code": "kept = 'still here'"})
                code = (
                    "import time\nprint('start', flush=True)\nopen('go-drop', 'w').close()\ntime.sleep(2.0)\n"
                    "for i in range(5):\n    print(i, flush=True)\n    time.sleep(0.2)\n"
                    "time.sleep(1.5)\nprint('end', flush=True)"
                )
                running = asyncio.create_task(
                    client.call_tool("execute_code", {"code": code, "timeout": 60})
                )
                await wait_for_file(root / "go-drop")
                await asyncio.sleep(0.7)
                proxy.refusing = True
                proxy.cut()
                assert proxy.cuts >= 2
                await asyncio.sleep(2.5)
                proxy.refusing = False
                result = await asyncio.wait_for(running, 30)
                assert not result.is_error, text_of(result)
                assert text_of(result) == "start\n0\n1\n2\n3\n4\nend\n", text_of(result)
                assert (
                    text_of(await client.call_tool("execute_code", {"code": "print(kept)"}))
                    == "still here\n"
                )
        finally:
            await proxy.close()
    text = log.read_text()
    assert "reconnecting" in text and "Reconnected" in text, text[-3000:]


# --- Every answer late -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "delay"),
    [
        ("jupyter-server", 1.0),
        pytest.param("jupyter-server", 2.0, marks=pytest.mark.slow),
        pytest.param("kernel-gateway", 2.0, marks=pytest.mark.slow),
    ],
)
async def test_a_remote_whose_every_answer_is_late_is_slow_not_broken(
    workspace, tmp_path, kind, delay
):
    with remote(kind, tmp_path, None, []) as (url, _):
        proxy = FaultyProxy(url, delay=delay)
        proxied = await proxy.start()
        log = tmp_path / "server.log"
        try:
            async with serve_logged(
                workspace,
                log,
                "--jupyter-url",
                proxied,
                *NO_PRESTART,
                env={"JUPYTER_TOKEN": token_of(kind)},
            ) as client:
                await ok(client, "use_notebook", {"notebook_name": "slow.ipynb", "mode": "create"})
                began = time.monotonic()
                ran = await client.call_tool(
                    "execute_code",
                    {
                        "code": "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.5)\n6 * 7"
                    },
                )
                took = time.monotonic() - began
                assert not ran.is_error, text_of(ran)
                assert (
                    ran.structured_content["status"] == "ok" and text_of(ran) == "0\n1\n2\n\n42"
                ), text_of(ran)
                assert "missing" not in text_of(ran)
                assert delay <= took < 20, took
                # A timeout on a slow link is still the code's timeout, with its partial output.
                timed = await client.call_tool(
                    "execute_code",
                    {
                        "code": "print('before', flush=True)\nimport time\ntime.sleep(30)",
                        "timeout": 3,
                    },
                )
                assert error_code(timed) == "timeout" and "before" in text_of(timed), text_of(timed)
                assert (
                    text_of(await client.call_tool("execute_code", {"code": "'after'"}))
                    == "'after'"
                )
                assert proxy.delayed_chunks > 0
                await ok(client, "unuse_notebook", {"notebook_name": "slow.ipynb"})
        finally:
            await proxy.close()


# --- Refusing new kernels ----------------------------------------------------------


async def test_a_gateway_refusing_new_kernels_is_kernel_limit_at_once(workspace, tmp_path):
    with kernel_gateway(tmp_path, "--KernelGatewayApp.max_kernels=1") as (url, _, _):
        log = tmp_path / "server.log"
        async with serve_logged(
            workspace, log, "--jupyter-url", url, *NO_PRESTART, env={"JUPYTER_TOKEN": GATEWAY_TOKEN}
        ) as client:
            await ok(client, "use_notebook", {"notebook_name": "one.ipynb", "mode": "create"})
            began = time.monotonic()
            result = await refused(
                client,
                "use_notebook",
                {"notebook_name": "two.ipynb", "mode": "create"},
                "kernel_limit",
            )
            assert time.monotonic() - began < PROMPTLY
            assert "Resource Limit" in text_of(result) and "unuse_notebook" in text_of(result), (
                text_of(result)
            )
            # The first kernel is unharmed.
            assert (
                text_of(
                    await client.call_tool(
                        "execute_code", {"notebook_name": "one.ipynb", "code": "6 * 7"}
                    )
                )
                == "42"
            )
