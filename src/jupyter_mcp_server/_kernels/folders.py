"""Where a notebook's kernel runs: in the notebook's own folder, as Jupyter runs it.

JupyterLab (through Jupyter Server's ``cwd_for_path``) and nbclient (its
``resources["metadata"]["path"]``) start a notebook's kernel in the folder
that holds the notebook, so ``open("input.csv")`` and ``import helpers`` find
the files beside it. The kernels here do the same: a kernel is started in its
notebook's folder (Jupyter Server's kernel ``path`` on a remote backend whose
notebooks it keeps), and a kernel prestarted in the workspace root before
anybody knew which notebook would take it is moved there before its first use.
A folder that does not exist (a notebook being created) falls back, as Jupyter
Server's does, to the nearest folder above it that does.
"""

from __future__ import annotations

import json
import logging
import posixpath
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Seconds a prestarted kernel may take to change folder (its warm-up may run first).
MOVE_TIMEOUT = 30.0


def folder_of(notebook: str) -> str:
    """The folder of a workspace-relative notebook path ("" for the root)."""
    return posixpath.dirname(notebook.strip("/"))


def existing_folder(root: Path, folder: str) -> tuple[Path, str]:
    """`folder` under `root`, or the nearest folder above it that exists: the directory and
    its workspace-relative name."""
    while folder and not (root / folder).is_dir():
        folder = posixpath.dirname(folder)
    return (root / folder if folder else root), folder


def change_folder_code(target: str) -> str:
    """Python that moves a kernel to `target` and leaves nothing in its namespace."""
    return f"__import__('os').chdir({json.dumps(target)})"


async def moved(kernel: Any, target: str, timeout: float = MOVE_TIMEOUT) -> bool:
    """Run :func:`change_folder_code` on `kernel`, silently, and answer whether it worked.

    Silent: no execution count, nothing in the kernel's history, no outputs. The
    reply is read here, and every other reply passed over (a warm-up's still
    queued ahead of it): nobody else reads the kernel's replies until it is handed out.
    """
    try:
        msg_id = kernel.client.execute(
            change_folder_code(target), silent=True, store_history=False, allow_stdin=False
        )
        deadline = time.monotonic() + timeout
        while (wait := deadline - time.monotonic()) > 0:
            reply = await kernel.client.get_shell_msg(timeout=wait)
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return bool(reply.get("content", {}).get("status") == "ok")
    except Exception:
        logger.debug("Moving kernel %s to %s failed", kernel.kernel_id, target, exc_info=True)
    return False
