"""The tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28) for long executions.

``execute_cell``, ``insert_execute_code_cell`` and ``execute_code`` declare
``_meta["io.modelcontextprotocol/tasks"] = {"taskSupport": "optional"}``.
When a 2026-07-28 client declares the extension in the call's capabilities,
the call gets the configured grace (``JUPYTER_MCP_TASK_GRACE_SECONDS``,
default 1 s) to finish;
one that finishes answers as usual, one that does not answers with a
``CreateTaskResult`` (``resultType: "task"``) and goes on running:

- ``tasks/get`` answers the task: ``working`` (with the latest output as
  ``statusMessage``), then ``completed`` with the ``CallToolResult`` as
  ``result`` (an execution error is a completed task whose result has
  ``isError: true``), or ``failed`` with the JSON-RPC ``error``;
- ``tasks/cancel`` interrupts the kernel the execution runs on (or, while it
  still waits for the kernel, stops it from starting). The task ends
  ``cancelled``; its ``result`` holds what the execution returned, outputs
  so far included, and a cell's partial outputs are stored in it as for any
  interrupted cell;
- ``tasks/update`` is acknowledged; these tasks never ask for input.

A task is visible only to the client that created it: the stdio peer, the
HTTP session, or (stateless HTTP) the same credentials and client info. Any
other client is told the task does not exist. Task ids are random UUIDs.
Results expire ``JUPYTER_MCP_TASK_TTL_SECONDS`` (default 3600) after the
task ends; ``ttlMs`` says when, counted from ``createdAt`` as the extension
defines it, and grows while the task runs. Progress notifications are not
sent for a task (the extension forbids them); poll instead, every
``pollIntervalMs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import time
import uuid
from collections.abc import Sequence
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.types import RequestParams
from pydantic import ConfigDict, Field

from jupyter_mcp_server.client_logging import stop_hearing_this_request
from jupyter_mcp_server.connections import client_of
from jupyter_mcp_server.errors import ToolFailure
from jupyter_mcp_server.handlers import Handler, wrap
from jupyter_mcp_server.hooks import Hooks
from jupyter_mcp_server.progress import describe
from jupyter_mcp_server.state import ServerState
from jupyter_mcp_server.timestamps import iso_utc
from jupyter_mcp_server.tools.listening import listen_only

EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TOOLS = frozenset({"execute_cell", "insert_execute_code_cell", "execute_code"})
TOOL_META = {EXTENSION: {"taskSupport": "optional"}}
POLL_INTERVAL_MS = 1000
TERMINAL = frozenset({"completed", "failed", "cancelled"})


class TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId")


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


@dataclasses.dataclass
class TaskRecord:
    task_id: str
    owner: str
    tool: str
    created: float
    updated: float
    status: str = "working"
    status_message: str | None = "The execution is running."
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    ended: float | None = None
    kernel_id: str | None = None
    cancel_requested: bool = False
    runner: asyncio.Task[Any] | None = None
    #: Seconds the result is kept once the task ended.
    ttl: float = 3600.0

    def expired(self, now: float) -> bool:
        return self.ended is not None and now > self.ended + self.ttl

    def on_output(self, output: dict[str, Any]) -> None:
        text = describe(output).strip().splitlines()
        if text:
            self.status_message = f"Latest output: {text[-1][:200]}"
            self.updated = time.time()

    def wire(self, result_type: str | None = None) -> dict[str, Any]:
        end = self.ended if self.ended is not None else time.time()
        shape: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": iso_utc(self.created, precise=True),
            "lastUpdatedAt": iso_utc(self.updated, precise=True),
            "ttlMs": int((end - self.created + self.ttl) * 1000),
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if self.status_message:
            shape["statusMessage"] = self.status_message
        if result_type is not None:
            shape["resultType"] = result_type
            return shape
        if self.result is not None and self.status in ("completed", "cancelled"):
            shape["result"] = self.result
        if self.error is not None and self.status == "failed":
            shape["error"] = self.error
        return shape


class TaskStore:
    """The tasks of one server, each visible only to the client that created it."""

    def __init__(self, grace_seconds: float = 1.0, ttl_seconds: float = 3600.0) -> None:
        self.tasks: dict[str, TaskRecord] = {}
        self.grace_seconds = grace_seconds
        self.ttl_seconds = ttl_seconds

    def purge(self) -> None:
        now = time.time()
        for task_id, record in list(self.tasks.items()):
            if record.expired(now):
                del self.tasks[task_id]

    def find(self, task_id: str, owner: str) -> TaskRecord:
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        self.purge()
        record = self.tasks.get(task_id)
        if record is None or record.owner != owner:
            # Another client's task is answered exactly like one that never existed.
            raise MCPError(INVALID_PARAMS, f"Task not found: {task_id!r} does not exist or has expired.")
        return record



_current_task: contextvars.ContextVar[TaskRecord | None] = contextvars.ContextVar("jupyter_mcp_task", default=None)


def _declared(ctx: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and EXTENSION in capabilities.extensions)


def _gate(ctx: Any) -> None:
    """The task methods exist at 2026-07-28, for clients that declared the extension."""
    from mcp.server.mcpserver.server import require_client_extension
    from mcp.shared.exceptions import MCPError
    from mcp.types import METHOD_NOT_FOUND
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(METHOD_NOT_FOUND, "Method not found", data=ctx.method)
    require_client_extension(ctx, EXTENSION)


def _follow_executions(hooks: Hooks) -> None:
    """Remember which kernel a task's execution runs on, so cancelling can interrupt it."""

    def started(execution: Any) -> None:
        record = _current_task.get()
        if record is not None:
            record.kernel_id = execution.kernel_id

    def ended(execution: Any) -> None:
        record = _current_task.get()
        if record is not None:
            record.kernel_id = None  # the kernel may run someone else's code from now on

    hooks.before_execution.append(started)
    hooks.after_execution.append(ended)


async def _run(record: TaskRecord, call: Any) -> Any:
    """The tool call, with the task recording its outcome."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import INTERNAL_ERROR

    _current_task.set(record)
    # Outputs update the task's status message; the request that started it has
    # ended, so nothing more is sent on its stream (no progress, no log).
    listen_only(record.on_output)
    stop_hearing_this_request()
    try:
        result = await call()
    except asyncio.CancelledError:
        record.status, record.status_message = "cancelled", "Cancelled before the execution started."
        record.ended = record.updated = time.time()
        raise
    except MCPError as error:
        record.status, record.error = "failed", {"code": error.error.code, "message": error.error.message}
        record.status_message = f"The call failed: {error.error.message}"
        record.ended = record.updated = time.time()
        raise
    except Exception as error:
        record.status = "failed"
        record.error = {"code": INTERNAL_ERROR, "message": f"{type(error).__name__}: {error}"}
        record.status_message = "The call failed inside the server."
        record.ended = record.updated = time.time()
        raise
    record.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    interrupted = (record.result.get("structuredContent") or {}).get("status") == "interrupted"
    if record.cancel_requested and interrupted:
        record.status = "cancelled"
        record.status_message = "Cancelled: the kernel was interrupted; the result holds the outputs so far."
    else:
        record.status = "completed"
        record.status_message = "The execution ended with an error." if result.is_error else "The execution finished."
    record.ended = record.updated = time.time()
    return result


class Tasks(Extension):
    """Executions that outlive their request, for the clients that declare the extension."""

    identifier = EXTENSION

    def __init__(self, store: TaskStore, state: ServerState) -> None:
        self.store = store
        self.state = state

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name not in TASK_TOOLS or not _declared(ctx):
            return await call_next(ctx)
        store = self.store
        store.purge()
        now = time.time()
        record = TaskRecord(
            task_id=str(uuid.uuid4()),
            owner=client_of(ctx),
            tool=params.name,
            created=now,
            updated=now,
            ttl=store.ttl_seconds,
        )
        # No progress for a task: the extension forbids it, and the request ends here.
        meta = dict(ctx.meta or {})
        meta.pop("progress_token", None)
        meta.pop("progressToken", None)
        task_ctx = dataclasses.replace(ctx, meta=meta)
        runner = asyncio.ensure_future(_run(record, lambda: call_next(task_ctx)))
        record.runner = runner
        store.tasks[record.task_id] = record
        try:
            done, _ = await asyncio.wait({runner}, timeout=store.grace_seconds)
        except asyncio.CancelledError:
            runner.cancel()
            store.tasks.pop(record.task_id, None)
            raise
        if done:
            store.tasks.pop(record.task_id, None)
            return runner.result()
        runner.add_done_callback(lambda finished: finished.cancelled() or finished.exception())
        return record.wire(result_type="task")

    def methods(self) -> Sequence[MethodBinding]:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self.get_task, versions),
            MethodBinding("tasks/update", UpdateTaskParams, self.update_task, versions),
            MethodBinding("tasks/cancel", TaskParams, self.cancel_task, versions),
        )

    async def get_task(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _gate(ctx)
        return self.store.find(params.task_id, client_of(ctx)).wire()

    async def update_task(self, ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
        _gate(ctx)
        self.store.find(params.task_id, client_of(ctx))
        return {}  # these tasks never ask for input: any response is for no outstanding request

    async def cancel_task(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _gate(ctx)
        record = self.store.find(params.task_id, client_of(ctx))
        if record.status in TERMINAL:
            return {}
        record.cancel_requested = True
        record.status_message = "Cancelling: interrupting the kernel."
        record.updated = time.time()
        if record.kernel_id is not None:
            kernels = self.state.kernels
            with contextlib.suppress(ToolFailure):
                await kernels.interrupt(kernels.get(record.kernel_id))
        elif record.runner is not None:
            record.runner.cancel()  # still waiting for its kernel: it never starts
        return {}


def attach_tasks(server: Any, hooks: Hooks) -> None:
    """Declare task support on the task tools in ``tools/list``, and follow executions so a
    cancelled task interrupts its kernel (the :class:`Tasks` extension does the rest)."""
    _follow_executions(hooks)

    def declare_on_tools(original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            for tool in getattr(result, "tools", []):
                if tool.name in TASK_TOOLS:
                    tool.meta = {**(tool.meta or {}), **TOOL_META}
            return result

        return listed

    wrap(server, "tools/list", declare_on_tools)
