"""The module map of docs/architecture.md, made from the modules' own docstrings.

Each module says why it exists in the first paragraph of its docstring; the map is that
paragraph for each top-level module and each folder, with the names of what the folder
holds, so it is defined once and never goes stale.
`python scripts/module_map.py` rewrites the map in place; the test suite checks it
(tests/package/test_architecture.py).
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "jupyter_mcp_server"
DOC = REPO / "docs" / "architecture.md"
BEGIN = "<!-- module map: scripts/module_map.py writes what follows -->"
END = "<!-- end of module map -->"
#: The column the summaries start in, and the width they wrap at.
COLUMN, WIDTH = 34, 100


def summary(path: Path) -> str:
    """The first paragraph of the module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def holds_files(path: Path) -> bool:
    """A folder git would keep: one that a checkout left holding only `__pycache__` (its
    modules moved away) is not part of the package."""
    return (
        path.is_dir()
        and path.name != "__pycache__"
        and any(child.name != "__pycache__" for child in path.iterdir())
    )


def entry(label: str, text: str) -> list[str]:
    """`label`, then `text` wrapped in the summaries' column."""
    wrapped = textwrap.wrap(text, WIDTH - COLUMN) or [""]
    if len(label) >= COLUMN - 1:
        return [label, *(" " * COLUMN + line for line in wrapped)]
    first = (label.ljust(COLUMN - 1) + " " + wrapped[0]).rstrip()
    return [first, *(" " * COLUMN + line for line in wrapped[1:])]


def module_map() -> str:
    """The top-level modules, each with its summary; then each folder with its own, and the
    names of what it holds (a module says why it exists in its own docstring)."""
    lines = ["```", "src/jupyter_mcp_server/"]
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            lines += entry(f"  {path.name}", summary(path))
    for folder in sorted(p.parent for p in PACKAGE.glob("*/__init__.py")):
        lines += entry(f"  {folder.name}/", summary(folder / "__init__.py"))
        held = sorted(
            [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
            + [f"{p.name}/" for p in folder.iterdir() if holds_files(p)]
        )
        for line in textwrap.wrap(" ".join(held), WIDTH - COLUMN - 2):
            lines.append(" " * (COLUMN + 2) + line)
    lines.append("```")
    return "\n".join(lines)


def with_map(document: str) -> str:
    before, _, after = document.partition(BEGIN)
    _, _, after = after.partition(END)
    return f"{before}{BEGIN}\n{module_map()}\n{END}{after}"


def main() -> int:
    DOC.write_text(with_map(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
