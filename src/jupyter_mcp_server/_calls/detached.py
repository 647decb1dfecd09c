"""Calls that outlive their request: detached runs and tasks, one mechanism with two faces.

A long cell breaks a tool call: clients give up after a few minutes. So a
call can go on without its request: ``detach=true`` on an execution tool
answers at once with a ``run_id`` (``get_run`` and ``cancel_run`` follow it),
and on the 2026-07-28 protocol generation a client that declares the tasks
extension gets a task (``tasks.py``). Both are a :class:`Run` in the
server's :class:`RunRegistry`:

- its call runs in a task of its own, in a context of its own (nothing of
  the request that started it: no progress, no log level), hearing its
  outputs itself (:meth:`Run.on_output`), so it goes on when its client
  disconnects, and every output it stores in a notebook is stored;
- runs on one kernel (a *queue*: the notebook's kernel) go one at a time in
  the order they came, each holding the queue for its whole call, so two
  detached runs never interleave their cells; each says its place. A queue
  holds at most :data:`MAX_QUEUED` runs; one more is refused (``busy``);
- cancelling a run interrupts the kernel it is running on (the execution
  hooks say which), or, while it waits for its turn, stops it from starting;
- a finished run is kept for ``ttl`` seconds (``JUPYTER_MCP_TASK_TTL_SECONDS``)
  and at most :data:`MAX_FINISHED` of them, oldest first out;
- a run is visible only to its owner (whoever created it says who that is: a
  :attr:`Caller.owner`, one agent of one person) and, when its caller was
  identified, to the same person through the same client on any other
  connection (a client that reconnected, holding the run's id:
  :meth:`Caller.may_follow`); any other id, or an expired one, is unknown. It
  runs as its caller (:func:`serving_caller`), so what it writes and runs is
  theirs in the histories and the audit log.

Nothing here imports the tools or a protocol feature: each face passes what
it needs (`prepare`, run first inside the run's task).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_mcp_server._calls.callers import Caller, set_serving_caller
from jupyter_mcp_server._errors import BUSY, UNSUPPORTED, ToolFailure
from jupyter_mcp_server._hooks import Hooks
from jupyter_mcp_server._kernels.outputs import PROGRESS, describe, payload_size

#: Runs one queue (one kernel) holds at once, the running one included.
MAX_QUEUED = 16
#: Finished runs kept at once (each for at most its ttl).
MAX_FINISHED = 256
#: Output bytes a running run keeps for polling (older outputs are dropped first and counted;
#: a notebook's cells keep theirs in the notebook). A finished run keeps only its result.
MAX_KEPT_BYTES = 2 * 1024 * 1024

#: The tasks extension: a tool's ``_meta`` under this key says whether it supports tasks.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

QUEUED = "queued"
WORKING = "working"
#: Waiting for its client to answer what it asked (:func:`request_input`).
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


@dataclasses.dataclass
class Run:
    """One call going on without its request."""

    run_id: str
    owner: str
    tool: str
    created: float
    updated: float
    ttl: float
    #: Who started it, named in what it leaves behind.
    caller: Caller | None = None
    #: The queue it waits in and holds (a kernel), if any.
    queue: str | None = None
    #: The notebook it works on, if any (said to its owner).
    notebook: str | None = None
    status: str = QUEUED
    status_message: str | None = None
    #: The last step the call announced ("cell 3 of 10 …: ok").
    progress: str | None = None
    #: What the call returned (a ``CallToolResult``), once it has.
    result: Any = None
    #: A JSON-RPC error (``code``, ``message``) when the call failed outside its result.
    error: dict[str, Any] | None = None
    ended: float | None = None
    #: The kernel it is running code on right now (from the execution hooks).
    kernel_id: str | None = None
    cancel_requested: bool = False
    runner: asyncio.Task[Any] | None = None
    #: The outputs it produced, oldest dropped first past MAX_KEPT_BYTES.
    outputs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: How many outputs were dropped from the front of `outputs`.
    dropped: int = 0
    #: What its app shows of it as it goes (a client with apps started it), filled by the tools.
    shown: Any = None
    #: Whether its client can answer what it asks (a task: tasks/update), so it may ask.
    answerable: bool = False
    #: What it asked its client and is waiting for, by server-minted key.
    input_requests: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: Whether the request that started it still waits for it (a task not yet answered): what
    #: it asks with ``ask`` until then ends the request ``input_required``, outside any task.
    gathering: bool = False
    #: Set when it has gathered what it asked for (or asks through the task): time to be a task.
    gathered: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    _answers: dict[str, asyncio.Future[Any]] = dataclasses.field(default_factory=dict)
    _kept_bytes: int = 0

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        return self.ended is not None and now > self.ended + self.ttl

    @property
    def output_count(self) -> int:
        """Outputs produced so far (dropped ones included): the next output's number."""
        return self.dropped + len(self.outputs)

    def outputs_since(self, since: int) -> tuple[list[dict[str, Any]], int]:
        """The outputs numbered `since` and later that are still kept, and how many of those
        asked for were dropped."""
        start = max(since - self.dropped, 0)
        missed = max(self.dropped - since, 0)
        return self.outputs[start:], missed

    def on_output(self, output: dict[str, Any]) -> None:
        """What the call's executions produce, as they produce it."""
        self.updated = time.time()
        if output.get("output_type") == PROGRESS:
            self.progress = str(output.get("text", ""))
            self.status_message = self.progress
            return
        self.outputs.append(output)
        self._kept_bytes += payload_size(output)
        while self._kept_bytes > MAX_KEPT_BYTES and len(self.outputs) > 1:
            self._kept_bytes -= payload_size(self.outputs.pop(0))
            self.dropped += 1
        summary = _summary(output)
        if summary:
            self.status_message = f"Latest output: {summary}"

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Ask the client `requests` (by the caller's names) and wait until it answered them all."""
        loop = asyncio.get_running_loop()
        minted = {name: uuid.uuid4().hex[:16] for name in requests}
        waiting = {key: loop.create_future() for key in minted.values()}
        for name, key in minted.items():
            self.input_requests[key] = requests[name]
            self._answers[key] = waiting[key]
        # Only a task can be answered: a request still waiting for it answers with the task now.
        self.gathered.set()
        self.status, self.status_message = (
            INPUT_REQUIRED,
            "Waiting for the client's answer (tasks/update).",
        )
        self.updated = time.time()
        try:
            await asyncio.gather(*waiting.values())
        finally:
            for key in minted.values():
                self.input_requests.pop(key, None)
                self._answers.pop(key, None)
            if not self.input_requests and not self.finished:
                self.status, self.status_message = WORKING, "Running."
                self.updated = time.time()
        return {name: waiting[key].result() for name, key in minted.items()}

    def answer(self, responses: dict[str, Any]) -> None:
        """The client's answers, by key; a key nothing waits for is ignored."""
        for key, response in responses.items():
            waiting = self._answers.pop(key, None)
            if waiting is not None and not waiting.done():
                self.input_requests.pop(key, None)
                waiting.set_result(response)
        self.updated = time.time()

    def end(self, status: str, message: str) -> None:
        self.status, self.status_message = status, message
        self.ended = self.updated = time.time()
        # Its result (or the notebook) has them now: a kept run holds no more than its result.
        self.dropped += len(self.outputs)
        self.outputs, self._kept_bytes = [], 0


_current: contextvars.ContextVar[Run | None] = contextvars.ContextVar(
    "jupyter_mcp_run", default=None
)


def current_run() -> Run | None:
    """The run this code is part of, if it runs detached."""
    return _current.get()


async def request_input(requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Ask the client for input from inside a task, and wait for its answers.

    `requests` are, by names of the caller's choosing, the requests the client
    is to fulfil (``{"method": "elicitation/create", "params": {...}}``, or
    ``sampling/createMessage``, ``roots/list``). The task parks in
    ``input_required`` with them as ``inputRequests`` (under keys the server
    mints) until ``tasks/update`` has answered every one; answers come back
    under the caller's names. Anywhere else (a call answered in its request, a
    run started with ``detach=true``) nobody can answer: ``unsupported``.
    """
    run = _current.get()
    if run is None or not run.answerable:
        raise ToolFailure(
            UNSUPPORTED,
            "This call cannot ask its client for input: only a task (the 2026-07-28 tasks extension) can.",
        )
    return await run.ask(requests)


def cancelled_reason() -> str | None:
    """Why the code should stop before its next step: its run was cancelled (else None)."""
    run = _current.get()
    if run is not None and run.cancel_requested:
        return "the run was cancelled (cancel_run or tasks/cancel)"
    return None


class RunRegistry:
    """The runs of one server: started, queued, followed, cancelled, kept for a while."""

    def __init__(self, kernels: Any, hooks: Hooks, ttl_seconds: float = 3600.0) -> None:
        self.kernels = kernels
        self.ttl_seconds = ttl_seconds
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._queues: dict[str, asyncio.Lock] = {}
        hooks.before_execution.append(self._execution_started)
        hooks.after_execution.append(self._execution_ended)

    # --- Starting -----------------------------------------------------------------

    def start(
        self,
        *,
        owner: str,
        tool: str,
        call: Callable[[], Awaitable[Any]],
        queue: str | None = None,
        notebook: str | None = None,
        prepare: Callable[[Run], None] | None = None,
        fresh_context: bool = False,
        answerable: bool = False,
        gathering: bool = False,
        caller: Caller | None = None,
    ) -> Run:
        """Start `call` as a run of `owner`'s (``busy`` when `queue` is full).

        With `fresh_context` the run keeps nothing of the request that started it (its
        progress token, its log level); otherwise it runs in a copy of its context, as a
        call that goes on through the request's own middleware needs.
        """
        self.purge()
        if queue is not None:
            waiting = self.in_queue(queue)
            if len(waiting) >= MAX_QUEUED:
                raise ToolFailure(
                    BUSY,
                    f"{len(waiting)} runs are already queued on this kernel, the most it holds ({MAX_QUEUED}). "
                    "Wait for one to finish (get_run), or cancel one (cancel_run).",
                    queue_limit=MAX_QUEUED,
                    queued=len(waiting),
                )
        now = time.time()
        run = Run(
            run_id=str(uuid.uuid4()),
            owner=owner,
            tool=tool,
            created=now,
            updated=now,
            ttl=self.ttl_seconds,
            queue=queue,
            notebook=notebook,
            status_message="Waiting for its turn on the kernel."
            if queue is not None
            else "Running.",
            answerable=answerable,
            gathering=gathering,
            caller=caller,
        )
        self._runs[run.run_id] = run
        context = contextvars.Context() if fresh_context else contextvars.copy_context()
        run.runner = context.run(asyncio.ensure_future, self._run(run, call, prepare))
        # What it raised is in the run; nobody else awaits the task.
        run.runner.add_done_callback(lambda done: done.cancelled() or done.exception())
        return run

    async def _run(
        self, run: Run, call: Callable[[], Awaitable[Any]], prepare: Callable[[Run], None] | None
    ) -> Any:
        _current.set(run)
        if run.caller is not None:
            set_serving_caller(run.caller)
        if prepare is not None:
            prepare(run)
        turn = self._queue_lock(run.queue) if run.queue is not None else None
        try:
            async with turn if turn is not None else contextlib.nullcontext():
                if run.cancel_requested:
                    raise asyncio.CancelledError
                run.status, run.status_message = WORKING, "Running."
                run.updated = time.time()
                result = await call()
        except asyncio.CancelledError:
            run.end(CANCELLED, "Cancelled before it finished.")
            raise
        except Exception as error:
            code = getattr(getattr(error, "error", None), "code", None)
            message = getattr(getattr(error, "error", None), "message", None)
            run.error = {
                "code": code if isinstance(code, int) else -32603,
                "message": message or f"{type(error).__name__}: {error}",
            }
            run.end(FAILED, f"The call failed: {run.error['message']}")
            raise
        finally:
            run.kernel_id = None
        run.result = result
        structured = getattr(result, "structured_content", None) or {}
        if run.cancel_requested and structured.get("status") in ("interrupted", "cancelled"):
            run.end(CANCELLED, "Cancelled: the kernel was interrupted; the result holds what ran.")
        elif getattr(result, "is_error", False):
            run.end(COMPLETED, "Finished with an error (see the result).")
        else:
            run.end(COMPLETED, "Finished.")
        return result

    @contextlib.asynccontextmanager
    async def turn(self, queue: str) -> Any:
        """Hold `queue` for a call that runs in its request (a run_cells not detached), in
        order with the runs queued there; inside a run that holds it already, nothing to wait for."""
        run = _current.get()
        if run is not None and run.queue == queue:
            yield
            return
        async with self._queue_lock(queue):
            yield

    def _queue_lock(self, queue: str) -> asyncio.Lock:
        # Kept once made (one per notebook that ever had a run): a lock dropped while a
        # waiter is being woken would let a second lock of the same queue run beside it.
        return self._queues.setdefault(queue, asyncio.Lock())

    # --- Following ------------------------------------------------------------------

    def find(self, run_id: str, caller: Caller) -> Run | None:
        """The run `run_id` if `caller` may follow it (:meth:`Caller.may_follow`: its owner, or
        the same identified person through the same client from another connection), else
        None: another caller's run is unknown, as is an expired one."""
        self.purge()
        run = self._runs.get(run_id)
        return run if run is not None and caller.may_follow(run.owner, run.caller) else None

    def busy(self, queue: str) -> bool:
        """Whether anything holds or waits for `queue`: a run, or a call in its request."""
        lock = self._queues.get(queue)
        return bool(self.in_queue(queue)) or (lock is not None and lock.locked())

    def in_queue(self, queue: str) -> list[Run]:
        """The runs not finished in `queue`, oldest first."""
        return [run for run in self._runs.values() if run.queue == queue and not run.finished]

    def position(self, run: Run) -> int | None:
        """How many runs are ahead of `run` in its queue (0: its turn); None when it has none
        or has finished."""
        if run.queue is None or run.finished:
            return None
        return self.in_queue(run.queue).index(run)

    async def wait(self, run: Run, seconds: float) -> bool:
        """Until `run` finishes or `seconds` pass; whether it finished."""
        if run.runner is None:
            return True
        done, _ = await asyncio.wait({run.runner}, timeout=seconds)
        return bool(done)

    async def gather(self, run: Run, seconds: float) -> None:
        """Until `run` finishes, has gathered what it asked for (:attr:`Run.gathered`), or
        `seconds` pass."""
        if run.runner is None or run.runner.done():
            return
        gathered = asyncio.ensure_future(run.gathered.wait())
        try:
            await asyncio.wait(
                {run.runner, gathered}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            gathered.cancel()

    def forget(self, run: Run) -> None:
        self._runs.pop(run.run_id, None)

    def purge(self) -> None:
        now = time.time()
        finished = [run for run in self._runs.values() if run.finished]
        for run in finished:
            if run.expired(now):
                del self._runs[run.run_id]
        finished = [run for run in finished if run.run_id in self._runs]
        for run in finished[: max(0, len(finished) - MAX_FINISHED)]:
            del self._runs[run.run_id]

    # --- Cancelling -----------------------------------------------------------------

    async def cancel(self, run: Run) -> bool:
        """Stop `run`: interrupt the kernel it runs on, or keep it from starting. Whether
        there was anything to stop."""
        if run.finished:
            return False
        run.cancel_requested = True
        run.status_message = "Cancelling: interrupting the kernel."
        run.updated = time.time()
        if run.kernel_id is not None:
            # The execution ends interrupted, with its outputs, and the call answers.
            with contextlib.suppress(ToolFailure):
                await self.kernels.interrupt(self.kernels.get(run.kernel_id))
        elif run.runner is not None:
            # Waiting for its turn, for its kernel, or between two cells: it stops there.
            run.runner.cancel()
        return True

    # --- Following executions ----------------------------------------------------------

    def _execution_started(self, execution: Any) -> None:
        run = _current.get()
        if run is not None:
            run.kernel_id = execution.kernel_id

    def _execution_ended(self, execution: Any) -> None:
        run = _current.get()
        if run is not None:
            run.kernel_id = None  # the kernel may run someone else's code from now on


def _summary(output: dict[str, Any]) -> str:
    lines = [line for line in describe(output).strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def task_support(mode: str = "optional") -> dict[str, Any]:
    """A tool's ``meta`` declaring task support (``"optional"`` or ``"required"``): on a
    2026-07-28 client that declares the tasks extension, a call that outlasts the grace
    period (at once when required) answers a task and goes on as a run."""
    if mode not in ("optional", "required"):
        raise ValueError(f"task support is 'optional' or 'required', not {mode!r}")
    return {TASKS_EXTENSION: {"taskSupport": mode}}
