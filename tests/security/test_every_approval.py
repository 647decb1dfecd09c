"""Every action the default approvals list names is asked, by every built-in tool that performs it.

The actions come from the code (``approvals.DEFAULT_ACTIONS``): an action
added there without a walk below fails here. For each action, a server with
every toolset is set up so that the action would really happen (a kernel with
a variable in it, a second kernel to move to, an earlier revision to restore,
a workspace ``.venv`` to install into, cells whose shell lines would leave a
file behind); then each tool that performs it is called with a person who
declines. The person must have been asked (an elicitation while the call waits
on 2025-11-25; an ``input_required`` result on 2026-07-28, answered by hand),
the question must name what would happen, the call must be ``declined`` for
that action, and nothing may have changed: the workspace's bytes (the
notebook, the ``.venv``), the notebooks' histories, the kernels and what they
hold, and no shell line ran.

Every tool that changes something is either walked here or named in
``NOT_ASKED`` with the reason it asks nothing: a new tool cannot slip by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import ERROR_KEY, error_code, ok, serve, text_of
from mcp import Client
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult

from jupyter_mcp_server._calls.approvals import (
    DEFAULT_ACTIONS,
    DELETE_CELLS,
    INSTALL_PACKAGES,
    RELEASE_KERNEL,
    RESTART_KERNEL,
    RESTORE_REVISION,
    SHELL_CODE,
)
from jupyter_mcp_server._tools.declarations import NOTEBOOK_TOOLS

MODES = ["legacy", "2026-07-28"]
ARGS = ("--toolsets", "runs,history,environments", "--capability", "kernel.prestart=off")
PACKAGE = "tabulate==0.9.0"


@dataclass
class Scene:
    """What a walk's setup made: the workspace, and what the walks name."""

    workspace: Path
    history: Path
    #: A file the notebook's shell lines would create.
    canary: Path
    #: Notebooks whose kernel holds ``kept = 41``.
    kept_in: list[str] = field(default_factory=list)
    other_kernel: str = ""
    kernel: str = ""
    first_revision: str = ""


def notebook(scene: Scene) -> None:
    sources = ["x0 = 0", f"!touch {scene.canary}", "x2 = 2"]
    cells = [
        {
            "cell_type": "code",
            "id": f"c{i}",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": source,
        }
        for i, source in enumerate(sources)
    ]
    # Its kernelspec named: the workspace's .venv (made for packages.install, without ipykernel) is not chosen.
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    (scene.workspace / "a.ipynb").write_text(
        json.dumps({"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})
    )


async def with_kernel(client: Client, scene: Scene) -> None:
    if scene.kernel:
        return
    used = await ok(client, "use_notebook", {"notebook_name": "a.ipynb"})
    scene.kernel = used["kernel_id"]
    await ok(client, "execute_code", {"code": "kept = 41", "notebook_name": "a.ipynb"})
    scene.kept_in.append("a.ipynb")


async def with_two_kernels(client: Client, scene: Scene) -> None:
    await with_kernel(client, scene)
    other = await ok(
        client,
        "use_notebook",
        {"notebook_name": "b.ipynb", "mode": "create", "kernel_name": "python3"},
    )
    scene.other_kernel = other["kernel_id"]


async def with_an_earlier_revision(client: Client, scene: Scene) -> None:
    scene.first_revision = (
        await ok(client, "get_notebook_revision", {"notebook_name": "a.ipynb"})
    )["revision"]
    await ok(
        client,
        "overwrite_cell_source",
        {"notebook_name": "a.ipynb", "cell_id": "c0", "cell_source": "x0 = 'later'"},
    )


async def with_a_workspace_venv(client: Client, scene: Scene) -> None:
    from environments_support import make_env

    make_env(scene.workspace / ".venv")


async def nothing(client: Client, scene: Scene) -> None:
    return None


@dataclass(frozen=True)
class Walk:
    """One tool performing the action: its arguments, and what its question must name."""

    tool: str
    arguments: Callable[[Scene], dict[str, Any]]
    names: Callable[[Scene], tuple[str, ...]]


#: For each action: how to make it happen for real, and every built-in tool that performs it.
SETUPS: dict[str, Callable[[Client, Scene], Awaitable[None]]] = {
    RESTART_KERNEL: with_kernel,
    RELEASE_KERNEL: with_two_kernels,
    DELETE_CELLS: nothing,
    RESTORE_REVISION: with_an_earlier_revision,
    INSTALL_PACKAGES: with_a_workspace_venv,
    SHELL_CODE: with_kernel,
}
WALKS: dict[str, tuple[Walk, ...]] = {
    RESTART_KERNEL: (
        Walk(
            "restart_notebook",
            lambda s: {"notebook_name": "a.ipynb"},
            lambda s: ("a.ipynb", s.kernel),
        ),
        Walk(
            "run_cells",
            lambda s: {"notebook_name": "a.ipynb", "cells": ["c0"], "restart": True},
            lambda s: ("a.ipynb", s.kernel),
        ),
    ),
    RELEASE_KERNEL: (
        Walk(
            "unuse_notebook",
            lambda s: {"notebook_name": "a.ipynb"},
            lambda s: ("a.ipynb", s.kernel),
        ),
        Walk(
            "use_notebook",
            lambda s: {"notebook_name": "a.ipynb", "kernel_id": s.other_kernel},
            lambda s: ("a.ipynb", s.kernel, s.other_kernel),
        ),
    ),
    DELETE_CELLS: (
        Walk(
            "delete_cell",
            lambda s: {"notebook_name": "a.ipynb", "cell_ids_to_delete": ["c2"]},
            lambda s: ("a.ipynb", "c2", "x2 = 2"),
        ),
        Walk(
            "apply_edits",
            lambda s: {
                "notebook_name": "a.ipynb",
                "operations": [{"op": "delete", "cell_id": "c2"}],
            },
            lambda s: ("a.ipynb", "c2", "x2 = 2"),
        ),
    ),
    RESTORE_REVISION: (
        Walk(
            "restore_notebook",
            lambda s: {"notebook_name": "a.ipynb", "revision": s.first_revision},
            lambda s: ("a.ipynb", s.first_revision),
        ),
    ),
    INSTALL_PACKAGES: (
        Walk(
            "install_packages",
            lambda s: {"packages": [PACKAGE], "environment": ".venv"},
            lambda s: (PACKAGE, "'.venv'", str(s.workspace / ".venv")),
        ),
    ),
    SHELL_CODE: (
        Walk(
            "execute_cell",
            lambda s: {"notebook_name": "a.ipynb", "cell_id": "c1"},
            lambda s: (f"!touch {s.canary}", "c1"),
        ),
        Walk(
            "insert_execute_code_cell",
            lambda s: {
                "notebook_name": "a.ipynb",
                "cell_index": -1,
                "cell_source": f"!touch {s.canary}",
            },
            lambda s: (f"!touch {s.canary}",),
        ),
        Walk(
            "execute_code",
            lambda s: {"notebook_name": "a.ipynb", "code": f"!touch {s.canary}"},
            lambda s: (f"!touch {s.canary}",),
        ),
        Walk(
            "run_cells",
            lambda s: {"notebook_name": "a.ipynb", "cells": "all"},
            lambda s: (f"c1: !touch {s.canary}", "a.ipynb"),
        ),
        Walk(
            "verify_notebook",
            lambda s: {"notebook_name": "a.ipynb"},
            lambda s: (f"c1: !touch {s.canary}", "a.ipynb"),
        ),
    ),
}

#: The tools that change something and ask nothing, and why none of the actions is theirs.
NOT_ASKED = {
    "use_notebook": "asks only when it moves a notebook off its kernel (walked above)",
    "insert_cell": "adds a cell; undone by deleting it",
    "overwrite_cell_source": "edits a source; kept in the history",
    "edit_cell_source": "edits a source; kept in the history",
    "move_cell": "moves a cell; undone by moving it back",
    "clear_cell_output": "outputs are recomputed by running the cell",
    "clear_outputs": "outputs are recomputed by running the cells",
    "set_cell_metadata": "edits metadata; kept in the history",
    "checkpoint": "names the current revision; changes nothing in the notebook",
    "interrupt_kernel": "stops the running execution; the kernel and its variables stay",
    "interrupt_notebook_session": "stops the running execution; the kernel and its variables stay",
    "cancel_run": "stops a run this client started",
    "review_change": "is the person's own answer, clicked in the review app (test_apps_review.py)",
    "run_cell_from_view": "is execute_cell's run (run_stored_cell), asked as it is; app-only, "
    "walked in test_apps_notebook.py",
    "connect_to_jupyter": "only later kernels start there; running ones stay",
}


def walked_tools() -> set[str]:
    return {walk.tool for walks in WALKS.values() for walk in walks}


def test_every_tool_that_changes_something_is_walked_or_says_why_not() -> None:
    changing = {tool.name for tool in NOTEBOOK_TOOLS if not tool.read_only}
    unexplained = changing - walked_tools() - set(NOT_ASKED)
    assert not unexplained, (
        f"tools that change something, neither walked nor in NOT_ASKED: {sorted(unexplained)}"
    )
    assert set(SETUPS) == set(WALKS)


def files_of(root: Path) -> dict[str, str]:
    """Every file under `root` by its bytes' digest (symlinks by their target)."""
    if not root.exists():
        return {}
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            found[relative] = "-> " + str(path.readlink())
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


async def everything(client: Client, scene: Scene) -> dict[str, Any]:
    """What a declined call must leave as it was."""
    kernels = (await ok(client, "list_kernels"))["kernels"]
    held = {}
    for name in scene.kept_in:
        result = await client.call_tool(
            "execute_code", {"code": "print(kept)", "notebook_name": name}
        )
        held[name] = text_of(result).strip()
    return {
        "workspace": files_of(scene.workspace),
        "history": files_of(scene.history),
        "kernels": sorted(
            (k["kernel_id"], k["kernel_name"], sorted(k["notebooks"])) for k in kernels
        ),
        "held": held,
        "shell ran": scene.canary.exists(),
    }


async def declined(
    client: Client, mode: str, person: Person, tool: str, arguments: dict[str, Any]
) -> tuple[CallToolResult, str]:
    """Call `tool`, the person declining; the result and the one question asked."""
    if mode == "legacy":
        before = len(person.asked)
        result = await client.call_tool(tool, arguments)
        asked = person.asked[before:]
        assert len(asked) == 1, (
            f"{tool} asked {len(asked)} questions, not one: {asked} ({text_of(result)})"
        )
        return result, asked[0]
    first = await client.session.call_tool(tool, arguments, allow_input_required=True)
    assert isinstance(first, InputRequiredResult), f"{tool} did not ask: {text_of(first)}"
    ((key, request),) = first.input_requests.items()
    assert request.method == "elicitation/create" and request.params.requested_schema[
        "required"
    ] == ["approve"]
    result = await client.session.call_tool(
        tool,
        arguments,
        input_responses={key: ElicitResult(action="decline")},
        request_state=first.request_state,
        allow_input_required=True,
    )
    assert isinstance(result, CallToolResult), f"{tool} asked again after the answer: {result}"
    return result, request.params.message


class Person:
    """Declines whatever it is asked (2025-11-25: the elicitation callback), remembering the questions."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="decline")


def test_every_default_action_is_walked() -> None:
    missing = [action for action in DEFAULT_ACTIONS if action not in WALKS]
    assert not missing, f"in DEFAULT_ACTIONS, but no tool performing them is walked here: {missing}"


@pytest.mark.parametrize("mode", MODES)
async def test_every_default_action_is_asked_and_a_decline_changes_nothing(
    tmp_path: Path, mode: str
) -> None:
    """One server walks every action (a server per action cost a minute more): each setup adds
    what its action needs and leaves what the others need."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    scene = Scene(workspace=workspace, history=tmp_path / "history", canary=tmp_path / "shell-ran")
    notebook(scene)
    person = Person()
    env = {
        "JUPYTER_MCP_APPROVE": ",".join(DEFAULT_ACTIONS),
        "JUPYTER_MCP_HISTORY_DIR": str(scene.history),
    }
    walked = []
    async with serve(workspace, *ARGS, mode=mode, env=env, elicitation_callback=person) as client:
        for action in DEFAULT_ACTIONS:
            await SETUPS[action](client, scene)
            assert not person.asked, f"the setup of {action} asked: {person.asked}"
            for walk in WALKS[action]:
                arguments = walk.arguments(scene)
                before = await everything(client, scene)
                result, question = await declined(client, mode, person, walk.tool, arguments)
                person.asked.clear()
                where = f"{action} through {walk.tool}"
                assert error_code(result) == "declined", f"{where}: {text_of(result)}"
                assert result.meta[ERROR_KEY]["action"] == action, (
                    f"{where} asked about {result.meta[ERROR_KEY]['action']}"
                )
                assert "nothing was done" in text_of(result)
                for name in walk.names(scene):
                    assert name in question, (
                        f"{where}: the question does not name {name!r}: {question}"
                    )
                assert await everything(client, scene) == before, (
                    f"{where} changed something though declined"
                )
                walked.append(where)
    assert len(walked) == sum(len(WALKS[action]) for action in DEFAULT_ACTIONS)


class Approving:
    """Approves whatever it is asked, remembering the questions."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})


@pytest.mark.parametrize("mode", MODES)
async def test_install_packages_installs_once_the_person_approves(
    tmp_path: Path, mode: str
) -> None:
    """The issue's case: a client that answers elicitation, tabulate into the workspace's .venv."""
    from environments_support import make_env

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_env(workspace / ".venv")
    person = Approving()
    env = {
        "JUPYTER_MCP_APPROVE": INSTALL_PACKAGES,
        "JUPYTER_MCP_HISTORY_DIR": str(tmp_path / "history"),
    }
    async with serve(workspace, *ARGS, mode=mode, env=env, elicitation_callback=person) as client:
        done = await ok(client, "install_packages", {"packages": [PACKAGE], "environment": ".venv"})
    assert [(p["name"], p["version"]) for p in done["installed"]] == [("tabulate", "0.9.0")]
    (question,) = person.asked
    assert PACKAGE in question and "'.venv'" in question and "uv" in question, question
    assert list((workspace / ".venv").glob("lib/python*/site-packages/tabulate"))
