
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

