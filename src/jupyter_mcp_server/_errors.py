"""The failures a caller can act on, each with a stable code.

Every layer below the tools (workspace, store, kernels) raises
:class:`ToolFailure`; the tools turn it into an MCP result with
``isError: true`` and ``_meta["io.jupyter-mcp/error"]``. Keeping the code
on the exception means the layer that knows what went wrong also says what
to do next, and no tool has to guess.

A call may also end by asking the client (2026-07-28): :class:`InputRequired`
carries the question. It lives here, on the lowest floor, so that the hooks,
which record such a call under its own outcome, need not import the
machinery of asking (``_calls/asking.py``, which raises it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, InputRequiredResult

#: The stable error codes (README.md lists them). Nothing else is ever sent as a code.
INVALID_ARGUMENT = "invalid_argument"
INVALID_PATH = "invalid_path"
NOT_FOUND = "not_found"
ALREADY_EXISTS = "already_exists"
NO_NOTEBOOK = "no_notebook"
REVISION_CONFLICT = "revision_conflict"
KERNEL_GONE = "kernel_gone"
KERNEL_LIMIT = "kernel_limit"
TIMEOUT = "timeout"
INTERRUPTED = "interrupted"
EXECUTION_ERROR = "execution_error"
UNSUPPORTED = "unsupported"
#: The person declined or cancelled an approval, or answered outside the requested schema.
DECLINED = "declined"
#: An approval could not be asked and the policy refuses.
APPROVAL_REQUIRED = "approval_required"
#: The active profile does not allow the tool (``details.profile`` names it).
NOT_PERMITTED = "not_permitted"
#: The kernel is running something and cannot answer now (``details`` say what).
BUSY = "busy"
#: The kernel did not go idle after an interrupt; the message names ``restart_notebook``.
KERNEL_UNRESPONSIVE = "kernel_unresponsive"
#: The file system holding a file is full, or the user's quota on it is used up (nothing written).
DISK_FULL = "disk_full"
#: The file system holding a file is mounted read-only (nothing written).
READ_ONLY = "read_only"
#: The operating system refused the server access to a file or its directory (nothing written).
PERMISSION_DENIED = "permission_denied"

ERROR_CODES = frozenset(
    {
        INVALID_ARGUMENT,
        INVALID_PATH,
        NOT_FOUND,
        ALREADY_EXISTS,
        NO_NOTEBOOK,
        REVISION_CONFLICT,
        KERNEL_GONE,
        KERNEL_LIMIT,
        TIMEOUT,
        INTERRUPTED,
        EXECUTION_ERROR,
        UNSUPPORTED,
        DECLINED,
        APPROVAL_REQUIRED,
        NOT_PERMITTED,
        BUSY,
        KERNEL_UNRESPONSIVE,
        DISK_FULL,
        READ_ONLY,
        PERMISSION_DENIED,
    }
)

#: Where a failure's code and details travel in a tool result.
ERROR_META_KEY = "io.jupyter-mcp/error"


class ToolFailure(Exception):
    """A failure with one of the stable codes and a message saying what to do next."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def as_meta(self) -> dict[str, Any]:
        """The ``_meta`` entry a tool result carries for this failure."""
        return {ERROR_META_KEY: {"code": self.code, **self.details}}


#: How the hooks (the audit log) record a call that ended asking the client.
INPUT_REQUIRED_OUTCOME = "input_required"


class InputRequired(MCPError):
    """Raised by ``_calls.asking.ask`` on 2026-07-28 while questions are unanswered: the
    request is answered with `result` (the server's middleware, ``AnswersInputRequired``)."""

    def __init__(
        self, result: InputRequiredResult, answered: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(code=INVALID_PARAMS, message="input required")
        self.result = result
        #: The questions of this round already answered (the others are in `result`).
        self.answered: dict[str, Any] = dict(answered or {})
