"""A call that ends by asking the client (2026-07-28): the exception that carries the question.

The hooks record such a call under its own outcome, and :mod:`.asking` raises it; it
lives apart from both so that the hooks, which everything below the tools fires, need
not import the machinery of asking (which itself records through the hooks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, InputRequiredResult

#: How the hooks (the audit log) record a call that ended asking the client.
INPUT_REQUIRED_OUTCOME = "input_required"


class InputRequired(MCPError):
    """Raised by :func:`ask` on 2026-07-28 while questions are unanswered: the request is
    answered with `result` (the server's middleware, :class:`AnswersInputRequired`)."""

    def __init__(
        self, result: InputRequiredResult, answered: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(code=INVALID_PARAMS, message="input required")
        self.result = result
        #: The questions of this round already answered (the others are in `result`).
        self.answered: dict[str, Any] = dict(answered or {})
