"""Everything this server serves arrives as an extension; this is the mechanism.

The foundation is `reactor_mcp_server` (tools as contributions, extensions of
a tool by name, toolsets chosen by URL) on the `reactor` plugin platform.
This module is the one place that imports either: it adds what is about this
server rather than about MCP (capabilities, the two Jupyter hooks) and mends
what the foundation leaves open:

* extensions of one tool apply in a declared order, ties broken by extension
  name, never by the order in which distributions were installed;
* a failing extension costs only itself, and the log names it;
* putting tools on a server replaces a tool of the same name instead of
  letting the SDK keep the first and warn (:class:`ReplacingServer`, the
  server every selection is built as).

Nothing here is process-wide: the composition root
(:mod:`jupyter_mcp_server._app`) makes one :class:`ExtensionManager` per
server state, with the extensions :func:`load_extensions` found.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from reactor import PluginCompatibility, PluginManifest
from reactor_mcp_server import (
    ENTRY_POINT_GROUP,
    TOOLS,
    McpExtension,
    McpHost,
    Selection,
    ToolExtension,
    Toolset,
    ToolSpec,
    manifest_of,
    on_toolset,
    parse_selection,
    resolve,
    tool,
)
from reactor_mcp_server import load_extensions as load_installed_extensions

from jupyter_mcp_server._hooks import Hooks, observed
from jupyter_mcp_server._policy.capabilities import Capability, CapabilityRegistry

logger = logging.getLogger(__name__)

__all__ = [
    "ENTRY_POINT_GROUP",
    "ExtensionManager",
    "JupyterMCPExtension",
    "McpExtension",
    "PluginCompatibility",
    "PluginManifest",
    "Selection",
    "ToolExtension",
    "ToolSpec",
    "Toolset",
    "load_extensions",
    "on_toolset",
    "parse_selection",
    "tool",
]

#: Where the operator narrows the extensions loaded, said in warnings.
ENVIRONMENT = "JUPYTER_MCP_EXTENSIONS"


class JupyterMCPExtension(McpExtension):
    """Base class for an extension of this server. Every hook has a default.

    `tool_extensions()` may answer pairs ``(tool_name, ToolExtension)`` or
    triples ``(tool_name, ToolExtension, order)``. Extensions of one tool
    apply in ascending order (the last applied wraps outermost, so its check
    runs first); equal orders apply in extension-name order. A pair takes the
    class's `tool_extension_order`.
    """

    #: Where this extension's tool extensions apply among others of the same tool.
    tool_extension_order: int = 0
    #: Whether this extension's tools fire the tool-call hooks themselves.
    #: Otherwise the host fires them around each call (the core tools do).
    fires_hooks: bool = False
    #: The server this extension runs in (its configuration, capabilities, hooks,
    #: running code with its limits): given by the server before ``on_start``.
    server: Any = None

    def attach(self, server: Any) -> None:
        """Called once, before ``on_start``, with the server this extension runs in
        (a :class:`jupyter_mcp_server.api.ServerAccess`)."""
        self.server = server

    def capabilities(self) -> Sequence[Capability]:
        """Capabilities this extension declares (namespace the names)."""
        return ()

    def create_code_sandbox(self, config: Any, logger: logging.Logger) -> Any:
        """A kernel for a sandbox variant, or None to leave it to the server."""
        return None

    async def intercept_execute_code(self, code: str, timeout: float) -> Any:
        """Run `execute_code` yourself and answer its result, or None to decline."""
        return None

    def provide_contributions(self, contributions: Any) -> None:
        # The base class unpacks `tool_extensions()` as pairs and extends with
        # no order; it is shown none, and they are contributed here, ordered.
        # Asked once, and a failure costs only the tool extensions.
        try:
            declared = list(self.tool_extensions())
        except Exception:
            logger.exception(
                "Extension '%s' failed in tool_extensions(); its other contributions stand",
                _name_of(self),
            )
            declared = []
        self.__dict__["tool_extensions"] = _nothing
        try:
            super().provide_contributions(contributions)
        finally:
            del self.__dict__["tool_extensions"]
        for item in declared:
            name, extension = item[0], item[1]
            order = item[2] if len(item) > 2 else self.tool_extension_order  # type: ignore[misc]
            contributions.extend(TOOLS, name, extension, order=order)


def _nothing() -> tuple[()]:
    return ()


def _name_of(extension: McpExtension) -> str:
    try:
        return extension.manifest().name
    except Exception:
        return type(extension).__name__


def _inherit_result(original: Any, wrapper: Any) -> None:
    """A wrapper that does not say what it returns returns what the tool it wraps does.

    The SDK derives a tool's output schema from its handler's return
    annotation; a wrapper narrowing the arguments rarely repeats it, and the
    tool would lose its output schema to an extension that meant only to
    narrow it.
    """
    if wrapper is original:
        return
    try:
        if inspect.signature(wrapper).return_annotation is not inspect.Signature.empty:
            return
        returned = inspect.signature(original, eval_str=True).return_annotation
        if returned is not inspect.Signature.empty:
            wrapper.__annotations__["return"] = returned
    except Exception:
        logger.debug("Could not carry the result annotation over to %r", wrapper, exc_info=True)


def _guard_lifecycle(extension: McpExtension, name: str) -> None:
    """`on_start` / `on_stop` that raise cost only their extension.

    The platform's `start()` and `stop()` call every plugin's hook in one loop
    that does not catch, so one raising would stop the server starting (or the
    others from being told to stop).
    """
    for hook in ("on_start", "on_stop"):
        original = getattr(extension, hook, None)
        if original is None or getattr(original, "__guarded__", False):
            continue

        def guarded(original: Any = original, hook: str = hook) -> None:
            try:
                original()
            except Exception:
                logger.exception("Extension '%s' failed in %s; the others go on", name, hook)

        guarded.__guarded__ = True  # type: ignore[attr-defined]
        setattr(extension, hook, guarded)


class ExtensionHost(McpHost):
    """The reactor host, resolving extensions of a tool in a declared order, and firing the
    tool-call hooks around the tools of extensions that do not fire them themselves."""

    def __init__(self, hooks: Hooks, **settings: Any) -> None:
        super().__init__(**settings)
        self.hooks = hooks
        #: The extensions by the name they registered as.
        self.extensions: dict[str, McpExtension] = {}

    def add(self, extension: McpExtension) -> str:
        name = manifest_of(extension).name
        _guard_lifecycle(extension, name)
        registered = super().add(extension)
        self.extensions.setdefault(registered, extension)
        return registered

    def offered_tools(
        self,
        toolsets: Iterable[str] | None = None,
        tenant_id: str | None = None,
    ) -> list[ToolSpec]:
        wanted = None if toolsets is None else set(toolsets)
        resolved: list[ToolSpec] = []
        for contribution in self.platform.get_contributions(TOOLS, tenant_id=tenant_id):
            spec = contribution.value
            if not isinstance(spec, ToolSpec):
                logger.error(
                    "Extension %s offered something that is not a tool", contribution.plugin
                )
                continue
            if wanted is not None and spec.toolset not in wanted:
                continue
            if not getattr(self.extensions.get(contribution.plugin), "fires_hooks", False):
                spec = replace(spec, handler=observed(spec.name, spec.handler, self.hooks))
            extensions = sorted(
                self.platform.get_contribution_extensions(TOOLS, spec.name, tenant_id=tenant_id),
                key=lambda item: (item.order, item.plugin),
            )
            try:
                applied = spec
                for item in extensions:
                    wrapped = resolve(applied, [item.value])
                    _inherit_result(applied.handler, wrapped.handler)
                    applied = wrapped
                resolved.append(applied)
            except Exception:
                logger.exception("Tool %s is not served: an extension of it failed", spec.name)
        return resolved

    def unapplied_extensions(self) -> list[tuple[str, str]]:
        """(extension, tool) pairs whose tool nobody offered."""
        offered = {
            c.value.name
            for c in self.platform.get_contributions(TOOLS)
            if isinstance(c.value, ToolSpec)
        }
        unapplied: list[tuple[str, str]] = []
        for name, extension in self.extensions.items():
            try:
                targets = [item[0] for item in extension.tool_extensions()]
            except Exception:
                continue
            unapplied.extend((name, target) for target in targets if target not in offered)
        return unapplied

    @property
    def registered(self) -> dict[str, McpExtension]:
        return dict(self.extensions)


class ReplacingServer(MCPServer):
    """An MCP server on which a tool added under a taken name replaces the one there.

    The SDK keeps the first tool of a name and warns; a host that builds a
    server, then lets an extension put its own version of a tool on it, means
    the later one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        with _root_logger_left_alone():
            super().__init__(*args, **kwargs)

    def add_tool(self, fn: Any, name: str | None = None, *args: Any, **kwargs: Any) -> None:
        with contextlib.suppress(ToolError):
            self.remove_tool(name or fn.__name__)
        super().add_tool(fn, name, *args, **kwargs)


@contextlib.contextmanager
def _root_logger_left_alone() -> Iterator[None]:
    """While a server is made: the SDK's `MCPServer` configures the root logger (``basicConfig``
    with a rich handler), but how a process logs is the process's own choice (the CLI's, or
    Jupyter Server's when it hosts us). It also cost every start 10 ms and 1.4 MiB importing
    rich for a handler that ``basicConfig`` then discarded."""
    from mcp.server.mcpserver import server as sdk

    configure = sdk.configure_logging
    sdk.configure_logging = lambda *_args, **_kwargs: None
    try:
        yield
    finally:
        sdk.configure_logging = configure


class ExtensionManager:
    """A thin layer over the reactor host, adding this server's own hooks."""

    def __init__(
        self,
        hooks: Hooks | None = None,
        server_factory: Any = None,
        *,
        name: str = "jupyter-mcp-server",
        instructions: str = "",
    ) -> None:
        self.host = ExtensionHost(
            hooks if hooks is not None else Hooks(),
            name=name,
            instructions=instructions,
            server_factory=server_factory
            or (lambda name, instructions: ReplacingServer(name=name, instructions=instructions)),
        )
        self._started = False
        self._collected: list[Capability] | None = None

    # --- Adding extensions ------------------------------------------------------

    def add_all(self, extensions: Iterable[tuple[str, McpExtension]]) -> list[str]:
        """Register each (label, extension); answers the names registered."""
        names = [self.register(extension, label) for label, extension in extensions]
        for name, target in self.host.unapplied_extensions():
            logger.debug(
                "Extension '%s' extends '%s', which nobody offers; it does not apply", name, target
            )
        return [name for name in names if name]

    def register(self, extension: McpExtension, label: str | None = None) -> str | None:
        """Add one extension; any McpExtension is welcome. A failure costs only it."""
        try:
            return self.host.add(extension)
        except Exception:
            logger.exception(
                "Extension '%s' could not be registered", label or type(extension).__name__
            )
            return None

    def get(self, name: str) -> McpExtension | None:
        """One registered extension by manifest name; None when it is not installed."""
        return self.host.registered.get(name)

    @property
    def extensions(self) -> list[McpExtension]:
        return list(self.host.registered.values())

    # --- Tools -------------------------------------------------------------------

    def tools(self, toolsets: Iterable[str] | None = None) -> list[ToolSpec]:
        """Every tool on offer, extensions applied."""
        return self.host.offered_tools(toolsets)

    def declared_toolsets(self) -> tuple[Toolset, ...]:
        return self.host.declared_toolsets()

    def build(self, selection: Selection) -> Any:
        """The server a toolset selection asks for (built once per selection)."""
        return self.host.build(selection)

    async def describe_toolsets(self, hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
        """`GET /toolsets`: every declared toolset and the tools it serves by default.

        Served means on the built server, read back from it: an extension's
        `on_server` may have taken a tool off after it was offered. ``hidden``
        are tools a client gets only when it asked for them (an app's own
        tools): offered, not served by default.
        """
        built = self.host.build(Selection())
        served = {tool.name for tool in await built.server.list_tools()} - hidden
        by_toolset: dict[str, list[str]] = {}
        for spec in self.tools():
            by_toolset.setdefault(spec.toolset, []).append(spec.name)
        return {
            "toolsets": [
                {
                    "name": toolset.name,
                    "title": toolset.title or toolset.name,
                    "description": toolset.description,
                    "default": toolset.default,
                    # An opt-in toolset serves nothing by default, even under a name a default
                    # tool has (runs offers the execution tools with detach, in their place).
                    "tools": sorted(
                        name for name in by_toolset.get(toolset.name, []) if name in served
                    )
                    if toolset.default
                    else [],
                    "offered": sorted(by_toolset.get(toolset.name, [])),
                }
                for toolset in sorted(self.declared_toolsets(), key=lambda t: t.name)
            ]
        }

    # --- Capabilities and lifecycle --------------------------------------------

    def collect_capabilities(self, registry: CapabilityRegistry) -> list[Capability]:
        """Ask each extension once what it declares; one that raises costs only its own.

        Answers what was declared; asking again declares the same values again
        without asking the extensions twice.
        """
        if self._collected is not None:
            for capability in self._collected:
                registry.declare(capability)
            return list(self._collected)
        collected: list[Capability] = []
        for name, extension in self.host.registered.items():
            declare = getattr(extension, "capabilities", None)
            if declare is None:
                continue
            try:
                declared = list(declare())
            except Exception:
                logger.exception("Extension '%s' failed to declare its capabilities", name)
                continue
            for capability in declared:
                if not isinstance(capability, Capability):
                    logger.error("Extension '%s' declared %r, not a Capability", name, capability)
                    continue
                registry.declare(capability)
                collected.append(capability)
        self._collected = collected
        return collected

    def start(self) -> None:
        """Start the platform: each extension's `on_start`, once."""
        if not self._started:
            self._started = True
            self.host.start()

    def stop(self) -> None:
        """Each extension's `on_stop`."""
        if self._started:
            self._started = False
            self.host.stop()

    # --- The Jupyter hooks -------------------------------------------------------

    def create_code_sandbox(self, config: Any, log: logging.Logger | None = None) -> Any:
        """The first kernel an extension provides for this configuration, or None."""
        for name, extension in self.host.registered.items():
            provide = getattr(extension, "create_code_sandbox", None)
            if provide is None:
                continue
            try:
                sandbox = provide(config, log or logger)
            except Exception:
                logger.exception("Extension '%s' failed in create_code_sandbox", name)
                continue
            if sandbox is not None:
                return sandbox
        return None

    async def intercept_execute_code(self, code: str, timeout: float) -> Any:
        """The first extension's answer to `execute_code`, or None to run it here."""
        for name, extension in self.host.registered.items():
            intercept = getattr(extension, "intercept_execute_code", None)
            if intercept is None:
                continue
            try:
                result = await intercept(code, timeout)
            except Exception:
                logger.exception("Extension '%s' failed in intercept_execute_code", name)
                continue
            if result is not None:
                return result
        return None


def load_extensions(
    names: tuple[str, ...] | None, core: McpExtension
) -> list[tuple[str, McpExtension]]:
    """The core tools first, then every installed extension (entry points sorted by name),
    or only those ``names`` lists (an empty tuple: none), each with the entry-point name
    the log calls it by. A name that matches nothing installed is a typo worth a warning."""
    from importlib import metadata

    found: list[tuple[str, McpExtension]] = [("core", core)]
    entry_points = {
        entry_point.value: entry_point.name
        for entry_point in metadata.entry_points(group=ENTRY_POINT_GROUP)
    }
    if names is not None:
        installed = set(entry_points.values())
        missing = sorted(set(names) - installed)
        if missing:
            logger.warning(
                "%s names %s, which no installed extension publishes; installed: %s",
                ENVIRONMENT,
                ", ".join(repr(name) for name in missing),
                ", ".join(sorted(installed)) or "none",
            )
        if not set(names) & installed:
            return found
    for extension in load_installed_extensions(names):
        kind = type(extension)
        label = entry_points.get(f"{kind.__module__}:{kind.__qualname__}") or kind.__name__
        found.append((label, extension))
    return found
