"""Every setting of the server, declared once, and the frozen configuration they fill.

A setting arrives from the command line, from the environment, or (inside
Jupyter Server) from Jupyter's traitlets. Each is declared here exactly
once, as a field of :class:`ServerConfig` made by :func:`setting`: its type
and default as the dataclass field's, its help text and where it may come
from in the field's metadata (as a traitlets trait carries its help). The
command line's parser (:mod:`.reading`) and the Jupyter extension's traits
are both made from these declarations (:data:`SETTINGS`, read off the
fields). Everything else is handed a :class:`ServerConfig`, which never
changes once built.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar, overload

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
    """One setting: its attribute on :class:`ServerConfig`, where it comes from, and its help.

    Never written by hand: :func:`setting` declares one on a field of :class:`ServerConfig`,
    and :data:`SETTINGS` names each after its field."""

    #: The field of :class:`ServerConfig` it fills (given by the field, not by the declaration).
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


#: The key of a setting's declaration in its :class:`ServerConfig` field's metadata.
_DECLARATION = "jupyter_mcp_server.setting"
_T = TypeVar("_T")


@overload
def setting(
    help: str,
    *,
    default: _T,
    kind: type,
    repr: bool = True,
    flag: str | None = None,
    env: str | None = None,
    positive: bool = False,
    jupyter: str | None = None,
    empty_is_a_value: bool = False,
) -> _T: ...
@overload
def setting(
    help: str,
    *,
    default_factory: Callable[[], _T],
    kind: type,
    repr: bool = True,
    flag: str | None = None,
    env: str | None = None,
    positive: bool = False,
    jupyter: str | None = None,
    empty_is_a_value: bool = False,
) -> _T: ...
def setting(
    help: str,
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    kind: type,
    repr: bool = True,
    flag: str | None = None,
    env: str | None = None,
    positive: bool = False,
    jupyter: str | None = None,
    empty_is_a_value: bool = False,
) -> Any:
    """A field of :class:`ServerConfig` that is a setting: the field's type and default, and
    its help and where it comes from (:class:`Setting`) in the field's metadata. The one way
    a setting is declared."""
    declared = Setting(
        name="",
        help=help,
        kind=kind,
        flag=flag,
        env=env,
        positive=positive,
        jupyter=jupyter,
        empty_is_a_value=empty_is_a_value,
    )
    metadata = {_DECLARATION: declared}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, repr=repr, metadata=metadata)
    return field(default=default, repr=repr, metadata=metadata)


@dataclass(frozen=True)
class ServerConfig:
    """What the server was pointed at and the limits it keeps: every field but the last two is
    a setting, declared with :func:`setting` (in the order ``--help`` lists them)."""

    transport: str = setting(
        "How clients connect: stdio, streamable-http or json-lines.",
        default="stdio",
        kind=str,
        flag="--transport",
    )
    host: str = setting(
        "HTTP only: the address to bind (default loopback).",
        default="127.0.0.1",
        kind=str,
        flag="--host",
    )
    port: int = setting(
        "HTTP only: the port (default 4040).",
        default=4040,
        kind=int,
        flag="--port",
    )
    workspace_root: Path = setting(
        "The directory notebooks live in (default: the current directory).",
        default_factory=lambda: Path(os.getcwd()).resolve(),
        kind=str,
        flag="--workspace-root",
    )
    #: ``--capability`` values in the order given, still unvalidated: names are
    #: checked once the extensions have declared theirs.
    capability_args: tuple[str, ...] = setting(
        "Turn a capability on (NAME or NAME=on) or off (NAME=off). Repeatable.",
        default=(),
        kind=list,
        flag="--capability",
        jupyter="capabilities",
    )
    #: The toolsets a stdio client gets, in the URL query's syntax ("" = the defaults).
    toolsets: str = setting(
        "Stdio and JSON lines: the toolsets served, as an HTTP URL's query says it: NAME adds a "
        "toolset to the defaults, only=A,B serves exactly those, without=NAME leaves one out.",
        default="",
        kind=str,
        flag="--toolsets",
        env="JUPYTER_MCP_TOOLSETS",
    )
    #: ``JUPYTER_MCP_CAPABILITIES``: the environment's layer, applied before the command line's.
    capability_env: str = setting(
        "Capabilities to turn on or off, comma-separated NAME[=VALUE]; the command line wins.",
        default="",
        kind=str,
        env="JUPYTER_MCP_CAPABILITIES",
    )
    default_timeout: float = setting(
        "Seconds per execution when a call gives none.",
        default=120.0,
        kind=float,
        flag="--default-timeout",
        positive=True,
        jupyter="default_timeout",
    )
    max_timeout: float = setting(
        "The largest timeout a call may ask for, in seconds.",
        default=3600.0,
        kind=float,
        flag="--max-timeout",
        positive=True,
        jupyter="max_timeout",
    )
    max_output_bytes: int = setting(
        "Output bytes kept per execution.",
        default=1_048_576,
        kind=int,
        flag="--max-output-bytes",
        positive=True,
        jupyter="max_output_bytes",
    )
    max_output_blocks: int = setting(
        "Output blocks kept per execution.",
        default=128,
        kind=int,
        flag="--max-output-blocks",
        positive=True,
        jupyter="max_output_blocks",
    )
    max_kernels: int = setting(
        "Kernels running at once.",
        default=8,
        kind=int,
        flag="--max-kernels",
        positive=True,
        jupyter="max_kernels",
    )
    idle_timeout: float = setting(
        "Seconds before an idle notebook session's kernel is stopped.",
        default=900.0,
        kind=float,
        flag="--idle-timeout",
        positive=True,
        jupyter="idle_timeout",
    )
    unresponsive_grace: float = setting(
        "Seconds a kernel still running code after its interrupt gets before the "
        "kernel.restart-unresponsive capability restarts it.",
        default=10.0,
        kind=float,
        flag="--unresponsive-grace",
        positive=True,
        jupyter="unresponsive_grace",
    )
    mcp_token: str | None = setting(
        "HTTP: require 'Authorization: Bearer TOKEN'.",
        default=None,
        repr=False,
        kind=str,
        flag="--mcp-token",
        env="JUPYTER_MCP_TOKEN",
    )
    #: The OAuth authorization server (OpenID provider) whose access tokens HTTP requests
    #: carry (_transports/authorization.py); None: no sign-in.
    auth_issuer: str | None = setting(
        "HTTP: sign clients in with this OAuth authorization server (an OpenID provider's issuer "
        "URL): requests carry its access tokens, checked against its keys (or its introspection), "
        "and each caller's scopes choose its profile (docs/authorization.md).",
        default=None,
        kind=str,
        flag="--auth-issuer",
        env="JUPYTER_MCP_AUTH_ISSUER",
    )
    #: The URL clients reach ``/mcp`` at: the resource the protected resource metadata names.
    #: None: ``http://HOST:PORT/mcp``.
    auth_resource: str | None = setting(
        "With --auth-issuer: the URL clients reach /mcp at (default http://HOST:PORT/mcp; behind a "
        "proxy, its public URL), named in the protected resource metadata.",
        default=None,
        kind=str,
        flag="--auth-resource",
        env="JUPYTER_MCP_AUTH_RESOURCE",
    )
    #: The ``aud`` an access token must name; None: the resource URL (RFC 8707).
    auth_audience: str | None = setting(
        "With --auth-issuer: the audience (aud) an access token must name (default: the resource "
        "URL, as RFC 8707 resource indicators make it; an Entra application's api://... URI).",
        default=None,
        kind=str,
        flag="--auth-audience",
        env="JUPYTER_MCP_AUTH_AUDIENCE",
    )
    #: Scope -> the profile it grants, in the order given.
    auth_scopes: tuple[tuple[str, str], ...] = setting(
        "With --auth-issuer: which scope grants which profile, comma-separated SCOPE=PROFILE "
        "(default notebooks:read=read-only,notebooks:write=edit,code:execute=full); a caller gets "
        "the widest its scopes allow, never wider than the server's.",
        default=(
            ("notebooks:read", "read-only"),
            ("notebooks:write", "edit"),
            ("code:execute", "full"),
        ),
        kind=str,
        flag="--auth-scopes",
        env="JUPYTER_MCP_AUTH_SCOPES",
    )
    #: This server's own client at the issuer, for token introspection (RFC 7662).
    auth_client_id: str | None = setting(
        "With --auth-issuer: this server's client id at the issuer, to introspect opaque tokens "
        "(RFC 7662); its secret in JUPYTER_MCP_AUTH_CLIENT_SECRET.",
        default=None,
        kind=str,
        flag="--auth-client-id",
        env="JUPYTER_MCP_AUTH_CLIENT_ID",
    )
    auth_client_secret: str | None = setting(
        "The secret of --auth-client-id.",
        default=None,
        repr=False,
        kind=str,
        env="JUPYTER_MCP_AUTH_CLIENT_SECRET",
    )
    #: Seconds a request to the issuer (metadata, keys, introspection) may take.
    auth_timeout: float = setting(
        "Seconds a request to the issuer (its metadata, its keys, an introspection) may take "
        "before the caller gets 503.",
        default=5.0,
        kind=float,
        env="JUPYTER_MCP_AUTH_TIMEOUT",
        positive=True,
    )
    #: Seconds after fetching the issuer's keys in which an unknown key id is refused unfetched.
    auth_keys_cooldown: float = setting(
        "Seconds after the issuer's keys were fetched during which a token naming a key not among "
        "them is refused without fetching them again (so invented key ids cannot flood the issuer).",
        default=10.0,
        kind=float,
        env="JUPYTER_MCP_AUTH_KEYS_COOLDOWN",
        positive=True,
    )
    audit_log: Path | None = setting(
        "Append a JSON line per tool call and execution to this file.",
        default=None,
        kind=str,
        flag="--audit-log",
        jupyter="audit_log",
    )
    jupyter_url: str | None = setting(
        "Start kernels on the Jupyter Server at this URL instead of locally.",
        default=None,
        kind=str,
        flag="--jupyter-url",
        env="JUPYTER_URL",
    )
    jupyter_token: str | None = setting(
        "That server's token (prefer the variable: arguments show in process lists).",
        default=None,
        repr=False,
        kind=str,
        flag="--jupyter-token",
        env="JUPYTER_TOKEN",
    )
    jupyter_contents: bool = setting(
        "Read and write notebooks on that Jupyter Server through its contents API too; "
        "paths are then relative to its root.",
        default=False,
        kind=bool,
        flag="--jupyter-contents",
        env="JUPYTER_CONTENTS",
    )
    #: The kernel backend kernels start on, by its entry-point name; None: ``jupyter-server``
    #: with a ``jupyter_url``, else ``local`` (``jupyter-server-extension`` inside Jupyter Server).
    kernel_backend: str | None = setting(
        "Where kernels start: a kernel backend's name (entry-point group jupyter_mcp_server.kernel_backends): "
        "local, jupyter-server (with --jupyter-url, its default), or one an installed package publishes.",
        default=None,
        kind=str,
        flag="--kernel-backend",
        env="JUPYTER_MCP_KERNEL_BACKEND",
        jupyter="kernel_backend",
    )
    #: The extensions to load by entry-point name; None loads every installed one.
    extensions: tuple[str, ...] | None = setting(
        "Load only these installed extensions (comma-separated entry-point names); "
        "the notebooks tools are always there.",
        default=None,
        kind=str,
        env="JUPYTER_MCP_EXTENSIONS",
        empty_is_a_value=True,
    )
    log_level: str = setting(
        "The level of the server's log on stderr.",
        default="WARNING",
        kind=str,
        env="JUPYTER_MCP_LOG_LEVEL",
    )
    heartbeat_seconds: float = setting(
        "A call with a progress token hears a heartbeat after this many silent seconds.",
        default=10.0,
        kind=float,
        env="JUPYTER_MCP_HEARTBEAT_SECONDS",
        positive=True,
    )
    watch_debounce_ms: int = setting(
        "Milliseconds of quiet before a change on disk is announced to subscribers.",
        default=200,
        kind=int,
        env="JUPYTER_MCP_WATCH_DEBOUNCE_MS",
        positive=True,
    )
    task_grace_seconds: float = setting(
        "Seconds an execution asked for as a task may take before it answers with the task.",
        default=1.0,
        kind=float,
        env="JUPYTER_MCP_TASK_GRACE_SECONDS",
        positive=True,
    )
    task_ttl_seconds: float = setting(
        "Seconds a finished task's or detached run's result is kept.",
        default=3600.0,
        kind=float,
        env="JUPYTER_MCP_TASK_TTL_SECONDS",
        positive=True,
    )
    inline_image_bytes: int = setting(
        "Images larger than this many (base64) bytes are shrunk to fit, or linked as a resource "
        "instead of inlined; the original is linked either way.",
        default=262_144,
        kind=int,
        env="JUPYTER_MCP_INLINE_IMAGE_BYTES",
        positive=True,
    )
    inline_text_chars: int = setting(
        "No one output text carries more than this many characters in a result, even under a "
        "larger max_output_chars.",
        default=65_536,
        kind=int,
        env="JUPYTER_MCP_INLINE_TEXT_CHARS",
        positive=True,
    )
    inline_budget_chars: int = setting(
        "Characters of output text one result carries when a call gives no max_output_chars; "
        "past it each output keeps its head and tail, the rest readable by reference.",
        default=16_384,
        kind=int,
        flag="--inline-budget-chars",
        env="JUPYTER_MCP_INLINE_BUDGET_CHARS",
        positive=True,
        jupyter="inline_budget_chars",
    )
    #: Patterns of secret variable names, beside redaction.DEFAULT_SECRET_NAMES.
    secret_names: tuple[str, ...] = setting(
        "More names of environment variables whose values are secret, comma-separated shell "
        "patterns (beside *_TOKEN, *_KEY, *_SECRET, *PASSWORD* ...): their values, in the "
        "server's environment or a kernel's, are masked in results and the audit log.",
        default=(),
        kind=str,
        env="JUPYTER_MCP_SECRET_NAMES",
    )
    #: The actions that ask the person first (approvals.py); None: its defaults.
    approve: tuple[str, ...] | None = setting(
        "The actions that ask the person's approval first, comma-separated (default all: "
        "kernel.restart, kernel.release, cells.delete, notebook.restore, packages.install, code.shell; "
        "empty: none).",
        default=None,
        kind=str,
        env="JUPYTER_MCP_APPROVE",
        empty_is_a_value=True,
    )
    approval_timeout: float = setting(
        "Seconds an approval may go unanswered before it counts as declined.",
        default=300.0,
        kind=float,
        env="JUPYTER_MCP_APPROVAL_TIMEOUT",
    )
    #: Where each notebook's history is kept; None keeps none.
    history_dir: Path | None = setting(
        "Where each notebook's history is kept (default: the platform's user state directory, "
        "~/.local/state/jupyter-mcp-server/history on Linux), never inside the workspace; 'off' keeps none.",
        default_factory=lambda: default_history_dir(),
        kind=str,
        flag="--history-dir",
        env="JUPYTER_MCP_HISTORY_DIR",
        jupyter="history_dir",
    )
    history_max_entries: int = setting(
        "Entries kept per notebook's history; the oldest are dropped.",
        default=500,
        kind=int,
        env="JUPYTER_MCP_HISTORY_MAX_ENTRIES",
        positive=True,
    )
    history_max_bytes: int = setting(
        "Bytes one notebook's history may take; the oldest entries are dropped.",
        default=256 * 1024 * 1024,
        kind=int,
        env="JUPYTER_MCP_HISTORY_MAX_BYTES",
        positive=True,
    )
    http_head_timeout: float = setting(
        "HTTP: seconds a connection may take to send a request's line and headers.",
        default=10.0,
        kind=float,
        env="JUPYTER_MCP_HTTP_HEAD_TIMEOUT",
        positive=True,
    )
    http_body_timeout: float = setting(
        "HTTP: seconds a request body may take to arrive (408 after that).",
        default=30.0,
        kind=float,
        env="JUPYTER_MCP_HTTP_BODY_TIMEOUT",
        positive=True,
    )
    #: Seconds an HTTP session may go without a request before it expires (its client gone).
    session_timeout: float = setting(
        "HTTP: seconds a session may go without a request (and without an open stream) before it "
        "expires, as if its client had sent DELETE: what it held is released and its notebooks' kernels "
        "are left to --idle-timeout; a client that comes back gets 404 and initializes again.",
        default=3600.0,
        kind=float,
        flag="--session-timeout",
        env="JUPYTER_MCP_SESSION_TIMEOUT",
        positive=True,
        jupyter="session_timeout",
    )
    #: HTTP: the most events of one SSE stream kept for a client resuming it (Last-Event-ID).
    resume_events: int = setting(
        "HTTP: the most events of one response stream kept for a client that lost its connection "
        "to resume it with Last-Event-ID; past it the oldest are dropped.",
        default=1000,
        kind=int,
        env="JUPYTER_MCP_RESUME_EVENTS",
        positive=True,
    )
    #: HTTP: the most bytes of events kept for resuming, every stream together.
    resume_bytes: int = setting(
        "HTTP: the most bytes of events kept for resuming streams, every session's together; past "
        "it the oldest are dropped.",
        default=32 * 1024 * 1024,
        kind=int,
        env="JUPYTER_MCP_RESUME_BYTES",
        positive=True,
    )
    #: ``--python``: an interpreter (or an environment's directory) to offer, and to run
    #: new notebooks on when the workspace has no environment of its own.
    python: str | None = setting(
        "A Python interpreter (or an environment's directory) to offer as an environment, and to "
        "run new notebooks on when the workspace has no environment of its own.",
        default=None,
        kind=str,
        flag="--python",
        env="JUPYTER_MCP_PYTHON",
        jupyter="python",
    )
    #: ``--kernel``: the kernelspec or environment new notebooks run on when the workspace
    #: has no environment of its own.
    kernel: str | None = setting(
        "The kernelspec or environment new notebooks run on when neither their metadata nor the "
        "workspace's only environment decides.",
        default=None,
        kind=str,
        flag="--kernel",
        env="JUPYTER_MCP_KERNEL",
        jupyter="kernel",
    )
    #: The environment the server was launched from (``VIRTUAL_ENV``, ``CONDA_PREFIX``).
    launcher_virtual_env: str | None = setting(
        "The virtualenv active where the server was started: offered as an environment.",
        default=None,
        kind=str,
        env="VIRTUAL_ENV",
    )
    launcher_conda_prefix: str | None = setting(
        "The conda environment active where the server was started: offered as an environment.",
        default=None,
        kind=str,
        env="CONDA_PREFIX",
    )
    #: IPython's directory (``IPYTHONDIR``): its ``kernels`` folder holds kernelspecs too.
    ipython_dir: str | None = setting(
        "IPython's directory (~/.ipython unless IPYTHONDIR says otherwise): kernelspecs in its "
        "kernels folder are found, as Jupyter finds them.",
        default=None,
        kind=str,
        env="IPYTHONDIR",
    )
    #: Seconds install_packages may take when a call gives no timeout.
    install_timeout: float = setting(
        "Seconds install_packages may take when a call gives no timeout.",
        default=600.0,
        kind=float,
        flag="--install-timeout",
        env="JUPYTER_MCP_INSTALL_TIMEOUT",
        positive=True,
        jupyter="install_timeout",
    )
    #: ``auto`` (uv where it is found, else pip; conda for a conda environment), ``uv``,
    #: ``pip`` or ``conda``.
    installer: str = setting(
        "What install_packages runs: auto (uv where found, else pip; conda's own for a conda "
        "environment), uv, pip or conda.",
        default="auto",
        kind=str,
        env="JUPYTER_MCP_INSTALLER",
    )
    # Not settings: what the settings' reading derives.
    #: (value, name) of the server's secret-named environment variables: masked wherever
    #: the server sends text (redaction.py). Never shown.
    secret_env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: Whether the workspace root was given (--workspace-root, Jupyter's root): if not, a
    #: stdio client's roots may choose it (client_roots.py).
    workspace_root_given: bool = False

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


#: Every setting, in the order :class:`ServerConfig` declares them, each named after its field.
SETTINGS: tuple[Setting, ...] = tuple(
    replace(item.metadata[_DECLARATION], name=item.name)
    for item in fields(ServerConfig)
    if _DECLARATION in item.metadata
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
