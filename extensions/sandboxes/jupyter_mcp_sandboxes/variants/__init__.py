"""The variants a sandbox can be launched as, and where more come from.

Built in: ``local`` (the default), ``confined`` and ``jupyter-server``. A
deployment adds its own without touching this package, either by publishing
a :class:`~jupyter_mcp_sandboxes.variant.SandboxVariant` (class or instance)
on the ``jupyter_mcp_sandboxes.variants`` entry-point group::

    [project.entry-points."jupyter_mcp_sandboxes.variants"]
    my-cloud = "my_package:MyCloudVariant"

or at runtime, on the registry the extension lends downstream::

    extension = get_extension_manager().get("jupyter-mcp-sandboxes")
    extension.sandboxes.variants.register(MyCloudVariant())

A variant that fails to load costs only itself; the log names it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from jupyter_mcp_sandboxes.variant import SandboxVariant
from jupyter_mcp_server.api import (
    INVALID_ARGUMENT,
    ToolFailure,
)

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "jupyter_mcp_sandboxes.variants"


def builtin_variants() -> list[SandboxVariant]:
    from jupyter_mcp_sandboxes.variants.confined import ConfinedVariant
    from jupyter_mcp_sandboxes.variants.jupyter_server import JupyterServerVariant
    from jupyter_mcp_sandboxes.variants.local import LocalVariant

    return [LocalVariant(), ConfinedVariant(), JupyterServerVariant()]


class VariantRegistry:
    """Variants by name; a later registration of a name replaces the earlier one."""

    def __init__(self, variants: list[SandboxVariant] | None = None) -> None:
        self._variants: dict[str, SandboxVariant] = {}
        for variant in variants or ():
            self.register(variant)

    @classmethod
    def discover(cls) -> VariantRegistry:
        """The built-in variants, then every entry point of the group, by name."""
        from importlib import metadata

        registry = cls(builtin_variants())
        for entry_point in sorted(
            metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name
        ):
            try:
                loaded = entry_point.load()
                variant = loaded() if isinstance(loaded, type) else loaded
                registry.register(variant)
            except Exception:
                logger.exception(
                    "Sandbox variant '%s' could not be loaded; the others are offered",
                    entry_point.name,
                )
        return registry

    def register(self, variant: SandboxVariant) -> None:
        if not isinstance(variant, SandboxVariant):
            raise TypeError(f"{variant!r} is not a SandboxVariant")
        self._variants[variant.name] = variant

    def get(self, name: str) -> SandboxVariant:
        variant = self._variants.get(name)
        if variant is None:
            raise ToolFailure(
                INVALID_ARGUMENT,
                f"There is no sandbox variant '{name}'. Variants: {', '.join(self.names)}.",
                argument="variant",
                known=self.names,
            )
        return variant

    @property
    def names(self) -> list[str]:
        return list(self._variants)

    def __iter__(self) -> Iterator[SandboxVariant]:
        return iter(list(self._variants.values()))
