"""Workload 12: what an agent spends to finish a task, in bytes returned to the model and calls.

Latency says how long a call takes; what an agent pays for is its context:
every byte a tool returns is read by the model, in this turn and in every
later one. Each task here is scripted the cheapest way a server's tools
allow (what a model that reads the tool descriptions would do), run against
our server and each peer in the run whose tools it knows (jupymcp), and
counted: the calls made and the bytes of their results as they travel (the
JSON of each ``CallToolResult``: text, structured content, images). A task
is *completed* when what came back holds the answer (the function's body,
every chapter's title, the error line, the fixed cell running clean, the
frame's shape and first row, an image of the plot, exactly the cells whose
outputs changed); a task a server's tools cannot do is said as such.

Clients do not hand their model the result as it travels: some pass only its
``structuredContent``, some only its content, some drop images
(``client_views.py``, the rules measured on the real CLIs). So each task is
also counted per client: the bytes of every result as that client hands it,
and whether the task is done *in that client*: the answer must be in what it
hands (a peer whose structured result lacks a cell's output does not finish a
run task in a client that hands only the structured result). Each server's
tool listing is counted per client too (``client_context.py``).

The rule for every server alike: the notebook tools, not code run in a
kernel that reads the files on the side (any server with a kernel could do
that, at the same cost: it measures the agent's code, not the server), except
where running code is the task (the fix, the re-run). Our server is started
with the runs toolset (``--toolsets runs``), which a user turns on for
whole-notebook runs. Nothing is timed here and nothing asserts: the verdict
line compares bytes.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from client_context import CLIENTS, listing_bytes
from client_views import VIEWS, js_json
from harness import Harness, Session, content_bytes, response_bytes, text_of
from profiles import OURS

#: The function the first task looks for, in one cell of one notebook of the corpus.
FUNCTION = 'def compute_loss(predictions, targets):\n    """Mean squared error."""\n    return ((predictions - targets) ** 2).mean()\n'
ERROR_LINE = "RuntimeError: shard 17 failed its checksum (expected 9f2c, got 1b7e)"
CHANGED = (3, 11)  # the cells of the re-run notebook whose outputs now differ
RERUN_CELLS = 20
#: What a task's notebooks hold that its check needs (the chapter titles), set as they are written.
TASK_STATE: dict[str, Any] = {}


@dataclass
class Spent:
    """What one task cost on one server."""

    calls: int = 0
    bytes: int = 0
    #: Of those, the content blocks alone: what a client that passes a model the content
    #: (and not ``structuredContent``, which the spec has servers repeat there) sends it.
    content_bytes: int = 0
    completed: bool = False
    #: How the task was done (or why it could not be), said in the notes.
    how: str = ""
    possible: bool = True
    #: Whether the answer is in what a client hands its model: given the views of the task's
    #: results (one per call, in order) as that client hands them.
    answer: Callable[[list[str]], bool] = lambda views: False


def holds(view: str, needle: str) -> bool:
    """Whether a client's view holds the text, as it is or inside JSON (once or twice)."""
    once = js_json(needle)[1:-1]
    return needle in view or once in view or js_json(once)[1:-1] in view


def unescaped(view: str) -> str:
    """A view with JSON's escaped line breaks read as line breaks (for a pattern to match)."""
    return view.replace("\\\\n", "\n").replace("\\n", "\n")


def holds_lines(view: str, text: str) -> bool:
    """Every line of text held (a notebook's JSON may keep a source as a list of lines)."""
    return all(holds(view, line.strip()) for line in text.splitlines() if line.strip())


class Counting:
    """A session's calls, each result's bytes added up."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.spent = Spent()
        self.made: list[tuple[str, dict[str, Any], Any]] = []  # (tool, arguments, result)

    async def call(self, tool: str, **arguments: Any) -> Any:
        result = await self.session.client.call_tool(tool, arguments)
        self.made.append((tool, arguments, result))
        self.spent.calls += 1
        self.spent.bytes += response_bytes(result)
        self.spent.content_bytes += content_bytes(result)
        if result.is_error and tool not in ("run_cells", "execute_cell"):
            raise RuntimeError(
                f"{self.session.profile.name}: {tool} failed: {text_of(result)[:300]}"
            )
        return result


def everything_of(result: Any) -> str:
    """What a model can read of a result: its text blocks, embedded resources and structured content."""
    parts = [text_of(result)]
    for block in result.content:
        resource = getattr(block, "resource", None)
        if resource is not None and getattr(resource, "text", None):
            parts.append(resource.text)
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def has_image(result: Any) -> bool:
    return any(getattr(block, "type", "") == "image" for block in result.content)


# The notebooks each task starts from, written into each server's workspace.


def _notebook(cells: list[Any]) -> Any:
    from nbformat import v4

    notebook = v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = cells
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index}"
    return notebook


def _write(notebook: Any, path: Path) -> None:
    import nbformat

    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(path))


def corpus(workspace: Path, notebooks: int) -> str:
    """`notebooks` notebooks in ten folders, ten helper functions each; one defines FUNCTION.
    Returns that notebook's path."""
    from nbformat import v4

    target = f"analysis/part{(notebooks * 7 // 10) % 10}/nb{notebooks * 7 // 10:03d}.ipynb"
    for number in range(notebooks):
        path = f"analysis/part{number % 10}/nb{number:03d}.ipynb"
        cells = [v4.new_markdown_cell(f"# Notebook {number}")]
        for j in range(10):
            source = f"def helper_{number}_{j}(x):\n    return x * {j} + {number}\n\nhelper_{number}_{j}(2)"
            cells.append(
                v4.new_code_cell(
                    source,
                    outputs=[
                        v4.new_output(
                            "execute_result",
                            data={"text/plain": str(2 * j + number)},
                            execution_count=j + 1,
                        )
                    ],
                    execution_count=j + 1,
                )
            )
        if path == target:
            cells.insert(6, v4.new_code_cell(FUNCTION))
        _write(_notebook(cells), workspace / path)
    return target


def chapters_notebook(path: Path, cells: int) -> list[str]:
    """`cells` cells: a chapter every 100 (with prose), a section every 10, code with output.
    Returns the chapter titles."""
    from nbformat import v4

    made, titles = [], []
    for index in range(cells):
        if index % 100 == 0:
            title = f"Chapter {index // 100}: stage {index // 100} of the pipeline"
            titles.append(title)
            made.append(
                v4.new_markdown_cell(f"# {title}\n\nWhat this stage does, in a paragraph of prose.")
            )
        elif index % 10 == 0:
            made.append(v4.new_markdown_cell(f"## Step {index}\n\nA note on step {index}."))
        else:
            output = v4.new_output("stream", name="stdout", text=f"{index * 2}\n" * 5)
            made.append(
                v4.new_code_cell(
                    f"value_{index} = {index} * 2\nprint(value_{index})", outputs=[output]
                )
            )
    _write(_notebook(made), path)
    return titles


def long_output_notebook(path: Path, lines: int) -> None:
    from nbformat import v4

    text = (
        "".join(f"step {n}: shard {n % 64} ok, {n * 37 % 1000} records\n" for n in range(lines - 1))
        + ERROR_LINE
        + "\n"
    )
    cell = v4.new_code_cell(
        "run_pipeline()",
        outputs=[v4.new_output("stream", name="stdout", text=text)],
        execution_count=1,
    )
    _write(_notebook([v4.new_markdown_cell("# Nightly pipeline"), cell]), path)


def failing_notebook(path: Path) -> None:
    """A cell that fails inside a library call (json), through a helper of the notebook's own."""
    from nbformat import v4

    _write(
        _notebook(
            [
                v4.new_code_cell("import datetime\nimport json"),
                v4.new_code_cell("def snapshot(record):\n    return json.dumps(record, indent=1)"),
                v4.new_code_cell(
                    "nested = {'when': datetime.datetime(2024, 1, 1), 'items': [1, 2]}\nresult = snapshot(nested)\nprint(len(result))"
                ),
            ]
        ),
        path,
    )


FIXED_SNAPSHOT = "def snapshot(record):\n    return json.dumps(record, indent=1, default=str)"


def frame_notebook(path: Path, rows: int) -> None:
    """A cell whose stored output is a `rows`-row DataFrame, as pandas displays it."""
    import pandas
    from nbformat import v4

    frame = pandas.DataFrame(
        {
            "city": [f"city {n}" for n in range(rows)],
            "population": [1000 + n * 7 for n in range(rows)],
            "area": [round(3.5 + n * 0.25, 2) for n in range(rows)],
        }
    )
    data = {"text/plain": repr(frame), "text/html": frame._repr_html_()}
    cell = v4.new_code_cell(
        "frame = load_cities()\nframe",
        outputs=[v4.new_output("execute_result", data=data, execution_count=1)],
        execution_count=1,
    )
    _write(_notebook([cell]), path)


def plot_notebook(path: Path) -> None:
    """A cell whose stored output is a line chart as matplotlib shows one: a PNG and its repr."""
    from nbformat import v4
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (640, 480), "white")
    draw = ImageDraw.Draw(image)
    draw.line([(60, 420), (620, 420)], fill="black", width=2)
    draw.line([(60, 40), (60, 420)], fill="black", width=2)
    points = [(60 + n * 8, 420 - int(300 * (n / 70) ** 1.5) - (n * 37 % 23)) for n in range(71)]
    draw.line(points, fill=(31, 119, 180), width=3)
    draw.text((250, 10), "Monthly active users, 2019-2024", fill="black")
    for n in range(0, 640 * 480, 997):  # anti-aliasing noise, as a real chart's PNG has
        image.putpixel((n % 640, n // 640), (250, 250, 250 - n % 5))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    data = {
        "image/png": base64.b64encode(buffer.getvalue()).decode(),
        "text/plain": "<Figure size 640x480 with 1 Axes>",
    }
    cell = v4.new_code_cell(
        "plot_active_users()", outputs=[v4.new_output("display_data", data=data)], execution_count=1
    )
    _write(_notebook([cell]), path)


def rerun_notebook(path: Path) -> None:
    """RERUN_CELLS cells with stored outputs; those of CHANGED no longer match their code."""
    from nbformat import v4

    cells = []
    for index in range(RERUN_CELLS):
        value = index * 3
        stored = value + 1 if index in CHANGED else value
        cells.append(
            v4.new_code_cell(
                f"print({index} * 3)",
                outputs=[v4.new_output("stream", name="stdout", text=f"{stored}\n")],
                execution_count=index + 1,
            )
        )
    _write(_notebook(cells), path)


# The tasks, each done the cheapest way each server's tools allow.

Task = Callable[[Counting, Path, Harness], Awaitable[None]]


async def find_function_ours(c: Counting, workspace: Path, h: Harness) -> None:
    found = await c.call("search_notebooks", query="def compute_loss(")
    (match,) = found.structured_content["matches"]
    cell = await c.call(
        "read_cell",
        notebook_name=match["notebook"],
        cell_id=match["cell_id"],
        include_outputs=False,
    )
    c.spent.completed = FUNCTION.strip() in everything_of(cell)
    c.spent.answer = lambda views: holds_lines(views[-1], FUNCTION)
    c.spent.how = "search_notebooks, then read_cell of the match"


async def find_function_peer(c: Counting, workspace: Path, h: Harness) -> None:
    paths = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*.ipynb"))
    for path in paths:  # no tool lists or searches files: given the paths, each is read until found
        read = await c.call("read_notebook", path=path)
        if "def compute_loss(" in everything_of(read):
            sources = [
                "".join(cell.get("source", "")) for cell in _notebook_json(read).get("cells", [])
            ]
            c.spent.completed = any(FUNCTION.strip() in source for source in sources)
            c.spent.answer = lambda views: holds_lines(views[-1], FUNCTION)
            break
    c.spent.how = f"no tool lists or searches files: given the {len(paths)} paths, read_notebook of each until found"


async def sections_ours(c: Counting, workspace: Path, h: Harness) -> None:
    outline = await c.call("outline", notebook_name="chapters.ipynb", limit=1)
    titles = TASK_STATE["titles"]
    c.spent.completed = all(title in text_of(outline) for title in titles)
    c.spent.answer = lambda views: all(holds(views[0], title) for title in titles)
    c.spent.how = "outline (limit=1: the headings, one cell line)"


async def sections_peer(c: Counting, workspace: Path, h: Harness) -> None:
    read = await c.call("read_notebook", path="chapters.ipynb")
    titles = TASK_STATE["titles"]
    c.spent.completed = all(title in everything_of(read) for title in titles)
    c.spent.answer = lambda views: all(holds(views[0], title) for title in titles)
    c.spent.how = "read_notebook (the only way to see its headings)"


async def long_error_ours(c: Counting, workspace: Path, h: Harness) -> None:
    cell = await c.call(
        "read_cell", notebook_name="pipeline.ipynb", cell_index=1, max_output_chars=1500
    )
    c.spent.completed = ERROR_LINE in text_of(cell)
    c.spent.answer = lambda views: holds(views[-1], ERROR_LINE)
    c.spent.how = "read_cell with max_output_chars=1500 (a long output keeps its head and tail)"


async def long_error_peer(c: Counting, workspace: Path, h: Harness) -> None:
    cell = await c.call("read_cell", path="pipeline.ipynb", index=1)
    c.spent.completed = ERROR_LINE in everything_of(cell)
    c.spent.answer = lambda views: holds(views[-1], ERROR_LINE)
    c.spent.how = "read_cell (the whole output)"


async def fix_ours(c: Counting, workspace: Path, h: Harness) -> None:
    first = await c.call("run_cells", notebook_name="fix.ipynb", cells="all")
    failed = "TypeError" in text_of(first)
    await c.call(
        "overwrite_cell_source", notebook_name="fix.ipynb", cell_index=1, cell_source=FIXED_SNAPSHOT
    )
    again = await c.call("run_cells", notebook_name="fix.ipynb", cells="1-2")
    c.spent.completed = failed and not again.is_error and "TypeError" not in text_of(again)
    # The model must see the failure (the exception and the agent's own failing line) and the
    # clean re-run.
    c.spent.answer = lambda views: (
        holds(views[0], "TypeError")
        and holds(views[0], "result = snapshot(nested)")
        and not holds(views[-1], "TypeError")
    )
    line = "shown" if "result = snapshot(nested)" in text_of(first) else "not shown"
    c.spent.how = (
        f"run_cells(all) (the failing user line {line}), overwrite_cell_source, run_cells(1-2)"
    )


async def fix_peer(c: Counting, workspace: Path, h: Harness) -> None:
    seen = ""
    for index in range(3):
        seen += everything_of(await c.call("execute_cell", path="fix.ipynb", index=index))
    failed = "TypeError" in seen
    line = "shown" if "result = snapshot(nested)" in seen else "not shown"
    await c.call("update_cell", path="fix.ipynb", index=1, source=FIXED_SNAPSHOT)
    again = ""
    for index in (1, 2):
        again += everything_of(await c.call("execute_cell", path="fix.ipynb", index=index))
    c.spent.completed = failed and "TypeError" not in again and "Error" not in again
    c.spent.answer = lambda views: (
        any(holds(view, "TypeError") for view in views[:3])
        and any(holds(view, "result = snapshot(nested)") for view in views[:3])
        and not any(holds(view, "TypeError") for view in views[-2:])
    )
    c.spent.how = f"execute_cell of each cell (the failing user line {line}), update_cell, execute_cell of the two again"


def _frame_read(text: str) -> bool:
    return "city 0" in text and "1000" in text and re.search(r"1,?000 rows", text) is not None


async def frame_ours(c: Counting, workspace: Path, h: Harness) -> None:
    outline = await c.call("outline", notebook_name="frame.ipynb", limit=1)
    row = outline.structured_content["cells"][0]
    uri = f"notebook-output:///frame.ipynb?cell={row['cell_id']}&output=0"
    page = await c.call("read_output", uri=uri, limit=8)
    c.spent.completed = _frame_read(text_of(page)) and "3 columns" in text_of(page)
    c.spent.answer = lambda views: _frame_read(views[-1]) and "3 columns" in views[-1]
    c.spent.how = "outline (the cell and its output's kind), read_output of its first 8 lines (the table as Markdown, its shape)"


async def frame_peer(c: Counting, workspace: Path, h: Harness) -> None:
    cell = await c.call("read_cell", path="frame.ipynb", index=0)
    c.spent.completed = _frame_read(everything_of(cell))
    c.spent.answer = lambda views: _frame_read(views[0])
    c.spent.how = "read_cell (text/plain and the HTML table)"


async def plot_ours(c: Counting, workspace: Path, h: Harness) -> None:
    cell = await c.call("read_cell", notebook_name="plot.ipynb", cell_index=0)
    c.spent.completed = has_image(cell)
    c.spent.answer = _image_handed
    c.spent.how = "read_cell (the image, shrunk when large)"


async def plot_peer(c: Counting, workspace: Path, h: Harness) -> None:
    cell = await c.call("read_cell", path="plot.ipynb", index=0)
    c.spent.completed = has_image(cell)
    c.spent.answer = _image_handed
    c.spent.how = "read_cell" + (
        ""
        if c.spent.completed
        else ": the PNG comes back as base64 text in the cell's JSON, not an image a model sees (only execution answers images)"
    )


def _image_handed(views: list[str]) -> bool:
    return "data:image/" in views[-1]


def _differences_named(views: list[str]) -> bool:
    """verify_notebook's answer names exactly the changed cells (its `Differs: [i]` lines)."""
    named = {int(index) for index in re.findall(r"Differs: \[(\d+)\]", views[-1])}
    return named == set(CHANGED)


async def rerun_ours(c: Counting, workspace: Path, h: Harness) -> None:
    verified = await c.call("verify_notebook", notebook_name="rerun.ipynb")
    changed = {d["index"] for d in verified.structured_content["differences"]}
    c.spent.completed = changed == set(CHANGED)
    c.spent.answer = _differences_named
    c.spent.how = "verify_notebook (every cell from the top, the outputs that differ)"


async def rerun_peer(c: Counting, workspace: Path, h: Harness) -> None:
    import nbformat

    before = await c.call("read_notebook", path="rerun.ipynb")
    stored = [
        "".join(o.get("text", "") for o in cell.get("outputs", []))
        for cell in nbformat.reads(json.dumps(_notebook_json(before)), as_version=4).cells
    ]
    changed = set()
    for index in range(RERUN_CELLS):
        now = everything_of(await c.call("execute_cell", path="rerun.ipynb", index=index))
        if stored[index].strip() not in now.split():
            changed.add(index)
    c.spent.completed = changed == set(CHANGED)
    # The model compares: the stored outputs must reach it, and each cell's new output.
    c.spent.answer = lambda views: (
        all(re.search(rf"\b{index * 3 + 1}\b", unescaped(views[0])) for index in CHANGED)
        and all(
            re.search(rf"\b{index * 3}\b", unescaped(view)) for index, view in enumerate(views[1:])
        )
    )
    c.spent.how = "read_notebook for the stored outputs, execute_cell of each cell, compared"


def _notebook_json(result: Any) -> Any:
    """jupymcp's read_notebook answers the notebook as JSON, in its structured content or text."""
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) else content
    return json.loads(text_of(result))


TASKS: list[tuple[str, str, Task, Task]] = [
    (
        "find",
        "find a function among the notebooks, show its source",
        find_function_ours,
        find_function_peer,
    ),
    (
        "sections",
        "say what a 2,000-cell notebook holds, section by section",
        sections_ours,
        sections_peer,
    ),
    (
        "long_error",
        "the error at the end of a 200,000-line output",
        long_error_ours,
        long_error_peer,
    ),
    ("fix", "fix a cell that fails inside a library call", fix_ours, fix_peer),
    ("frame", "a 1,000-row DataFrame's first rows and shape", frame_ours, frame_peer),
    ("plot", "say what a plot shows", plot_ours, plot_peer),
    ("rerun", "re-run a notebook, report which cells changed", rerun_ours, rerun_peer),
]


def _prepare(key: str, workspace: Path, h: Harness) -> None:
    """The notebooks of one task, in a fresh workspace of its own."""
    sizes = h.sizes
    if key == "find":
        TASK_STATE["target"] = corpus(workspace, sizes.task_notebooks)
    elif key == "sections":
        TASK_STATE["titles"] = chapters_notebook(workspace / "chapters.ipynb", sizes.read_cells)
    elif key == "long_error":
        long_output_notebook(workspace / "pipeline.ipynb", sizes.task_output_lines)
    elif key == "fix":
        failing_notebook(workspace / "fix.ipynb")
    elif key == "frame":
        frame_notebook(workspace / "frame.ipynb", 1000)
    elif key == "plot":
        plot_notebook(workspace / "plot.ipynb")
    elif key == "rerun":
        rerun_notebook(workspace / "rerun.ipynb")


def _is_peer(name: str) -> bool:
    return name.startswith("jupymcp")


def _count_per_client(r: Any, key: str, who: str, c: Counting) -> None:
    """Each client's bytes of the task's results, and whether the answer reached its model."""
    for client in CLIENTS:
        view = VIEWS[client]
        views = [view(result, tool=tool, arguments=arguments) for tool, arguments, result in c.made]
        try:
            done = c.spent.completed and bool(c.spent.answer(views))
        except (IndexError, KeyError, ValueError):
            done = False
        r.add(f"client_{client}_{key}_bytes", who, sum(len(v.encode()) for v in views))
        r.add(f"client_{client}_{key}_done", who, 1.0 if done else 0.0)


async def tasks(h: Harness) -> None:
    r = h.results
    ours = replace(OURS, args=[*OURS.args, "--toolsets", "runs"])
    servers = [ours, *(p for p in h.profiles if _is_peer(p.name))]
    for profile in servers:
        who = profile.name
        listed = False
        for key, _label, done_by_ours, done_by_peer in TASKS:
            workspace = h.workspace(f"task-{key}")
            _prepare(key, workspace, h)
            task = done_by_ours if profile is ours else done_by_peer
            async with h.connect(profile, workspace) as session:
                if not listed:  # the tool listing, as each client would send it to its model
                    tools = (await session.client.list_tools()).tools
                    for client in CLIENTS:
                        r.add(f"client_{client}_tools_bytes", who, listing_bytes(client, tools))
                    listed = True
                counting = Counting(session)
                try:
                    await task(counting, workspace, h)
                except Exception as error:  # a task a server cannot finish is a result, not a crash
                    counting.spent.how += f" (failed: {str(error)[:200]})"
                    counting.spent.completed = False
            spent = counting.spent
            r.add(f"task_{key}_bytes", who, spent.bytes)
            r.add(f"task_{key}_content_bytes", who, spent.content_bytes)
            r.add(f"task_{key}_calls", who, spent.calls)
            r.add(f"task_{key}_completed", who, 1.0 if spent.completed else 0.0)
            _count_per_client(r, key, who, counting)
            r.note(
                f"task_{key}_bytes",
                f"{who}: {spent.how}; {'completed' if spent.completed else 'NOT completed'}",
            )
