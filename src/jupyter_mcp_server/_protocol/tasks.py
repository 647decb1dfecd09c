"""The tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28): long calls as tasks.

A tool declares task support in its ``_meta["io.modelcontextprotocol/tasks"]``
(``{"taskSupport": "optional"}`` or ``"required"``): the execution tools
(``execute_cell``, ``insert_execute_code_cell``, ``execute_code``,
``run_cells``), and any extension's tool declared with
``api.task_support(...)``. When a 2026-07-28 client declares the extension in
the call's capabilities, the call gets the configured grace
(``JUPYTER_MCP_TASK_GRACE_SECONDS``, default 1 s) to finish; one that
finishes answers as usual, one that does not answers with a
``CreateTaskResult`` (``resultType: "task"``) and goes on running. A tool
whose support is ``required`` always answers a task (once the grace is over,
or sooner when it gathered its input, below), and refuses a client that did
not declare the extension (``-32021``).

A call gathers its input before it is a task (SEP-2322 composed with
SEP-2663): while its request waits, what the tool asks with ``api.ask`` ends
the request ``input_required`` (no task; the run is dropped), and the
client calls again with the answers. The round on which ``ask`` has every
answer escalates at once (``required``) or after the rest of the grace
(``optional``, which may still answer as usual). Once it is a task, ``ask``
asks through the task (``input_required``, ``tasks/update``).

A task is a detached run (:mod:`jupyter_mcp_server._calls.detached`): the same
mechanism as ``detach=true`` and ``get_run``, answered in the extension's shape:

- ``tasks/get`` answers the task: ``working`` (with the latest output as
  ``statusMessage``), then ``completed`` with the ``CallToolResult`` as
  ``result`` (an execution error is a completed task whose result has
  ``isError: true``), or ``failed`` with the JSON-RPC ``error``;
- ``tasks/cancel`` interrupts the kernel the execution runs on (or, while it
  still waits for the kernel, stops it from starting). The task ends
  ``cancelled``; its ``result`` holds what the execution returned, outputs
  so far included, and a cell's partial outputs are stored in it as for any
  interrupted cell;
- a task whose tool asks its client for input (``api.request_input``: no
  tool of this server does, an extension's may) is ``input_required`` with
  the requests as ``inputRequests``; ``tasks/update`` answers them (all must
  be answered before it goes on; a key nothing waits for is ignored) and is
  acknowledged at once.

A task is visible only to the caller that created it (``_calls/callers.py``:
the same person and client, in the stdio peer, the HTTP session, or with the
same agent handle), and, when that caller is identified, to the same person
through the same client from any other connection (a client that reconnected).
Any other caller is told the task does not exist. Task ids are random UUIDs.
Results expire ``JUPYTER_MCP_TASK_TTL_SECONDS`` (default 3600) after the
task ends; ``ttlMs`` says when, counted from ``createdAt`` as the extension
defines it, and grows while the task runs. Progress notifications are not
sent for a task (the extension forbids them); poll instead, every
``pollIntervalMs``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.types import RequestParams
from pydantic import ConfigDict, Field

from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._calls.connections import header_of
from jupyter_mcp_server._calls.detached import (
    CANCELLED,
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    TASKS_EXTENSION,
    Run,
)
from jupyter_mcp_server._errors import InputRequired
from jupyter_mcp_server._protocol.client_logging import stop_hearing_this_request
from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler
from jupyter_mcp_server._state import ServerState
from jupyter_mcp_server._text.timestamps import iso_utc
from jupyter_mcp_server._tool_calls.listening import listen_only

EXTENSION = TASKS_EXTENSION
POLL_INTERVAL_MS = 1000


class TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId")


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


def wire(run: Run, result_type: str | None = None) -> dict[str, Any]:
    """A run in the extension's shape: a ``CreateTaskResult`` with `result_type`, else ``tasks/get``'s."""
    end = run.ended if run.ended is not None else time.time()
    shape: dict[str, Any] = {
        "taskId": run.run_id,
        # Waiting for its kernel is working, as far as the extension is concerned.
        "status": run.status if run.finished or run.status == INPUT_REQUIRED else "working",
        "createdAt": iso_utc(run.created, precise=True),
        "lastUpdatedAt": iso_utc(run.updated, precise=True),
        "ttlMs": int((end - run.created + run.ttl) * 1000),
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if run.status_message:
        shape["statusMessage"] = run.status_message
    if result_type is not None:
        shape["resultType"] = result_type
        return shape
    if run.status == INPUT_REQUIRED and run.input_requests:
        shape["inputRequests"] = dict(run.input_requests)
    if run.result is not None and run.status in (COMPLETED, CANCELLED):
        shape["result"] = run.result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if run.error is not None and run.status == FAILED:
        shape["error"] = run.error
    return shape


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


def _check_routing_header(ctx: Any, task_id: str) -> None:
    """An ``Mcp-Name`` header on a task method names its task (SEP-2243, SEP-2663): one that
    names another is refused with ``-32020`` (HeaderMismatch), as the SDK refuses it for tools."""
    from mcp.shared.exceptions import MCPError
    from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
    from mcp_types.jsonrpc import HEADER_MISMATCH

    named = header_of(ctx, MCP_NAME_HEADER)
    if named is not None and decode_header_value(named) != task_id:
        raise MCPError(
            HEADER_MISMATCH,
            f"{MCP_NAME_HEADER} header does not match the request body's 'taskId' parameter",
        )


def _not_found(task_id: str) -> Exception:
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    # Another client's task is answered exactly like one that never existed.
    return MCPError(INVALID_PARAMS, f"Task not found: {task_id!r} does not exist or has expired.")


def _prepare(run: Run) -> None:
    # Outputs update the task's status message; the request that started it has
    # ended, so nothing more is sent on its stream (no progress, no log).
    listen_only(run.on_output)
    stop_hearing_this_request()


class TaskSupport:
    """Which tools support tasks, as their specs declare it (read again when a name is new)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._declared: dict[str, str | None] = {}

    def of(self, tool: str) -> str | None:
        """``optional``, ``required``, or None for a tool that answers in its request."""
        if tool not in self._declared:
            # A tool not seen yet (an extension that woke up since): read the specs again.
            self._declared = {
                spec.name: str(declared.get("taskSupport"))
                if isinstance(declared := spec.meta.get(EXTENSION), dict)
                else None
                for spec in self.state.extensions.tools()
            }
            self._declared.setdefault(tool, None)
        return self._declared[tool]


class Tasks(Extension):
    """Executions that outlive their request, for the clients that declare the extension."""

    identifier = EXTENSION

    def __init__(
        self, state: ServerState, grace_seconds: float = 1.0, support: TaskSupport | None = None
    ) -> None:
        self.state = state
        self.grace_seconds = grace_seconds
        self.support = support or TaskSupport(state)

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        support = self.support.of(params.name)
        if support is None:
            return await call_next(ctx)
        if not _declared(ctx):
            if support == "required":
                _gate(ctx)  # -32021, naming the extension
            return await call_next(ctx)
        runs = self.state.runs
        # No progress for a task: the extension forbids it, and the request ends here.
        meta = dict(ctx.meta or {})
        meta.pop("progress_token", None)
        meta.pop("progressToken", None)
        task_ctx = dataclasses.replace(ctx, meta=meta)
        caller = caller_of(ctx)
        run = runs.start(
            owner=caller.owner,
            caller=caller,
            tool=params.name,
            call=lambda: call_next(task_ctx),
            prepare=_prepare,
            answerable=True,
            gathering=True,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace_seconds
        try:
            # Its gathering first: until it has every answer it asks for with `ask`, the call
            # answers in its request (input_required, outside any task).
            await runs.gather(run, self.grace_seconds)
            if support != "required" and run.gathered.is_set() and not run.input_requests:
                # Gathered: an optional one still answers as usual if it ends within the grace.
                await runs.wait(run, max(0.0, deadline - loop.time()))
        except asyncio.CancelledError:
            if run.runner is not None:
                run.runner.cancel()
            runs.forget(run)
            raise
        finally:
            # Answered from here on: what it asks now, it asks through the task.
            run.gathering = False
        runner = run.runner
        if runner is not None and runner.done() and not runner.cancelled():
            asked = runner.exception()
            if isinstance(asked, InputRequired):
                # A gathering round: the client answers and calls again; no task yet.
                runs.forget(run)
                raise asked
            if support != "required":
                runs.forget(run)
                return runner.result()
        return wire(run, result_type="task")

    def methods(self) -> Sequence[MethodBinding]:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self.get_task, versions),
            MethodBinding("tasks/update", UpdateTaskParams, self.update_task, versions),
            MethodBinding("tasks/cancel", TaskParams, self.cancel_task, versions),
        )

    def _find(self, ctx: Any, task_id: str) -> Run:
        _check_routing_header(ctx, task_id)
        run = self.state.runs.find(task_id, caller_of(ctx))
        if run is None:
            raise _not_found(task_id)
        return run

    async def get_task(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _gate(ctx)
        return wire(self._find(ctx, params.task_id))

    async def update_task(self, ctx: Any, params: UpdateTaskParams) -> dict[str, Any]:
        _gate(ctx)
        # Answers for what the task asked (api.request_input); any other key is ignored.
        self._find(ctx, params.task_id).answer(params.input_responses or {})
        return {}

    async def cancel_task(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _gate(ctx)
        await self.state.runs.cancel(self._find(ctx, params.task_id))
        return {}


def feature(state: ServerState, grace_seconds: float, support: TaskSupport) -> Feature:
    """Long calls as tasks: the :class:`Tasks` extension, and task support declared on the
    task tools in ``tools/list``."""

    def declare_on_tools(server: Any, original: Handler) -> Handler:
        async def listed(ctx: Any, params: Any) -> Any:
            result = await original(ctx, params)
            for tool in getattr(result, "tools", []):
                declared = support.of(tool.name)
                if declared is not None:
                    tool.meta = {**(tool.meta or {}), EXTENSION: {"taskSupport": declared}}
            return result

        return listed

    return Feature(
        "tasks",
        extension=Tasks(state, grace_seconds, support),
        wraps=(Wrapped("tools/list", declare_on_tools),),
    )
