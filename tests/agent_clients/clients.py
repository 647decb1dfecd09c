"""Each agent CLI the tests drive: its npm package, its configuration, its headless command.

A client is described once here: the pinned package that `node_tools`
installs, how to point it at the stand-in model and at our server (over stdio,
and over streamable HTTP where it can), the environment that keeps it off the
network, and the command that runs one prompt headless. `session.run` does the
rest. Everything a client writes goes under the test's own scratch home.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .standin import Search

#: The name the server is configured under in every client (their tool prefixes follow it).
SERVER = "jupyter"
PROMPT = "Work on the notebook demo.ipynb with the jupyter tools, then say you are done."


@dataclass
class Setup:
    """What a client's configuration is written from."""

    home: Path  # the scratch HOME every client's files go under
    workdir: Path  # where the client runs
    model_url: str  # the stand-in's base URL
    server: dict[str, Any]  # {"command": [...], "env": {...}} or {"url": ..., "headers": {...}}

    @property
    def stdio(self) -> bool:
        return "command" in self.server


@dataclass(frozen=True)
class Client:
    name: str
    spec: str  # npm name@version, pinned
    command: str  # its executable in node_modules/.bin
    #: Writes the client's files; answers its arguments after the executable, and its env.
    configure: Callable[[Setup], tuple[list[str], dict[str, str]]]
    #: Its own tool search, when it defers MCP tools behind one.
    search: Search | None = None
    #: transport -> why this client cannot be driven over it (the test skips saying so).
    cannot: dict[str, str] = field(default_factory=dict)
    #: Whether HTTP(S)_PROXY point at a dead port (a client that sends even loopback
    #: requests through a proxy is kept offline by its own settings instead).
    dead_proxy: bool = True


def _write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return path


def _mcp_json(setup: Setup, local: str, remote: str) -> dict[str, Any]:
    """The common `mcpServers` entry: `command`/`args`/`env`, or `url`, with the types named."""
    if setup.stdio:
        command, *args = setup.server["command"]
        return {"type": local, "command": command, "args": args, "env": setup.server["env"]}
    headers = setup.server.get("headers")
    return {"type": remote, "url": setup.server["url"], **({"headers": headers} if headers else {})}


# --- Claude Code ------------------------------------------------------------------------------


def _claude(setup: Setup) -> tuple[list[str], dict[str, str]]:
    entry = _mcp_json(setup, "stdio", "http")
    config = _write(setup.home / "mcp.json", {"mcpServers": {SERVER: entry}})
    args = [
        "-p",
        PROMPT,
        "--mcp-config",
        str(config),
        "--strict-mcp-config",
        "--allowedTools",
        f"mcp__{SERVER}",  # every tool of the server, with no prompt for permission
        "--output-format",
        "json",
    ]
    env = {
        "ANTHROPIC_BASE_URL": setup.model_url,
        "ANTHROPIC_API_KEY": "sk-ant-standin",
        "CLAUDE_CONFIG_DIR": str(setup.home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "MCP_TIMEOUT": "60000",
        "MCP_TOOL_TIMEOUT": "180000",
    }
    return args, env


CLAUDE = Client(
    "claude-code",
    "@anthropic-ai/claude-code@2.1.328",
    "claude",
    _claude,
    # MCP tools are deferred: only named in a system message until ToolSearch loads them.
    search=Search(
        "ToolSearch",
        lambda names: {"query": "select:" + ",".join(names), "max_results": len(names)},
        f"mcp__{SERVER}__",
    ),
)


# --- Codex CLI --------------------------------------------------------------------------------


def _toml(value: Any) -> str:
    """A TOML value: JSON's strings, numbers and arrays are TOML's; a dict is an inline table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml(v)}" for key, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _table(name: str, values: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{key} = {_toml(v)}\n" for key, v in values.items()) + "\n"


def _codex(setup: Setup) -> tuple[list[str], dict[str, str]]:
    codex_home = setup.home / ".codex"
    if setup.stdio:
        command, *args = setup.server["command"]
        server = {"command": command, "args": args, "env": setup.server["env"]}
    else:
        server = {"url": setup.server["url"]}
    # Without `required` the first turn goes before the server answered and offers no tool.
    server.update(required=True, startup_timeout_sec=60, tool_timeout_sec=180)
    # Tools that are not read-only ask first, which `exec` answers "no": approve them all.
    server["default_tools_approval_mode"] = "approve"
    top = {
        # A model it does not know: it offers every MCP tool instead of deferring them.
        "model": "standin-model",
        "model_provider": "standin",
        "approval_policy": "never",
        "check_for_update_on_startup": False,
    }
    config = "".join(f"{key} = {_toml(v)}\n" for key, v in top.items()) + "\n"
    config += _table(
        "model_providers.standin",
        {
            "name": "standin",
            "base_url": f"{setup.model_url}/v1",
            "wire_api": "responses",  # "chat" is refused by this version
            "env_key": "STANDIN_API_KEY",
            "request_max_retries": 0,
            "stream_max_retries": 0,
        },
    )
    # Plugin and app sync reach github.com and chatgpt.com; compression would send zstd.
    off = ("plugins", "remote_plugin", "apps", "enable_request_compression", "in_app_updates")
    config += _table("features", dict.fromkeys(off, False))
    config += _table("analytics", {"enabled": False})
    config += _table(f"mcp_servers.{SERVER}", server)
    _write(codex_home / "config.toml", config)
    args = ["exec", "--skip-git-repo-check", "--ephemeral", "--json", PROMPT]
    return args, {"CODEX_HOME": str(codex_home), "STANDIN_API_KEY": "sk-standin"}


CODEX = Client("codex", "@openai/codex@0.169.0", "codex", _codex)


# --- Copilot CLI ------------------------------------------------------------------------------


def _copilot(setup: Setup) -> tuple[list[str], dict[str, str]]:
    entry = {**_mcp_json(setup, "local", "http"), "tools": ["*"]}
    config = _write(setup.home / "copilot-mcp.json", {"mcpServers": {SERVER: entry}})
    args = [
        "-p",
        PROMPT,
        "--allow-all-tools",
        "--no-auto-update",
        "--disable-builtin-mcps",
        "--disable-client-telemetry",
        "--additional-mcp-config",
        f"@{config}",
        "--output-format",
        "json",
    ]
    env = {
        "COPILOT_HOME": str(setup.home / ".copilot"),
        # Offline: no GitHub sign-in, telemetry, web tools or update; a local provider instead.
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": f"{setup.model_url}/v1",
        "COPILOT_PROVIDER_API_KEY": "sk-standin",
        "COPILOT_MODEL": "standin-model",
    }
    return args, env


COPILOT = Client("copilot", "@github/copilot@1.0.102", "copilot", _copilot)


# --- Gemini CLI -------------------------------------------------------------------------------


def _gemini(setup: Setup) -> tuple[list[str], dict[str, str]]:
    if setup.stdio:
        command, *args = setup.server["command"]
        entry: dict[str, Any] = {"command": command, "args": args, "env": setup.server["env"]}
    else:
        entry = {"httpUrl": setup.server["url"]}
    entry.update(trust=True, timeout=180_000)  # trusted: no confirmation per call
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "mcpServers": {SERVER: entry},
    }
    _write(setup.home / ".gemini" / "settings.json", settings)
    args = ["-p", PROMPT, "--yolo", "--output-format", "json"]
    env = {
        "GOOGLE_GEMINI_BASE_URL": setup.model_url,
        "GEMINI_API_KEY": "standin-key",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",  # a scratch folder: else it stops to ask
    }
    return args, env


GEMINI = Client("gemini", "@google/gemini-cli@0.61.0", "gemini", _gemini)


# --- opencode ---------------------------------------------------------------------------------


def _opencode(setup: Setup) -> tuple[list[str], dict[str, str]]:
    if setup.stdio:
        server = {
            "type": "local",
            "command": setup.server["command"],
            "environment": setup.server["env"],
        }
    else:
        server = {"type": "remote", "url": setup.server["url"]}
    server.update(enabled=True, timeout=60_000)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "standin": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Stand-in",
                "options": {"baseURL": f"{setup.model_url}/v1", "apiKey": "sk-standin"},
                "models": {
                    "standin-model": {
                        "name": "Stand-in model",
                        "tool_call": True,
                        # A model that reads images, as people use: else images are refused.
                        "attachment": True,
                        "modalities": {"input": ["text", "image"], "output": ["text"]},
                    }
                },
            }
        },
        "model": "standin/standin-model",
        "small_model": "standin/standin-model",  # titles and summaries go to the stand-in too
        "autoupdate": False,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
        "mcp": {SERVER: server},
    }
    # A project opencode.json in a folder that is not a git repository was ignored: name the file.
    path = _write(setup.home / "opencode.json", config)
    args = ["run", "--pure", "--format", "json", PROMPT]
    env = {
        "OPENCODE_CONFIG": str(path),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",  # models.dev
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
    }
    return args, env


OPENCODE = Client("opencode", "opencode-ai@1.18.33", "opencode", _opencode)


# --- Qwen Code --------------------------------------------------------------------------------


def _qwen(setup: Setup) -> tuple[list[str], dict[str, str]]:
    if setup.stdio:
        command, *args = setup.server["command"]
        entry: dict[str, Any] = {"command": command, "args": args, "env": setup.server["env"]}
    else:
        entry = {"httpUrl": setup.server["url"]}
    entry.update(trust=True, timeout=180_000)
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "mcpServers": {SERVER: entry},
    }
    _write(setup.home / ".qwen" / "settings.json", settings)
    args = ["-p", PROMPT, "--yolo", "--output-format", "json"]
    env = {
        "OPENAI_BASE_URL": f"{setup.model_url}/v1",
        "OPENAI_API_KEY": "sk-standin",
        "OPENAI_MODEL": "standin-model",
        "QWEN_CODE_TRUST_WORKSPACE": "true",
    }
    return args, env


QWEN = Client(
    "qwen",
    "@qwen-code/qwen-code@0.15.10",
    "qwen",
    _qwen,
    # MCP tools are always deferred, found by name; at most 20 loaded per search.
    search=Search(
        "tool_search",
        lambda names: {"query": "select:" + ",".join(names), "max_results": min(20, len(names))},
        f"mcp__{SERVER}__",
    ),
    # It sends even loopback model requests through a proxy: its settings keep it offline.
    dead_proxy=False,
)

CLIENTS = {client.name: client for client in (CLAUDE, CODEX, COPILOT, GEMINI, OPENCODE, QWEN)}
