
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
