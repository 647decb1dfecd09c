"""Where the notebooks' histories live: the platform's user state directory, or one given.

The history is the server's own state, so it never lives in the workspace:
not in the notebooks' folders, not in their git. A directory given inside the
workspace is refused; the platform's default is allowed there, since a
workspace may be the home directory that holds it.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

#: The value of ``--history-dir`` that keeps no history.
HISTORY_OFF = "off"


def default_history_dir() -> Path:
    """The platform's user state location for the server (``~/.local/state/...`` on Linux)."""
    return platformdirs.user_state_path("jupyter-mcp-server") / "history"


def inside(directory: Path, root: Path) -> bool:
    """Whether ``directory`` is ``root`` or below it."""
    return directory == root or root in directory.parents


def given_history_dir(given: str, workspace_root: Path) -> Path | None:
    """``--history-dir`` resolved, or None for 'off'; ``ValueError`` when it is inside the workspace."""
    text = given.strip()
    if text.lower() == HISTORY_OFF:
        return None
    directory = Path(text).expanduser().resolve()
    if inside(directory, workspace_root):
        raise ValueError(
            f"--history-dir {text!r} is inside the workspace {str(workspace_root)!r}: the history is "
            "the server's own state and stays out of the notebooks' folders (and their git). "
            "Choose a directory outside it, or 'off'."
        )
    return directory
