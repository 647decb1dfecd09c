"""The module map of docs/architecture.md, made from the modules' own docstrings.

Each module says why it exists in the first paragraph of its docstring; the map is
that paragraph, folder by folder, so it is defined once and never goes stale.
`python scripts/module_map.py` rewrites the map in place; the test suite checks it
(tests/test_architecture.py).
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


def module_map() -> str:
    lines = ["```", "src/jupyter_mcp_server/"]
    modules = sorted(
        PACKAGE.rglob("*.py"),
        key=lambda p: (len(p.relative_to(PACKAGE).parts) > 1, p.relative_to(PACKAGE).parts),
    )
    seen_folders: set[Path] = set()
    for path in modules:
        relative = path.relative_to(PACKAGE)
        if relative.name == "__main__.py":
            continue
        depth = len(relative.parts) - 1
        if relative.name == "__init__.py":
            if depth == 0:
                continue
            name, indent = f"{relative.parent.as_posix()}/", "  " * depth
            seen_folders.add(relative.parent)
        else:
            name, indent = relative.name, "  " * (depth + 1)
        label = f"{indent}{name}"
        text = summary(path)
        wrapped = textwrap.wrap(text, WIDTH - COLUMN) or [""]
        first = label.ljust(COLUMN - 1) + " " + wrapped[0] if len(label) < COLUMN - 1 else label
        rest = wrapped[1:] if len(label) < COLUMN - 1 else wrapped
        lines.append(first.rstrip())
        lines.extend(" " * COLUMN + line for line in rest)
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
