"""Every setting declared once: the command line, the environment and the README agree.

The parser is made from the declarations in ``_config/settings.py``; these tests read
what a user reads (``--help`` and README.md) and what a bad value does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_mcp_server._config import SETTINGS, ConfigError, read_config

REPO = Path(__file__).resolve().parents[2]


def test_every_setting_is_in_the_readme_and_in_help():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_mcp_server", "start", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for setting in SETTINGS:
        if setting.flag:
            assert setting.flag in readme, setting.flag
            assert setting.flag in done.stdout, setting.flag
        if setting.env:
            assert setting.env in readme, setting.env


def test_the_environment_fills_what_the_command_line_leaves(tmp_path):
    environ = {
        "JUPYTER_MCP_HEARTBEAT_SECONDS": "2.5",
        "JUPYTER_MCP_EXTENSIONS": "",
        "JUPYTER_MCP_TOKEN": "env-token",
    }
    config = read_config({"workspace_root": str(tmp_path), "mcp_token": "flag-token"}, environ)
    assert config.heartbeat_seconds == 2.5
    assert config.extensions == ()  # set but empty: no extension besides the core tools
    assert config.mcp_token == "flag-token"  # the command line wins
    assert "flag-token" not in repr(config)  # secrets stay out of reprs and logs
    assert read_config({"workspace_root": str(tmp_path)}, {}).extensions is None


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"JUPYTER_MCP_HEARTBEAT_SECONDS": "soon"}, "JUPYTER_MCP_HEARTBEAT_SECONDS"),
        ({"JUPYTER_MCP_INLINE_TEXT_CHARS": "-5"}, "JUPYTER_MCP_INLINE_TEXT_CHARS"),
        ({"JUPYTER_URL": "ftp://example.org"}, "--jupyter-url"),
    ],
)
def test_a_bad_environment_value_is_named(tmp_path, environ, named):
    with pytest.raises(ConfigError, match=named):
        read_config({"workspace_root": str(tmp_path)}, environ)


def test_a_bad_variable_stops_the_server_before_it_serves(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_mcp_server", "start", "--workspace-root", str(tmp_path)],
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(REPO / "src"),
            "JUPYTER_MCP_TASK_TTL_SECONDS": "0",
        },
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "JUPYTER_MCP_TASK_TTL_SECONDS" in done.stderr and done.stdout == ""


def test_every_field_of_a_setting_is_read_by_the_server():
    """A declaration's field nobody reads is a promise nobody keeps (``Setting.jupyter`` was one)."""
    import ast
    from dataclasses import fields

    from jupyter_mcp_server._config import Setting

    read: set[str] = set()
    for path in (REPO / "src" / "jupyter_mcp_server").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                read.add(node.attr)
    assert [item.name for item in fields(Setting) if item.name not in read] == []


def test_the_jupyter_traits_are_made_from_the_settings():
    pytest.importorskip("jupyter_server")
    from traitlets.config import Config

    from jupyter_mcp_server._config import JUPYTER_SETTINGS, default_of
    from jupyter_mcp_server._jupyter.server_extension import JupyterMCPServerApp, _given

    traits = JupyterMCPServerApp.class_own_traits(config=True)
    # Besides the settings, the traits only a Jupyter Server has: its contents manager, and
    # signing in through the JupyterHub it runs under.
    assert set(traits) == {setting.jupyter for setting in JUPYTER_SETTINGS} | {
        "use_contents_manager",
        "hub_sign_in",
        "hub_custom_scopes",
    }
    for setting in JUPYTER_SETTINGS:
        assert traits[setting.jupyter].help == setting.help, setting.name
    # Unset, a setting the environment may set is not given (the environment, then the default,
    # decide); one only Jupyter sets is given its default.
    unset = _given(JupyterMCPServerApp())
    assert unset["install_timeout"] is None and unset["python"] is None
    assert unset["max_kernels"] == default_of("max_kernels")
    configured = Config(
        {
            "JupyterMCPServerApp": {
                "install_timeout": 5.0,
                "unresponsive_grace": 2.5,
                "capabilities": ["kernel.auto-restart"],
            }
        }
    )
    given = _given(JupyterMCPServerApp(config=configured))
    assert (given["install_timeout"], given["unresponsive_grace"], given["capability_args"]) == (
        5.0,
        2.5,
        ["kernel.auto-restart"],
    )


def test_a_setting_is_declared_in_one_place():
    """A setting is one field of ``ServerConfig``, its help and sources in that field's metadata
    (``_config.settings.setting``); no second list of settings names them again by a string, and
    no two declarations share a flag, a variable or a trait."""
    import ast
    from dataclasses import fields

    from jupyter_mcp_server._config import ServerConfig

    declared = [item.name for item in fields(ServerConfig) if item.metadata]
    assert [setting.name for setting in SETTINGS] == declared
    # ``Setting(...)`` is written once, inside ``setting()``; nothing else makes one by hand.
    made = []
    for path in (REPO / "src" / "jupyter_mcp_server").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = {
            id(node)
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef) and function.name == "setting"
            for node in ast.walk(function)
        }
        made += [
            f"{path.relative_to(REPO)}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "Setting"
            and id(node) not in allowed
        ]
    assert made == []
    for attribute in ("flag", "env", "jupyter"):
        given = [getattr(setting, attribute) for setting in SETTINGS if getattr(setting, attribute)]
        assert len(given) == len(set(given)), attribute
