"""The configuration every part of the server reads, after the command line.

Extensions used to register while the command line was still being parsed,
and asked a configuration that did not exist yet. Here the CLI parses first,
installs the result with :func:`set_config`, and only then imports what runs
extensions; :func:`get_config` is the truth from then on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
MAX_OUTPUT_BYTES = 1_048_576
MAX_OUTPUT_BLOCKS = 128
MAX_KERNELS = 8
IDLE_TIMEOUT = 900.0
#: Seconds a kernel still running code after its interrupt gets before the
#: ``kernel.restart-unresponsive`` capability restarts it.
UNRESPONSIVE_GRACE = 10.0

TRANSPORTS = ("stdio", "streamable-http", "json-lines")


@dataclass(frozen=True)
class ServerConfig:
    """What the server was pointed at and the limits it keeps."""

    workspace_root: Path = field(default_factory=lambda: Path(os.getcwd()).resolve())
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 4040
    default_timeout: float = DEFAULT_TIMEOUT
    max_timeout: float = MAX_TIMEOUT
    max_output_bytes: int = MAX_OUTPUT_BYTES
    max_output_blocks: int = MAX_OUTPUT_BLOCKS
    max_kernels: int = MAX_KERNELS
    idle_timeout: float = IDLE_TIMEOUT
    unresponsive_grace: float = UNRESPONSIVE_GRACE
    mcp_token: str | None = None
    #: ``--capability`` values in the order given, still unvalidated: names are
    #: checked once the extensions have declared theirs.
    capability_args: tuple[str, ...] = ()
    #: Where the JSON-lines audit hook writes, when enabled.
    audit_log: Path | None = None
    #: A Jupyter Server to start kernels on (``--jupyter-url`` / ``JUPYTER_URL``);
    #: None starts them locally.
    jupyter_url: str | None = None
    #: Its token (``--jupyter-token`` / ``JUPYTER_TOKEN``). Never shown: not in
    #: this object's repr, a log line, a result or an error.
    jupyter_token: str | None = field(default=None, repr=False)
    #: Notebook files live on that Jupyter Server too, read and written through
    #: its contents API (``--jupyter-contents``), instead of under workspace_root.
    jupyter_contents: bool = False

    @property
    def limits(self) -> dict[str, float | int]:
        """The effective limits, under the names ``jupymcp://capabilities`` uses."""
        return {
            "default_timeout_seconds": self.default_timeout,
            "max_timeout_seconds": self.max_timeout,
            "max_output_bytes": self.max_output_bytes,
            "max_output_blocks": self.max_output_blocks,
            "max_kernels": self.max_kernels,
            "idle_timeout_seconds": self.idle_timeout,
        }


_config: ServerConfig | None = None


def get_config() -> ServerConfig:
    """The server's configuration: the parsed command line once it has been read."""
    global _config
    if _config is None:
        _config = ServerConfig()
    return _config


def set_config(config: ServerConfig) -> ServerConfig:
    """Install the configuration the rest of the process reads."""
    global _config
    _config = config
    return config
