"""Capabilities: the server's hidden behaviour, made visible and switchable.

One registry decides whether a behaviour is on, and every part of the server
asks it rather than keeping its own flag. Values arrive in four layers, later
ones winning: the server's declared defaults,
``JUPYTER_MCP_CAPABILITIES``, ``--capability`` on the command line, and each
installed extension's ``capabilities()``. ``source`` says which layer set the
value, because "why is this on?" is the first question anybody asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

#: The values that turn a capability off; anything else turns it on.
OFF_VALUES = frozenset({"off", "false", "0", "no", "disabled"})
ENV_VARIABLE = "JUPYTER_MCP_CAPABILITIES"
SCHEMA_VERSION = "1"


@dataclass(frozen=True)
class Capability:
    """One behaviour the server can have, and whether it has it now."""

    name: str
    description: str
    enabled: bool
    source: str = "default"

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "enabled": self.enabled,
            "source": self.source,
        }


class UnknownCapability(ValueError):
    """A capability name nobody declared: it stops the server before it serves."""

    def __init__(self, names: Iterable[str], known: Iterable[str], where: str) -> None:
        self.names = sorted(set(names))
        self.known = sorted(set(known))
        super().__init__(
            f"Unknown capability {', '.join(repr(n) for n in self.names)} in {where}. "
            f"Known capabilities: {', '.join(self.known) or 'none'}."
        )


#: The server's own capabilities, with their defaults.
SERVER_CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        name="kernel.auto-restart",
        description=(
            "Start a replacement kernel when the current one is gone (killed, crashed, "
            "reaped after idling). Off: the call fails with kernel_gone and says so, "
            "because the replacement has none of the old session's variables."
        ),
        enabled=False,
    ),
    Capability(
        name="kernel.restart-unresponsive",
        description=(
            "Restart a kernel that is still running code after a timeout's interrupt went "
            "unanswered (the code ignores or blocks SIGINT), once it has had --unresponsive-grace "
            "seconds to finish; the call that finds it so runs on the fresh kernel and its result "
            "says so. Off: calls on such a kernel fail at once with timeout "
            "(kernel_state busy_after_interrupt) until it finishes or restart_notebook is called."
        ),
        enabled=False,
    ),
    Capability(
        name="kernel.prestart",
        description=(
            "Keep one kernel of the default kernelspec started ahead of need, so a new "
            "notebook's first execution does not wait for a kernel to start. It costs "
            "one idle kernel process."
        ),
        enabled=True,
    ),
    Capability(
        name="kernel.ipc",
        description=(
            "Local kernels speak to the server over Unix sockets in the server's private runtime "
            "directory (mode 0700), so no other local user can connect to them and ipykernel does "
            "not warn that its traffic is unencrypted. Off: over TCP on loopback, as Jupyter does "
            "by default. Kernels already running keep their transport."
        ),
        enabled=True,
    ),
    Capability(
        name="packages.any-source",
        description=(
            "install_packages accepts installer options (--index-url, -e), URLs and paths "
            "besides package names and versions. Off: only requirement specifiers such as "
            "'pandas>=2' or 'requests[socks]==2.32.3' are accepted."
        ),
        enabled=False,
    ),
    Capability(
        name="packages.server-environment",
        description=(
            "install_packages may install into the server's own Python environment (the one the "
            "python3 kernelspec runs), where a package can break the server itself. Off: refused, "
            "saying to use a workspace environment."
        ),
        enabled=False,
    ),
    Capability(
        name="execution.cancel-interrupts",
        description=(
            "When a client cancels an MCP request that is running code, also interrupt "
            "the kernel running it. Off: cancelling stops the request only, and the code "
            "keeps running until it ends or interrupt_kernel is called."
        ),
        enabled=False,
    ),
)


def parse_assignment(text: str) -> tuple[str, bool]:
    """``NAME`` or ``NAME=VALUE`` as (name, enabled)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not name:
        raise ValueError(f"A capability needs a name: {text!r}")
    if not sep:
        return name, True
    return name, value.strip().lower() not in OFF_VALUES


def parse_list(text: str) -> list[tuple[str, bool]]:
    """``JUPYTER_MCP_CAPABILITIES``: comma-separated assignments."""
    return [parse_assignment(part) for part in text.split(",") if part.strip()]


class CapabilityRegistry:
    """What the server can do, decided in one place."""

    def __init__(self, declared: Iterable[Capability] = SERVER_CAPABILITIES) -> None:
        self._declared: dict[str, Capability] = {}
        for capability in declared:
            self.declare(capability)

    def declare(self, capability: Capability) -> None:
        """Declare a capability; a declaration with a source sets its value too."""
        self._declared[capability.name] = capability

    def set(self, name: str, enabled: bool, source: str) -> None:
        if name not in self._declared:
            raise UnknownCapability([name], self._declared, source)
        self._declared[name] = replace(self._declared[name], enabled=enabled, source=source)

    def apply(self, assignments: Iterable[tuple[str, bool]], source: str, where: str) -> None:
        """Apply one layer; unknown names are refused all together, before any applies."""
        assignments = list(assignments)
        unknown = [name for name, _ in assignments if name not in self._declared]
        if unknown:
            raise UnknownCapability(unknown, self._declared, where)
        for name, enabled in assignments:
            self.set(name, enabled, source)

    def enabled(self, name: str) -> bool:
        capability = self._declared.get(name)
        return bool(capability and capability.enabled)

    def get(self, name: str) -> Capability | None:
        return self._declared.get(name)

    @property
    def declared(self) -> list[Capability]:
        return sorted(self._declared.values(), key=lambda capability: capability.name)

    @property
    def names(self) -> list[str]:
        return sorted(self._declared)

    def describe(self) -> dict[str, object]:
        """The shape of ``capabilities://`` and of ``server/discover``'s capabilities extension."""
        return {
            "version": SCHEMA_VERSION,
            "capabilities": [c.name for c in self.declared if c.enabled],
            "declared": [c.as_dict() for c in self.declared],
        }
