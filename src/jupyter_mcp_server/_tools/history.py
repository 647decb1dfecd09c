"""A notebook's history, the diff between two of its revisions, restore, checkpoints.

Every change the server makes is an entry in the notebook's history
(:mod:`jupyter_mcp_server._store.history`), and so is every change someone
else made, once the server reads the file. ``restore_notebook`` writes an
earlier revision's content as a new revision, through the same ``mutate``
as every edit: an undo is itself undoable, and a person with the notebook
open in JupyterLab sees it arrive. It is the one entry point that puts old
content back, and asks the person first where approvals ask about
``notebook.restore`` (as ``apply_edits`` does about the cells it deletes).
"""

import dataclasses
import re
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import Field

from jupyter_mcp_server._apps import reviews
from jupyter_mcp_server._apps.shown import apps_shown, show_review
from jupyter_mcp_server._calls.approvals import RESTORE_REVISION, approve, asks_for
from jupyter_mcp_server._calls.callers import caller_of
from jupyter_mcp_server._errors import INVALID_ARGUMENT, NOT_FOUND, UNSUPPORTED, ToolFailure
from jupyter_mcp_server._rendering.content import upgrade_by_edit
from jupyter_mcp_server._schemas import history_models as hm
from jupyter_mcp_server._state import ServerState, state_of
from jupyter_mcp_server._store.change_origins import EDIT_ORIGIN, Origin
from jupyter_mcp_server._store.contents import ContentsFiles
from jupyter_mcp_server._store.diffs import cell_diff, diff_text, metadata_diff
from jupyter_mcp_server._store.history import NotebookHistory
from jupyter_mcp_server._store.recording import diff_revisions, notebook_at
from jupyter_mcp_server._store.store import revision_conflict
from jupyter_mcp_server._tool_calls.addressing import notebook_path
from jupyter_mcp_server._tool_calls.arguments import ExpectedRevision, NotebookName
from jupyter_mcp_server._tool_calls.results import answer, tool_handler
from jupyter_mcp_server._workspace.storage_errors import storage_failure

_REVISION = re.compile(r"^[0-9a-f]{16}$")
_CHECKPOINT_NAME = re.compile(r"^[\w.\- ]{1,64}$")

RevisionOrCheckpoint = Annotated[
    str,
    Field(description="A revision (16 hex digits, from notebook_history) or a checkpoint's name."),
]


def history_of(server: ServerState, key: str, note: str | None = None) -> NotebookHistory:
    """The notebook's history; ``unsupported`` when history is off."""
    recorder = getattr(server.store, "recorder", None)
    history = recorder.history(key) if recorder is not None else None
    if history is None or note is not None:
        failed = recorder.failure_of(key) if recorder is not None and note is not None else None
        if isinstance(failed, OSError):
            refused = storage_failure(
                failed,
                f"The history of {key}",
                server.histories.root or "",
                "The notebook itself was not changed.",
            )
            if refused is not None:
                refused.details["path"] = key
                raise refused
        reason = note or server.histories.off or "history is off"
        raise ToolFailure(
            UNSUPPORTED,
            f"The history of {key} is not available: {reason}. Configure a writable --history-dir.",
            path=key,
        )
    return history


def resolved(history: NotebookHistory, name: str) -> str:
    """A revision named by itself or by a checkpoint's name."""
    checkpoints = history.index().get("checkpoints", {})
    if name in checkpoints:
        return str(checkpoints[name])
    if _REVISION.match(name):
        return name
    raise ToolFailure(
        NOT_FOUND,
        f"{name!r} is neither a revision nor a checkpoint of {history.key}. Checkpoints: "
        f"{', '.join(sorted(checkpoints)) or 'none'}; notebook_history lists the revisions.",
        known=sorted(checkpoints),
    )


async def opened(
    ctx: Context | None, notebook_name: str | None
) -> tuple[ServerState, Any, NotebookHistory]:
    """The server, the notebook's view (None when it is missing: deleted or renamed) with its
    current revision kept in its history, and that history."""
    server = state_of(ctx)
    path = notebook_path(ctx, notebook_name)
    try:
        view, note = await server.store.remember(path)
    except ToolFailure as failure:
        if failure.code != NOT_FOUND:
            raise
        return server, None, history_of(server, server.store.locate(path))
    return server, view, history_of(server, view.path, note)


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"\n... ({len(text) - limit} more characters: the structured diff has it all)"
    )


@tool_handler("notebook_history")
async def notebook_history(
    limit: Annotated[
        int, Field(description="Entries to return, newest first (1-500).", ge=1, le=500)
    ] = 20,
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, hm.NotebookHistory]:
    """List a notebook's history, newest first: each revision, when, which tool and client made it (no tool: changed outside the server), and its checkpoints. Works for a notebook deleted or renamed since."""
    _, view, history = await opened(ctx, notebook_name)
    entries = history.entries()
    index = history.index()
    checkpoints = {str(k): str(v) for k, v in index.get("checkpoints", {}).items()}
    labels: dict[str, list[str]] = {}
    for name, revision in checkpoints.items():
        labels.setdefault(revision, []).append(name)
    shown = [
        hm.HistoryEntry(
            revision=e["revision"],
            previous_revision=e.get("previous_revision"),
            time=e.get("time", ""),
            tool=e.get("tool"),
            user=e.get("user"),
            client=e.get("client"),
            connection=e.get("connection"),
            checkpoints=sorted(labels.get(e["revision"], [])),
            restored_from=e.get("restored_from"),
        )
        for e in reversed(entries[-limit:])
    ]
    dropped = int(index.get("dropped", 0))
    result = hm.NotebookHistory(
        path=history.key,
        revision=view.revision if view is not None else None,
        entries=shown,
        total=len(entries),
        dropped=dropped,
        checkpoints=checkpoints,
    )
    lines = [
        f"{e.time} {e.revision} {e.tool or '(outside the server)'}"
        + (f" by {e.client}" if e.client else "")
        + (f" for {e.user}" if e.user else "")
        + (f" [{', '.join(e.checkpoints)}]" if e.checkpoints else "")
        + (f" (restored {e.restored_from})" if e.restored_from else "")
        for e in shown
    ]
    head = f"History of {history.key}: {len(entries)} entries kept"
    if dropped:
        head += f", {dropped} older dropped to stay within bounds"
    if view is None:
        head += "; the notebook is missing (deleted or renamed): restore_notebook writes it back"
    return answer(result.model_dump(), head + ".\n" + "\n".join(lines))


@tool_handler("diff_notebook")
async def diff_notebook(
    from_revision: RevisionOrCheckpoint,
    to_revision: Annotated[
        str | None, Field(description="A revision or checkpoint; default: the current revision.")
    ] = None,
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, hm.NotebookDiffed]:
    """Compare two revisions of a notebook cell by cell, by id: cells added, removed, moved, source changed (a unified diff), outputs changed (summarised), notebook metadata."""
    server, view, history = await opened(ctx, notebook_name)
    before = resolved(history, from_revision)
    if to_revision is None and view is None:
        raise ToolFailure(INVALID_ARGUMENT, f"{history.key} is missing: name to_revision too.")
    after = resolved(history, to_revision) if to_revision is not None else view.revision
    diff = diff_revisions(history, before, after)
    result = hm.NotebookDiffed(
        path=history.key, from_revision=before, to_revision=after, diff=hm.NotebookDiff(**diff)
    )
    text = _bounded(diff_text(diff, diff.get("metadata")), server.config.inline_budget_chars)
    return answer(result.model_dump(), f"{history.key}: {before} -> {after}\n{text}")


@tool_handler("restore_notebook")
async def restore_notebook(
    revision: RevisionOrCheckpoint,
    notebook_name: NotebookName = None,
    expected_revision: ExpectedRevision = None,
    dry_run: Annotated[
        bool, Field(description="Return the diff and the revision it would make, writing nothing.")
    ] = False,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, hm.NotebookRestored]:
    """Write an earlier revision's content (cells, ids, outputs, metadata) back as a new revision. The current one stays in the history, so a restore can itself be undone. Also brings back a deleted notebook."""
    server, view, history = await opened(ctx, notebook_name)
    wanted = resolved(history, revision)
    old = notebook_at(history, wanted)
    if dry_run:
        return _restore_preview(
            caller_of(ctx).owner, server, view, history, wanted, old, expected_revision
        )
    if asks_for(server, RESTORE_REVISION):
        # The person approves putting this content back over what is there now, and only that.
        if view is not None and expected_revision is None:
            expected_revision = view.revision
        preview = cell_diff(view.notebook["cells"] if view is not None else [], old["cells"])
        now = (
            f"its current revision {view.revision}"
            if view is not None
            else "nothing (it is missing)"
        )
        await approve(
            ctx,
            RESTORE_REVISION,
            f"Restore '{history.key}' to revision {wanted}, replacing {now}: {len(preview['added'])} cell(s) "
            f"come back, {len(preview['removed'])} go, {len(preview['changed'])} change. The current revision "
            "stays in the history.",
        )
    return await restored(server, view, history, wanted, expected_revision)


def _restore_preview(
    owner: str,
    server: ServerState,
    view: Any,
    history: NotebookHistory,
    wanted: str,
    old: Any,
    expected_revision: str | None,
) -> CallToolResult:
    """A restore's dry run: its diff and the revision it would make; a client that shows apps
    also gets it to review (:mod:`jupyter_mcp_server._apps.reviews`), where an accept applies it."""
    if view is None:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{history.key} is missing: there is nothing to compare with; restore it without dry_run.",
        )
    if expected_revision is not None and expected_revision != view.revision:
        raise revision_conflict(view.path, expected_revision, view.revision)
    diff = cell_diff(view.notebook["cells"], old["cells"])
    diff["metadata"] = metadata_diff(view.notebook["metadata"], old["metadata"])
    from nbformat import NotebookNode

    after = NotebookNode(
        {**view.notebook, "cells": list(old["cells"]), "metadata": old["metadata"]}
    )
    would = server.store.revision_if(view, after)
    if apps_shown() and would != view.revision:
        proposal = server.reviews.propose(
            owner, reviews.RESTORE, view.path, view.revision, would, restored_revision=wanted
        )
        summary = f"restore_notebook to the content of {wanted}: {view.revision} -> {would}"
        show_review(reviews.review_of(proposal, view.notebook["cells"], old["cells"], summary))
    result = hm.NotebookRestored(
        revision=would,
        restored_revision=wanted,
        diff=hm.NotebookDiff(**diff),
        history=view.history_off,
    )
    head = (
        f"Dry run: restoring {history.key} to the content of {wanted} would make revision "
        f"{would} from {view.revision}; nothing was written."
    )
    text = _bounded(diff_text(diff, diff.get("metadata")), server.config.inline_budget_chars)
    return answer(result.model_dump(), f"{head}\n{text}")


async def restored(
    server: ServerState,
    view: Any,
    history: NotebookHistory,
    wanted: str,
    expected_revision: str | None,
) -> CallToolResult:
    """Write revision `wanted`'s content back (approved already, where approvals ask)."""
    old = notebook_at(history, wanted)
    if view is None:
        await server.store.create(
            history.key
        )  # deleted since: it comes back, then gets the content

    def change(notebook: Any) -> dict[str, Any]:
        diff = cell_diff(notebook["cells"], old["cells"])
        diff["metadata"] = metadata_diff(notebook["metadata"], old["metadata"])
        notebook["cells"] = list(old["cells"])
        notebook["metadata"] = old["metadata"]
        return diff

    origin = EDIT_ORIGIN.get() or Origin(tool="restore_notebook")
    token = EDIT_ORIGIN.set(dataclasses.replace(origin, restored_from=wanted))
    try:
        diff, written = await server.store.mutate(history.key, change, expected_revision)
    finally:
        EDIT_ORIGIN.reset(token)
    upgraded, said = upgrade_by_edit(written)
    result = hm.NotebookRestored(
        revision=written.revision,
        restored_revision=wanted,
        diff=hm.NotebookDiff(**diff),
        history=written.history_off,
        format_upgraded=upgraded,
    )
    head = (
        f"Restored {history.key} to the content of {wanted} as revision {written.revision}.{said}"
    )
    if written.revision == written.previous_revision:
        head = f"{history.key} already holds the content of {wanted}; nothing was written (revision {written.revision})."
    text = _bounded(diff_text(diff, diff.get("metadata")), server.config.inline_budget_chars)
    return answer(result.model_dump(), f"{head}\n{text}")


@tool_handler("checkpoint")
async def checkpoint(
    name: Annotated[
        str,
        Field(
            description="The checkpoint's name (letters, digits, space, '.', '-', '_'; at most 64)."
        ),
    ],
    notebook_name: NotebookName = None,
    ctx: Context | None = None,
) -> Annotated[CallToolResult, hm.Checkpointed]:
    """Label the notebook's current revision with a name, so restore_notebook and diff_notebook can name it. Naming an existing checkpoint moves it."""
    if not _CHECKPOINT_NAME.match(name) or _REVISION.match(name):
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{name!r} cannot name a checkpoint: use 1 to 64 letters, digits, spaces, '.', '-' or '_', "
            "and not 16 hex digits (that reads as a revision).",
        )
    server = state_of(ctx)
    path = notebook_path(ctx, notebook_name)
    view, note = await server.store.remember(path)
    history = history_of(server, view.path, note)
    try:
        history.checkpoint(name, view.revision)
    except OSError as error:
        where = server.histories.root or ""
        refused = storage_failure(
            error,
            f"Checkpoint {name!r} of {view.path}",
            where,
            "The notebook and its history are unchanged.",
        )
        if refused is not None:
            raise refused from error
        raise ToolFailure(
            UNSUPPORTED, f"The checkpoint could not be kept: {error.strerror or error}."
        ) from error
    said = ""
    jupyter = None
    files = server.store.files
    if isinstance(files, ContentsFiles):
        # Notebooks on a Jupyter Server: its own checkpoint too, which JupyterLab's
        # "Revert to checkpoint" offers (Jupyter's checkpoints have no names: the history keeps it).
        created = await files.create_checkpoint(view.path)
        jupyter = str(created.get("id"))
        said = f" Jupyter checkpoint {jupyter} made too (JupyterLab: File > Revert Notebook to Checkpoint)."
    result = hm.Checkpointed(name=name, revision=view.revision, jupyter_checkpoint=jupyter)
    return answer(
        result.model_dump(),
        f"Checkpoint {name!r} is revision {view.revision} of {view.path}.{said}",
    )
