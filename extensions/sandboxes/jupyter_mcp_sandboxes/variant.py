"""The interface a sandbox variant implements, and what it is told when asked.

A variant is a small class: a name, the launch options it takes, whether it
can run here (and if not, what is missing), and ``launch``. The built-in ones
are in :mod:`jupyter_mcp_sandboxes.variants`; a deployment adds its own from
another package through the ``jupyter_mcp_sandboxes.variants`` entry-point
group, or by registering on the extension's registry at runtime.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from jupyter_mcp_sandboxes.sandbox import Sandbox
from jupyter_mcp_sandboxes.spec import SandboxSpec


@dataclass(frozen=True)
class LaunchContext:
    """What a variant needs to know about the server it launches for."""

    #: The server's workspace: a sandbox's directory is never inside it, and
    #: the confined variant hides it.
    workspace_root: Path
    #: Where sandbox directories are made.
    sandbox_root: Path
    #: The server the sandbox is launched for (its ``ServerAccess``), once the extension is
    #: attached: a variant reaching a Jupyter Server opens its kernel through it.
    server: Any = None


class SandboxVariant(abc.ABC):
    """One way to run a sandbox."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: The launch options (see `spec.OPTIONS`) this variant takes; any other
    #: option given to it is refused.
    options: ClassVar[frozenset[str]] = frozenset()

    def unavailable(self) -> str | None:
        """None when this variant can run here; otherwise what is missing, for the caller."""
        return None

    @abc.abstractmethod
    async def launch(self, spec: SandboxSpec, context: LaunchContext) -> Sandbox:
        """Start a sandbox for `spec`, ready to run code, or raise `ToolFailure` saying why not."""
