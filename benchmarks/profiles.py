"""Servers described as data: ours, the SDK's minimal one, and other MCP notebook servers.

A profile says how to spawn a server (command, arguments, environment and
working directory, with ``{python}``, ``{workspace}`` and ``{repo}`` filled
in) and which tool, with which arguments, does each of the harness's
operations. Our own server is written in the same format, so every workload
drives every server one way, and ``--profile other.json`` measures another
notebook server in the same run (the format is documented in README.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MINIMAL_SERVER = BENCH / "minimal_server.py"

OPERATIONS = (
    "create_notebook",
    "open_notebook",
    "insert_cell",
    "insert_execute",
    "execute_cell",
    "execute_code",
    # Code run on a notebook's own kernel, for servers whose execute_code has no notebook.
    "execute_in_notebook",
    "read_all",
    "read_page",
    "outline",
    "search",
    "release_notebook",
    "list_variables",
    "run_all",
    "apply_edits",
    "diff_notebook",
    "notebook_history",
)


def substitute(template: Any, values: dict[str, Any]) -> Any:
    """Fill ``{name}`` placeholders; a string that is exactly one placeholder takes the value's type."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in values:
            return values[template[1:-1]]
        with contextlib.suppress(KeyError, IndexError, ValueError):
            return template.format_map(values)
        return template
    if isinstance(template, list):
        return [substitute(item, values) for item in template]
    if isinstance(template, dict):
        return {key: substitute(value, values) for key, value in template.items()}
    return template


def server_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment with the checkout's sources first and our server's default settings."""
    env = dict(os.environ)
    env.pop("JUPYTER_MCP_CAPABILITIES", None)
    env.pop("JUPYTER_MCP_EXTENSIONS", None)
    env.pop("JUPYTER_MCP_APPROVE", None)  # the defaults, as a user runs them
    # Servers keep their compiled modules as a user's Python does; without them every
    # spawn would compile the checkout's sources again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


@dataclass
class Profile:
    name: str
    command: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = "{workspace}"
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: A substring of the server process's command line, when the command is a wrapper.
    process_match: str | None = None
    mode: str = "legacy"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        unknown = set(data.get("tools", {})) - set(OPERATIONS)
        if unknown:
            raise SystemExit(
                f"profile {data.get('name')!r}: unknown operations {sorted(unknown)}; known: {list(OPERATIONS)}"
            )
        for operation, call in data.get("tools", {}).items():
            if not isinstance(call, dict) or "tool" not in call:
                raise SystemExit(
                    f"profile {data.get('name')!r}: {operation} needs {{'tool': NAME, 'arguments': {{...}}}}"
                )
        return cls(
            name=data["name"],
            command=data["command"],
            args=list(data.get("args", [])),
            env=dict(data.get("env", {})),
            cwd=data.get("cwd", "{workspace}"),
            tools=dict(data.get("tools", {})),
            process_match=data.get("process_match"),
            mode=data.get("mode", "legacy"),
        )

    def supports(self, *operations: str) -> bool:
        return all(op in self.tools for op in operations)

    def launch(self, workspace: Path) -> dict[str, Any]:
        """The arguments of ``mcp.StdioServerParameters`` that spawn this server on workspace."""
        values = {"python": sys.executable, "workspace": str(workspace), "repo": str(REPO)}
        return {
            "command": substitute(self.command, values),
            "args": [str(substitute(a, values)) for a in self.args],
            "env": server_environment({k: str(substitute(v, values)) for k, v in self.env.items()}),
            "cwd": substitute(self.cwd, values) if self.cwd else None,
        }

    def call(self, operation: str, values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The tool name and filled-in arguments of an operation."""
        call = self.tools[operation]
        return call["tool"], substitute(call.get("arguments", {}), values)


#: The operations our server serves only with an opt-in toolset, which the workloads that use
#: them ask for on ``OURS`` alone.
TOOLSET_OPERATIONS = (
    "list_variables",
    "run_all",
    "apply_edits",
    "diff_notebook",
    "notebook_history",
)


def load_profile(path: str) -> Profile:
    data = json.loads(Path(path).read_text())
    if data.get("tools") == "ours":
        # This server in another environment: the default tools, driven as ours are.
        data["tools"] = {
            op: call for op, call in OURS.tools.items() if op not in TOOLSET_OPERATIONS
        }
    profile = Profile.from_dict(data)
    if profile.name in ("ours", "floor"):
        raise SystemExit(f"{path}: a profile cannot be named {profile.name!r}")
    command = Path(str(substitute(profile.command, {"python": sys.executable, "repo": str(REPO)})))
    if command.is_absolute() and not command.exists():
        raise SystemExit(
            f"{path}: {command} does not exist; build its environment first: "
            "python benchmarks/environments.py"
        )
    return profile


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


#: Our server, written in the profile format.
OURS = Profile.from_dict(
    {
        "name": "ours",
        "command": "{python}",
        "args": ["-m", "jupyter_mcp_server", "start", "--workspace-root", "{workspace}"],
        "cwd": "{workspace}",
        "tools": {
            "create_notebook": _call("use_notebook", notebook_name="{notebook}", mode="create"),
            "open_notebook": _call("use_notebook", notebook_name="{notebook}", mode="connect"),
            "insert_cell": _call(
                "insert_cell",
                notebook_name="{notebook}",
                cell_index=-1,
                cell_type="code",
                cell_source="{source}",
            ),
            "insert_execute": _call(
                "insert_execute_code_cell",
                notebook_name="{notebook}",
                cell_index=-1,
                cell_source="{source}",
            ),
            "execute_cell": _call("execute_cell", notebook_name="{notebook}", cell_index="{index}"),
            "execute_code": _call("execute_code", notebook_name="{notebook}", code="{code}"),
            "read_all": _call(
                "read_notebook",
                notebook_name="{notebook}",
                response_format="detailed",
                start_index=0,
                limit=0,
            ),
            "read_page": _call(
                "read_notebook", notebook_name="{notebook}", response_format="brief"
            ),
            "outline": _call("outline", notebook_name="{notebook}"),
            "search": _call("search_notebooks", query="{query}"),
            "release_notebook": _call("unuse_notebook", notebook_name="{notebook}"),
            # Served with the introspection toolset only (workloads/introspection.py asks for it).
            "list_variables": _call("list_variables", notebook_name="{notebook}", limit=500),
            # Served with the runs toolset only (workloads/runs.py asks for it).
            "run_all": _call("run_cells", notebook_name="{notebook}", cells="all"),
            # Served with the history toolset only (workloads/history.py asks for it).
            "apply_edits": _call(
                "apply_edits", notebook_name="{notebook}", operations="{operations}"
            ),
            "diff_notebook": _call(
                "diff_notebook", notebook_name="{notebook}", from_revision="{revision}"
            ),
            "notebook_history": _call("notebook_history", notebook_name="{notebook}"),
        },
    }
)

#: The floor of spawn-to-initialize: the SDK's own MCPServer with one tool. The
#: marker argument carries the workspace path so the process can be found.
MINIMAL = Profile.from_dict(
    {
        "name": "floor",
        "command": "{python}",
        "args": [str(MINIMAL_SERVER), "--marker", "{workspace}"],
        "cwd": "{workspace}",
        "tools": {},
    }
)
