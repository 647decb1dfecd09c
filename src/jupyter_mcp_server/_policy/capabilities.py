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
#: The values that turn a capability on, as a bare name does.
ON_VALUES = frozenset({"on", "true", "1", "yes", "enabled"})
ENV_VARIABLE = "JUPYTER_MCP_CAPABILITIES"
SCHEMA_VERSION = "1"


@dataclass(frozen=True)
class Capability:
    """One behaviour the server can have, and whether it has it now."""

    name: str
    description: str
    enabled: bool
    source: str = "default"
    #: A capability with values (``profile=read-only``): the values it may take, the first
    #: ones narrowest. Empty for an on/off capability.
    values: tuple[str, ...] = ()
    #: Its current value (one of `values`); None for an on/off capability.
    value: str | None = None
    #: The value a bare name (or ``=on``) means; None: a bare name is refused.
    bare_value: str | None = None

    def __post_init__(self) -> None:
        if self.values and self.value not in self.values:
            raise ValueError(
                f"capability {self.name!r}: value {self.value!r} is not one of {self.values}"
            )

    def as_dict(self) -> dict[str, object]:
        described: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "enabled": self.enabled,
            "source": self.source,
        }
        if self.values:
            described["value"] = self.value
            described["values"] = list(self.values)
        return described

    def valued(self, raw: str | None, where: str) -> tuple[bool, str | None]:
        """(enabled, value) for an assignment's raw value (None: a bare name); ``UnknownValue``
        for a value this capability does not take."""
        if not self.values:
            return (raw is None or raw.strip().lower() not in OFF_VALUES), None
        text = (raw or "").strip().lower()
        if raw is None or text in ON_VALUES:
            if self.bare_value is None:
                raise UnknownValue(self, raw, where)
            text = self.bare_value
        elif text in OFF_VALUES and "off" in self.values:
            text = "off"
        if text not in self.values:
            raise UnknownValue(self, raw, where)
        return text != "off", text


class UnknownCapability(ValueError):
    """A capability name nobody declared: it stops the server before it serves."""

    def __init__(self, names: Iterable[str], known: Iterable[str], where: str) -> None:
        self.names = sorted(set(names))
        self.known = sorted(set(known))
        super().__init__(
            f"Unknown capability {', '.join(repr(n) for n in self.names)} in {where}. "
            f"Known capabilities: {', '.join(self.known) or 'none'}."
        )


class UnknownValue(ValueError):
    """A value a capability does not take: it stops the server before it serves, as an
    unknown name does."""

    def __init__(self, capability: Capability, raw: str | None, where: str) -> None:
        given = "no value" if raw is None else f"the value {raw!r}"
        super().__init__(
            f"Capability {capability.name!r} in {where} was given {given}. "
            f"Its values: {', '.join(capability.values)}."
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
    Capability(
        name="profile",
        description=(
            "How much clients may do: read-only (tools that only read), edit (reading and "
            "editing, no code runs), full (every tool). Tools outside it are not listed and a "
            "call to one is refused with not_permitted; an HTTP client may narrow it for its "
            "connection with ?profile=, never widen it."
        ),
        enabled=True,
        values=("read-only", "edit", "full"),
        value="full",
    ),
    Capability(
        name="redaction",
        description=(
            "Mask secrets before they reach a client or the audit log: the values of the "
            "server's and each kernel's environment variables whose names say secret "
            "(*_TOKEN, *_KEY, *_SECRET, *PASSWORD*, JUPYTER_MCP_SECRET_NAMES) and well-known "
            "token formats. results (default): in tool results, resources, prompts, progress "
            "and the audit log, the notebook's stored outputs left as they are; stored: the "
            "stored outputs masked too; off."
        ),
        enabled=True,
        values=("off", "results", "stored"),
        value="results",
        bare_value="results",
    ),
    Capability(
        name="approvals",
        description=(
            "Ask the person before chosen actions (restarting or releasing a kernel, deleting "
            "cells, restoring an old revision, installing packages, code that runs shell "
            "commands; JUPYTER_MCP_APPROVE), through elicitation; declined or unanswered: "
            "refused with declined. ask: a client that cannot be asked is refused with "
            "approval_required; ask-or-allow: it proceeds; off: nothing is asked."
        ),
        enabled=True,
        values=("off", "ask", "ask-or-allow"),
        # A client that cannot be asked keeps working as it did (every notebook tool the
        # contract names stays usable); a person who wants refusals says approvals=ask.
        value="ask-or-allow",
        bare_value="ask",
    ),
    Capability(
        name="workspace.client-roots",
        description=(
            "Without --workspace-root, a stdio client that offers roots chooses the workspace: "
            "its first file:// root, followed on roots/list_changed while no notebook has a "
            "kernel. Over HTTP the workspace is the server's, shared by every client."
        ),
        enabled=True,
    ),
)


def parse_assignment(text: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME=VALUE`` as (name, the raw value or None for a bare name)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not name:
        raise ValueError(f"A capability needs a name: {text!r}")
    if not sep:
        return name, None
    return name, value.strip()


def parse_list(text: str) -> list[tuple[str, str | None]]:
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

    def set(self, name: str, enabled: bool | str | None, source: str) -> None:
        """Set one capability: on/off (a bool), or a raw value as an assignment gives it
        (a value of a valued capability, ``on``/``off``, None for a bare name)."""
        if name not in self._declared:
            raise UnknownCapability([name], self._declared, source)
        capability = self._declared[name]
        if isinstance(enabled, bool):
            raw: str | None = "on" if enabled else "off"
        else:
            raw = enabled
        on, value = capability.valued(raw, source)
        self._declared[name] = replace(capability, enabled=on, value=value, source=source)

    def apply(
        self, assignments: Iterable[tuple[str, str | bool | None]], source: str, where: str
    ) -> None:
        """Apply one layer; unknown names and values are refused all together, before any applies."""
        assignments = list(assignments)
        unknown = [name for name, _ in assignments if name not in self._declared]
        if unknown:
            raise UnknownCapability(unknown, self._declared, where)
        for name, raw in assignments:
            if not isinstance(raw, bool):
                self._declared[name].valued(raw, where)
        for name, raw in assignments:
            self.set(name, raw, source)

    def enabled(self, name: str) -> bool:
        capability = self._declared.get(name)
        return bool(capability and capability.enabled)

    def value(self, name: str) -> str | None:
        """The value of a capability with values (None for an unknown or on/off one)."""
        capability = self._declared.get(name)
        return capability.value if capability is not None else None

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


class CapabilitiesView:
    """A registry as an extension reads it: what is on and its values, never a way to change
    them (capabilities are decided by the person's configuration, in one place)."""

    def __init__(self, registry: CapabilityRegistry) -> None:
        self._registry = registry

    def enabled(self, name: str) -> bool:
        return self._registry.enabled(name)

    def value(self, name: str) -> str | None:
        """The value of a capability with values (None for an unknown or on/off one)."""
        return self._registry.value(name)

    def get(self, name: str) -> Capability | None:
        return self._registry.get(name)

    @property
    def names(self) -> list[str]:
        return self._registry.names

    def describe(self) -> dict[str, object]:
        return self._registry.describe()
