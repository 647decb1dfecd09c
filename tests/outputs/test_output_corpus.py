"""Real notebooks nobody here wrote, as a model reads their outputs: stored, then run here.

The corpus (``tests/fixtures/corpus``, its README says where each file comes
from and under which licence) is nbclient's and nbconvert's own test
notebooks: outputs of every kind (streams, errors in three IPython styles,
images, SVG, widgets, HTML, display updates, clear_output), needing only the
standard library, numpy and matplotlib. Each notebook is read cell by cell
through the real server as it was shipped, then run with ``run_cells`` in a
real kernel and read again. Every output's model text is checked:

- no bare ``<… object>`` repr where the bundle holds a richer type;
- every error shows its failing line (the marked line of each of the cells'
  frames, or the cell frame's location where there is no marked line);
- nothing exceeds the inline budget;
- no output is silently empty: each shows an image or a non-empty text.

A few notebooks run in the default run (seconds); the whole corpus is
marked slow.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import nbformat.reader
import nbformat.validator
import pytest
from conftest import ok, serve, text_of
from mcp.types import ImageContent, ResourceLink, TextContent

CORPUS = Path(__file__).parents[1] / "fixtures" / "corpus"
BUDGET = 16_384
#: Notebooks whose code must not run here: nbconvert's injection test touches /tmp/pwned.
READ_ONLY = {"notebook_inject.ipynb"}
#: The default run's subset (no matplotlib, whose first import builds a font cache): errors in
#: three IPython styles, display updates, an SVG.
QUICK = [
    "nbconvert-7.17.2/notebook3_with_errors.ipynb",
    "nbclient-0.11.0/Skip Exceptions.ipynb",
    "nbclient-0.11.0/update-display-id.ipynb",
    "nbclient-0.11.0/SVG.ipynb",
]


def valid(path: Path) -> bool:
    """nbformat's own verdict; an invalid notebook is refused by every tool (docs/protocol.md)."""
    notebook = nbformat.convert(nbformat.reader.reads(path.read_text(encoding="utf-8")), 4)
    notebook.nbformat_minor = 5  # as the store checks it: against the version it writes
    for index, cell in enumerate(notebook.cells):
        cell.setdefault("id", f"cell-{index}")
    return nbformat.validator.isvalid(notebook)


#: Every notebook of the corpus that nbformat deems valid (nbclient's Output.ipynb is not: its
#: kernelspec has no name; tests/notebooks/test_corpora.py covers how invalid notebooks are refused).
ALL = sorted(str(path.relative_to(CORPUS)) for path in CORPUS.glob("*/*.ipynb") if valid(path))
_MARKED = re.compile(r"^-+> ?\s*\d+ ", re.MULTILINE)
# The checks stand on their own: nothing of the code under test decides what they expect.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BARE_REPR = re.compile(r"^<[^<>\n]*(?:\bobject\b|\bat 0x[0-9a-fA-F]+)[^<>\n]*>$")
_CELL_FRAME = ("Cell In[", "Input In [", "<ipython-input-", "/tmp/ipykernel_")
IMAGE_TYPES = ("image/png", "image/jpeg")


def joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def failing_lines(output: dict[str, Any]) -> list[str]:
    """What an error must show of where it failed: each cell frame's marked line (IPython's
    ``---->``), or its location line where it has none (a SyntaxError)."""
    wanted = []
    for entry in output.get("traceback") or []:
        entry = _ANSI.sub("", str(entry))
        if entry.lstrip().startswith(_CELL_FRAME):
            marked = _MARKED.findall(entry)
            lines = [line for line in entry.split("\n") if _MARKED.match(line)]
            wanted.extend(lines[-1:] if marked else [entry.split("\n", 1)[0]])
    return [" ".join(line.split()) for line in wanted]


def richer_than_repr(output: dict[str, Any]) -> str | None:
    """The bare repr a model must not be left with: one whose bundle holds another readable type."""
    data = output.get("data") or {}
    text = joined(data.get("text/plain", ""))
    others = [mime for mime in data if mime != "text/plain" and mime not in IMAGE_TYPES]
    return text.strip() if _BARE_REPR.match(text.strip()) and others else None


def check_cell(where: str, result: Any, cell: dict[str, Any]) -> list[str]:
    """What is wrong with how a read shows one cell's outputs; nothing when it is right."""
    problems: list[str] = []
    outputs = cell.get("outputs") or []
    blocks = result.content[1:]  # the first is the cell's heading and source
    texts = [block.text for block in blocks if isinstance(block, TextContent)]
    shown = "\n".join(texts)
    flat = " ".join(shown.split())
    said = sum(
        len(text) for text in texts if not text.startswith("[jupyter-mcp-server: image shrunk")
    )
    if said > BUDGET:
        problems.append(f"{where}: {said} characters of output text, over the budget of {BUDGET}")
    images = [block for block in blocks if isinstance(block, ImageContent | ResourceLink)]
    for output in outputs:
        bare = richer_than_repr(output)
        if bare is not None and bare in shown:
            problems.append(
                f"{where}: the bare repr {bare!r} is shown though the bundle has {sorted(output['data'])}"
            )
        if output.get("output_type") == "error":
            for line in failing_lines(output):
                if line not in flat:
                    problems.append(f"{where}: the error does not show its failing line {line!r}")
    readable = len([text for text in texts if text.strip()]) + len(images)
    if readable < len(outputs):
        problems.append(
            f"{where}: {len(outputs)} output(s) but {readable} readable block(s): {shown[:300]!r}"
        )
    return problems


async def read_every_cell(client: Any, workspace: Path, name: str, label: str) -> list[str]:
    problems: list[str] = []
    await ok(client, "use_notebook", {"notebook_name": name})
    notebook = nbformat.reads((workspace / name).read_text(encoding="utf-8"), as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        result = await client.call_tool("read_cell", {"cell_index": index})
        assert not result.is_error, f"{name} [{index}]: {text_of(result)}"
        problems.extend(check_cell(f"{name} ({label}) [{index}]", result, cell))
    return problems


async def check_notebooks(workspace: Path, names: list[str]) -> None:
    for name in names:
        source = CORPUS / name
        target = workspace / Path(name).parent.name
        if not target.exists():
            shutil.copytree(source.parent, target)
    problems: list[str] = []
    async with serve(
        workspace, "--toolsets", "runs", "--capability", "kernel.prestart=off"
    ) as client:
        for name in names:
            problems.extend(await read_every_cell(client, workspace, name, "as shipped"))
            if Path(name).name in READ_ONLY:
                continue
            run = await client.call_tool(
                "run_cells", {"stop_on_error": False, "restart": True, "timeout": 60}
            )
            assert not run.is_error or run.structured_content, f"{name}: {text_of(run)}"
            said = sum(len(block.text) for block in run.content if isinstance(block, TextContent))
            if said > BUDGET + 8_192:  # the outputs' budget, and a line per cell around them
                problems.append(f"{name} (run_cells): {said} characters")
            problems.extend(await read_every_cell(client, workspace, name, "run here"))
            await ok(client, "unuse_notebook", {"notebook_name": name})  # its kernel freed
    assert not problems, "\n".join(problems)


async def test_a_few_real_notebooks_read_right_as_shipped_and_run_here(workspace: Path) -> None:
    await check_notebooks(workspace, QUICK)


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_the_whole_corpus_reads_right_as_shipped_and_run_here(workspace: Path) -> None:
    await check_notebooks(workspace, ALL)
