
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
  const watch = { since: 0, delay: FIRST_DELAY, timer: null, stopped: false, failures: 0, last: "", polling: false, again: false };
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
  // One poll in flight at a time: two answers for the same since_cell would show the
  // cells they both carry twice. A poll asked for meanwhile (after Cancel) comes next.
  async function poll() {
    if (watch.stopped) return;
    if (watch.polling) { watch.again = true; return; }
    watch.polling = true;
    let goOn;
    try {
      goOn = await pollOnce();
    } finally {
      watch.polling = false;
    }
    if (!goOn || watch.stopped) return;
    // Asked for while this one was out: at once, since its answer may predate what was asked.
    const wait = watch.again ? 0 : watch.delay;
    if (watch.again) { watch.again = false; watch.delay = FIRST_DELAY; }
    watch.timer = setTimeout(poll, wait);
  }
  // One watch_run and its answer shown; whether to go on following the run.
  async function pollOnce() {
    try {
      const result = await request("tools/call", { name: "watch_run", arguments: { run_id: first.run_id, since_cell: watch.since } });
      if (watch.stopped) return false;
      const shown = result && result._meta && result._meta["io.jupyter-mcp/app"];
      if (!result || result.isError || !shown || shown.view !== "run") {
        // The server answered no (the run expired, or is not this caller's): nothing more to follow.
        view.dataset.status = "lost";
        message.textContent = said(result) || "The run can no longer be followed.";
        cancel.remove();
        resized();
        return false;
      }
      watch.failures = 0;
      const changed = update(shown);
      if (shown.ended) return false;
      // Quick while cells end, slower while one cell runs long.
      watch.delay = changed ? FIRST_DELAY : Math.min(LONGEST_DELAY, Math.round(watch.delay * 1.5));
    } catch (error) {
      if (watch.stopped) return false;
      watch.failures += 1;
      message.textContent = "The host did not pass the call on: " + ((error && error.message) || error);
      if (watch.failures >= 5) { resized(); return false; }
      watch.delay = Math.min(LONGEST_DELAY * 2, watch.delay * 2);
    }
    return true;
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

