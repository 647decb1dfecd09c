"""A scripted stand-in for an agent's model API, on loopback, recording what the model is handed.

An agent CLI is run for real, but its model is this: one small HTTP server that
speaks the four APIs the clients use (Anthropic Messages, OpenAI Chat
Completions, OpenAI Responses, Gemini generateContent), streaming or not. It is
given a script, a list of tool calls by our tool names. On each model request of
the agent's main loop it reads the conversation the client sent, records the
tool results in it verbatim (exactly the blocks the client put in front of the
model, per call), and answers with the next call of the script, under the name
the client gave that tool, or with a final text once the script is done.

The answer depends only on the conversation (how many calls it already holds),
so a retried request gets the same answer and a side request (a title, a token
count, a "who speaks next" check) never consumes a step: a request that offers
none of our tools is answered with something harmless.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "standin-model"
#: What joins a client's prefix to a tool's name: mcp__jupyter__outline, jupyter_outline, ...
SEPARATORS = "_-.:/"
FINAL = "The notebook work is done."


@dataclass
class Call:
    """One tool call the stand-in asked for."""

    id: str
    tool: str  # our name for the tool ("" for a call to the client's own tool search)
    name: str  # the client's name for it
    arguments: dict[str, Any]
    step: int | None  # the script step it is, or None for a tool search


@dataclass
class Handed:
    """What the client put in front of the model for one call: its result's blocks, any
    blocks it added beside them before the model's next turn, and the item as sent."""

    blocks: list[dict[str, Any]]
    beside: list[dict[str, Any]] = field(default_factory=list)
    is_error: bool | None = None
    raw: Any = None

    def text(self) -> str:
        """Every piece of text the model was handed for this call, as one string."""
        parts = []
        for block in [*self.blocks, *self.beside]:
            if block["type"] == "text":
                parts.append(block["text"])
            elif block["type"] != "image":
                parts.append(json.dumps(block.get("value", block), ensure_ascii=False))
        return "\n".join(parts)

    def images(self) -> list[dict[str, Any]]:
        return [b for b in [*self.blocks, *self.beside] if b["type"] == "image"]


@dataclass
class Conversation:
    """One model request, read the same way whatever the API: the tool names offered, the
    calls the model made so far (id may be None) and the results handed back for them."""

    offered: list[str]
    tools_json: str
    calls: list[tuple[str | None, str]]  # (id, client's tool name)
    results: list[tuple[str | None, Handed]]  # (call id, what was handed)
    stream: bool
    model: str


def tool_name(offered: list[str], ours: str) -> str | None:
    """The client's name for our tool: ours itself, or ours after a prefix and a separator
    (the shortest such, so `execute_cell` never picks `insert_execute_code_cell`)."""
    if ours in offered:
        return ours
    found = [n for n in offered if n.endswith(ours) and n[: -len(ours)][-1:] in SEPARATORS]
    return min(found, key=len) if found else None


@dataclass(frozen=True)
class Search:
    """A client's own tool-search tool, for a client that defers MCP tools behind it: its
    name, the arguments that load the tools named, and the prefix it puts before ours."""

    tool: str
    arguments: Callable[[list[str]], dict[str, Any]]
    prefix: str


class Standin:
    """The stand-in model. `script` is [(our tool name, arguments)]; `search` is the client's
    tool search, when it defers MCP tools: it is called once, for every tool still missing."""

    def __init__(
        self, script: list[tuple[str, dict[str, Any]]], search: Search | None = None
    ) -> None:
        self.script = list(script)
        self.search = search
        self.searched = False
        self.calls: list[Call] = []
        self.handed: dict[str, Handed] = {}  # call id -> what the client handed for it
        self.requests: list[dict[str, Any]] = []  # every request: method, path, what it was
        self.bodies: list[Any] = []  # every request's body as sent, for a failing test to show
        self.offered: list[str] = []
        self.tools_chars = 0
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._started = time.monotonic()

    # --- The server -------------------------------------------------------------------

    @contextlib.contextmanager
    def running(self) -> Iterator[Standin]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: every answer has a Content-Length

            def log_message(self, *args: Any) -> None:  # the test's output stays quiet
                pass

            def do_GET(self) -> None:
                standin._serve(self, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                elif encoding:
                    standin.problems.append(f"{self.path}: request body in {encoding}")
                standin._serve(self, body)

        self._started = time.monotonic()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _serve(self, handler: BaseHTTPRequestHandler, raw: bytes | None) -> None:
        path = handler.path.split("?", 1)[0]
        entry: dict[str, Any] = {
            "method": handler.command,
            "path": handler.path,
            "at": round(time.monotonic() - self._started, 2),  # seconds since the stand-in began
        }
        self.requests.append(entry)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        self.bodies.append(body)
        status, kind, payload = 404, "application/json", {"error": {"message": "not found"}}
        entry["kind"] = "side"  # unless it turns out to be a turn of the main loop
        if handler.command == "GET":
            if path.endswith("/models"):
                status, payload = 200, _models()
        elif path.endswith("/count_tokens"):
            status, payload = 200, {"input_tokens": 100}
        elif path.endswith("/messages"):
            status, kind, payload = self._answer(entry, _read_anthropic(body), _write_anthropic)
        elif path.endswith("/chat/completions"):
            status, kind, payload = self._answer(entry, _read_chat(body), _write_chat)
        elif path.endswith("/responses"):
            status, kind, payload = self._answer(entry, _read_responses(body), _write_responses)
        elif ":countTokens" in path:
            status, payload = 200, {"totalTokens": 100}
        elif ":generateContent" in path or ":streamGenerateContent" in path:
            read = _read_gemini(body, stream=":stream" in path)
            if read.offered or not _wants_json(body):
                status, kind, payload = self._answer(entry, read, _write_gemini)
            else:  # a check of the client's own (who speaks next, a loop): harmless JSON
                entry["kind"] = "side"
                answer = json.dumps({"next_speaker": "user", "reasoning": "done"})
                status, kind, payload = 200, *_write_gemini(read, None, answer)
        else:
            entry["kind"] = "unknown"  # answered 404: a client that needs it fails visibly
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    # --- The script ---------------------------------------------------------------------

    def _answer(self, entry: dict[str, Any], read: Conversation, write: Any) -> tuple:
        names = [tool for tool, _ in self.script]
        searching = self.search is not None and self.search.tool in read.offered
        ours = any(tool_name(read.offered, tool) for tool in names)
        if not ours and not searching:
            entry["kind"] = "side"  # a title, a summary, a check: no step is spent on it
            return 200, *write(read, None, "Notebook session")
        entry["kind"] = "turn"
        with self._lock:
            self.offered = read.offered
            self.tools_chars = max(self.tools_chars, len(read.tools_json))
            self._remember(read)
            call = self._next(read)
        entry["answer"] = call.name if call else "final"
        return 200, *write(read, call, None if call else FINAL)

    def _remember(self, read: Conversation) -> None:
        """Keep what the client handed for each call this request shows a result of."""
        by_id = {c.id: c for c in self.calls}
        for position, (call_id, handed) in enumerate(read.results):
            call = by_id.get(call_id or "")
            if call is None and position < len(self.calls):
                call = self.calls[position]  # a client that drops ids: results come in order
            if call is None:
                self.problems.append(f"a result for a call never made: {call_id}")
                continue
            self.handed[call.id] = handed

    def _next(self, read: Conversation) -> Call | None:
        made = len(read.calls)
        if made < len(self.calls):
            return self.calls[made]  # a request sent again: the same answer as before
        if made > len(self.calls):
            self.problems.append(f"the conversation holds {made} calls, {len(self.calls)} made")
        step = sum(1 for c in self.calls if c.step is not None)
        if step >= len(self.script):
            return None
        tool, arguments = self.script[step]
        name = tool_name(read.offered, tool)
        search = self.search
        if name is not None:
            call = Call(self._id(), tool, name, arguments, step)
        elif search is not None and not self.searched and search.tool in read.offered:
            # Load every tool the script still needs at once, as a model would on its first turn.
            missing = sorted(
                {search.prefix + t for t, _ in self.script[step:] if not tool_name(read.offered, t)}
            )
            self.searched = True
            call = Call(self._id(), "", search.tool, search.arguments(missing), None)
        elif search is not None and self.searched:
            # Loaded by the search (its schema came back in the search's result).
            call = Call(self._id(), tool, search.prefix + tool, arguments, step)
        else:
            self.problems.append(f"step {step}: the client offered no tool {tool}")
            return None
        self.calls.append(call)
        return call

    def _id(self) -> str:
        return f"call_standin_{next(self._ids)}"

    # --- What was recorded ------------------------------------------------------------

    def steps(self) -> list[dict[str, Any]]:
        """Each script step: the call made and what the client handed the model for it."""
        done = []
        for call in self.calls:
            if call.step is None:
                continue
            handed = self.handed.get(call.id)
            done.append(
                {
                    "step": call.step,
                    "tool": call.tool,
                    "called_as": call.name,
                    "arguments": call.arguments,
                    "handed": None
                    if handed is None
                    else {
                        "blocks": handed.blocks,
                        "beside": handed.beside,
                        "is_error": handed.is_error,
                    },
                }
            )
        return done


# --- Reading each API's request -------------------------------------------------------------


def _image(mime: str | None, data: str) -> dict[str, Any]:
    return {"type": "image", "mime_type": mime, "data": data}


def _data_url(url: str) -> dict[str, Any]:
    if url.startswith("data:") and "," in url:
        head, data = url[5:].split(",", 1)
        return _image(head.split(";")[0], data)
    return {"type": "image_url", "value": url}


def _anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for block in content or []:
        if block.get("type") == "text":
            blocks.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            source = block.get("source", {})
            blocks.append(_image(source.get("media_type"), source.get("data", "")))
        else:
            blocks.append({"type": block.get("type", "?"), "value": block})
    return blocks


def _read_anthropic(body: dict[str, Any]) -> Conversation:
    tools = body.get("tools") or []
    calls, results = [], []
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        if message.get("role") == "assistant":
            calls += [(b.get("id"), b.get("name")) for b in content if b.get("type") == "tool_use"]
            continue
        here = []
        beside = []
        for block in content:
            if block.get("type") == "tool_result":
                handed = Handed(
                    _anthropic_blocks(block.get("content")),
                    is_error=block.get("is_error"),
                    raw=block,
                )
                here.append((block.get("tool_use_id"), handed))
            else:
                beside += _anthropic_blocks([block])
        if here:
            here[-1][1].beside = beside
        results += here
    return Conversation(
        [t.get("name", "") for t in tools],
        json.dumps(tools),
        calls,
        results,
        bool(body.get("stream")),
        body.get("model", MODEL),
    )


def _chat_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for part in content or []:
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            blocks.append(_data_url(part["image_url"]["url"]))
        else:
            blocks.append({"type": part.get("type", "?"), "value": part})
    return blocks


def _read_chat(body: dict[str, Any]) -> Conversation:
    tools = body.get("tools") or []
    calls, results = [], []
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                calls.append((call.get("id"), call.get("function", {}).get("name")))
        elif role == "tool":
            handed = Handed(_chat_blocks(message.get("content")), raw=message)
            results.append((message.get("tool_call_id"), handed))
        elif role == "user" and results and len(results) == len(calls):
            # Blocks a client adds after the results (opencode's images) before the model's turn.
            results[-1][1].beside += _chat_blocks(message.get("content"))
    return Conversation(
        [t.get("function", {}).get("name", "") for t in tools],
        json.dumps(tools),
        calls,
        results,
        bool(body.get("stream")),
        body.get("model", MODEL),
    )


def _responses_blocks(output: Any) -> list[dict[str, Any]]:
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    blocks = []
    for part in output or []:
        if part.get("type") in ("input_text", "output_text", "text"):
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "input_image":
            blocks.append(_data_url(part.get("image_url", "")))
        else:
            blocks.append({"type": part.get("type", "?"), "value": part})
    return blocks


def _responses_tools(tools: list[dict[str, Any]]) -> list[str]:
    names = []
    for tool in tools:
        if tool.get("type") == "function":
            names.append(tool.get("name", ""))
        elif tool.get("type") == "namespace":  # tools grouped under a server's name
            # Called by name with the namespace beside it; "namespace/name" here.
            names += [f"{tool.get('name', '')}/{t.get('name', '')}" for t in tool.get("tools", [])]
        elif tool.get("name"):
            names.append(tool["name"])
    return names


def _read_responses(body: dict[str, Any]) -> Conversation:
    tools = body.get("tools") or []
    calls, results = [], []
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            name = item.get("name", "")
            namespace = item.get("namespace")
            calls.append((item.get("call_id"), f"{namespace}/{name}" if namespace else name))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            handed = Handed(_responses_blocks(item.get("output")), raw=item)
            results.append((item.get("call_id"), handed))
        elif item.get("role") == "user" and results and len(results) == len(calls):
            results[-1][1].beside += _responses_blocks(item.get("content"))
    return Conversation(
        _responses_tools(tools),
        json.dumps(tools),
        calls,
        results,
        bool(body.get("stream")),
        body.get("model", MODEL),
    )


def _gemini_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    blocks = []
    for part in parts:
        if "text" in part:
            blocks.append({"type": "text", "text": part["text"]})
        elif "inlineData" in part:
            inline = part["inlineData"]
            blocks.append(_image(inline.get("mimeType"), inline.get("data", "")))
        else:
            blocks.append({"type": "part", "value": part})
    return blocks


def _read_gemini(body: dict[str, Any], stream: bool) -> Conversation:
    tools = body.get("tools") or []
    offered = [
        declaration.get("name", "")
        for tool in tools
        for declaration in tool.get("functionDeclarations") or []
    ]
    calls, results = [], []
    for content in body.get("contents", []):
        parts = content.get("parts") or []
        if content.get("role") == "model":
            for part in parts:
                if "functionCall" in part:
                    call = part["functionCall"]
                    calls.append((call.get("id"), call.get("name")))
            continue
        here, beside = [], []
        for part in parts:
            if "functionResponse" in part:
                response = part["functionResponse"]
                blocks = [{"type": "json", "value": response.get("response")}]
                blocks += _gemini_parts(response.get("parts") or [])
                here.append((response.get("id"), Handed(blocks, raw=part)))
            else:
                beside.append(part)
        if here:
            here[-1][1].beside = _gemini_parts(beside)
        results += here
    return Conversation(offered, json.dumps(tools), calls, results, stream, MODEL)


def _wants_json(body: dict[str, Any]) -> bool:
    config = body.get("generationConfig") or {}
    return config.get("responseMimeType") == "application/json"


# --- Writing each API's answer --------------------------------------------------------------


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for event, data in events:
        if event:
            out.append(f"event: {event}\n")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


def _write_anthropic(read: Conversation, call: Call | None, text: str | None) -> tuple:
    usage = {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if call:
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
    else:
        block = {"type": "text", "text": text}
    stop = "tool_use" if call else "end_turn"
    message = {
        "id": f"msg_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": read.model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not read.stream:
        return "application/json", message
    if call:
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
    events = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return "text/event-stream", _sse(events)


def _write_chat(read: Conversation, call: Call | None, text: str | None) -> tuple:
    created = int(time.time())
    ident = f"chatcmpl-{time.monotonic_ns()}"
    tool_calls = None
    if call:
        function = {"name": call.name, "arguments": json.dumps(call.arguments)}
        tool_calls = [{"index": 0, "id": call.id, "type": "function", "function": function}]
    finish = "tool_calls" if call else "stop"
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    if not read.stream:
        message = {
            "role": "assistant",
            "content": text,
            **({"tool_calls": tool_calls} if call else {}),
        }
        return "application/json", {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": read.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
    base = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": read.model}
    delta = {"role": "assistant", **({"tool_calls": tool_calls} if call else {"content": text})}
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**base, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return "text/event-stream", _sse(events)


def _write_responses(read: Conversation, call: Call | None, text: str | None) -> tuple:
    ident = f"resp_{time.monotonic_ns()}"
    if call:
        namespace, _, name = call.name.rpartition("/")
        item = {
            "type": "function_call",
            "id": f"fc_{call.id}",
            "call_id": call.id,
            **({"namespace": namespace} if namespace else {}),
            "name": name,
            "arguments": json.dumps(call.arguments),
            "status": "completed",
        }
    else:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        item = {
            "type": "message",
            "id": f"msg_{ident}",
            "role": "assistant",
            "status": "completed",
            "content": content,
        }
    usage = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 120,
    }
    response = {
        "id": ident,
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": read.model,
        "output": [item],
        "usage": usage,
    }
    if not read.stream:
        return "application/json", response
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"response": {**response, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
    ]
    if not call:
        events.append(
            (
                "response.output_text.delta",
                {"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": text},
            )
        )
    events += [
        ("response.output_item.done", {"output_index": 0, "item": item}),
        ("response.completed", {"response": response}),
    ]
    numbered = [
        (event, {"type": event, "sequence_number": n, **data})
        for n, (event, data) in enumerate(events)
    ]
    return "text/event-stream", _sse(numbered)


def _write_gemini(read: Conversation, call: Call | None, text: str | None) -> tuple:
    if call:
        part = {"functionCall": {"id": call.id, "name": call.name, "args": call.arguments}}
    else:
        part = {"text": text}
    answer = {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 100,
            "candidatesTokenCount": 20,
            "totalTokenCount": 120,
        },
        "modelVersion": read.model,
    }
    if not read.stream:
        return "application/json", answer
    return "text/event-stream", _sse([(None, answer)])


def _models() -> dict[str, Any]:
    """A model list in OpenAI's shape and Gemini's, naming the stand-in's one model."""
    return {
        "object": "list",
        "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "standin"}],
        "models": [{"name": f"models/{MODEL}", "displayName": MODEL}],
    }
