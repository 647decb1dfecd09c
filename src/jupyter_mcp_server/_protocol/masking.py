"""Secrets masked at the one place results leave the server.

:class:`ResultMasking` is middleware around every request a built server
answers, so whatever a tool returns (the server's own, an extension's, a
task's result fetched later), a resource read and a prompt pass through it:
each string is masked by the state's :class:`~.redaction.Redactor` before it
is serialised. Outputs streamed as progress notifications are masked where
they are sent (:mod:`.progress` is given :func:`masker`). The ``redaction``
capability turns it off; what the notebook stores is left as it is unless
the capability says ``stored`` (then :meth:`ServerState.run_in_turn` masks the
outputs before anything keeps them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    CallToolResult,
    EmbeddedResource,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

from jupyter_mcp_server._policy.redaction import REDACTION_CAPABILITY, Redactor
from jupyter_mcp_server._protocol.apps import APP_META_KEY
from jupyter_mcp_server._state import ServerState

logger = logging.getLogger(__name__)

#: Results that carry what tools, resources and prompts said.
MASKED_METHODS = frozenset(
    {"tools/call", "resources/read", "prompts/get", "tasks/get", "tasks/result"}
)


def redaction_on(state: ServerState) -> bool:
    return state.capabilities.enabled(REDACTION_CAPABILITY)


def masker(state: ServerState) -> Callable[[str], str]:
    """Text as it may be sent to a client: masked while the capability is on."""

    def mask(text: str) -> str:
        return state.redactor.text(text) if redaction_on(state) else text

    return mask


def mask_call_result(redactor: Redactor, result: CallToolResult) -> CallToolResult:
    """A tool result with every text block, text resource and structured string masked."""
    changed = False
    content: list[Any] = []
    clean: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            text = redactor.text(block.text)
            if text is not block.text:
                block = block.model_copy(update={"text": text})
                changed = True
            else:
                clean.append(text)
        elif isinstance(block, EmbeddedResource) and isinstance(
            block.resource, TextResourceContents
        ):
            text = redactor.text(block.resource.text)
            if text is not block.resource.text:
                block = block.model_copy(
                    update={"resource": block.resource.model_copy(update={"text": text})}
                )
                changed = True
        content.append(block)
    structured = result.structured_content
    masked = redactor.value(structured, clean) if structured is not None else None
    if masked is not structured:
        changed = True
    meta = result.meta
    shown = (meta or {}).get(APP_META_KEY)
    if shown is not None:
        # What an output app shows (_protocol/apps.py) is outputs too.
        masked_shown = redactor.value(shown)
        if masked_shown is not shown:
            meta = {**(meta or {}), APP_META_KEY: masked_shown}
            changed = True
    if not changed:
        return result
    return result.model_copy(
        update={"content": content, "structured_content": masked, "meta": meta}
    )


def mask_result(redactor: Redactor, result: Any) -> Any:
    """Any handler result (a model or its wire form) with its strings masked."""
    if isinstance(result, CallToolResult):
        return mask_call_result(redactor, result)
    if isinstance(result, dict):
        return redactor.value(result)
    if isinstance(result, BaseModel):
        wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        masked = redactor.value(wire)
        if masked is wire:
            return result
        # Answered in its wire form: the runner serialises a dict as it is.
        return masked
    return result


class ResultMasking:
    """Middleware: the results of :data:`MASKED_METHODS` masked before they are sent."""

    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if getattr(ctx, "method", None) not in MASKED_METHODS or not redaction_on(self.state):
            return result
        try:
            return mask_result(self.state.redactor, result)
        except Exception:
            # Failing closed: a result that could not be checked is not sent.
            logger.exception("Masking the result of %s failed; it is withheld", ctx.method)
            if ctx.method != "tools/call":
                raise MCPError(
                    code=INTERNAL_ERROR, message="The result could not be checked for secrets."
                ) from None
            return CallToolResult(
                content=[
                    TextContent(
                        type="text",
                        text="The result could not be checked for secrets and is withheld.",
                    )
                ],
                is_error=True,
            )
