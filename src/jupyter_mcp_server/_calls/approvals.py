"""The person approves chosen actions before they happen: one entry point, :func:`approve`.

A tool about to do something the person may not want done behind their back
(restart or release a kernel, delete cells, restore an old revision, install
packages, run code that runs shell commands) calls, before doing anything::

    await approve(ctx, "cells.delete", "Delete 2 cells of 'a.ipynb': c1 ('import os'), c2 ('x = 1').")

The description names exactly what will happen, and the question names who
asks (:class:`~.callers.Caller`: ``Asked by CLIENT (USER).``), so a person
with two agents knows which one wants it. The question goes to the
person through :mod:`.asking` (an elicitation while the call waits on
2025-11-25; an ``input_required`` result on 2026-07-28, the tool called
again with the answer, which is why nothing may happen before ``approve``).
Accepting with ``approve: true`` returns and the tool proceeds; anything else
(declining, cancelling, ``approve: false``, an answer outside the schema, no
answer within ``JUPYTER_MCP_APPROVAL_TIMEOUT`` seconds) raises
``ToolFailure("declined")``. A client that cannot be asked (it declared no
elicitation, or its connection cannot carry a request) gets the policy of
the ``approvals`` capability: ``ask-or-allow`` (the default) proceeds,
``ask`` refuses with ``approval_required``; ``off`` asks nothing. Which actions ask is
``JUPYTER_MCP_APPROVE`` (default: all of :data:`DEFAULT_ACTIONS`); an
action named by an extension asks when it is listed there or when it is one
of the defaults.
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Iterable
from typing import Any

from jupyter_mcp_server._calls.asking import Elicitation, MissingClientCapability, ask, client_can
from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._calls.serving import served
from jupyter_mcp_server._errors import APPROVAL_REQUIRED, DECLINED, ToolFailure
from jupyter_mcp_server._policy.redaction import REDACTION_CAPABILITY

logger = logging.getLogger(__name__)

APPROVALS_CAPABILITY = "approvals"
ASK = "ask"
ASK_OR_ALLOW = "ask-or-allow"

RESTART_KERNEL = "kernel.restart"
RELEASE_KERNEL = "kernel.release"
DELETE_CELLS = "cells.delete"
RESTORE_REVISION = "notebook.restore"
INSTALL_PACKAGES = "packages.install"
SHELL_CODE = "code.shell"
#: The actions asked about unless JUPYTER_MCP_APPROVE says otherwise.
DEFAULT_ACTIONS: tuple[str, ...] = (
    RESTART_KERNEL,
    RELEASE_KERNEL,
    DELETE_CELLS,
    RESTORE_REVISION,
    INSTALL_PACKAGES,
    SHELL_CODE,
)

#: The answer's form: one boolean.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Approve", "description": "Let the agent do this."}
    },
    "required": ["approve"],
}


def asks_for(state: Any, action: str) -> bool:
    """Whether `action` needs the person's approval on this server."""
    if not state.capabilities.enabled(APPROVALS_CAPABILITY):
        return False
    listed = state.config.approve
    return action in (DEFAULT_ACTIONS if listed is None else listed)


#: Actions approved for the call this context belongs to: a detached run repeats its tool's
#: checks after the call has answered, when there is nobody left to ask.
_APPROVED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "approved", default=frozenset()
)


def approved_already(*actions: str) -> None:
    """Count `actions` as approved in this context and the tasks it starts from now on."""
    _APPROVED.set(_APPROVED.get() | frozenset(actions))


async def approve(ctx: Any, action: str, description: str) -> None:
    """Return when the person approved `action` (or it needs no approval here); otherwise raise
    ``ToolFailure`` with ``declined`` or ``approval_required``. Call it before changing anything."""
    # What it reads of the state: capabilities, config, redactor and used_states.
    state: Any = served(ctx)
    if not asks_for(state, action) or action in _APPROVED.get():
        return
    if not client_can(ctx, "elicitation"):
        without_asking(state, action, description, "it declared no elicitation")
        return
    if state.capabilities.enabled(REDACTION_CAPABILITY):
        # The question reaches the client like a result does (a shell line may carry a key).
        description = state.redactor.text(description)
    asker = caller_of(ctx).display
    question = Elicitation(f"{description}\n\nAsked by {asker}. Approve?", SCHEMA)
    timeout = state.config.approval_timeout
    try:
        answers = await ask(
            ctx, {f"approve:{action}": question}, used=state.used_states, timeout=timeout
        )
    except TimeoutError:
        raise ToolFailure(
            DECLINED,
            f"Not approved: nobody answered within {timeout:g} s. Nothing was done: {description}",
            action=action,
        ) from None
    except MissingClientCapability:  # pragma: no cover - checked above
        raise ToolFailure(
            APPROVAL_REQUIRED, f"This needs the person's approval: {description}", action=action
        ) from None
    answer = next(iter(answers.values()))
    content = getattr(answer, "content", None) or {}
    if getattr(answer, "action", None) == "accept" and content.get("approve") is True:
        logger.info("Approved for %s: %s", asker, description)
        return
    how = getattr(answer, "action", "decline")
    logger.info("Not approved (%s) for %s: %s", how, asker, description)
    said = "declined" if how != "cancel" else "cancelled"
    if how == "accept":
        said = "did not approve"
    raise ToolFailure(
        DECLINED,
        f"The person {said} this; nothing was done: {description}",
        action=action,
        answer=how,
    )


def without_asking(state: Any, action: str, description: str, why: str) -> None:
    """For a client that cannot be asked: return when the policy allows `action` anyway,
    raise ``approval_required`` when it does not."""
    if not asks_for(state, action):
        return
    if (state.capabilities.value(APPROVALS_CAPABILITY) or ASK_OR_ALLOW) == ASK_OR_ALLOW:
        logger.info("Not asked (the client cannot be asked), allowed by policy: %s", description)
        return
    raise ToolFailure(
        APPROVAL_REQUIRED,
        f"This needs the person's approval, and this client cannot ask them ({why}): {description} "
        "Ask the person to do it themselves, or to run the server with --capability "
        "approvals=ask-or-allow (or approvals=off).",
        action=action,
    )


#: Code that runs shell commands: IPython's `!`, the shell cell magics, package magics, and
#: the standard library's ways of starting a process.
_SHELL = re.compile(
    r"^\s*(?:!|%%(?:bash|sh|script|system)\b|%(?:pip|conda|mamba|sx|system|sc)\b)"
    r"|\bsubprocess\b|\bos\.(?:system|popen|spawn\w*|exec\w*)\s*\(|\bpty\.spawn\b|\bget_ipython\(\)\.system\b",
    re.MULTILINE,
)


def shell_lines(code: str) -> list[str]:
    """The lines of `code` that run shell commands (empty: none)."""
    lines = []
    for line in code.splitlines():
        if _SHELL.search(line):
            lines.append(line.strip())
    return lines


async def approve_shell_code(ctx: Any, code: str, where: str) -> None:
    """Ask before running code that runs shell commands, naming the lines that do."""
    lines = shell_lines(code)
    if not lines:
        return
    await approve(ctx, SHELL_CODE, f"Run code {where} that runs shell commands: {_shown(lines)}.")


async def approve_shell_cells(ctx: Any, cells: Iterable[tuple[str, str]], where: str) -> None:
    """Ask before running cells (id, source) of which some run shell commands, naming each
    such line with its cell: a whole-notebook run asks once, for all of them."""
    lines = [f"{cell_id}: {line}" for cell_id, source in cells for line in shell_lines(source)]
    if not lines:
        return
    await approve(ctx, SHELL_CODE, f"Run cells {where} that run shell commands: {_shown(lines)}.")


def _shown(lines: list[str]) -> str:
    return "; ".join(f"`{line[:160]}`" for line in lines[:8]) + (
        f" and {len(lines) - 8} more" if len(lines) > 8 else ""
    )
