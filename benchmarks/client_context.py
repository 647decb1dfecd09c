"""Workload 12 per client: each server's tool listing as a client sends it, the table, the verdicts.

``client_views.py`` says what a client hands its model of each result; this
module adds what it sends of the server's ``tools/list`` and prints, per
task, per client, per server, the bytes handed and whether the task was done
there, with a verdict line per client. It needs no MCP client (the report and
the targets read it), and nothing here asserts.

The listing rule, from the model requests the real clients made in
``tests/protocol/test_agent_clients.py``: every client sends each MCP tool's name
(behind its own prefix), description and input schema, in its model API's
function shape, and nothing else of it (no output schema, no annotations, no
title), as compact JSON. Two add to each schema: Gemini CLI a
``wait_for_previous`` parameter, opencode ``"additionalProperties": false``.
Checked against the recorded requests (our 35 tools with the runs and history
toolsets): Claude Code, Gemini CLI, opencode and Qwen Code within 2 bytes,
Copilot CLI 0.2 % under, Codex 4 % over (it rewrites some schemas smaller). Claude Code and Qwen Code load MCP tools on demand (Claude Code
sends them with ``defer_loading``; both handed the model 10 of the 35), so
there the number is an upper bound of what the model reads.
"""

from __future__ import annotations

import json
from typing import Any

from client_views import PASSES_IMAGES, VIEWS
from results import Results

#: The clients, in the order of the table (the names of tests/agent_clients/clients.py).
CLIENTS = tuple(VIEWS)

#: task key -> its label (the order of workload 12).
TASK_LABELS = {
    "find": "find a function among the notebooks",
    "sections": "a 2,000-cell notebook, section by section",
    "long_error": "the error ending a 200,000-line output",
    "fix": "fix a cell failing inside a library",
    "frame": "a 1,000-row DataFrame's head and shape",
    "plot": "what a plot shows",
    "rerun": "re-run, which cells changed",
}

#: Tasks whose verdict is not counted, and why (the README's notes say more).
EXEMPT = {
    "fix": "exempt: the traceback the fix needs is its floor",
}


def _compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _tool(tool: Any) -> tuple[str, str, dict[str, Any]]:
    """Name, description and input schema of a tool (an SDK ``Tool`` or its JSON)."""
    if not isinstance(tool, dict):
        tool = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return tool["name"], tool.get("description") or "", tool.get("inputSchema") or {}


#: The parameter Gemini CLI adds to every tool it offers its model.
GEMINI_WAIT = {
    "type": "boolean",
    "description": "Set to true to wait for all previously requested tools in this turn to "
    "complete before starting. Set to false (or omit) to run in parallel. Use true when this "
    "tool depends on the output of previous tools.",
}


def listing(client: str, tools: list[Any]) -> Any:
    """The tools as the client puts them in its model request (the tools array, or part)."""
    shaped: list[Any] = []
    for tool in tools:
        name, description, schema = _tool(tool)
        if client == "gemini":
            properties = {**schema.get("properties", {}), "wait_for_previous": GEMINI_WAIT}
            schema = {**schema, "properties": properties}
        elif client == "opencode":
            schema = {**schema, "additionalProperties": False}
        if client == "claude-code":
            shaped.append(
                {
                    "name": f"mcp__jupyter__{name}",
                    "description": description,
                    "input_schema": schema,
                    "defer_loading": True,
                }
            )
        elif client == "codex":  # the Responses API, grouped under the server's namespace
            shaped.append(
                {
                    "type": "function",
                    "name": name,
                    "description": description,
                    "strict": False,
                    "parameters": schema,
                }
            )
        elif client == "gemini":
            shaped.append(
                {
                    "name": f"mcp_jupyter_{name}",
                    "description": description,
                    "parametersJsonSchema": schema,
                }
            )
        else:  # Chat Completions: Copilot CLI, opencode, Qwen Code
            prefix = {"copilot": "jupyter-", "opencode": "jupyter_", "qwen": "mcp__jupyter__"}
            shaped.append(
                {
                    "type": "function",
                    "function": {
                        "name": prefix[client] + name,
                        "description": description,
                        "parameters": schema,
                    },
                }
            )
    if client == "codex":
        return {"type": "namespace", "name": "mcp__jupyter", "tools": shaped}
    if client == "gemini":
        return {"functionDeclarations": shaped}
    return shaped


def listing_bytes(client: str, tools: list[Any]) -> int:
    return _compact(listing(client, tools))


def _median(r: Results, metric: str, who: str) -> float | None:
    try:
        return r.median(metric, who)
    except KeyError:
        return None


def servers(r: Results) -> list[str]:
    """The servers measured per client: ours first, then each peer."""
    found = {who for metric, who in r.samples if metric.startswith("client_")}
    return ["ours", *sorted(found - {"ours"})] if found else []


def table(r: Results) -> str:
    """Per task, per client: each server's bytes handed (and whether it was done there)."""
    names = servers(r)
    if not names:
        return ""
    header = ["task", "client", *(f"{who}: bytes handed" for who in names), "ours / best peer"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for key, label in TASK_LABELS.items():
        for client in CLIENTS:
            cells, best = [], None
            for who in names:
                spent = _median(r, f"client_{client}_{key}_bytes", who)
                done = _median(r, f"client_{client}_{key}_done", who) == 1.0
                cells.append(
                    "–" if spent is None else f"{spent:,.0f}{'' if done else ' (not done)'}"
                )
                if who != "ours" and done and spent is not None:
                    best = spent if best is None else min(best, spent)
            ours = _median(r, f"client_{client}_{key}_bytes", "ours")
            ratio = f"{ours / best:.3f}×" if ours is not None and best else "–"
            lines.append("| " + " | ".join([label, client, *cells, ratio]) + " |")
    for client in CLIENTS:
        cells = []
        for who in names:
            size = _median(r, f"client_{client}_tools_bytes", who)
            cells.append("–" if size is None else f"{size:,.0f}")
        lines.append(
            "| " + " | ".join(["tool listing (every conversation)", client, *cells, ""]) + " |"
        )
    return "\n".join(lines)


def verdict(r: Results, client: str) -> tuple[bool, str]:
    """Ours done on each task this client can carry, on <= 1/3 of the best peer done there."""
    names = [who for who in servers(r) if who != "ours"]
    met, parts = True, []
    for key in TASK_LABELS:
        ours = r.median(f"client_{client}_{key}_bytes")
        done = r.median(f"client_{client}_{key}_done") == 1.0
        peers = [
            r.median(f"client_{client}_{key}_bytes", who)
            for who in names
            if _median(r, f"client_{client}_{key}_done", who) == 1.0
        ]
        best = min(peers) if peers else None
        against = f"{ours / best:.3f}x the best peer's {best:,.0f} B" if best else "no peer did it"
        if key == "plot" and client not in PASSES_IMAGES and not done and not peers:
            parts.append(f"{key}: no server can (the client drops images)")
            continue
        ok = done and (best is None or ours * 3 <= best)
        if key in EXEMPT and done:
            parts.append(f"{key} {ours:,.0f} B ({against}; {EXEMPT[key]})")
            continue
        met = met and ok
        parts.append(f"{key} {ours:,.0f} B{'' if done else ' NOT done'} ({against})")
    return met, "; ".join(parts)
