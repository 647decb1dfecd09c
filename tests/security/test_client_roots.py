"""Roots: without --workspace-root, a stdio client's first root is the workspace, and follows its changes.

The official client offers roots through its ``list_roots_callback``; the
server asks after initialization and after ``notifications/roots/list_changed``.
``capabilities://`` says where the workspace is and who chose it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from conftest import ok, serve, server_environment
from mcp import Client, StdioServerParameters
from mcp.types import ListRootsResult, Root


class Roots:
    def __init__(self, *directories: Path) -> None:
        self.directories = list(directories)

    async def __call__(self, context: Any) -> ListRootsResult:
        return ListRootsResult(
            roots=[
                Root(uri=directory.as_uri(), name=directory.name) for directory in self.directories
            ]
        )


async def workspace_of(client: Client) -> dict[str, str]:
    return json.loads((await client.read_resource("capabilities://")).contents[0].text)["workspace"]


async def until_workspace(client: Client, root: Path, seconds: float = 10) -> dict[str, str]:
    for _ in range(int(seconds * 20)):
        described = await workspace_of(client)
        if described["root"] == str(root.resolve()):
            return described
        await asyncio.sleep(0.05)
    raise AssertionError(f"the workspace did not become {root}: {described}")


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    made = []
    for name in ("started-in", "project-a", "project-b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.txt").write_text(name)
        made.append(folder)
    return made[0], made[1], made[2]


def started_without_a_root(cwd: Path, roots: Roots) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "jupyter_mcp_server", "start", "--capability", "kernel.prestart=off"],
        env=server_environment(),
        cwd=str(cwd),
    )
    return Client(params, mode="legacy", list_roots_callback=roots)


async def test_the_first_root_is_the_workspace_and_follows_changes(tmp_path: Path) -> None:
    cwd, project_a, project_b = folders(tmp_path)
    roots = Roots(project_a, project_b)
    async with started_without_a_root(cwd, roots) as client:
        assert await until_workspace(client, project_a) == {
            "root": str(project_a.resolve()),
            "source": "client-roots",
        }
        listed = await ok(client, "list_files", {})
        assert "project-a.txt" in json.dumps(listed) and "started-in.txt" not in json.dumps(listed)
        roots.directories = [project_b]
        await client.session.send_roots_list_changed()
        await until_workspace(client, project_b)
        assert "project-b.txt" in json.dumps(await ok(client, "list_files", {}))
        # While a notebook has a kernel, a change of roots is not followed.
        await ok(client, "use_notebook", {"notebook_name": "n.ipynb", "mode": "create"})
        roots.directories = [project_a]
        await client.session.send_roots_list_changed()
        await asyncio.sleep(1)
        assert (await workspace_of(client))["root"] == str(project_b.resolve())
        assert (project_b / "n.ipynb").exists()


async def test_a_given_workspace_root_wins(tmp_path: Path) -> None:
    cwd, project_a, _ = folders(tmp_path)
    async with serve(
        cwd, "--capability", "kernel.prestart=off", list_roots_callback=Roots(project_a)
    ) as client:
        await asyncio.sleep(0.5)
        assert await workspace_of(client) == {"root": str(cwd.resolve()), "source": "cli"}
    async with started_without_a_root(cwd, Roots(tmp_path / "missing")) as client:
        await asyncio.sleep(0.5)
        assert await workspace_of(client) == {"root": str(cwd.resolve()), "source": "cwd"}
