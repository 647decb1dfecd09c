"""What a caller asked for when launching a sandbox, as one value.

`launch_sandbox`'s arguments and the operator's environment defaults meet
here, are checked once, and travel to the variant unchanged. A variant reads
the options it understands; an option it does not take is refused before it
is asked, so a memory limit is never silently ignored by a variant that
cannot set one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields

from jupyter_mcp_sandboxes.limits import Limits
from jupyter_mcp_server.api import (
    INVALID_ARGUMENT,
    ToolFailure,
)

#: Names end up in directory names and socket paths, which are short.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
MAX_LAUNCH_TIMEOUT = 600.0
DEFAULT_LAUNCH_TIMEOUT = 60.0

#: The launch options, besides name, variant and timeout.
OPTIONS = (
    "memory_mb",
    "cpu_seconds",
    "open_files",
    "processes",
    "server_url",
    "token",
    "kernel_name",
)


@dataclass(frozen=True)
class SandboxSpec:
    """One launch request: a name, a variant, how long to wait, and the variant's options."""

    name: str
    variant: str
    timeout: float = DEFAULT_LAUNCH_TIMEOUT
    memory_mb: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = None
    processes: int | None = None
    server_url: str | None = None
    token: str | None = field(default=None, repr=False)
    kernel_name: str | None = None
    #: Started by `create_code_sandbox` for a notebook rather than by
    #: `launch_sandbox`: it ends when the notebook lets go of its kernel.
    ephemeral: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME_PATTERN.match(self.name):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"sandbox_name {self.name!r} is not usable: use 1-40 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit.",
                argument="sandbox_name",
            )
        timeout = self.timeout
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"timeout must be a positive number of seconds, not {timeout!r}.",
                argument="timeout",
            )
        if timeout > MAX_LAUNCH_TIMEOUT:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"timeout {timeout:g}s is above the {MAX_LAUNCH_TIMEOUT:g}s a launch may wait.",
                argument="timeout",
            )

    def given_options(self) -> frozenset[str]:
        """The options this request sets (the ones a variant must take)."""
        return frozenset(name for name in OPTIONS if getattr(self, name) is not None)

    def limits(self) -> Limits:
        return Limits.resolve(self.memory_mb, self.cpu_seconds, self.open_files, self.processes)

    def with_defaults(self, defaults: dict[str, object]) -> SandboxSpec:
        """This request with the operator's defaults for options it left unset."""
        known = {f.name for f in fields(self)}
        changes = {
            k: v
            for k, v in defaults.items()
            if k in OPTIONS and k in known and getattr(self, k) is None
        }
        if not changes:
            return self
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return SandboxSpec(**values)  # type: ignore[arg-type]
