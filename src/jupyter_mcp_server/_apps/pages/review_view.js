
// ---- the review: cells side by side, Accept and Reject -------------------------------------
function lineDiff(before, after) {
  // Longest common subsequence of lines: what is kept, the rest removed (before) or added (after).
  const a = before.split("\n"), b = after.split("\n");
  if (a.length * b.length > 4e6) return [a.map(() => "del"), b.map(() => "add")];
  const n = a.length, m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
  const left = a.map(() => "del"), right = b.map(() => "add");
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { left[i] = right[j] = ""; i++; j++; }
    else if (table[i + 1][j] >= table[i][j + 1]) i++;
    else j++;
  }
  return [left, right];
}
function sourceView(text, marks) {
  const pre = document.createElement("pre");
  pre.className = "source";
  String(text).split("\n").forEach((line, index) => {
    const span = document.createElement("span");
    span.className = "line " + (marks ? marks[index] || "" : "");
    span.textContent = line;
    pre.appendChild(span);
  });
  return pre;
}
function sideView(label, cell, marks, folded) {
  const side = document.createElement("div");
  side.className = "side " + label;
  const name = document.createElement("div");
  name.className = "side-label";
  name.textContent = label;
  side.appendChild(name);
  if (!cell) { side.classList.add("empty"); return side; }
  const source = folded ? String(cell.source).split("\n")[0] : cell.source;
  side.appendChild(sourceView(source, marks));
  for (const output of cell.outputs || []) side.appendChild(outputView(output));
  return side;
}
function rowView(row) {
  const section = document.createElement("section");
  section.className = "cell " + row.status;
  section.dataset.cellId = row.cell_id;
  section.dataset.status = row.status;
  const head = document.createElement("div");
  head.className = "head";
  const where = document.createElement("span");
  const type = (row.after || row.before || {}).cell_type || "";
  where.textContent = `cell ${row.cell_id} \u00b7 ${type}`;
  const status = document.createElement("span");
  status.className = "status-" + row.status;
  status.textContent = row.status;
  head.append(where, status);
  const pair = document.createElement("div");
  pair.className = "pair";
  // A cell on one side only is all removed, or all added.
  const every = (cell, mark) => (cell ? String(cell.source).split("\n").map(() => mark) : null);
  const diff = row.before && row.after
    ? lineDiff(String(row.before.source), String(row.after.source))
    : [every(row.before, "del"), every(row.after, "add")];
  const folded = row.status === "unchanged";
  pair.append(
    sideView("before", row.before, diff[0], folded),
    sideView("after", row.after, diff[1], folded),
  );
  section.append(head, pair);
  return section;
}
function textOf(result) {
  return ((result && result.content) || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}
function reviewView(review) {
  const wrapper = document.createElement("div");
  wrapper.className = "review";
  const head = document.createElement("div");
  head.className = "review-head";
  const summary = document.createElement("span");
  summary.className = "summary";
  summary.textContent = review.notebook;
  const what = document.createElement("span");
  what.className = "prompt";
  what.textContent = review.summary;
  head.append(summary, what);
  wrapper.appendChild(head);
  for (const row of review.cells || []) wrapper.appendChild(rowView(row));
  const actions = document.createElement("div");
  actions.className = "actions";
  const accept = document.createElement("button");
  accept.className = "accept";
  accept.textContent = "Accept";
  const reject = document.createElement("button");
  reject.className = "reject";
  reject.textContent = "Reject";
  const outcome = document.createElement("span");
  outcome.className = "outcome";
  actions.append(accept, reject, outcome);
  wrapper.appendChild(actions);
  const decide = async (yes) => {
    accept.disabled = reject.disabled = true;
    outcome.className = "outcome";
    outcome.textContent = yes ? "Applying\u2026" : "Rejecting\u2026";
    try {
      const result = await request("tools/call", {
        name: "review_change", arguments: { review_id: review.id, accept: yes },
      });
      outcome.className = "outcome " + (result && result.isError ? "refused" : "ok");
      outcome.textContent = textOf(result).split("\n")[0] || (yes ? "Accepted." : "Rejected.");
      wrapper.dataset.decided = result && result.isError ? "refused" : (yes ? "accepted" : "rejected");
      if (hostCapabilities.updateModelContext) {
        // The model hears the person's answer on its next turn, in the server's own words.
        const said = `The person's review of the change to ${review.notebook} (${review.summary}): ${textOf(result)}`;
        request("ui/update-model-context", { content: [{ type: "text", text: said }] }).catch(() => {});
      }
    } catch (error) {
      outcome.className = "outcome refused";
      outcome.textContent = "The host did not pass the answer on: " + ((error && error.message) || error);
      wrapper.dataset.decided = "failed";
    }
    resized();
  };
  accept.addEventListener("click", () => decide(true));
  reject.addEventListener("click", () => decide(false));
  return wrapper;
}
function show(result) {
  const shown = (result && result._meta && result._meta["io.jupyter-mcp/app"]) || null;
  root.replaceChildren();
  if (!shown || !Array.isArray(shown.reviews) || !shown.reviews.length) {
    const text = textOf(result);
    root.appendChild(text ? ansiText(text) : note("Nothing to review."));
  } else {
    for (const review of shown.reviews) root.appendChild(reviewView(review));
  }
  resized();
}
