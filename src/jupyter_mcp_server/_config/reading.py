"""Settings read from their text forms: the command line's flags and the environment.

This is the only module that reads ``os.environ`` for a setting; what it reads is
handed to :func:`.checks.checked`, which makes the values one :class:`ServerConfig`.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_mcp_server._policy.redaction import DEFAULT_SECRET_NAMES, secret_values

from .checks import checked
from .settings import SETTINGS, TRANSPORTS, ConfigError, ServerConfig, Setting

_TRUE = frozenset({"1", "true", "yes", "on"})


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
