"""Setting values made one :class:`ServerConfig`, or refused with a reason.

Each value alone was read by :mod:`.reading` (or handed in by Jupyter's traits);
here they are checked together: paths exist, limits fit inside each other,
a server reachable past loopback has a way to sign in, and the sign-in's
URLs are whole.
"""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jupyter_mcp_server._errors import ToolFailure
from jupyter_mcp_server._jupyter_urls import ArgumentNames, normalize_url
from jupyter_mcp_server._policy.profiles import PROFILES
from jupyter_mcp_server._workspace.history_dir import given_history_dir

from .settings import (
    INSTALLERS,
    LOOPBACK_HOSTS,
    MAX_INLINE_BUDGET,
    MIN_INLINE_BUDGET,
    SETTINGS,
    ConfigError,
    ServerConfig,
)


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
    once the server is built (``_kernels.environments.probe_interpreter``)."""
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
    return replace(config, **changes)
