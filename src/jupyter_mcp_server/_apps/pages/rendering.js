
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

