"""A kernel's Jupyter widgets, kept as a front end keeps them (as nbclient does).

Nothing here draws a widget; what matters is what JupyterLab, Voilà, VS Code
and nbclient do with a widget's messages, so a notebook run by this server
stores what one run by them stores:

- Every ``comm_open`` and ``comm_msg`` whose data carries a ``state`` updates
  that model's state (:attr:`Widgets.states`), its binary buffers kept
  base64-encoded by their path, as nbclient keeps them.
- An ``Output`` widget (``@jupyter-widgets/output`` ``OutputModel``) captures
  output: while the kernel has set its ``msg_id`` state (``with out:``,
  ``@out.capture()``), the iopub outputs of that request (streams, displays,
  errors, ``clear_output``) go into the widget's ``outputs`` state, not into
  the cell. Nested captures stack; the innermost wins. Each widget's outputs
  are bounded by the server's output limits, as a cell's are
  (:class:`~.outputs.OutputCollector`).
- What an Output widget captured is sent back to the kernel once the
  execution ends (a ``comm_msg`` ``update`` of its ``outputs``, as nbclient
  and JupyterLab send it), so ``out.outputs`` in the kernel lists it too;
  a kernel reached over a websocket is not told.
- The state of every model is what the notebook stores in
  ``metadata.widgets["application/vnd.jupyter.widget-state+json"]``
  (:meth:`Widgets.metadata`), so the notebook shows its widgets when reopened
  in JupyterLab.

A kernel's widgets live as long as the kernel: one :class:`Widgets` per
kernel, kept across its executions and dropped with it on a restart.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from typing import Any

from jupyter_mcp_server._kernels.outputs import OutputCollector

#: The key of the widget state in a notebook's ``metadata.widgets``.
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: The comm target of Jupyter widgets.
WIDGET_TARGET = "jupyter.widget"
OUTPUT_MODULE = "@jupyter-widgets/output"
OUTPUT_MODEL = "OutputModel"
#: The iopub messages an Output widget captures (as nbclient routes them).
CAPTURED = frozenset({"stream", "display_data", "execute_result", "error", "clear_output"})


class Widgets:
    """The widget models of one kernel, and the Output widgets capturing its outputs."""

    def __init__(self) -> None:
        #: Comm id -> the model's state, as the kernel last set it.
        self.states: dict[str, dict[str, Any]] = {}
        #: Comm id -> buffer path -> the buffer, base64-encoded (nbclient's form).
        self.buffers: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
        #: Comm id of an Output widget -> what it holds.
        self._outputs: dict[str, OutputCollector] = {}
        #: Comm id of an Output widget -> the request whose outputs it captures now.
        self._capturing: dict[str, str] = {}
        #: Request msg_id -> the Output widgets capturing it, innermost last.
        self._hooks: dict[str, list[str]] = defaultdict(list)
        #: Whether anything changed since :meth:`begin`.
        self.changed = False
        #: The Output widgets that captured output since :meth:`begin`, in order.
        self.captured: list[str] = []

    def begin(self) -> None:
        """An execution starts: what it changes is told apart from what was there."""
        self.changed = False
        self.captured = []

    def handle_comm(
        self, msg_type: str, message: dict[str, Any], max_bytes: int, max_blocks: int
    ) -> None:
        """Take a ``comm_open``, ``comm_msg`` or ``comm_close`` of the kernel."""
        content = message.get("content") or {}
        comm_id = content.get("comm_id")
        data = content.get("data")
        if not isinstance(comm_id, str) or not isinstance(data, dict):
            return
        state = data.get("state")
        if not isinstance(state, dict):
            return  # a custom message, or a close: the model's state is unchanged
        self.changed = True
        self.states.setdefault(comm_id, {}).update(state)
        paths = data.get("buffer_paths")
        if paths:
            buffers = message.get("buffers") or []
            kept = self.buffers.setdefault(comm_id, {})
            for path, buffer in zip(paths, buffers, strict=False):
                kept[tuple(path)] = {
                    "data": base64.b64encode(bytes(buffer)).decode("ascii"),
                    "encoding": "base64",
                    "path": path,
                }
        if msg_type == "comm_open" and content.get("target_name") == WIDGET_TARGET:
            model = self.states[comm_id]
            if (
                model.get("_model_module") == OUTPUT_MODULE
                and model.get("_model_name") == OUTPUT_MODEL
            ):
                self._outputs[comm_id] = OutputCollector(max_bytes, max_blocks)
        if comm_id not in self._outputs:
            return
        if "outputs" in state:
            # Set by the kernel (``out.outputs = ...``, ``append_stdout``): it holds those now.
            self._outputs[comm_id] = _holding(state.get("outputs"), max_bytes, max_blocks)
        if "msg_id" in state:
            self._capture(comm_id, state.get("msg_id"))

    def _capture(self, comm_id: str, msg_id: Any) -> None:
        previous = self._capturing.pop(comm_id, None)
        if previous is not None and comm_id in self._hooks[previous]:
            stack = self._hooks[previous]
            stack.reverse()
            stack.remove(comm_id)
            stack.reverse()
            if not stack:
                del self._hooks[previous]
        if isinstance(msg_id, str) and msg_id:
            self._hooks[msg_id].append(comm_id)
            self._capturing[comm_id] = msg_id

    def route(self, msg_id: str, msg_type: str, content: dict[str, Any]) -> bool:
        """Whether an Output widget captured this output of request `msg_id` (and took it)."""
        if msg_type not in CAPTURED:
            return False
        stack = self._hooks.get(msg_id)
        if not stack:
            return False
        self._outputs[stack[-1]].add(msg_type, content)
        self.changed = True
        if stack[-1] not in self.captured:
            self.captured.append(stack[-1])
        return True

    def tell_kernel(self, client: Any) -> None:
        """Send the kernel the outputs its Output widgets captured in this execution (the
        ``update`` nbclient's ``OutputWidget.sync_state`` sends), when `client` can."""
        session: Any = getattr(client, "session", None)
        shell: Any = getattr(client, "shell_channel", None)
        if not hasattr(session, "msg") or not hasattr(shell, "send"):
            return
        for comm_id in self.captured:
            content = {
                "comm_id": comm_id,
                "data": {
                    "method": "update",
                    "state": {"outputs": self.outputs_of(comm_id)},
                    "buffer_paths": [],
                },
            }
            shell.send(session.msg("comm_msg", content=content))

    def outputs_of(self, comm_id: str) -> list[dict[str, Any]] | None:
        """What the Output widget `comm_id` holds; None when it is no Output widget."""
        collector = self._outputs.get(comm_id)
        return None if collector is None else collector.result().outputs

    def metadata(self) -> dict[str, Any] | None:
        """The notebook's ``metadata.widgets`` for these models (nbclient's form); None
        when there is none."""
        state: dict[str, Any] = {}
        for comm_id, model in self.states.items():
            if "_model_name" not in model:
                continue
            model = dict(model)
            outputs = self.outputs_of(comm_id)
            if outputs is not None:
                model["outputs"] = outputs
            entry: dict[str, Any] = {
                "model_name": model.get("_model_name"),
                "model_module": model.get("_model_module"),
                "model_module_version": model.get("_model_module_version"),
                "state": model,
            }
            buffers = self.buffers.get(comm_id)
            if buffers:
                entry["buffers"] = list(buffers.values())
            state[comm_id] = entry
        if not state:
            return None
        return {WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}}


def _holding(outputs: Any, max_bytes: int, max_blocks: int) -> OutputCollector:
    """A collector holding `outputs` (nbformat outputs, as the kernel set them)."""
    collector = OutputCollector(max_bytes, max_blocks)
    for output in outputs if isinstance(outputs, list | tuple) else []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind in ("stream", "display_data", "execute_result", "error"):
            collector.add(str(kind), dict(output))
    return collector


def store_widget_state(notebook: Any, widgets: dict[str, Any] | None) -> None:
    """Write a kernel's widget state (:meth:`Widgets.metadata`) into `notebook`'s metadata;
    nothing when there is none."""
    if not widgets:
        return
    from nbformat import from_dict

    metadata = notebook.setdefault("metadata", {})
    metadata["widgets"] = from_dict(widgets)


def widget_models(metadata: Any) -> dict[str, Any]:
    """Model id -> its saved state, from a notebook's metadata (empty when it has none)."""
    widgets = metadata.get("widgets") if isinstance(metadata, dict) else None
    saved = widgets.get(WIDGET_STATE) if isinstance(widgets, dict) else None
    state = saved.get("state") if isinstance(saved, dict) else None
    return state if isinstance(state, dict) else {}
