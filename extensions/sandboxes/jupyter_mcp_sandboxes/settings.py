"""What the operator configured, read from the environment once the server starts.

Three variables, all optional:

``JUPYTER_MCP_SANDBOX_VARIANT``
    The variant notebooks' kernels come from (``create_code_sandbox``), and
    the default of `launch_sandbox`. Unset, empty or ``none``: notebooks run
    on the server's own kernels, as without this extension.
``JUPYTER_MCP_SANDBOX_OPTIONS``
    A JSON object of launch options used when a launch leaves them unset,
    e.g. ``{"memory_mb": 2048}`` or ``{"server_url": "http://host:8888", "token": "..."}``.
``JUPYTER_MCP_SANDBOX_ROOT``
    Where sandbox directories are made (default: the system's temporary
    directory). It must be outside the workspace.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VARIANT_ENV = "JUPYTER_MCP_SANDBOX_VARIANT"
OPTIONS_ENV = "JUPYTER_MCP_SANDBOX_OPTIONS"
ROOT_ENV = "JUPYTER_MCP_SANDBOX_ROOT"
DEFAULT_VARIANT = "local"
#: Values of the variant variable meaning "no sandbox for notebooks".
NO_VARIANT = frozenset({"", "none", "off", "no"})


@dataclass(frozen=True)
class Settings:
    """The operator's sandbox configuration."""

    #: The variant notebooks' kernels come from; None: the server's own kernels.
    notebook_variant: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    root: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    #: What was wrong with the environment, said when a sandbox is asked for.
    problem: str | None = None

    @property
    def default_variant(self) -> str:
        return self.notebook_variant or DEFAULT_VARIANT

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        variant = env.get(VARIANT_ENV, "").strip()
        problem = None
        options: dict[str, Any] = {}
        raw = env.get(OPTIONS_ENV, "").strip()
        if raw:
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as error:
                parsed, problem = {}, f"{OPTIONS_ENV} is not JSON ({error.msg}); it is ignored."
            if isinstance(parsed, dict):
                options = parsed
            else:
                problem = f"{OPTIONS_ENV} must be a JSON object of launch options; it is ignored."
        root = Path(env.get(ROOT_ENV) or tempfile.gettempdir())
        return cls(
            notebook_variant=None if variant.lower() in NO_VARIANT else variant,
            options=options,
            root=root,
            problem=problem,
        )
