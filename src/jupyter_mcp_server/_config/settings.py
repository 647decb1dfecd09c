"""Every setting of the server, declared once, and the frozen configuration they fill.

A setting arrives from the command line, from the environment, or (inside
Jupyter Server) from Jupyter's traitlets. Each is declared here exactly
once, with its help text, its default and where it may come from; the
command line's parser (:mod:`.reading`) and the Jupyter extension's traits
are both made from these declarations. Everything else is handed a
:class:`ServerConfig`, which never changes once built.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_mcp_server._workspace.history_dir import default_history_dir

TRANSPORTS = ("stdio", "streamable-http", "json-lines")
INSTALLERS = ("auto", "uv", "pip", "conda")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


#: The range of the inline budget (``--inline-budget-chars``, a call's ``max_output_chars``):
#: below it a result could not even say what it left out; above it one result would
#: crowd out the conversation it is part of.
MIN_INLINE_BUDGET = 1024
MAX_INLINE_BUDGET = 262_144


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class Setting:
    """One setting: its attribute on :class:`ServerConfig`, where it comes from, and its help."""

    name: str
    help: str
    #: ``float``, ``int``, ``str``, ``bool`` or ``list`` (repeatable, strings).
    kind: type
    #: The command-line flag, or None for a setting only the environment sets.
    flag: str | None = None
    #: The environment variable, or None.
    env: str | None = None
    #: Numbers must be finite and above 0.
    positive: bool = False
    #: The name of its trait on the Jupyter Server extension (``JupyterMCPServerApp.<jupyter>``),
    #: made from this declaration (kind, default, help); None: Jupyter does not set it.
    jupyter: str | None = None
    #: An empty environment value is a value (an empty list), not an unset variable.
    empty_is_a_value: bool = False


@dataclass(frozen=True)
class ServerConfig:
    """What the server was pointed at and the limits it keeps (see :data:`SETTINGS`)."""

    workspace_root: Path = field(default_factory=lambda: Path(os.getcwd()).resolve())
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 4040
    default_timeout: float = 120.0
    max_timeout: float = 3600.0
    max_output_bytes: int = 1_048_576
    max_output_blocks: int = 128
    max_kernels: int = 8
    idle_timeout: float = 900.0
    unresponsive_grace: float = 10.0
    mcp_token: str | None = field(default=None, repr=False)
    #: The OAuth authorization server (OpenID provider) whose access tokens HTTP requests
    #: carry (_transports/authorization.py); None: no sign-in.
    auth_issuer: str | None = None
    #: The URL clients reach ``/mcp`` at: the resource the protected resource metadata names.
    #: None: ``http://HOST:PORT/mcp``.
    auth_resource: str | None = None
    #: The ``aud`` an access token must name; None: the resource URL (RFC 8707).
    auth_audience: str | None = None
    #: Scope -> the profile it grants, in the order given.
    auth_scopes: tuple[tuple[str, str], ...] = (
        ("notebooks:read", "read-only"),
        ("notebooks:write", "edit"),
        ("code:execute", "full"),
    )
    #: This server's own client at the issuer, for token introspection (RFC 7662).
    auth_client_id: str | None = None
    auth_client_secret: str | None = field(default=None, repr=False)
    #: Seconds a request to the issuer (metadata, keys, introspection) may take.
    auth_timeout: float = 5.0
    #: Seconds after fetching the issuer's keys in which an unknown key id is refused unfetched.
    auth_keys_cooldown: float = 10.0
    #: ``--capability`` values in the order given, still unvalidated: names are
    #: checked once the extensions have declared theirs.
    capability_args: tuple[str, ...] = ()
    #: The toolsets a stdio client gets, in the URL query's syntax ("" = the defaults).
    toolsets: str = ""
    #: ``JUPYTER_MCP_CAPABILITIES``: the environment's layer, applied before the command line's.
    capability_env: str = ""
    audit_log: Path | None = None
    jupyter_url: str | None = None
    jupyter_token: str | None = field(default=None, repr=False)
    jupyter_contents: bool = False
    #: The kernel backend kernels start on, by its entry-point name; None: ``jupyter-server``
    #: with a ``jupyter_url``, else ``local`` (``jupyter-server-extension`` inside Jupyter Server).
    kernel_backend: str | None = None
    #: The extensions to load by entry-point name; None loads every installed one.
    extensions: tuple[str, ...] | None = None
    log_level: str = "WARNING"
    heartbeat_seconds: float = 10.0
    watch_debounce_ms: int = 200
    task_grace_seconds: float = 1.0
    task_ttl_seconds: float = 3600.0
    inline_image_bytes: int = 262_144
    inline_text_chars: int = 65_536
    inline_budget_chars: int = 16_384
    http_head_timeout: float = 10.0
    http_body_timeout: float = 30.0
    #: Seconds an HTTP session may go without a request before it expires (its client gone).
    session_timeout: float = 3600.0
    #: HTTP: the most events of one SSE stream kept for a client resuming it (Last-Event-ID).
    resume_events: int = 1000
    #: HTTP: the most bytes of events kept for resuming, every stream together.
    resume_bytes: int = 32 * 1024 * 1024
    #: ``--python``: an interpreter (or an environment's directory) to offer, and to run
    #: new notebooks on when the workspace has no environment of its own.
    python: str | None = None
    #: ``--kernel``: the kernelspec or environment new notebooks run on when the workspace
    #: has no environment of its own.
    kernel: str | None = None
    #: The environment the server was launched from (``VIRTUAL_ENV``, ``CONDA_PREFIX``).
    launcher_virtual_env: str | None = None
    launcher_conda_prefix: str | None = None
    #: IPython's directory (``IPYTHONDIR``): its ``kernels`` folder holds kernelspecs too.
    ipython_dir: str | None = None
    #: Seconds install_packages may take when a call gives no timeout.
    install_timeout: float = 600.0
    #: ``auto`` (uv where it is found, else pip; conda for a conda environment), ``uv``,
    #: ``pip`` or ``conda``.
    installer: str = "auto"
    #: Patterns of secret variable names, beside redaction.DEFAULT_SECRET_NAMES.
    secret_names: tuple[str, ...] = ()
    #: (value, name) of the server's secret-named environment variables: masked wherever
    #: the server sends text (redaction.py). Never shown.
    secret_env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: Whether the workspace root was given (--workspace-root, Jupyter's root): if not, a
    #: stdio client's roots may choose it (client_roots.py).
    workspace_root_given: bool = False
    #: The actions that ask the person first (approvals.py); None: its defaults.
    approve: tuple[str, ...] | None = None
    approval_timeout: float = 300.0
    #: Where each notebook's history is kept; None keeps none.
    history_dir: Path | None = field(default_factory=lambda: default_history_dir())
    history_max_entries: int = 500
    history_max_bytes: int = 256 * 1024 * 1024

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


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "transport",
        "How clients connect: stdio, streamable-http or json-lines.",
        str,
        flag="--transport",
    ),
    Setting("host", "HTTP only: the address to bind (default loopback).", str, flag="--host"),
    Setting("port", "HTTP only: the port (default 4040).", int, flag="--port"),
    Setting(
        "workspace_root",
        "The directory notebooks live in (default: the current directory).",
        str,
        flag="--workspace-root",
    ),
    Setting(
        "capability_args",
        "Turn a capability on (NAME or NAME=on) or off (NAME=off). Repeatable.",
        list,
        flag="--capability",
        jupyter="capabilities",
    ),
    Setting(
        "toolsets",
        "Stdio and JSON lines: the toolsets served, as an HTTP URL's query says it: NAME adds a "
        "toolset to the defaults, only=A,B serves exactly those, without=NAME leaves one out.",
        str,
        flag="--toolsets",
        env="JUPYTER_MCP_TOOLSETS",
    ),
    Setting(
        "capability_env",
        "Capabilities to turn on or off, comma-separated NAME[=VALUE]; the command line wins.",
        str,
        env="JUPYTER_MCP_CAPABILITIES",
    ),
    Setting(
        "default_timeout",
        "Seconds per execution when a call gives none.",
        float,
        flag="--default-timeout",
        positive=True,
        jupyter="default_timeout",
    ),
    Setting(
        "max_timeout",
        "The largest timeout a call may ask for, in seconds.",
        float,
        flag="--max-timeout",
        positive=True,
        jupyter="max_timeout",
    ),
    Setting(
        "max_output_bytes",
        "Output bytes kept per execution.",
        int,
        flag="--max-output-bytes",
        positive=True,
        jupyter="max_output_bytes",
    ),
    Setting(
        "max_output_blocks",
        "Output blocks kept per execution.",
        int,
        flag="--max-output-blocks",
        positive=True,
        jupyter="max_output_blocks",
    ),
    Setting(
        "max_kernels",
        "Kernels running at once.",
        int,
        flag="--max-kernels",
        positive=True,
        jupyter="max_kernels",
    ),
    Setting(
        "idle_timeout",
        "Seconds before an idle notebook session's kernel is stopped.",
        float,
        flag="--idle-timeout",
        positive=True,
        jupyter="idle_timeout",
    ),
    Setting(
        "unresponsive_grace",
        "Seconds a kernel still running code after its interrupt gets before the "
        "kernel.restart-unresponsive capability restarts it.",
        float,
        flag="--unresponsive-grace",
        positive=True,
        jupyter="unresponsive_grace",
    ),
    Setting(
        "mcp_token",
        "HTTP: require 'Authorization: Bearer TOKEN'.",
        str,
        flag="--mcp-token",
        env="JUPYTER_MCP_TOKEN",
    ),
    Setting(
        "auth_issuer",
        "HTTP: sign clients in with this OAuth authorization server (an OpenID provider's issuer "
        "URL): requests carry its access tokens, checked against its keys (or its introspection), "
        "and each caller's scopes choose its profile (docs/authorization.md).",
        str,
        flag="--auth-issuer",
        env="JUPYTER_MCP_AUTH_ISSUER",
    ),
    Setting(
        "auth_resource",
        "With --auth-issuer: the URL clients reach /mcp at (default http://HOST:PORT/mcp; behind a "
        "proxy, its public URL), named in the protected resource metadata.",
        str,
        flag="--auth-resource",
        env="JUPYTER_MCP_AUTH_RESOURCE",
    ),
    Setting(
        "auth_audience",
        "With --auth-issuer: the audience (aud) an access token must name (default: the resource "
        "URL, as RFC 8707 resource indicators make it; an Entra application's api://... URI).",
        str,
        flag="--auth-audience",
        env="JUPYTER_MCP_AUTH_AUDIENCE",
    ),
    Setting(
        "auth_scopes",
        "With --auth-issuer: which scope grants which profile, comma-separated SCOPE=PROFILE "
        "(default notebooks:read=read-only,notebooks:write=edit,code:execute=full); a caller gets "
        "the widest its scopes allow, never wider than the server's.",
        str,
        flag="--auth-scopes",
        env="JUPYTER_MCP_AUTH_SCOPES",
    ),
    Setting(
        "auth_client_id",
        "With --auth-issuer: this server's client id at the issuer, to introspect opaque tokens "
        "(RFC 7662); its secret in JUPYTER_MCP_AUTH_CLIENT_SECRET.",
        str,
        flag="--auth-client-id",
        env="JUPYTER_MCP_AUTH_CLIENT_ID",
    ),
    Setting(
        "auth_client_secret",
        "The secret of --auth-client-id.",
        str,
        env="JUPYTER_MCP_AUTH_CLIENT_SECRET",
    ),
    Setting(
        "auth_timeout",
        "Seconds a request to the issuer (its metadata, its keys, an introspection) may take "
        "before the caller gets 503.",
        float,
        env="JUPYTER_MCP_AUTH_TIMEOUT",
        positive=True,
    ),
    Setting(
        "auth_keys_cooldown",
        "Seconds after the issuer's keys were fetched during which a token naming a key not among "
        "them is refused without fetching them again (so invented key ids cannot flood the issuer).",
        float,
        env="JUPYTER_MCP_AUTH_KEYS_COOLDOWN",
        positive=True,
    ),
    Setting(
        "audit_log",
        "Append a JSON line per tool call and execution to this file.",
        str,
        flag="--audit-log",
        jupyter="audit_log",
    ),
    Setting(
        "jupyter_url",
        "Start kernels on the Jupyter Server at this URL instead of locally.",
        str,
        flag="--jupyter-url",
        env="JUPYTER_URL",
    ),
    Setting(
        "jupyter_token",
        "That server's token (prefer the variable: arguments show in process lists).",
        str,
        flag="--jupyter-token",
        env="JUPYTER_TOKEN",
    ),
    Setting(
        "jupyter_contents",
        "Read and write notebooks on that Jupyter Server through its contents API too; "
        "paths are then relative to its root.",
        bool,
        flag="--jupyter-contents",
        env="JUPYTER_CONTENTS",
    ),
    Setting(
        "kernel_backend",
        "Where kernels start: a kernel backend's name (entry-point group jupyter_mcp_server.kernel_backends): "
        "local, jupyter-server (with --jupyter-url, its default), or one an installed package publishes.",
        str,
        flag="--kernel-backend",
        env="JUPYTER_MCP_KERNEL_BACKEND",
        jupyter="kernel_backend",
    ),
    Setting(
        "extensions",
        "Load only these installed extensions (comma-separated entry-point names); "
        "the notebooks tools are always there.",
        str,
        env="JUPYTER_MCP_EXTENSIONS",
        empty_is_a_value=True,
    ),
    Setting(
        "log_level", "The level of the server's log on stderr.", str, env="JUPYTER_MCP_LOG_LEVEL"
    ),
    Setting(
        "heartbeat_seconds",
        "A call with a progress token hears a heartbeat after this many silent seconds.",
        float,
        env="JUPYTER_MCP_HEARTBEAT_SECONDS",
        positive=True,
    ),
    Setting(
        "watch_debounce_ms",
        "Milliseconds of quiet before a change on disk is announced to subscribers.",
        int,
        env="JUPYTER_MCP_WATCH_DEBOUNCE_MS",
        positive=True,
    ),
    Setting(
        "task_grace_seconds",
        "Seconds an execution asked for as a task may take before it answers with the task.",
        float,
        env="JUPYTER_MCP_TASK_GRACE_SECONDS",
        positive=True,
    ),
    Setting(
        "task_ttl_seconds",
        "Seconds a finished task's or detached run's result is kept.",
        float,
        env="JUPYTER_MCP_TASK_TTL_SECONDS",
        positive=True,
    ),
    Setting(
        "inline_image_bytes",
        "Images larger than this many (base64) bytes are shrunk to fit, or linked as a resource "
        "instead of inlined; the original is linked either way.",
        int,
        env="JUPYTER_MCP_INLINE_IMAGE_BYTES",
        positive=True,
    ),
    Setting(
        "inline_text_chars",
        "No one output text carries more than this many characters in a result, even under a "
        "larger max_output_chars.",
        int,
        env="JUPYTER_MCP_INLINE_TEXT_CHARS",
        positive=True,
    ),
    Setting(
        "inline_budget_chars",
        "Characters of output text one result carries when a call gives no max_output_chars; "
        "past it each output keeps its head and tail, the rest readable by reference.",
        int,
        flag="--inline-budget-chars",
        env="JUPYTER_MCP_INLINE_BUDGET_CHARS",
        positive=True,
        jupyter="inline_budget_chars",
    ),
    Setting(
        "secret_names",
        "More names of environment variables whose values are secret, comma-separated shell "
        "patterns (beside *_TOKEN, *_KEY, *_SECRET, *PASSWORD* ...): their values, in the "
        "server's environment or a kernel's, are masked in results and the audit log.",
        str,
        env="JUPYTER_MCP_SECRET_NAMES",
    ),
    Setting(
        "approve",
        "The actions that ask the person's approval first, comma-separated (default all: "
        "kernel.restart, kernel.release, cells.delete, notebook.restore, packages.install, code.shell; "
        "empty: none).",
        str,
        env="JUPYTER_MCP_APPROVE",
        empty_is_a_value=True,
    ),
    Setting(
        "approval_timeout",
        "Seconds an approval may go unanswered before it counts as declined.",
        float,
        env="JUPYTER_MCP_APPROVAL_TIMEOUT",
    ),
    Setting(
        "history_dir",
        "Where each notebook's history is kept (default: the platform's user state directory, "
        "~/.local/state/jupyter-mcp-server/history on Linux), never inside the workspace; 'off' keeps none.",
        str,
        flag="--history-dir",
        env="JUPYTER_MCP_HISTORY_DIR",
        jupyter="history_dir",
    ),
    Setting(
        "history_max_entries",
        "Entries kept per notebook's history; the oldest are dropped.",
        int,
        env="JUPYTER_MCP_HISTORY_MAX_ENTRIES",
        positive=True,
    ),
    Setting(
        "history_max_bytes",
        "Bytes one notebook's history may take; the oldest entries are dropped.",
        int,
        env="JUPYTER_MCP_HISTORY_MAX_BYTES",
        positive=True,
    ),
    Setting(
        "http_head_timeout",
        "HTTP: seconds a connection may take to send a request's line and headers.",
        float,
        env="JUPYTER_MCP_HTTP_HEAD_TIMEOUT",
        positive=True,
    ),
    Setting(
        "http_body_timeout",
        "HTTP: seconds a request body may take to arrive (408 after that).",
        float,
        env="JUPYTER_MCP_HTTP_BODY_TIMEOUT",
        positive=True,
    ),
    Setting(
        "session_timeout",
        "HTTP: seconds a session may go without a request (and without an open stream) before it "
        "expires, as if its client had sent DELETE: what it held is released and its notebooks' kernels "
        "are left to --idle-timeout; a client that comes back gets 404 and initializes again.",
        float,
        flag="--session-timeout",
        env="JUPYTER_MCP_SESSION_TIMEOUT",
        positive=True,
        jupyter="session_timeout",
    ),
    Setting(
        "resume_events",
        "HTTP: the most events of one response stream kept for a client that lost its connection "
        "to resume it with Last-Event-ID; past it the oldest are dropped.",
        int,
        env="JUPYTER_MCP_RESUME_EVENTS",
        positive=True,
    ),
    Setting(
        "resume_bytes",
        "HTTP: the most bytes of events kept for resuming streams, every session's together; past "
        "it the oldest are dropped.",
        int,
        env="JUPYTER_MCP_RESUME_BYTES",
        positive=True,
    ),
    Setting(
        "python",
        "A Python interpreter (or an environment's directory) to offer as an environment, and to "
        "run new notebooks on when the workspace has no environment of its own.",
        str,
        flag="--python",
        env="JUPYTER_MCP_PYTHON",
        jupyter="python",
    ),
    Setting(
        "kernel",
        "The kernelspec or environment new notebooks run on when neither their metadata nor the "
        "workspace's only environment decides.",
        str,
        flag="--kernel",
        env="JUPYTER_MCP_KERNEL",
        jupyter="kernel",
    ),
    Setting(
        "launcher_virtual_env",
        "The virtualenv active where the server was started: offered as an environment.",
        str,
        env="VIRTUAL_ENV",
    ),
    Setting(
        "launcher_conda_prefix",
        "The conda environment active where the server was started: offered as an environment.",
        str,
        env="CONDA_PREFIX",
    ),
    Setting(
        "ipython_dir",
        "IPython's directory (~/.ipython unless IPYTHONDIR says otherwise): kernelspecs in its "
        "kernels folder are found, as Jupyter finds them.",
        str,
        env="IPYTHONDIR",
    ),
    Setting(
        "install_timeout",
        "Seconds install_packages may take when a call gives no timeout.",
        float,
        flag="--install-timeout",
        env="JUPYTER_MCP_INSTALL_TIMEOUT",
        positive=True,
        jupyter="install_timeout",
    ),
    Setting(
        "installer",
        "What install_packages runs: auto (uv where found, else pip; conda's own for a conda "
        "environment), uv, pip or conda.",
        str,
        env="JUPYTER_MCP_INSTALLER",
    ),
)
SETTINGS_BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}
#: The settings the Jupyter Server extension takes as traits (``_jupyter/server_extension.py``).
JUPYTER_SETTINGS: tuple[Setting, ...] = tuple(setting for setting in SETTINGS if setting.jupyter)


_DEFAULTS = ServerConfig(workspace_root=Path("."))


def default_of(name: str) -> Any:
    """A setting's default, as :class:`ServerConfig` declares it."""
    return getattr(_DEFAULTS, name)


#: What the environment may set for a server inside Jupyter Server: its own
#: URL, token and transport are Jupyter's.
INSIDE_JUPYTER = frozenset(
    setting.name
    for setting in SETTINGS
    if setting.env
    and setting.name not in ("mcp_token", "jupyter_url", "jupyter_token", "jupyter_contents")
    and not setting.name.startswith("auth_")
)
