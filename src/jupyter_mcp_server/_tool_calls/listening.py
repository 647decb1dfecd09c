"""Who hears the outputs of the execution running in this call, as they arrive.

A long execution is followed by whoever the call belongs to: progress
notifications for a call with a progress token, a task's status message for
a call that became a task. Neither is the tools' business, so the tools ask
this context variable and pass what they find to the kernel layer as its
``on_output``; the protocol features set it around the call.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from jupyter_mcp_server._kernels.outputs import PROGRESS

OutputListener = Callable[[dict[str, Any]], None]

_listener: contextvars.ContextVar[OutputListener | None] = contextvars.ContextVar(
    "jupyter_mcp_output_listener", default=None
)


def output_listener() -> OutputListener | None:
    """Who wants the outputs of the execution running in this call, if anyone."""
    return _listener.get()


@contextlib.contextmanager
def listening(listener: OutputListener | None) -> Iterator[None]:
    """Make `listener` hear the outputs of executions run inside this block, besides
    whoever already does."""
    previous = _listener.get()
    if listener is None:
        yield
        return

    def both(output: dict[str, Any]) -> None:
        listener(output)
        if previous is not None:
            previous(output)

    token = _listener.set(both)
    try:
        yield
    finally:
        _listener.reset(token)


def listen_only(listener: OutputListener | None) -> None:
    """From here on in this context, only `listener` hears outputs (a task outliving its request)."""
    _listener.set(listener)


def announce(message: str) -> None:
    """Tell whoever follows this call that a step of it is done (a cell of a whole-notebook
    run), as a ``{"output_type": "progress", "text": message}`` it hears among the outputs."""
    listener = _listener.get()
    if listener is not None:
        listener({"output_type": PROGRESS, "text": message})
