"""The ``jupyter_cite`` prompt, and completion for it and the notebook resource templates.

``jupyter_cite(prompt, cell_indices, notebook_name)`` puts the cells a range
expression names (``"0-2,4"``) into one user message, followed by the
user's own prompt: the ``@``-mention of a coding assistant, for notebooks.

Completion (``completion/complete``) offers notebook paths for
``notebook_name`` and for the templates' ``path``, the ranges and indices a
notebook has for ``cell_indices``, cell ids for ``cell`` and output numbers
for ``output``. A server has one completion handler, so this one answers
for the prompt and the templates together.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Completion, PromptReference, ResourceTemplateReference
from pydantic import Field

from jupyter_mcp_server._errors import ToolFailure
from jupyter_mcp_server._protocol.features import Feature, Wrapped
from jupyter_mcp_server._protocol.handlers import Handler
from jupyter_mcp_server._protocol.resources import CELL_TEMPLATE, NOTEBOOK_TEMPLATE, OUTPUT_TEMPLATE
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._tool_calls.addressing import (
    NOTEBOOK_SUFFIXES,
    checked_path,
    notebook_path,
)

CITE_PROMPT = "jupyter_cite"
#: The protocol allows at most 100 completion values.
MAX_COMPLETIONS = 100
#: How deep completion looks for notebooks (the workspace's listing limit).
COMPLETION_DEPTH = 3


def parse_cell_ranges(expression: str, cell_count: int) -> list[int]:
    """``"0-2,4"`` -> ``[0, 1, 2, 4]``: sorted, without repeats, each inside the notebook.

    Raises ValueError with a message that says what is wrong and what a valid
    expression looks like.
    """
    example = "Write 0-based indices and ranges such as '0-2,4'."
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError(f"cell_indices is empty. {example}")
    chosen: set[int] = set()
    for raw in expression.split(","):
        part = raw.strip()
        if not part:
            raise ValueError(f"cell_indices {expression!r} has an empty item. {example}")
        first, dash, last = part.partition("-")
        try:
            start = int(first.strip())
            end = int(last.strip()) if dash else start
        except ValueError:
            raise ValueError(
                f"cell_indices item {part!r} is not an index or a range. {example}"
            ) from None
        if start < 0 or end < 0:
            raise ValueError(f"cell_indices item {part!r} is negative. {example}")
        if end < start:
            raise ValueError(
                f"cell_indices range {part!r} runs backwards; write it as '{end}-{start}'."
            )
        if end >= cell_count:
            raise ValueError(
                f"cell_indices item {part!r} is out of range: the notebook has {cell_count} cells "
                f"(valid indices 0 to {cell_count - 1})."
                if cell_count
                else "The notebook has no cells to cite."
            )
        chosen.update(range(start, end + 1))
    return sorted(chosen)


def cite_text(prompt: str, expression: str, path: str, notebook: Any, indices: list[int]) -> str:
    """The message: which cells of which notebook, each with its source, then the prompt."""
    language = str(
        ((notebook.get("metadata") or {}).get("kernelspec") or {}).get("language") or "python"
    )
    parts = [f"Cells {expression} of the notebook '{path}':", ""]
    for index in indices:
        cell = notebook.cells[index]
        kind = cell.get("cell_type", "code")
        count = cell.get("execution_count")
        heading = f"Cell {index} (id {cell.get('id')}, {kind}"
        heading += f", execution count {count})" if count is not None else ")"
        fence = language if kind == "code" else ("markdown" if kind == "markdown" else "")
        source = cell.get("source", "")
        parts += [heading, f"```{fence}", source.rstrip("\n"), "```", ""]
    parts += ["Using the cells above:", prompt]
    return "\n".join(parts)


async def cite(
    prompt: Annotated[str, Field(description="What to ask about the cited cells.")],
    cell_indices: Annotated[
        str,
        Field(
            description="The cells to cite: 0-based indices and ranges, e.g. '0,1,2', '0-2' or '0-2,4'."
        ),
    ],
    ctx: Context,
    notebook_name: Annotated[
        str,
        Field(
            description="A name given to use_notebook, or a notebook path; empty means this connection's current notebook."
        ),
    ] = "",
) -> list[dict[str, Any]]:
    """Cite cells of a notebook in a prompt, like @-mentioning a file: their sources, then your question."""
    try:
        path = notebook_path(ctx, notebook_name or None)
        view = await state_of(ctx).store.read(path)
        indices = parse_cell_ranges(cell_indices, len(view.notebook.cells))
        text = cite_text(prompt, cell_indices.strip(), path, view.notebook, indices)
    except ToolFailure as error:
        raise MCPError(
            INVALID_PARAMS, f"{error.code}: {error.message}", data=error.as_meta()
        ) from None
    except ValueError as error:
        raise MCPError(INVALID_PARAMS, str(error)) from None
    return [{"role": "user", "content": {"type": "text", "text": text}}]


def feature(state: ServerState) -> Feature:
    """``jupyter_cite`` served, and completion for it and the notebook resource templates.

    An unknown prompt, or arguments a prompt cannot take, is invalid params
    (-32602): ``MCPServer.get_prompt`` turns every failure into a bare
    ``ValueError``, which reached the client as JSON-RPC error code 0 (over
    HTTP: an internal error), not as the request's own mistake.
    """

    def registers(server: Any) -> None:
        server.prompt(
            name=CITE_PROMPT,
            title="Cite notebook cells",
            description=(
                "Cite cells of a notebook in a prompt, like @-mentioning a file: the cells named by "
                "cell_indices ('0-2,4') with their sources, then your prompt, as one user message."
            ),
        )(cite)

        async def complete_for_this_server(
            ref: Any, argument: Any, context: Any
        ) -> Completion | None:
            return await complete(state, ref, argument, context)

        server.completion()(complete_for_this_server)

    def invalid_params(server: Any, handler: Handler) -> Handler:
        async def get_prompt(ctx: Any, params: Any) -> Any:
            try:
                return await handler(ctx, params)
            except ValueError as error:
                raise MCPError(INVALID_PARAMS, str(error)) from None

        return get_prompt

    return Feature("prompts", registers=registers, wraps=(Wrapped("prompts/get", invalid_params),))


# --- completion ---------------------------------------------------------------


async def complete(state: ServerState, ref: Any, argument: Any, context: Any) -> Completion | None:
    """Values for a prompt argument or a resource-template variable, by name."""
    known = dict((context.arguments or {}) if context is not None else {})
    name, partial = argument.name, argument.value or ""
    if isinstance(ref, PromptReference) and ref.name == CITE_PROMPT:
        if name == "notebook_name":
            return _limited(await notebook_paths(state, partial))
        if name == "cell_indices":
            return _limited(await range_suggestions(state, known.get("notebook_name", ""), partial))
        return None
    if isinstance(ref, ResourceTemplateReference) and ref.uri in (
        NOTEBOOK_TEMPLATE,
        CELL_TEMPLATE,
        OUTPUT_TEMPLATE,
    ):
        if name == "path":
            return _limited(await notebook_paths(state, partial))
        if name == "cell" and known.get("path"):
            cells = await _cells_of(state, known["path"])
            return _limited(
                [str(cell.get("id")) for cell in cells if str(cell.get("id")).startswith(partial)]
            )
        if name == "output" and known.get("path") and known.get("cell"):
            cells = await _cells_of(state, known["path"])
            outputs: list[Any] = next(
                (c.get("outputs", []) for c in cells if c.get("id") == known["cell"]), []
            )
            return _limited([str(i) for i in range(len(outputs)) if str(i).startswith(partial)])
    return None


def _limited(values: list[str]) -> Completion:
    return Completion(
        values=values[:MAX_COMPLETIONS], total=len(values), has_more=len(values) > MAX_COMPLETIONS
    )


async def notebook_paths(state: ServerState, prefix: str) -> list[str]:
    """Notebook paths where notebooks are kept (three levels down) that start with `prefix`."""
    try:
        entries = await state.store.list_files("", COMPLETION_DEPTH)
    except ToolFailure:
        return []
    return [
        entry["path"]
        for entry in entries
        if entry["type"] != "directory"
        and entry["path"].endswith(NOTEBOOK_SUFFIXES)
        and entry["path"].startswith(prefix)
    ]


async def _cells_of(state: ServerState, path: str) -> list[Any]:
    try:
        return list((await state.store.read(checked_path(state, path))).notebook.cells)
    except ToolFailure:
        return []


async def range_suggestions(state: ServerState, notebook: str, partial: str) -> list[str]:
    """What the last item of a range expression can be: an index or a range up to the end."""
    if not notebook:
        return []
    count = len(await _cells_of(state, notebook))
    head, comma, last = partial.rpartition(",")
    before = head + comma
    last = last.strip()
    candidates: list[str] = []
    if count:
        candidates.append(f"0-{count - 1}")
        start = last.split("-", 1)[0]
        if start.isdigit() and int(start) < count - 1:
            candidates.append(f"{int(start)}-{count - 1}")
        candidates.extend(str(i) for i in range(count))
    seen: list[str] = []
    for candidate in candidates:
        if candidate.startswith(last) and before + candidate not in seen:
            seen.append(before + candidate)
    return seen
