"""The state a request is served with, found from its context or, without one, from the call.

A server's state (``_state.ServerState``) is the SDK's lifespan context of every
request; code called without the request's context (an extension narrowing a tool
calls it with only its arguments) finds it through the middleware that serves the
request (``_state.ServingState``), which sets it here. It lives on this floor so
that what sits below the state (approvals asking the person) can read what it
needs of it without importing it: the state is a :class:`Served`, and each reader
takes from it only the attributes it names.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any


class Served:
    """What a request may be served with: the server state is one (``_state.ServerState``)."""

    __slots__ = ()


_serving: contextvars.ContextVar[Served | None] = contextvars.ContextVar(
    "jupyter_mcp_serving", default=None
)


@contextlib.contextmanager
def serving(state: Any) -> Iterator[None]:
    """While serving one request with `state` (its lifespan context)."""
    token = _serving.set(state if isinstance(state, Served) else None)
    try:
        yield
    finally:
        _serving.reset(token)


def served(ctx: Any) -> Served:
    """The state a request is served with: its lifespan context, else the one being served."""
    request_context = getattr(ctx, "request_context", ctx) if ctx is not None else None
    state = getattr(request_context, "lifespan_context", None)
    if not isinstance(state, Served):
        state = _serving.get()
    if state is None:
        raise RuntimeError(
            "this code runs outside a request served by a server built from a ServerState"
        )
    return state
