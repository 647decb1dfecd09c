"""Every setting of the server, declared once, and the frozen configuration they fill.

A setting arrives from the command line, from the environment, or (inside
Jupyter Server) from Jupyter's traitlets. Each is declared here exactly
once, with its help text, its default and where it may come from; the
command line's parser and the Jupyter extension's traits are both made from
these declarations, and this is the only module that reads ``os.environ``.
Everything else is handed a :class:`ServerConfig`, which never changes once
built.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jupyter_mcp_server.policy.profiles import PROFILES
from jupyter_mcp_server.policy.redaction import DEFAULT_SECRET_NAMES, secret_values
from jupyter_mcp_server.workspace.history_dir import default_history_dir, given_history_dir

from .errors import ToolFailure
from .jupyter_urls import ArgumentNames, normalize_url

TRANSPORTS = ("stdio", "streamable-http", "json-lines")
INSTALLERS = ("auto", "uv", "pip", "conda")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_TRUE = frozenset({"1", "true", "yes", "on"})


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
    #: carry (transports/authorization.py); None: no sign-in.
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
#: The settings the Jupyter Server extension takes as traits (``jupyter/server_extension.py``).
JUPYTER_SETTINGS: tuple[Setting, ...] = tuple(setting for setting in SETTINGS if setting.jupyter)


_DEFAULTS = ServerConfig(workspace_root=Path("."))


def default_of(name: str) -> Any:
    """A setting's default, as :class:`ServerConfig` declares it."""
    return getattr(_DEFAULTS, name)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line's flags, one per setting that has one."""
    for setting in SETTINGS:
        if setting.flag is None:
            continue
        extra = f" (env {setting.env})" if setting.env else ""
        if setting.name == "transport":
            parser.add_argument(
                setting.flag, choices=TRANSPORTS, default=None, help=setting.help, dest=setting.name
            )
        elif setting.kind is bool:
            parser.add_argument(
                setting.flag,
                action="store_true",
                default=None,
                help=setting.help + extra,
                dest=setting.name,
            )
        elif setting.kind is list:
            parser.add_argument(
                setting.flag,
                action="append",
                default=None,
                metavar="NAME[=VALUE]",
                help=setting.help + extra,
                dest=setting.name,
            )
        else:
            parser.add_argument(
                setting.flag,
                type=_parser_of(setting),
                default=None,
                help=setting.help + extra,
                dest=setting.name,
            )


def _parser_of(setting: Setting) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return _value(setting, text)
        except ConfigError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = setting.kind.__name__
    return parse


def _value(setting: Setting, text: str) -> Any:
    """One setting's value from its text form."""
    if setting.kind is bool:
        return text.strip().lower() in _TRUE
    if setting.kind in (int, float):
        try:
            value = setting.kind(text)
        except ValueError:
            raise ConfigError(
                f"{text!r} is not a{'n' if setting.kind is int else ''} {setting.kind.__name__}"
            ) from None
        if setting.positive and (not math.isfinite(value) or value <= 0):
            raise ConfigError(f"{text!r} must be a finite number greater than 0")
        return value
    return text


#: What the environment may set for a server inside Jupyter Server: its own
#: URL, token and transport are Jupyter's.
INSIDE_JUPYTER = frozenset(
    setting.name
    for setting in SETTINGS
    if setting.env
    and setting.name not in ("mcp_token", "jupyter_url", "jupyter_token", "jupyter_contents")
    and not setting.name.startswith("auth_")
)


def read_config(
    arguments: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    from_environment: frozenset[str] | None = None,
) -> ServerConfig:
    """The configuration from given values (by setting name, None when not given: the
    parsed command line, or Jupyter's traits) and the environment; a setting given both
    ways takes the given value. `from_environment` limits which settings the environment
    may set. ``ConfigError`` names what cannot be used."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if from_environment is not None and setting.name not in from_environment:
            given = arguments.get(setting.name)
            if given is not None:
                values[setting.name] = given
            continue
        given = arguments.get(setting.name)
        present = setting.env is not None and (
            bool(environ.get(setting.env)) or (setting.empty_is_a_value and setting.env in environ)
        )
        if given is None and present:
            assert setting.env is not None
            try:
                given = _value(setting, environ[setting.env])
            except ConfigError as error:
                raise ConfigError(f"{setting.env}: {error}") from None
        if given is not None:
            values[setting.name] = given
    names = tuple(n.strip() for n in str(values.get("secret_names") or "").split(",") if n.strip())
    values["secret_names"] = names
    values["secret_env"] = tuple(secret_values(environ, (*DEFAULT_SECRET_NAMES, *names)).items())
    return checked(**values)


def checked(**values: Any) -> ServerConfig:
    """A :class:`ServerConfig` from setting values, refused with ``ConfigError`` when they
    do not fit together."""
    given = values.pop("workspace_root", None)
    values["workspace_root_given"] = bool(given)
    root = Path(given or os.getcwd())
    if not root.is_dir():
        raise ConfigError(f"--workspace-root {str(root)!r} does not exist or is not a directory.")
    values["workspace_root"] = root.resolve()
    if "capability_args" in values:
        values["capability_args"] = tuple(values["capability_args"])
    if isinstance(values.get("approve"), str):
        values["approve"] = tuple(
            name.strip() for name in values["approve"].split(",") if name.strip()
        )
    if isinstance(values.get("extensions"), str):
        values["extensions"] = tuple(
            name.strip() for name in values["extensions"].split(",") if name.strip()
        )
    if values.get("audit_log"):
        values["audit_log"] = Path(values["audit_log"]).resolve()
    else:
        values.pop("audit_log", None)
    values["log_level"] = str(values.get("log_level", "WARNING")).upper()
    if values.get("python"):
        values["python"] = checked_interpreter_path(str(values["python"]))
    if values.get("installer") is not None:
        installer = str(values["installer"]).strip().lower()
        if installer not in INSTALLERS:
            raise ConfigError(
                f"JUPYTER_MCP_INSTALLER {installer!r} is not one of {', '.join(INSTALLERS)}."
            )
        values["installer"] = installer
    if "history_dir" in values:
        try:
            values["history_dir"] = given_history_dir(
                str(values["history_dir"]), values["workspace_root"]
            )
        except ValueError as error:
            raise ConfigError(str(error)) from None
    if isinstance(values.get("auth_scopes"), str):
        values["auth_scopes"] = scope_profiles(values["auth_scopes"])
    known = {item.name for item in fields(ServerConfig)}
    config = ServerConfig(**{name: value for name, value in values.items() if name in known})
    if config.default_timeout > config.max_timeout:
        raise ConfigError(
            f"--default-timeout {config.default_timeout:g} is above --max-timeout {config.max_timeout:g}."
        )
    if not MIN_INLINE_BUDGET <= config.inline_budget_chars <= MAX_INLINE_BUDGET:
        raise ConfigError(
            f"--inline-budget-chars {config.inline_budget_chars} is outside {MIN_INLINE_BUDGET}-{MAX_INLINE_BUDGET}."
        )
    if not 0 < config.port < 65536:
        raise ConfigError(f"--port {config.port} is not a port number (1-65535).")
    if (
        config.transport == "streamable-http"
        and config.host not in LOOPBACK_HOSTS
        and not config.mcp_token
        and not config.auth_issuer
    ):
        raise ConfigError(
            f"Refusing to bind {config.host}: anything but loopback needs --mcp-token or "
            "--auth-issuer, because whoever reaches this server runs code with your rights."
        )
    config = checked_authorization(config)
    if config.jupyter_url:
        try:
            url = normalize_url(
                config.jupyter_url, ArgumentNames("--jupyter-url", "--jupyter-token")
            )
        except ToolFailure as error:
            raise ConfigError(error.message) from None
        return _replaced(config, jupyter_url=url)
    if config.jupyter_contents:
        raise ConfigError(
            "--jupyter-contents needs --jupyter-url (or JUPYTER_URL): the Jupyter Server whose files to use."
        )
    return _replaced(config, jupyter_token=None)


def scope_profiles(text: str) -> tuple[tuple[str, str], ...]:
    """``--auth-scopes``' SCOPE=PROFILE pairs, each profile one of the profiles."""
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        scope, equals, profile = item.strip().partition("=")
        scope, profile = scope.strip(), profile.strip().lower()
        if not equals or not scope or " " in scope or '"' in scope or "\\" in scope:
            raise ConfigError(
                f"--auth-scopes {item.strip()!r} is not SCOPE=PROFILE (a scope has no spaces or quotes)."
            )
        if profile not in PROFILES:
            raise ConfigError(
                f"--auth-scopes {item.strip()!r}: {profile!r} is not a profile ({', '.join(PROFILES)})."
            )
        pairs.append((scope, profile))
    if not pairs:
        raise ConfigError("--auth-scopes names no scope: give at least one SCOPE=PROFILE.")
    return tuple(pairs)


def checked_authorization(config: ServerConfig) -> ServerConfig:
    """The sign-in settings made whole (the resource URL and audience filled in), or refused."""
    auth_only = [
        setting.flag or setting.env
        for setting in SETTINGS
        if setting.name in ("auth_resource", "auth_audience", "auth_client_id")
        and getattr(config, setting.name)
    ]
    if not config.auth_issuer:
        if auth_only:
            raise ConfigError(f"{', '.join(map(str, auth_only))} needs --auth-issuer.")
        return config
    if config.mcp_token:
        raise ConfigError(
            "--mcp-token and --auth-issuer are two ways to sign in: give one (--mcp-token for one "
            "person on one machine, --auth-issuer for a team)."
        )
    if config.auth_client_id and not config.auth_client_secret:
        raise ConfigError(
            "--auth-client-id needs its secret in JUPYTER_MCP_AUTH_CLIENT_SECRET (to introspect tokens)."
        )
    issuer = _checked_https_url("--auth-issuer", config.auth_issuer)
    if config.auth_resource:
        resource = _checked_https_url("--auth-resource", config.auth_resource)
    elif config.host in ("0.0.0.0", "::", ""):
        raise ConfigError(
            f"--host {config.host} binds every address, so the URL clients use is not known: give it "
            "as --auth-resource (e.g. https://notebooks.example.org/mcp)."
        )
    else:
        host = f"[{config.host}]" if ":" in config.host else config.host
        resource = f"http://{host}:{config.port}/mcp"
    audience = config.auth_audience or resource
    if not urlsplit(resource).path.endswith("/mcp"):
        raise ConfigError(
            f"--auth-resource {resource!r} must be the URL of /mcp (its path ends in /mcp)."
        )
    return _replaced(config, auth_issuer=issuer, auth_resource=resource, auth_audience=audience)


def _checked_https_url(flag: str, given: str) -> str:
    """An https URL (http only on loopback), without fragment; its trailing slash kept as given."""
    parts = urlsplit(given.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigError(f"{flag} {given!r} is not an http(s) URL.")
    if parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1"):
        raise ConfigError(
            f"{flag} {given!r} must be https (plain http only on loopback): tokens and keys travel over it."
        )
    if parts.fragment or parts.query or parts.username:
        raise ConfigError(f"{flag} {given!r} must have no query, fragment or user name.")
    return given.strip()


def checked_interpreter_path(given: str) -> str:
    """``--python``'s value as an absolute path to an executable file: an environment's
    directory stands for its interpreter. Symlinks are kept (a virtualenv's interpreter is one,
    and resolving it would leave the environment). Whether it is a Python interpreter is asked
    once the server is built (``kernels.environments.probe_interpreter``)."""
    path = Path(os.path.abspath(os.path.expanduser(given)))
    if path.is_dir():
        for candidate in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
            if (path / candidate).is_file():
                path = path / candidate
                break
        else:
            raise ConfigError(
                f"--python {given!r} is a directory with no Python interpreter in it (looked for bin/python)."
            )
    if not path.exists():
        raise ConfigError(f"--python {given!r} does not exist.")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigError(f"--python {given!r} is not an executable file.")
    return str(path)


def _replaced(config: ServerConfig, **changes: Any) -> ServerConfig:
    from dataclasses import replace

    return replace(config, **changes)
