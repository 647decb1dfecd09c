"""The output app: one self-contained HTML document showing a cell and its outputs.

What a host renders in a sandboxed iframe for the execution tools' results
(:mod:`.apps` serves it as ``ui://jupyter-mcp/outputs``). It shows what
JupyterLab shows of a cell: its source, and each output whole: HTML, images, SVG,
DataFrames (scrollable, sortable by a column's header), ANSI colours, tracebacks, and
Vega-Lite, Vega and Plotly charts, interactive (:mod:`.chart_bundle`).

Handed a detached run (``detach=true``), it follows the run through its host: it calls the
app-only tool ``watch_run`` (``tools/call`` on the bridge) every half second while cells
end, backing off to every four while one runs long, and shows the run's progress (cells
done of its cells, the one running now) and each cell with its outputs as it ends, until
the run ends or the view goes away (``ui/resource-teardown``, the page left, another
result). Its Cancel button calls ``cancel_run``.

Safe by construction:

- one document, no CDN and no network: its script and style are inline, its
  Content-Security-Policy (a ``<meta>``, and ``_meta.ui.csp`` with no domain) lets
  the page load nothing and run only its own scripts, by hash (its own, and the chart
  libraries it inlines);
- a notebook's HTML and SVG are untrusted: HTML is parsed into an inert document
  and only an allowlist of elements and attributes is copied out (no script, no
  ``on*`` attribute, no ``javascript:`` link, no frame, no form); SVG is shown as an
  image (``<img src="data:image/svg+xml...">``), where no script of it runs. A
  script the sanitizer missed would still not run: the policy names the page's one;
- it talks to no server: only to its host, through the host bridge
  (``postMessage`` JSON-RPC: ``ui/initialize``, the tool result, ``ui/open-link``, and
  ``tools/call`` of ``watch_run`` and ``cancel_run`` for a detached run).
"""

from __future__ import annotations

import base64
import hashlib

from jupyter_mcp_server._apps.chart_bundle import CHART_STYLE, CHARTS, chart_libraries

#: The ext-apps protocol version the page speaks (``@modelcontextprotocol/ext-apps`` 2.x).
APPS_PROTOCOL_VERSION = "2026-01-26"

STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #fff; --cell: #f6f8fa;
  --line: #d1d9e0; --err: #fdecec; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117;
  --cell: #161b22; --line: #30363d; --err: #3c1618; } }
body { margin: 0; padding: 8px; font: 14px/1.45 system-ui, sans-serif; color: var(--fg);
  background: var(--bg); }
.cell { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 8px; overflow: hidden; }
.head { display: flex; gap: 8px; padding: 4px 8px; font-size: 12px; color: var(--muted);
  border-bottom: 1px solid var(--line); }
.head .status-error, .head .status-timeout, .head .status-interrupted { color: #cf222e; }
.source { margin: 0; padding: 8px; background: var(--cell); font: 13px/1.4 var(--mono);
  white-space: pre-wrap; overflow-wrap: anywhere; }
.prompt { color: var(--muted); font: 12px var(--mono); padding: 4px 8px 0; }
.output { padding: 4px 8px 8px; overflow-x: auto; }
pre.text { margin: 0; font: 13px/1.4 var(--mono); white-space: pre-wrap; overflow-wrap: anywhere; }
pre.stderr { background: var(--err); }
pre.error { background: var(--err); padding: 4px; }
img { max-width: 100%; height: auto; }
.scroll { max-height: 360px; overflow: auto; border: 1px solid var(--line); }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--line); text-align: right; }
thead th { position: sticky; top: 0; background: var(--cell); }
table.sortable thead th { cursor: pointer; user-select: none; }
th[data-sorted="asc"]::after { content: " \\25B2"; } th[data-sorted="desc"]::after { content: " \\25BC"; }
.note { color: var(--muted); font-style: italic; }
.b { font-weight: bold; } .u { text-decoration: underline; }
.run-head { display: flex; gap: 10px; align-items: baseline; margin: 0 0 6px; font-size: 13px; }
.run-head .what { font-weight: 600; } .run-head .count { color: var(--muted); }
.run-head .state { flex: 1; } .status-ok, .status-completed { color: #1a7f37; }
.status-error, .status-cancelled, .status-failed, .status-timeout, .status-interrupted,
.status-kernel_gone, .status-kernel_unresponsive, .status-lost { color: #cf222e; }
.run .cancel { font: inherit; font-size: 12px; padding: 1px 10px; border-radius: 6px;
  border: 1px solid var(--line); background: var(--cell); color: var(--fg); cursor: pointer; }
.run .cancel:disabled { opacity: .55; cursor: default; }
.run .bar { width: 100%; height: 8px; margin: 0 0 8px; }
.cell.running { border-style: dashed; } .run .said { font-size: 12px; color: var(--muted); }
"""

#: What every app of this server shares: the sanitizer, DataFrames, ANSI colours, one output.
RENDERING = r"""
"use strict";
const root = document.getElementById("app");
let nextId = 1;
const pending = new Map();
function send(message) { window.parent.postMessage(message, "*"); }
function request(method, params) {
  const id = nextId++;
  send({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function notify(method, params) { send({ jsonrpc: "2.0", method, params: params || {} }); }
// What to stop when the view goes away (the host tears it down, or the page is left).
const teardowns = [];
function tearDown() { while (teardowns.length) teardowns.pop()(); }

// ---- untrusted HTML: parsed inert, an allowlist copied out -------------------------------
const DROPPED = new Set(["script", "style", "iframe", "frame", "frameset", "object", "embed",
  "applet", "template", "noscript", "form", "input", "button", "textarea", "select", "option",
  "link", "meta", "base", "svg", "math", "audio", "video", "source", "track", "canvas",
  "portal", "dialog", "title", "head"]);
const KEPT = new Set(["a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup",
  "dd", "del", "details", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3",
  "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s",
  "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot",
  "th", "thead", "tr", "u", "ul", "var"]);
const ATTRIBUTES = new Set(["class", "title", "colspan", "rowspan", "align", "alt", "width",
  "height", "href", "src", "border", "valign", "open"]);
const SAFE_LINK = /^(https?:|mailto:)/i;
const SAFE_IMAGE = /^data:image\/(png|jpeg|gif|webp|svg\+xml);base64,/i;

function cleanChildren(from, into) {
  for (const node of Array.from(from.childNodes)) {
    if (node.nodeType === Node.TEXT_NODE) { into.appendChild(document.createTextNode(node.data)); continue; }
    if (node.nodeType !== Node.ELEMENT_NODE) continue;
    const tag = node.localName;
    if (DROPPED.has(tag)) continue;
    if (!KEPT.has(tag)) { cleanChildren(node, into); continue; }  // unknown: its text stays
    const element = document.createElement(tag);
    for (const attribute of Array.from(node.attributes)) {
      const name = attribute.name.toLowerCase();
      const value = attribute.value.trim();
      if (!ATTRIBUTES.has(name)) continue;
      if (name === "href" && !SAFE_LINK.test(value)) continue;
      if (name === "src" && !(tag === "img" && SAFE_IMAGE.test(value))) continue;
      element.setAttribute(name, value);
    }
    if (tag === "a" && element.hasAttribute("href")) element.setAttribute("rel", "noopener noreferrer");
    cleanChildren(node, element);
    into.appendChild(element);
  }
}
function sanitizedHtml(html) {
  const inert = new DOMParser().parseFromString(String(html), "text/html");
  const fragment = document.createElement("div");
  fragment.className = "html";
  cleanChildren(inert.body, fragment);
  for (const table of fragment.querySelectorAll("table")) tableView(table);
  return fragment;
}

// ---- DataFrames: scrollable, a column sorted by its header --------------------------------
function cellValue(row, column) {
  const cell = row.children[column];
  return cell ? cell.textContent.trim() : "";
}
function compare(a, b) {
  const x = Number(a.replace(/,/g, "")), y = Number(b.replace(/,/g, ""));
  if (a !== "" && b !== "" && !Number.isNaN(x) && !Number.isNaN(y)) return x - y;
  return a.localeCompare(b);
}
function tableView(table) {
  const wrapper = document.createElement("div");
  wrapper.className = "scroll";
  table.replaceWith(wrapper);
  wrapper.appendChild(table);
  const body = table.tBodies[0];
  const headerRows = table.tHead ? table.tHead.rows : [];
  if (!body || !headerRows.length) return;
  table.classList.add("sortable");
  const headers = Array.from(headerRows[headerRows.length - 1].cells);
  headers.forEach((header, column) => header.addEventListener("click", () => {
    const descending = header.dataset.sorted === "asc";
    headers.forEach((other) => delete other.dataset.sorted);
    header.dataset.sorted = descending ? "desc" : "asc";
    const rows = Array.from(body.rows);
    rows.sort((a, b) => compare(cellValue(a, column), cellValue(b, column)) * (descending ? -1 : 1));
    for (const row of rows) body.appendChild(row);
  }));
}

// ---- ANSI colours ------------------------------------------------------------------------
const PALETTE = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd",
  "#e5e5e5", "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"];
function colour256(n) {
  if (n < 16) return PALETTE[n];
  if (n >= 232) { const v = 8 + (n - 232) * 10; return `rgb(${v},${v},${v})`; }
  n -= 16;
  const level = (v) => (v ? 55 + v * 40 : 0);
  return `rgb(${level(Math.floor(n / 36))},${level(Math.floor(n / 6) % 6)},${level(n % 6)})`;
}
function ansiText(text, className) {
  const pre = document.createElement("pre");
  pre.className = "text " + (className || "");
  let state = {};
  const pattern = /\x1b\[([0-9;]*)m/g;
  let last = 0, match;
  const flush = (chunk) => {
    if (!chunk) return;
    const span = document.createElement("span");
    span.textContent = chunk;
    if (state.fg) span.style.color = state.fg;
    if (state.bg) span.style.backgroundColor = state.bg;
    if (state.bold) span.classList.add("b");
    if (state.underline) span.classList.add("u");
    pre.appendChild(span);
  };
  // Other escapes (cursor moves, titles) are dropped, as a terminal's output saved to a file.
  const clean = String(text).replace(/\x1b\[[0-9;?]*[A-La-lN-Zn-z]|\x1b\][^\x07]*\x07/g, "");
  while ((match = pattern.exec(clean))) {
    flush(clean.slice(last, match.index));
    last = pattern.lastIndex;
    const codes = (match[1] || "0").split(";").map(Number);
    for (let i = 0; i < codes.length; i++) {
      const code = codes[i];
      if (code === 0) state = {};
      else if (code === 1) state.bold = true;
      else if (code === 4) state.underline = true;
      else if (code === 22) state.bold = false;
      else if (code === 24) state.underline = false;
      else if (code >= 30 && code <= 37) state.fg = PALETTE[code - 30];
      else if (code >= 90 && code <= 97) state.fg = PALETTE[code - 82];
      else if (code >= 40 && code <= 47) state.bg = PALETTE[code - 40];
      else if (code >= 100 && code <= 107) state.bg = PALETTE[code - 92];
      else if (code === 39) state.fg = null;
      else if (code === 49) state.bg = null;
      else if ((code === 38 || code === 48) && codes[i + 1] === 5) {
        state[code === 38 ? "fg" : "bg"] = colour256(codes[i + 2] & 255); i += 2;
      } else if ((code === 38 || code === 48) && codes[i + 1] === 2) {
        state[code === 38 ? "fg" : "bg"] = `rgb(${codes[i + 2] & 255},${codes[i + 3] & 255},${codes[i + 4] & 255})`; i += 4;
      }
    }
  }
  flush(clean.slice(last));
  return pre;
}

// ---- one output ------------------------------------------------------------------------
const joined = (value) => (Array.isArray(value) ? value.join("") : value == null ? "" : String(value));
function image(mime, data) {
  const img = document.createElement("img");
  const payload = mime === "image/svg+xml" ? btoa(unescape(encodeURIComponent(joined(data)))) : joined(data).replace(/\s/g, "");
  img.src = `data:${mime};base64,${payload}`;
  img.alt = mime;
  return img;
}
// Views that draw a MIME type themselves (the output app's charts), asked first; null: not theirs.
const renderers = [];
function richOutput(data) {
  for (const render of renderers) {
    const drawn = render(data);
    if (drawn) return drawn;
  }
  if (data["text/html"] != null) return sanitizedHtml(joined(data["text/html"]));
  for (const mime of ["image/svg+xml", "image/png", "image/jpeg", "image/gif", "image/webp"]) {
    if (data[mime] != null) return image(mime, data[mime]);
  }
  for (const mime of ["text/markdown", "text/latex"]) {
    if (data[mime] != null) return ansiText(joined(data[mime]));
  }
  const json = Object.keys(data).find((mime) => mime === "application/json" || mime.endsWith("+json"));
  if (data["text/plain"] != null) return ansiText(joined(data["text/plain"]));
  if (json) return ansiText(JSON.stringify(data[json], null, 2));
  return note(`(an output of ${Object.keys(data).join(", ") || "no"} type)`);
}
function note(text) {
  const element = document.createElement("div");
  element.className = "note";
  element.textContent = text;
  return element;
}
function outputView(output) {
  const element = document.createElement("div");
  element.className = "output " + (output.output_type || "");
  if (output.output_type === "stream") element.appendChild(ansiText(joined(output.text), output.name));
  else if (output.output_type === "error") {
    const lines = (output.traceback && output.traceback.length) ? output.traceback : [`${output.ename}: ${output.evalue}`];
    element.appendChild(ansiText(lines.join("\n"), "error"));
  } else if (output.output_type === "omitted") element.appendChild(note(output.text || "(output left out)"));
  else element.appendChild(richOutput(output.data || {}));
  return element;
}

"""

#: The output app's view: each execution, its source and outputs; defines ``show(result)``.
EXECUTIONS = r"""
// ---- one execution -----------------------------------------------------------------------
function executionView(execution) {
  const cell = document.createElement("section");
  cell.className = "cell";
  if (execution.cell_id) cell.dataset.cellId = execution.cell_id;
  cell.dataset.status = execution.status;
  const head = document.createElement("div");
  head.className = "head";
  const where = document.createElement("span");
  where.textContent = execution.notebook ? `${execution.notebook}${execution.cell_id ? " \u00b7 cell " + execution.cell_id : ""}` : "scratch code";
  const status = document.createElement("span");
  status.className = "status-" + execution.status;
  status.textContent = execution.status;
  head.append(where, status);
  const prompt = document.createElement("div");
  prompt.className = "prompt";
  prompt.textContent = `[${execution.execution_count == null ? " " : execution.execution_count}]:`;
  const source = document.createElement("pre");
  source.className = "source";
  source.textContent = execution.source || "";
  cell.append(head, prompt, source);
  for (const output of execution.outputs || []) cell.appendChild(outputView(output));
  return cell;
}
function show(result) {
  const shown = (result && result._meta && result._meta["io.jupyter-mcp/app"]) || null;
  tearDown();  // a new result: whatever run was followed is no longer shown
  root.replaceChildren();
  if (shown && shown.view === "run" && !(result && result.isError)) { watchRun(shown); return; }
  if (!shown || !Array.isArray(shown.executions) || !shown.executions.length) {
    const text = ((result && result.content) || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
    root.appendChild(text ? ansiText(text) : note("Nothing to show."));
  } else {
    for (const execution of shown.executions) root.appendChild(executionView(execution));
  }
  resized();
}

"""

#: The output app's view of a detached run: its progress, each cell as it ends, Cancel.
RUN_VIEW = r"""
// ---- a detached run, followed through the host (watch_run) until it ends ------------------
const FIRST_DELAY = 500, LONGEST_DELAY = 4000;
function part(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text != null) made.textContent = text;
  return made;
}
function said(result) {
  return ((result && result.content) || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}
function watchRun(first) {
  const view = part("section", "run");
  view.dataset.runId = first.run_id;
  const head = part("div", "run-head");
  const what = part("span", "what", `${first.tool}${first.notebook ? " \u00b7 " + first.notebook : ""}`);
  const count = part("span", "count");
  const state = part("span", "state");
  const cancel = part("button", "cancel", "Cancel");
  head.append(what, count, state, cancel);
  const bar = part("progress", "bar");
  const cells = part("div", "cells");
  const now = part("div", "now");
  const message = part("div", "said");
  view.append(head, bar, cells, now, message);
  root.replaceChildren(view);
  const watch = { since: 0, delay: FIRST_DELAY, timer: null, stopped: false, failures: 0, last: "" };
  teardowns.push(() => { watch.stopped = true; clearTimeout(watch.timer); });

  function update(shown) {
    for (const execution of shown.executions || []) cells.appendChild(executionView(execution));
    watch.since = shown.next_cell;
    count.textContent = `${shown.cells_done} of ${shown.cells_total} cell${shown.cells_total === 1 ? "" : "s"}`;
    bar.max = Math.max(shown.cells_total, 1);
    bar.value = shown.cells_done;
    view.dataset.status = shown.ended ? (shown.outcome || shown.status) : shown.status;
    view.dataset.done = String(shown.cells_done);
    state.className = "state status-" + view.dataset.status;
    state.textContent = shown.ended ? (shown.outcome || shown.status) : shown.status === "queued" ? "queued" : "running";
    now.replaceChildren();
    if (shown.running && !shown.ended) {
      const running = executionView({ notebook: shown.notebook, cell_id: shown.running.cell_id,
        source: shown.running.source, status: "running", execution_count: null, outputs: [] });
      running.classList.add("running");
      now.appendChild(running);
    }
    if (shown.ended) {
      cancel.remove();
      message.textContent = shown.said || "";
    }
    resized();
    const seen = `${shown.status}|${shown.cells_done}|${shown.next_cell}|${shown.running && shown.running.cell_id}`;
    const changed = seen !== watch.last;
    watch.last = seen;
    return changed;
  }
  async function poll() {
    if (watch.stopped) return;
    try {
      const result = await request("tools/call", { name: "watch_run", arguments: { run_id: first.run_id, since_cell: watch.since } });
      if (watch.stopped) return;
      const shown = result && result._meta && result._meta["io.jupyter-mcp/app"];
      if (!result || result.isError || !shown || shown.view !== "run") {
        // The server answered no (the run expired, or is not this caller's): nothing more to follow.
        view.dataset.status = "lost";
        message.textContent = said(result) || "The run can no longer be followed.";
        cancel.remove();
        resized();
        return;
      }
      watch.failures = 0;
      const changed = update(shown);
      if (shown.ended) return;
      // Quick while cells end, slower while one cell runs long.
      watch.delay = changed ? FIRST_DELAY : Math.min(LONGEST_DELAY, Math.round(watch.delay * 1.5));
    } catch (error) {
      if (watch.stopped) return;
      watch.failures += 1;
      message.textContent = "The host did not pass the call on: " + ((error && error.message) || error);
      if (watch.failures >= 5) { resized(); return; }
      watch.delay = Math.min(LONGEST_DELAY * 2, watch.delay * 2);
    }
    watch.timer = setTimeout(poll, watch.delay);
  }
  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    cancel.textContent = "Cancelling\u2026";
    try {
      const result = await request("tools/call", { name: "cancel_run", arguments: { run_id: first.run_id } });
      if (result && result.isError) { message.textContent = said(result); cancel.disabled = false; cancel.textContent = "Cancel"; }
    } catch (error) {
      message.textContent = "The host did not pass the call on: " + ((error && error.message) || error);
      cancel.disabled = false;
      cancel.textContent = "Cancel";
    }
    if (!watch.stopped) { clearTimeout(watch.timer); watch.delay = FIRST_DELAY; poll(); }
  });
  update(first);
  if (!first.ended) watch.timer = setTimeout(poll, FIRST_DELAY);
}

"""

#: The host bridge (``show`` is the view's): results in, sizes and links out, ``ui/initialize``.
BRIDGE = r"""
// ---- the host bridge -----------------------------------------------------------------------
// What the host said it does (ui/initialize): a view uses only what is there.
let hostCapabilities = {};
function resized() {
  requestAnimationFrame(() => notify("ui/notifications/size-changed", {
    width: Math.ceil(document.documentElement.scrollWidth),
    height: Math.ceil(document.documentElement.scrollHeight),
  }));
}
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[href]");
  if (!link) return;
  event.preventDefault();  // the host opens links, if it will
  request("ui/open-link", { url: link.href }).catch(() => {});
});
window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.id != null && message.method === undefined) {
    const waiting = pending.get(message.id);
    pending.delete(message.id);
    if (waiting) (message.error ? waiting.reject(message.error) : waiting.resolve(message.result));
    return;
  }
  if (message.method === "ui/notifications/tool-result") show(message.params);
  else if (message.method === "ui/notifications/tool-cancelled") root.replaceChildren(note("The call was cancelled."));
  else if (message.id != null) {
    // Requests from the host (ui/resource-teardown, ping): what follows a run stops.
    if (message.method === "ui/resource-teardown") tearDown();
    send({ jsonrpc: "2.0", id: message.id, result: {} });
  }
});
window.addEventListener("pagehide", tearDown);
request("ui/initialize", {
  appInfo: { name: "__APP_NAME__", version: "1" },
  appCapabilities: {},
  protocolVersion: "__PROTOCOL__",
}).then((answer) => {
  hostCapabilities = (answer && answer.hostCapabilities) || {};
  notify("ui/notifications/initialized");
}, () => {});
"""

SCRIPT = "\n(() => {\n" + RENDERING + CHARTS + EXECUTIONS + RUN_VIEW + BRIDGE + "})();\n"


def script_hash(script: str) -> str:
    """The CSP source that lets exactly `script` run (``'sha256-...'``)."""
    digest = hashlib.sha256(script.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def app_document(
    title: str,
    style: str,
    script: str,
    app_name: str,
    libraries: tuple[tuple[str, str], ...] = (),
) -> str:
    """One app's whole document, its policy naming its scripts: its own, and each library's.

    A library, ``(name, source)``, is in the page as inert text (``<script type="text/plain"
    data-library=name>``) until the app's script runs it, as an inline script the policy
    allows by its hash: a page that shows no chart never runs a chart library."""
    script = script.replace("__PROTOCOL__", APPS_PROTOCOL_VERSION).replace("__APP_NAME__", app_name)
    scripts = (*(source for _, source in libraries), script)
    policy = "; ".join(
        (
            "default-src 'none'",
            f"script-src {' '.join(script_hash(each) for each in scripts)}",
            # Colours of ANSI spans are set by the page's script as style properties.
            "style-src 'unsafe-inline'",
            "img-src data:",
            "connect-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        )
    )
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n"
        f"<style>{style}</style></head>\n"
        '<body><main id="app"><div class="note">Waiting for the result\u2026</div></main>\n'
        + "".join(
            f'<script type="text/plain" data-library="{name}">{source}</script>'
            for name, source in libraries
        )
        + f"<script>{script}</script></body></html>\n"
    )


def output_app_html() -> str:
    """The whole document, its policy naming its scripts (the chart libraries' and its own)."""
    return app_document(
        "Cell outputs", STYLE + CHART_STYLE, SCRIPT, "jupyter-mcp-outputs", chart_libraries()
    )
