"""The notebook view: one self-contained HTML document showing one notebook, to read and run.

What a host renders for ``outline``'s result (:mod:`.apps` serves it as
``ui://jupyter-mcp/notebook``): the notebook's headings down the side (a click opens the
page holding that heading), a page of its cells with their sources and outputs as
JupyterLab shows them, a pager, and the cell the agent is working on marked (a link in
the header opens its page when it is on another). Each code cell has a Run button: it
calls the app-only tool ``run_cell_from_view`` through the host bridge (``tools/call``)
and shows the outputs the run stored, or the server's refusal (a profile without runs, an
approval declined, a cell edited since it was shown). Pages come from the app-only tool
``view_notebook`` (:mod:`jupyter_mcp_server._tools.viewing`).

Safe as the output app is (:mod:`.output_app`, whose style, sanitizer, output rendering
and bridge it shares, unchanged): one document, its script by hash, no network, a
notebook's HTML copied through an allowlist and its SVG shown as an image. A Markdown
cell is shown as its text, never as HTML.
"""

from __future__ import annotations

from jupyter_mcp_server._apps.output_app import BRIDGE, RENDERING, STYLE, app_document

NOTEBOOK_STYLE = (
    STYLE
    + """
.nb-head { display: flex; flex-wrap: wrap; gap: 8px; align-items: baseline; margin: 0 0 8px; }
.nb-head .name { font-weight: 600; } .nb-head .meta { color: var(--muted); font-size: 12px; }
.nb-body { display: grid; grid-template-columns: minmax(140px, 220px) 1fr; gap: 10px; }
.toc { font-size: 13px; border-right: 1px solid var(--line); padding-right: 6px; min-width: 0;
  max-height: 80vh; overflow: auto; position: sticky; top: 0; align-self: start; }
.toc .title { font-size: 11px; color: var(--muted); text-transform: uppercase; margin: 0 0 4px; }
.toc button { display: block; width: 100%; text-align: left; border: 0; background: none;
  color: var(--fg); padding: 2px 4px; border-radius: 4px; cursor: pointer; font: inherit;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.toc button:hover { background: var(--cell); }
.toc button.here { font-weight: 600; }
.cells { min-width: 0; }
.cell.working { border-color: #bf8700; box-shadow: 0 0 0 2px rgba(191, 135, 0, .35); }
.badge { background: #bf8700; color: #fff; border-radius: 10px; padding: 0 8px; font-size: 11px; }
.head .grow { flex: 1; }
.state-changed, .state-upstream, .state-failed, .state-earlier_kernel { color: #9a6700; }
.md { padding: 2px 10px; overflow-wrap: anywhere; } .md p { margin: 6px 0; white-space: pre-wrap; }
.md h1, .md h2, .md h3, .md h4, .md h5, .md h6 { margin: 6px 0; line-height: 1.25; }
.md h1 { font-size: 22px; } .md h2 { font-size: 18px; } .md h3 { font-size: 16px; }
button.run, .pager button, .nb-head button { font: inherit; font-size: 12px; padding: 1px 10px;
  border-radius: 6px; border: 1px solid var(--line); background: var(--cell); color: var(--fg);
  cursor: pointer; }
button.run { background: #1f883d; border-color: #1f883d; color: #fff; }
button:disabled { opacity: .55; cursor: default; }
.said { padding: 4px 8px; font-size: 12px; } .said.refused { color: #cf222e; }
.pager { display: flex; gap: 8px; align-items: center; justify-content: center; padding: 6px 0; }
"""
)

NOTEBOOK_VIEW = r"""
// ---- the notebook view: outline, a page of cells, the agent's cell, Run ---------------------
const APP_KEY = "io.jupyter-mcp/app";
let page = null;
function textOf(result) {
  return ((result && result.content) || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}
function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text != null) made.textContent = text;
  return made;
}
async function openPage(startIndex) {
  const status = document.querySelector(".nb-head .meta");
  if (status) status.textContent = "Loading\u2026";
  try {
    const result = await request("tools/call", {
      name: "view_notebook", arguments: { notebook_name: page.notebook, start_index: startIndex },
    });
    const shown = result && result._meta && result._meta[APP_KEY];
    if (result && !result.isError && shown && shown.view === "notebook") { render(shown); return; }
    if (status) status.textContent = textOf(result) || "The page could not be read.";
  } catch (error) {
    if (status) status.textContent = "The host did not pass the page on: " + ((error && error.message) || error);
  }
  resized();
}
function prompt(count) { return `[${count == null ? " " : count}]:`; }
function outputsOf(section, outputs) {
  for (const old of section.querySelectorAll(".output")) old.remove();
  const said = section.querySelector(".said");
  for (const output of outputs || []) section.insertBefore(outputView(output), said);
}
async function run(cell, section, button) {
  button.disabled = true;
  const said = section.querySelector(".said");
  said.className = "said";
  said.textContent = "Running\u2026";
  section.dataset.ran = "running";
  try {
    const result = await request("tools/call", {
      name: "run_cell_from_view",
      arguments: { notebook_name: page.notebook, cell_id: cell.cell_id, source_hash: cell.source_hash },
    });
    const shown = result && result._meta && result._meta[APP_KEY];
    const executions = (shown && shown.executions) || [];
    const structured = (result && result.structuredContent) || {};
    if (executions.length) {
      const ran = executions[0];
      outputsOf(section, ran.outputs);
      section.querySelector(".prompt").textContent = prompt(ran.execution_count);
      said.textContent = ran.status === "ok" ? "" : (result.isError ? textOf(result).split("\n")[0] : ran.status);
      section.dataset.ran = ran.status;
      // What the person ran is what the kernel holds now (or failed there).
      const state = section.querySelector(".head [class^='state-']");
      if (state) state.remove();
      if (ran.status !== "ok") section.querySelector(".head .grow").before(element("span", "state-failed", "failed"));
    } else {
      said.className = "said refused";
      said.textContent = textOf(result) || "The server did not run it.";
      section.dataset.ran = "refused";
    }
    if (structured.revision) {
      page.revision = structured.revision;
      document.querySelector(".nb-head .meta").textContent = meta(page);
    }
  } catch (error) {
    said.className = "said refused";
    said.textContent = "The host did not pass the run on: " + ((error && error.message) || error);
    section.dataset.ran = "failed";
  }
  button.disabled = false;
  resized();
}
function markdownView(source) {
  // Text only, never HTML: a heading line becomes a heading, the rest paragraphs of text.
  const view = element("div", "md");
  let paragraph = null;
  for (const line of String(source).split("\n")) {
    const heading = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading) { view.append(element("h" + heading[1].length, "", heading[2])); paragraph = null; }
    else if (!line.trim()) paragraph = null;
    else if (paragraph) paragraph.textContent += "\n" + line;
    else { paragraph = element("p", "", line); view.append(paragraph); }
  }
  return view;
}
function cellView(cell) {
  const section = element("section", "cell " + (cell.cell_type || ""));
  section.dataset.cellId = cell.cell_id;
  section.dataset.index = cell.index;
  const head = element("div", "head");
  head.append(element("span", "", `[${cell.index}] ${cell.cell_type} \u00b7 ${cell.cell_id}`));
  if (cell.state && cell.state !== "fresh") head.append(element("span", "state-" + cell.state, cell.state.replace("_", " ")));
  const working = page.working && page.working.cell_id === cell.cell_id;
  if (working) {
    section.classList.add("working");
    head.append(element("span", "badge", `agent \u00b7 ${page.working.doing}`));
  }
  head.append(element("span", "grow"));
  section.append(head);
  if (cell.cell_type === "code") {
    const button = element("button", "run", "\u25b6 Run");
    button.title = "Run this cell on the notebook's kernel";
    button.addEventListener("click", () => run(cell, section, button));
    head.append(button);
    section.append(element("div", "prompt", prompt(cell.execution_count)));
    section.append(element("pre", "source", cell.source));
  } else if (cell.cell_type === "markdown") {
    section.append(markdownView(cell.source));
  } else {
    section.append(element("pre", "source", cell.source));
  }
  if (cell.source_cut) section.append(note(`(${cell.source_cut.toLocaleString()} more characters of source, not shown)`));
  for (const output of cell.outputs || []) section.append(outputView(output));
  section.append(element("div", "said"));
  return section;
}
function meta(shown) {
  return `${shown.cell_count} cells \u00b7 revision ${shown.revision}`;
}
function render(shown) {
  page = shown;
  const first = shown.start_index, last = Math.min(shown.cell_count, first + shown.page_size) - 1;
  const view = element("div", "nb");
  view.dataset.notebook = shown.notebook;
  view.dataset.start = first;
  const head = element("div", "nb-head");
  head.append(element("span", "name", shown.notebook), element("span", "meta", meta(shown)));
  const agent = shown.working;
  if (agent && (agent.index < first || agent.index > last)) {
    const go = element("button", "to-agent", `agent's cell [${agent.index}] \u2192`);
    go.addEventListener("click", () => openPage(agent.index));
    head.append(go);
  }
  const body = element("div", "nb-body");
  const toc = element("nav", "toc");
  toc.append(element("div", "title", "Outline"));
  if (!shown.headings.length) toc.append(note("No headings."));
  for (const heading of shown.headings) {
    const button = element("button", "heading", heading.text);
    button.style.paddingLeft = `${4 + (heading.level - 1) * 12}px`;
    button.dataset.index = heading.cell_index;
    if (heading.cell_index >= first && heading.cell_index <= last) button.classList.add("here");
    button.addEventListener("click", () => openPage(heading.cell_index));
    toc.append(button);
  }
  if (shown.headings_total > shown.headings.length) toc.append(note(`(${shown.headings_total - shown.headings.length} more headings)`));
  const cells = element("div", "cells");
  for (const cell of shown.cells) cells.append(cellView(cell));
  if (!shown.cells.length) cells.append(note("No cells."));
  const pager = element("div", "pager");
  const previous = element("button", "previous", "\u25c0 Previous");
  previous.disabled = first === 0;
  previous.addEventListener("click", () => openPage(Math.max(0, first - shown.page_size)));
  const next = element("button", "next", "Next \u25b6");
  next.disabled = last >= shown.cell_count - 1;
  next.addEventListener("click", () => openPage(first + shown.page_size));
  pager.append(previous, element("span", "where", shown.cells.length ? `cells ${first}\u2013${last} of ${shown.cell_count}` : ""), next);
  cells.append(pager);
  body.append(toc, cells);
  view.append(head, body);
  root.replaceChildren(view);
  resized();
}
function show(result) {
  const shown = (result && result._meta && result._meta[APP_KEY]) || null;
  if (!shown || shown.view !== "notebook") {
    const text = textOf(result);
    root.replaceChildren(text ? ansiText(text) : note("Nothing to show."));
    resized();
    return;
  }
  render(shown);
}
"""

SCRIPT = "\n(() => {\n" + RENDERING + NOTEBOOK_VIEW + BRIDGE + "})();\n"


def notebook_app_html() -> str:
    """The whole document, its policy naming its one script."""
    return app_document("Notebook", NOTEBOOK_STYLE, SCRIPT, "jupyter-mcp-notebook")
