"""Running code on a kernel, driven by the kernel's own messages.

There is no polling floor: the loop wakes when an iopub message arrives, and
only when the kernel is silent does it look at whether the process is still
there, so a kernel that dies mid-call is reported within a fraction of a
second rather than at the timeout. On timeout the kernel is interrupted, and
the partial outputs are returned with the status saying so.

A kernel that does not go idle after that interrupt (the code ignores or
blocks SIGINT) is still running the old code: a request sent to it would only
queue behind, time out without having run, and run unseen once the kernel
frees up. So the execution it is stuck in is handed to whoever keeps the
kernel (`on_still_running`), and :func:`ended_meanwhile` tells later calls
whether it has ended since.

The end of an execution is its idle status on iopub; its shell reply is
looked for as well while iopub is silent. A reply whose idle status never
follows within :data:`IOPUB_GRACE` (a subscriber's messages dropped, a
socket that reconnected to a restarted kernel late) ends the execution
with the reply's status and says that outputs may be missing, rather than
waiting out the timeout for a message that will not come (as nbclient
does). A request the kernel never acknowledged at all (no status, no
reply) is said to be that when it times out, not taken for code that
ignores SIGINT.

An interrupt on purpose is sent once the execution has begun (its
``execute_input`` came; see :data:`BEGIN_GRACE`), and an interrupted
execution that ends with no reply ends ``interrupted``: it never
reads as ``ok`` for lack of a reply saying otherwise.

Whether the code failed is the kernel's to say, in its shell reply
(``error``, ``aborted``), as nbclient reads it: an error output shown by
code that went on (``get_ipython().showtraceback()`` in an ``except``, a
failing IPython event callback, an ``Output`` widget's capture) leaves the
reply ``ok``. Such an output stays among the outputs; the outcome's
``error`` is left empty and its ``reason`` says the cell went on. Only a
kernel that never replied is judged by its error output.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio

from jupyter_mcp_server._kernels.outputs import CollectedOutputs, ErrorInfo, OutputCollector
from jupyter_mcp_server._kernels.widgets import Widgets

logger = logging.getLogger(__name__)

#: How long a silent kernel is waited on before its process is looked at.
LIVENESS_INTERVAL = 0.2
#: How long an interrupted kernel gets to report itself idle again.
INTERRUPT_GRACE = 3.0
#: How long an interrupt on purpose waits for the execution it is meant to stop to begin.
#: Sent earlier, it would be lost: ipykernel ignores SIGINT outside its handlers, so an
#: execution still queued would then run in full, and one caught as its handler starts
#: ends with no reply at all.
BEGIN_GRACE = 3.0
#: How long a look at whether a stuck execution has ended may spend reading what
#: it printed meanwhile (at most a socket's worth of queued messages).
DRAIN_LIMIT = 0.5
#: How long an execution whose shell reply came waits for its idle status on iopub.
IOPUB_GRACE = 4.0
#: The note of an execution whose iopub messages did not come (`IOPUB_GRACE`).
IOPUB_LOST = (
    "The kernel replied, but its output messages did not arrive: outputs may be missing from this "
    "result. Run it again to see them; if it keeps happening, call restart_notebook."
)
#: What a timed-out execution the kernel never acknowledged says.
NEVER_ACKNOWLEDGED = (
    "The execution timed out without the kernel ever acknowledging the request: it sent no status "
    "and no reply for it. The kernel is busy with code from another client, or the connection to it "
    "was lost (it was restarted elsewhere, say). Calls on it are refused at once until it answers; "
    "call restart_notebook to start a fresh one (its variables are lost)."
)
#: What an execution interrupted on purpose that the kernel never replied to says.
INTERRUPTED_WITHOUT_REPLY = (
    "The kernel was interrupted as it began or finished this execution, and it sent no reply: "
    "the code may not have run, or not in full. Run it again to be sure of its effect."
)
#: The shortest wait for a message: some clients never answer a wait of zero.
SHORTEST_WAIT = 0.01
#: ``kernel_state`` of a kernel still running code it was interrupted out of.
BUSY_AFTER_INTERRUPT = "busy_after_interrupt"

OK = "ok"
ERROR = "error"
TIMEOUT = "timeout"
INTERRUPTED = "interrupted"
GONE = "gone"


@dataclass(frozen=True)
class ExecutionRequest:
    """One execution asked of a kernel: the code and everything that decides how it runs,
    made once by whoever asks (a tool, the JSON-lines transport, an extension) and passed
    down whole to the loop that reads the kernel's messages."""

    code: str
    #: Seconds before the kernel is interrupted and the call ends as ``timeout``.
    timeout: float
    #: The output limits (``--max-output-bytes``, ``--max-output-blocks``).
    max_output_bytes: int
    max_output_blocks: int
    #: The notebook it runs for; None for a kernel addressed otherwise (a throwaway, a sandbox).
    notebook: str | None = None
    #: Expressions the kernel evaluates after the code, answered in its reply.
    user_expressions: Mapping[str, str] | None = None
    #: Told of each output as it arrives (progress, a task's stream).
    on_output: Callable[[dict[str, Any]], None] | None = None
    #: Whether a cancelled call interrupts the kernel too (``execution.cancel-interrupts``).
    interrupt_on_cancel: bool = False


@dataclass(frozen=True)
class ExecutionOutcome:
    """What one execution produced, whatever way it ended."""

    status: str
    outputs: CollectedOutputs
    execution_count: int | None
    user_expressions: dict[str, Any] | None
    duration: float
    #: Why it ended the way it did, when that is not the usual reason for its status.
    reason: str | None = None
    #: What the kernel is doing now, when a caller must know (``busy_after_interrupt``).
    kernel_state: str | None = None
    #: The kernel's widget state as the notebook stores it (``metadata.widgets``,
    #: :meth:`~.widgets.Widgets.metadata`), when this execution changed it.
    widgets: dict[str, Any] | None = None
    #: The Output widgets (model ids) that captured this execution's outputs instead of
    #: the cell, in the order they did.
    captured: tuple[str, ...] = ()


@dataclass(frozen=True)
class StillRunning:
    """An execution that timed out, or whose call was cancelled, and did not end when its
    kernel was interrupted."""

    msg_id: str
    #: When the interrupt went unanswered (``time.monotonic()``).
    since: float
    #: Why it was interrupted, as a later call reads it ("timed out", "was cancelled").
    why_interrupted: str = "timed out"


@dataclass(frozen=True)
class RunningCode:
    """The execution a kernel is running now, for a caller refused as busy to be told."""

    code: str
    #: When it started (``time.monotonic()``).
    since: float


STILL_RUNNING_AFTER_TIMEOUT = (
    "The execution timed out, and the kernel did not stop when it was interrupted: it is still "
    "running this code (the code ignores or blocks SIGINT). Until it ends, calls on this kernel are "
    "refused at once. Call restart_notebook to stop it now (its variables are lost), or enable the "
    "'kernel.restart-unresponsive' capability to have it restarted after a grace period. The outputs "
    "so far are below."
)


class KernelDied(Exception):
    """The kernel's process went away while code was running on it.

    `outputs` is what the code had produced until then.
    """

    def __init__(self, outputs: CollectedOutputs | None = None) -> None:
        super().__init__("the kernel went away while code was running on it")
        self.outputs = outputs


class _ChannelClosed(Exception):
    """The kernel's channels were stopped while a message was awaited."""


def _closed_under_us() -> bool:
    """Whether a CancelledError came from a channel closed by whoever stopped the
    kernel (zmq cancels the pending receive) rather than from this task being
    cancelled. Let through, the former cancels whatever awaits the call: the
    tool handler, and with it the server's whole request loop."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and cancelling() == 0


async def _receive(receive: Callable[..., Awaitable[Any]], timeout: float) -> Any:
    """`receive(timeout=...)`, telling a closed channel from a cancelled call."""
    try:
        return await receive(timeout=timeout)
    except asyncio.CancelledError:
        if _closed_under_us():
            raise _ChannelClosed() from None
        raise
    except AssertionError:
        # jupyter_client asserts its socket is there: the channel was closed
        # (the kernel stopped) between two receives.
        raise _ChannelClosed() from None


async def run_code(
    client: Any,
    is_alive: Callable[[], Awaitable[bool]],
    interrupt: Callable[[], Awaitable[None]],
    request: ExecutionRequest,
    *,
    interrupted: asyncio.Event | None = None,
    began: asyncio.Event | None = None,
    on_still_running: Callable[[StillRunning], None] = lambda still_running: None,
    widgets: Widgets | None = None,
) -> ExecutionOutcome:
    """Run `request`'s code on a started kernel client and collect what it says.

    `interrupted` is set by whoever interrupted this kernel on purpose
    (`interrupt_kernel`), so a `KeyboardInterrupt` reads as `interrupted`
    rather than as an error the code raised; `began` is set once the kernel says
    the code has begun, for them to wait for (:data:`BEGIN_GRACE`). Raises :class:`KernelDied`
    when the process disappears; the caller decides what that means.
    `on_still_running` hears of an execution the kernel is still running
    after its interrupt (a timeout's, a cancellation's). `widgets` are the
    kernel's widgets (:mod:`.widgets`), kept across its executions: an
    ``Output`` widget's captured outputs go there, not into the cell.
    """
    widgets = widgets if widgets is not None else Widgets()
    began = began if began is not None else asyncio.Event()
    widgets.begin()
    collector = OutputCollector(request.max_output_bytes, request.max_output_blocks)
    collector.on_output = request.on_output
    started = time.monotonic()
    deadline = started + request.timeout
    try:
        msg_id = client.execute(
            request.code,
            store_history=True,
            user_expressions=dict(request.user_expressions or {}),
            allow_stdin=False,
        )
    except AssertionError:
        # The channels are closed: the kernel was stopped before this ran.
        raise KernelDied(collector.result()) from None
    status: str | None = None
    timed_out = False
    still_running = False
    acknowledged = False
    iopub_lost = False
    reply: dict[str, Any] | None = None
    replied_at = 0.0
    try:
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0 and not timed_out:
                timed_out = True
                await _interrupt_quietly(interrupt)
                deadline = time.monotonic() + INTERRUPT_GRACE
                continue
            if wait <= 0:
                # Interrupted and still busy: the kernel ignores SIGINT. Report the
                # timeout now, and that the kernel is still running this code.
                status = TIMEOUT
                still_running = True
                on_still_running(StillRunning(msg_id, time.monotonic()))
                break
            try:
                message = await _receive(client.get_iopub_msg, min(wait, LIVENESS_INTERVAL))
            except asyncio.CancelledError:
                if request.interrupt_on_cancel:
                    await _interrupt_on_cancel(
                        client, interrupt, msg_id, on_still_running, has_begun=began.is_set()
                    )
                raise
            except queue.Empty:
                if not await is_alive():
                    raise KernelDied(collector.result()) from None
                if reply is None:
                    reply = await _reply_if_there(client, msg_id)
                    replied_at = time.monotonic()
                elif time.monotonic() - replied_at > IOPUB_GRACE:
                    logger.warning(
                        "The kernel replied to %s, but its idle status never came on iopub", msg_id
                    )
                    iopub_lost = True
                    break
                continue
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            acknowledged = True
            if _went_idle(message, request, msg_id, widgets, collector, began):
                break
        if reply is None and status is None:
            reply = await _reply_for(client, msg_id)
    except _ChannelClosed:
        # The kernel was stopped under this call (a restart, a release).
        raise KernelDied(collector.result()) from None
    reply_content = (reply or {}).get("content", {})
    if widgets.captured and not still_running:
        _tell_widgets(widgets, client)
    if reply_content.get("execution_count") is not None:
        collector.set_execution_count(reply_content["execution_count"])
    collected = collector.result()
    if status is None:
        status = _status(
            reply_content.get("status"),
            collected.error,
            timed_out=timed_out,
            interrupted_on_purpose=interrupted is not None and interrupted.is_set(),
        )
    reason = _reason(
        still_running=still_running,
        acknowledged=acknowledged,
        iopub_lost=iopub_lost,
        unreplied_interrupt=status == INTERRUPTED and reply is None and collected.error is None,
    )
    if status == OK and collected.error is not None:
        collected, reason = _went_on(collected, reason)
    if status == ERROR and not await is_alive():
        # Ended by the kernel going away (a Jupyter Server interrupts a kernel it is
        # told to shut down, so the code "raises" KeyboardInterrupt): not the code's error.
        raise KernelDied(collected)
    return ExecutionOutcome(
        status=status,
        outputs=collected,
        execution_count=collected.execution_count,
        user_expressions=reply_content.get("user_expressions") or None,
        duration=time.monotonic() - started,
        reason=reason,
        kernel_state=BUSY_AFTER_INTERRUPT if still_running else None,
        widgets=widgets.metadata() if widgets.changed else None,
        captured=tuple(widgets.captured),
    )


#: What a model reads beside an error output of a cell that did not fail.
WENT_ON = (
    "the cell went on after showing this error: the kernel replied ok, so the cell did not fail"
)


def went_on_after(error: ErrorInfo) -> str:
    """The reason of an outcome that is ``ok`` though the code showed `error`."""
    return (
        f"The cell went on after showing an error ({error.ename}): the kernel replied ok, "
        "so the cell did not fail."
    )


def _went_idle(
    message: dict[str, Any],
    request: ExecutionRequest,
    msg_id: str,
    widgets: Widgets,
    collector: OutputCollector,
    began: asyncio.Event,
) -> bool:
    """Take one iopub message of execution `msg_id`: an output for the cell, a widget's,
    or its status; whether it is the idle status that ends the execution. Any but a status
    says its code has begun (`began`)."""
    msg_type = message["header"]["msg_type"]
    content = message["content"]
    if msg_type == "status":
        return bool(content.get("execution_state") == "idle")
    began.set()
    if msg_type.startswith("comm_"):
        widgets.handle_comm(msg_type, message, request.max_output_bytes, request.max_output_blocks)
    elif not widgets.route(msg_id, msg_type, content):
        collector.add(msg_type, content)
    return False


async def _interrupt_on_cancel(
    client: Any,
    interrupt: Callable[[], Awaitable[None]],
    msg_id: str,
    on_still_running: Callable[[StillRunning], None],
    *,
    has_begun: bool,
) -> None:
    """A cancelled call stops its code too: the kernel is interrupted and given time to settle;
    one that does not is still running it."""
    # The SDK cancels through anyio, which re-delivers cancellation at every await: only a
    # shielded scope lets the kernel settle before the next request may reach it.
    with anyio.CancelScope(shield=True):
        settled = await _interrupt_and_settle(client, interrupt, msg_id, has_begun=has_begun)
    if not settled:
        on_still_running(StillRunning(msg_id, time.monotonic(), "was cancelled"))


def _tell_widgets(widgets: Widgets, client: Any) -> None:
    try:
        widgets.tell_kernel(client)
    except Exception:  # the notebook keeps what was captured either way
        logger.warning("Telling the kernel what its Output widgets hold failed", exc_info=True)


def _went_on(collected: CollectedOutputs, reason: str | None) -> tuple[CollectedOutputs, str]:
    """The outputs of an ``ok`` execution that showed an error, and why it is no failure: shown
    by code that went on (showtraceback() in an except, a failing event callback, an Output
    widget's capture), it is an output, not the cell's error."""
    assert collected.error is not None
    went_on = went_on_after(collected.error)
    return replace(collected, error=None), f"{reason} {went_on}" if reason else went_on


def _status(
    replied: str | None,
    error: ErrorInfo | None,
    *,
    timed_out: bool,
    interrupted_on_purpose: bool,
) -> str:
    """How an execution that ended ended: the kernel's reply says whether the code failed (an
    error output alone, only when there is no reply); a ``KeyboardInterrupt`` or an abort is
    ``interrupted`` when somebody interrupted the kernel on purpose."""
    if timed_out:
        return TIMEOUT
    if replied is None and error is None and interrupted_on_purpose:
        # Interrupted as its handler began or ended: no reply says the code ran in full.
        return INTERRUPTED
    if replied == "error" or (replied is None and error is not None):
        is_keyboard = error is not None and error.ename == "KeyboardInterrupt"
        return INTERRUPTED if interrupted_on_purpose and is_keyboard else ERROR
    if replied in ("aborted", "abort"):  # "abort": bash_kernel's, an older spec's
        return INTERRUPTED if interrupted_on_purpose else ERROR
    return OK


def _reason(
    *, still_running: bool, acknowledged: bool, iopub_lost: bool, unreplied_interrupt: bool
) -> str | None:
    if still_running:
        return STILL_RUNNING_AFTER_TIMEOUT if acknowledged else NEVER_ACKNOWLEDGED
    if unreplied_interrupt:
        return INTERRUPTED_WITHOUT_REPLY
    return IOPUB_LOST if iopub_lost else None


async def _reply_if_there(client: Any, msg_id: str) -> dict[str, Any] | None:
    """The shell reply to `msg_id` if it has come, without waiting for it."""
    while True:
        try:
            reply = await _receive(client.get_shell_msg, SHORTEST_WAIT)
        except queue.Empty:
            return None
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return dict(reply)


async def ended_meanwhile(client: Any, msg_id: str, *, wait: float = 0.0) -> bool:
    """Whether the execution `msg_id`, left running after its interrupt, has ended.

    Its idle status is looked for on iopub, waiting at most `wait` seconds
    for it; what the execution printed meanwhile (nobody awaits it any more)
    is read and dropped, for at most :data:`DRAIN_LIMIT` beyond that. Its
    shell reply is consumed too, so the next execution reads its own.
    """
    deadline = time.monotonic() + wait
    while True:
        remaining = deadline - time.monotonic()
        try:
            message = await _receive(client.get_iopub_msg, max(remaining, SHORTEST_WAIT))
        except queue.Empty:
            return False
        except _ChannelClosed:
            raise KernelDied() from None
        if (
            message.get("parent_header", {}).get("msg_id") == msg_id
            and message["header"]["msg_type"] == "status"
            and message["content"].get("execution_state") == "idle"
        ):
            try:
                await _reply_for(client, msg_id)
            except _ChannelClosed:
                raise KernelDied() from None
            return True
        if time.monotonic() > deadline + DRAIN_LIMIT:
            return False


async def _reply_for(client: Any, msg_id: str) -> dict[str, Any] | None:
    """The shell reply to `msg_id`; replies to earlier, abandoned calls are skipped."""
    deadline = time.monotonic() + 5.0
    while (wait := deadline - time.monotonic()) > 0:
        try:
            reply = await _receive(client.get_shell_msg, wait)
        except queue.Empty:
            return None
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return reply
    return None


async def _interrupt_and_settle(
    client: Any, interrupt: Callable[[], Awaitable[None]], msg_id: str, *, has_begun: bool
) -> bool:
    """Interrupt once the execution has begun (:data:`BEGIN_GRACE`), then wait for it to
    end; whether it did.

    Returning before it ends would let the next request reach the kernel
    while the interrupt is still being handled, and ipykernel aborts requests
    queued behind an execution that failed.
    """
    # Wait for a sign it began (at most the grace, then interrupt all the same); one that
    # ends first needs no interrupt.
    begin_by = time.monotonic() + BEGIN_GRACE
    if not has_begun and await _next_sign(client, msg_id, begin_by) == "idle":
        await _reply_for(client, msg_id)
        return True
    await _interrupt_quietly(interrupt)
    deadline = time.monotonic() + INTERRUPT_GRACE
    while (sign := await _next_sign(client, msg_id, deadline)) is not None:
        if sign == "idle":
            await _reply_for(client, msg_id)
            return True
    return False


async def _next_sign(client: Any, msg_id: str, deadline: float) -> str | None:
    """What execution `msg_id`'s next iopub message before `deadline` says: ``"idle"`` for
    its idle status, ``"begun"`` for any message but a status; None when none comes."""
    while (wait := deadline - time.monotonic()) > 0:
        try:
            message = await client.get_iopub_msg(timeout=wait)
        except queue.Empty:
            return None
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if message["header"]["msg_type"] != "status":
            return "begun"
        if message["content"].get("execution_state") == "idle":
            return "idle"
    return None


async def _interrupt_quietly(interrupt: Callable[[], Awaitable[None]]) -> None:
    try:
        await interrupt()
    except Exception:  # the timeout is reported either way
        logger.warning("Interrupting a kernel after a timeout failed", exc_info=True)
