"""Asking a kernel about itself without changing it, and without queueing behind a cell.

Every question goes over sockets of its own (a second client on the kernel's
connection), never over the client executions read: two readers of one
channel would take each other's replies. On a kernel with subshells
(ipykernel 7: ``supported_features`` lists ``kernel subshells``) the
questions go to a subshell this module creates once per kernel, so they are
answered while a cell runs. Without subshells a question would wait behind
the running cell, so it is refused at once as busy; and a kernel reached only
through a websocket (a remote Jupyter Server) has no side sockets, so its own
client is used between executions, under the kernel's lock.

Python variables are read by :mod:`.inkernel`, run as a silent execution
with an empty cell and the helper in ``user_expressions``: no execution
count, no history entry, no ``_``/``Out``, no name bound in the user's
namespace. Completion, inspection, ``is_complete`` and history are the
kernel's own requests, so they work in any language.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import logging
import queue
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jupyter_mcp_server._errors import BUSY, TIMEOUT, UNSUPPORTED, ToolFailure

logger = logging.getLogger(__name__)

#: Seconds a question may wait for its answer (the helper's own budgets are shorter).
ANSWER_TIMEOUT = 10.0
#: Seconds the kernel gets to answer kernel_info and create a subshell.
SETUP_TIMEOUT = 5.0


@dataclass
class Introspector:
    """How questions reach one kernel."""

    client: Any
    #: The subshell questions are sent to; None: the kernel has none.
    subshell_id: str | None
    language: str
    #: A client of this module's own (stopped with the kernel), not the kernel's.
    side: bool
    #: One question at a time on these sockets: each reads its own reply.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def close(self) -> None:
        if self.side:
            with contextlib.suppress(Exception):
                self.client.stop_channels()


@cache
def helper_source() -> str:
    return (Path(__file__).parent / "inkernel.py").read_text(encoding="utf-8")


def busy_failure(kernel: Any, where: str, *, websocket: bool = False) -> ToolFailure:
    """A kernel running a cell, where a question would wait behind it: refused at once."""
    running = getattr(kernel, "running", None)
    details: dict[str, Any] = {"kernel_state": "busy", "kernel_id": kernel.kernel_id}
    what = "a cell"
    if running is not None:
        details["running_code"] = running.code[:200]
        details["running_for_seconds"] = round(time.monotonic() - running.since, 1)
        what = f"code for {details['running_for_seconds']:.0f} s ({running.code[:60]!r})"
    elif getattr(kernel, "still_running", None) is not None:
        what = "an execution that did not stop when interrupted"
    why = (
        "this server reaches it only through a Jupyter Server's websocket, where a question waits "
        "behind the running cell"
        if websocket
        else "this kernel has no subshells to answer questions meanwhile (ipykernel 7 has them)"
    )
    return ToolFailure(
        BUSY,
        f"{where} is busy running {what}, and {why}. Nothing was asked. Wait for it to "
        "finish, or interrupt it with interrupt_notebook_session.",
        **details,
    )


def is_busy(kernel: Any) -> bool:
    return bool(
        kernel.lock.locked() or kernel.busy or getattr(kernel, "still_running", None) is not None
    )


async def introspector_of(kernel: Any) -> Introspector:
    """The kernel's introspector, set up on first use (kept on the kernel, closed with it)."""
    existing = getattr(kernel, "introspector", None)
    if existing is not None:
        if not existing.language and not existing.side and not is_busy(kernel):
            await _learn_language(kernel, existing)
        return existing
    side = _side_client(kernel.client)
    if side is None:
        made = Introspector(kernel.client, None, "", side=False)
        if not is_busy(kernel):  # else asked the next time it is idle
            await _learn_language(kernel, made)
    else:
        made = Introspector(side, None, "", side=True)
        try:
            info = await _request(made, "control", "kernel_info_request", {}, SETUP_TIMEOUT)
            made.language = str((info.get("language_info") or {}).get("name", ""))
            if "kernel subshells" in (info.get("supported_features") or []):
                created = await _request(
                    made, "control", "create_subshell_request", {}, SETUP_TIMEOUT
                )
                made.subshell_id = created.get("subshell_id")
        except BaseException:
            made.close()
            raise
    if getattr(kernel, "introspector", None) is None:
        kernel.introspector = made
        return made
    made.close()  # another call set one up meanwhile
    return kernel.introspector


async def _learn_language(kernel: Any, introspector: Introspector) -> None:
    """Ask a kernel reached through its own client which language it runs, between executions."""
    async with kernel.lock:
        info = await _request(introspector, "shell", "kernel_info_request", {}, SETUP_TIMEOUT)
    introspector.language = str((info.get("language_info") or {}).get("name", ""))


def _side_client(main: Any) -> Any:
    """A second client on the kernel's connection, or None when it has no ZMQ connection."""
    connection = getattr(main, "get_connection_info", None)
    if connection is None:
        return None
    from jupyter_client.asynchronous import AsyncKernelClient

    side = AsyncKernelClient()
    side.load_connection_info(connection(session=False))
    side.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=True)
    return side


def _send(introspector: Introspector, channel: str, msg_type: str, content: dict[str, Any]) -> str:
    client = introspector.client
    if not hasattr(client, "shell_channel"):  # a kernel websocket: its own framing
        return str(client.send(channel, msg_type, content))
    message = client.session.msg(msg_type, content)
    if channel == "shell" and introspector.subshell_id is not None:
        message["header"]["subshell_id"] = introspector.subshell_id
    getattr(client, f"{channel}_channel").send(message)
    return str(message["header"]["msg_id"])


async def _request(
    introspector: Introspector, channel: str, msg_type: str, content: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """The reply's content; replies to earlier questions that timed out are skipped."""
    async with introspector.lock:
        msg_id = _send(introspector, channel, msg_type, content)
        receive = getattr(introspector.client, f"get_{channel}_msg")
        deadline = time.monotonic() + timeout
        while (wait := deadline - time.monotonic()) > 0:
            try:
                reply = await receive(timeout=wait)
            except queue.Empty:
                break
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return dict(reply.get("content") or {})
    raise ToolFailure(
        TIMEOUT,
        f"The kernel did not answer {msg_type} within {timeout:g} s: it may be busy with code another "
        "client sent, or stuck. Try again, or interrupt it.",
        kernel_state="unanswered",
    )


async def ask(kernel: Any, msg_type: str, content: dict[str, Any], *, where: str) -> dict[str, Any]:
    """Send one of the kernel's own requests (complete, inspect, is_complete, history)."""
    for attempt in range(2):
        introspector = await introspector_of(kernel)
        if introspector.subshell_id is None and is_busy(kernel):
            raise busy_failure(kernel, where, websocket=not introspector.side)
        if not introspector.side:
            async with kernel.lock:
                return await _request(introspector, "shell", msg_type, content, ANSWER_TIMEOUT)
        try:
            reply = await _request(introspector, "shell", msg_type, content, ANSWER_TIMEOUT)
        except ToolFailure:
            _forget(kernel, introspector)  # whatever went wrong, the next question sets up afresh
            raise
        if reply.get("ename") != "UnknownSubshellError" or attempt:
            return reply
        # Restarted in place (by JupyterLab, say): its subshells went with the old process.
        _forget(kernel, introspector)
    raise AssertionError("unreachable")


def _forget(kernel: Any, introspector: Introspector) -> None:
    if getattr(kernel, "introspector", None) is introspector:
        kernel.introspector = None
    introspector.close()


async def run_helper(kernel: Any, request: dict[str, Any], *, where: str) -> dict[str, Any]:
    """Run :mod:`.inkernel` on a Python kernel with `request`; its JSON answer."""
    introspector = await introspector_of(kernel)
    if introspector.language and introspector.language != "python":
        raise ToolFailure(
            UNSUPPORTED,
            f"{where} runs {introspector.language}, and variables and tracebacks can be read only from "
            "a Python kernel. complete (all modes) and kernel_history work in any language; look at "
            "variables with execute_code.",
            language=introspector.language,
        )
    expression = (
        "(lambda g: (exec(compile(g['__source__'], '<jupyter-mcp-introspection>', 'exec'), g), "
        "g['main'](g['__request__']))[1])"
        f"({{'__builtins__': __import__('builtins'), '__name__': 'jupyter_mcp_introspection', "
        f"'__source__': {helper_source()!r}, '__request__': {json.dumps(request)!r}}})"
    )
    content = {
        "code": "",
        "silent": True,
        "store_history": False,
        "user_expressions": {"answer": expression},
        "allow_stdin": False,
        "stop_on_error": False,
    }
    reply = await ask(kernel, "execute_request", content, where=where)
    answered = (reply.get("user_expressions") or {}).get("answer") or {}
    instead = "Look at it with execute_code instead (that runs a cell)."
    if answered.get("status") != "ok":
        raise ToolFailure(
            UNSUPPORTED,
            f"{where} could not run the introspection helper "
            f"({answered.get('ename', reply.get('status'))}: {str(answered.get('evalue', ''))[:200]}). {instead}",
        )
    try:
        result = json.loads(ast.literal_eval(answered["data"]["text/plain"]))
    except (KeyError, ValueError, SyntaxError, TypeError):
        raise ToolFailure(
            UNSUPPORTED,
            f"{where} answered the introspection helper in a form it cannot read. {instead}",
        ) from None
    if "failure" in result:
        raise ToolFailure(
            UNSUPPORTED, f"Reading the variables of {where} failed: {result['failure']}. {instead}"
        )
    return dict(result)
