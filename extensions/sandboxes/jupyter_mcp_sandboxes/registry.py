"""The sandboxes launched in this server, by name, and which one is selected.

`CodeSandboxManager` is the one registry: `launch_sandbox` writes to it,
`use_sandbox` points into it, the two Jupyter hooks read it, and a
downstream extension reaches it through the extension's public
``sandboxes`` property rather than keeping a second set under the same names.

The selection is the server's, not a connection's: the hooks that run code
(``intercept_execute_code``, ``create_code_sandbox``) are not told which
client is asking, so "the selected sandbox" has to mean one thing for all.
A selected sandbox that dies stays selected, so code is never silently run
somewhere else: every `execute_code` says it is gone until the caller
selects another or clears the selection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.settings import Settings
from jupyter_mcp_sandboxes.spec import SandboxSpec
from jupyter_mcp_sandboxes.variant import LaunchContext
from jupyter_mcp_sandboxes.variants import VariantRegistry
from jupyter_mcp_server.api import (
    ALREADY_EXISTS,
    INVALID_ARGUMENT,
    KERNEL_GONE,
    NOT_FOUND,
    TIMEOUT,
    UNSUPPORTED,
    ToolFailure,
)

logger = logging.getLogger(__name__)

#: Terminated names remembered, so terminating one again says "already gone".
MAX_REMEMBERED = 256
#: What a variant gets beyond the caller's timeout before the launch is abandoned.
LAUNCH_GRACE = 30.0


@dataclass(frozen=True)
class Termination:
    """What `terminate` did."""

    sandbox_name: str
    #: It was running and this call stopped it.
    stopped: bool
    #: It was already gone (terminated before, or its process had exited).
    already_gone: bool
    #: It was the selected sandbox; the selection is now cleared.
    was_active: bool
    reason: str | None = None


def gone_message(sandbox: Sandbox) -> str:
    return (
        f"Sandbox '{sandbox.name}' is gone ({sandbox.gone_reason or 'it stopped'}); its variables and files went "
        "with it, and it is never used again. Launch a new one with launch_sandbox and select it with "
        "use_sandbox, or call use_sandbox with no name to run code on the notebook's kernel."
    )


class CodeSandboxManager:
    """Launches, lists, selects and terminates sandboxes."""

    def __init__(
        self,
        variants: VariantRegistry | None = None,
        settings: Settings | None = None,
        workspace_root: Callable[[], Path] | None = None,
    ) -> None:
        self.variants = variants if variants is not None else VariantRegistry.discover()
        self.settings = settings if settings is not None else Settings.from_environment()
        self._workspace_root = workspace_root or Path.cwd
        self._server: Any = None
        self._sandboxes: dict[str, Sandbox] = {}
        self._starting: set[str] = set()
        self._terminated: OrderedDict[str, str] = OrderedDict()
        self._active: str | None = None
        self._notebook_counter = 0

    def use_workspace_root(self, workspace_root: Callable[[], Path]) -> None:
        """Where relative sandbox directories are, once the server says where its workspace is."""
        self._workspace_root = workspace_root

    def use_server(self, server: Any) -> None:
        """The server sandboxes are launched for (its ``ServerAccess``): its workspace, and
        what a variant opens through it (a kernel on a Jupyter Server)."""
        self._server = server
        self.use_workspace_root(lambda: server.workspace_root)

    # --- What exists -------------------------------------------------------------

    @property
    def sandboxes(self) -> list[Sandbox]:
        return list(self._sandboxes.values())

    @property
    def active_name(self) -> str | None:
        return self._active

    @property
    def active(self) -> Sandbox | None:
        return self._sandboxes.get(self._active) if self._active else None

    def get(self, name: str) -> Sandbox:
        sandbox = self._sandboxes.get(name)
        if sandbox is not None:
            return sandbox
        if name in self._terminated:
            raise ToolFailure(
                NOT_FOUND,
                f"Sandbox '{name}' was terminated. Launch a new one with launch_sandbox.",
                sandbox_name=name,
                known=sorted(self._sandboxes),
            )
        known = ", ".join(sorted(self._sandboxes)) or "none"
        raise ToolFailure(
            NOT_FOUND,
            f"There is no sandbox '{name}'. Sandboxes: {known}. Call list_sandboxes to see them, "
            "or launch_sandbox to start one.",
            sandbox_name=name,
            known=sorted(self._sandboxes),
        )

    def __contains__(self, name: object) -> bool:
        return name in self._sandboxes

    # --- Launching ---------------------------------------------------------------

    def context(self) -> LaunchContext:
        return LaunchContext(
            workspace_root=self._workspace_root(),
            sandbox_root=self.settings.root,
            server=self._server,
        )

    def spec_for(self, name: str, variant: str | None = None, **options: object) -> SandboxSpec:
        """A launch request, with the operator's defaults where the configured variant is used."""
        chosen = variant or self.settings.default_variant
        spec = SandboxSpec(name=name, variant=chosen, **options)  # type: ignore[arg-type]
        if chosen == self.settings.notebook_variant and self.settings.options:
            spec = spec.with_defaults(dict(self.settings.options))
        return spec

    async def launch(self, spec: SandboxSpec) -> Sandbox:
        """Start a sandbox under a name nobody holds, or raise saying why not."""
        existing = self._sandboxes.get(spec.name)
        if existing is not None or spec.name in self._starting:
            if existing is None:
                state = "is still starting. Wait for that launch, or pick another name."
            elif existing.gone:
                state = f"is gone ({existing.gone_reason}). Call terminate_sandbox on it first, or pick another name."
            else:
                state = "is running. Select it with use_sandbox, or pick another name."
            raise ToolFailure(
                ALREADY_EXISTS,
                f"A sandbox named '{spec.name}' already exists and {state}",
                sandbox_name=spec.name,
            )
        variant = self.variants.get(spec.variant)
        refused = spec.given_options() - variant.options
        if refused:
            takes = ", ".join(sorted(variant.options)) or "no options"
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"The {variant.name} variant does not take {', '.join(sorted(refused))}; it takes {takes}.",
                argument=sorted(refused)[0],
            )
        missing = variant.unavailable()
        if missing is not None:
            raise ToolFailure(
                UNSUPPORTED,
                f"The {variant.name} variant cannot run here: {missing}.",
                variant=variant.name,
            )
        self._starting.add(spec.name)
        try:
            sandbox = await asyncio.wait_for(
                variant.launch(spec, self.context()), spec.timeout + LAUNCH_GRACE
            )
        except asyncio.TimeoutError:
            raise ToolFailure(
                TIMEOUT,
                f"The {variant.name} sandbox '{spec.name}' was not ready after {spec.timeout + LAUNCH_GRACE:g}s.",
            ) from None
        finally:
            self._starting.discard(spec.name)
        sandbox.on_release = self._released
        self._terminated.pop(spec.name, None)
        self._sandboxes[spec.name] = sandbox
        logger.info("Sandbox '%s' launched: %s", spec.name, sandbox.where)
        return sandbox

    # --- Selecting ---------------------------------------------------------------

    async def select(self, name: str | None) -> tuple[str | None, Sandbox | None]:
        """Make `name` the selected sandbox (None clears it); answers (previous, selected)."""
        previous = self._active
        if name is None:
            self._active = None
            return previous, None
        sandbox = self.get(name)
        if not await sandbox.is_alive():
            raise ToolFailure(KERNEL_GONE, gone_message(sandbox), sandbox_name=name)
        self._active = name
        return previous, sandbox

    async def live_active(self) -> Sandbox | None:
        """The selected sandbox if it is alive; None when none is selected or it is gone."""
        sandbox = self.active
        if sandbox is None or not await sandbox.is_alive():
            return None
        return sandbox

    async def for_notebook(self) -> Sandbox | None:
        """`create_code_sandbox`: None unless a variant is configured for notebooks;
        then the selected live sandbox, or a fresh one."""
        variant = self.settings.notebook_variant
        if variant is None:
            return None
        selected = self.active
        if selected is not None:
            if await selected.is_alive():
                return selected
            logger.warning(
                "The selected sandbox '%s' is gone; a notebook gets a fresh one instead",
                selected.name,
            )
        while True:
            self._notebook_counter += 1
            name = f"notebook-{self._notebook_counter}"
            if name not in self._sandboxes and name not in self._starting:
                break
        spec = self.spec_for(name, variant, ephemeral=True)
        return await self.launch(spec)

    # --- Ending ------------------------------------------------------------------

    async def terminate(self, name: str) -> Termination:
        """Stop a sandbox; one already terminated is reported gone, not refused."""
        sandbox = self._sandboxes.get(name)
        if sandbox is None:
            if name in self._terminated:
                return Termination(
                    name,
                    stopped=False,
                    already_gone=True,
                    was_active=False,
                    reason=self._terminated[name],
                )
            self.get(name)  # raises not_found, naming the ones there are
        assert sandbox is not None
        was_active = self._active == name
        alive = await sandbox.is_alive()
        reason = None if alive else sandbox.gone_reason
        del self._sandboxes[name]
        if was_active:
            self._active = None
        try:
            await sandbox.terminate()
        finally:
            self._remember(name, reason or "terminated")
        return Termination(
            name, stopped=alive, already_gone=not alive, was_active=was_active, reason=reason
        )

    def terminate_all(self) -> list[str]:
        """Stop every sandbox now, without an event loop (the server is stopping)."""
        names = list(self._sandboxes)
        for name, sandbox in list(self._sandboxes.items()):
            try:
                sandbox.terminate_now()
            except Exception:
                logger.exception("Sandbox '%s' did not stop cleanly", name)
            self._remember(name, "terminated when the server stopped")
        self._sandboxes.clear()
        self._active = None
        return names

    async def _released(self, sandbox: Sandbox) -> None:
        """A notebook let go of a sandbox's kernel: one started for it ends with it."""
        if not sandbox.spec.ephemeral or self._active == sandbox.name:
            return
        if self._sandboxes.get(sandbox.name) is sandbox:
            with contextlib.suppress(ToolFailure):
                await self.terminate(sandbox.name)

    def _remember(self, name: str, reason: str) -> None:
        self._terminated[name] = reason
        self._terminated.move_to_end(name)
        while len(self._terminated) > MAX_REMEMBERED:
            self._terminated.popitem(last=False)
