"""The server's configuration: every setting declared once (:mod:`.settings`), read from
the command line and the environment (:mod:`.reading`), and checked together (:mod:`.checks`)
into one frozen :class:`ServerConfig`."""

from .checks import checked, checked_authorization, checked_interpreter_path, scope_profiles
from .reading import add_arguments, read_config
from .settings import (
    INSIDE_JUPYTER,
    INSTALLERS,
    JUPYTER_SETTINGS,
    LOOPBACK_HOSTS,
    MAX_INLINE_BUDGET,
    MIN_INLINE_BUDGET,
    SETTINGS,
    SETTINGS_BY_NAME,
    TRANSPORTS,
    ConfigError,
    ServerConfig,
    Setting,
    default_of,
)

__all__ = [
    "INSIDE_JUPYTER",
    "INSTALLERS",
    "JUPYTER_SETTINGS",
    "LOOPBACK_HOSTS",
    "MAX_INLINE_BUDGET",
    "MIN_INLINE_BUDGET",
    "SETTINGS",
    "SETTINGS_BY_NAME",
    "TRANSPORTS",
    "ConfigError",
    "ServerConfig",
    "Setting",
    "add_arguments",
    "checked",
    "checked_authorization",
    "checked_interpreter_path",
    "default_of",
    "read_config",
    "scope_profiles",
]
