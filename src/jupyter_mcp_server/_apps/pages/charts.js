
// ---- charts: Vega-Lite, Vega and Plotly specs, drawn by their own libraries ---------------
// The libraries are in the page as inert text; each runs once, when a chart first needs it,
// as an inline script the page's policy names by its hash. Taken before any output is shown,
// so nothing an output put in the page could be taken for one (nor would its hash match).
const libraryTexts = new Map(Array.from(document.querySelectorAll('script[type="text/plain"][data-library]'),
  (element) => [element.dataset.library, element.textContent]));
function runLibraries(...names) {
  for (const name of names) {
    const text = libraryTexts.get(name);
    if (text === undefined) continue;
    libraryTexts.delete(name);
    const script = document.createElement("script");
    script.textContent = text;
    document.head.appendChild(script);  // runs now, before the next line
  }
}
const VEGA_MIME = /^application\/vnd\.vega(lite)?\.v(\d+)(?:\.\d+)*\+json$/;
const PLOTLY_MIME = "application/vnd.plotly.v1+json";
// What vega-lite 6 and vega 6 read; an older spec is shown as its other representations.
const VEGA_VERSIONS = { lite: [4, 5, 6], vega: [5, 6] };
// The trace types plotly.js-basic draws (a trace with no type is a scatter).
const PLOTLY_TRACES = new Set(["scatter", "bar", "pie"]);

function parsedSpec(value) {
  if (typeof value === "string" || Array.isArray(value)) {
    try { return JSON.parse(joined(value)); } catch (error) { return null; }
  }
  return value && typeof value === "object" ? value : null;
}
function isChartMime(mime) { return mime === PLOTLY_MIME || VEGA_MIME.test(mime); }
function withoutCharts(data) {
  return Object.fromEntries(Object.entries(data).filter(([mime]) => !isChartMime(mime)));
}
// Why a library failed, in a line: an EvalError is the page's policy refusing code from a string.
function failure(error) {
  if (error && error.name === "EvalError") {
    return "(the chart needs code made from a string, which this view's policy refuses)";
  }
  return `(the chart could not be drawn: ${String(error && error.message || error).slice(0, 200)})`;
}
// What cannot be drawn: the output's other representations, as the app shows them without charts.
function notDrawn(element, data, why) {
  element.className = "chart";
  element.replaceChildren(note(why), richOutput(withoutCharts(data)));
  resized();
}
// Every URL a spec names is refused (data, images), and the person is told; a data: image
// is drawn; a link a mark carries (href) goes to the host, which opens it if it will.
function refusingLoader(refused) {
  const refuse = (uri) => {
    refused.push(String(uri && uri.url !== undefined ? uri.url : uri));
    return Promise.reject(new Error("this app loads nothing"));
  };
  const sanitize = (uri, options) => {
    const context = options && options.context;
    if (context === "image" && /^data:image\//i.test(String(uri))) return Promise.resolve({ href: String(uri) });
    if (context === "href" && SAFE_LINK.test(String(uri))) {
      request("ui/open-link", { url: String(uri) }).catch(() => {});
      return Promise.reject(new Error("the host opens links"));
    }
    return refuse(uri);
  };
  return { load: refuse, sanitize, http: refuse, file: refuse, options: {} };
}
function refusedNote(refused) {
  const shown = Array.from(new Set(refused)).slice(0, 3).join(", ");
  return note(`Not loaded (this view loads nothing from anywhere): ${shown}${refused.length > 3 ? ", \u2026" : ""}`);
}
async function drawVega(element, spec, mode, data) {
  runLibraries("vega", "vega-lite", "vega-embed");
  if (typeof vegaEmbed !== "function") return notDrawn(element, data, "(no Vega in this view)");
  // The notebook does not choose how it is drawn: no loader, actions or renderer of its own.
  if (spec.usermeta && typeof spec.usermeta === "object") delete spec.usermeta.embedOptions;
  const refused = [];
  try {
    const embedded = await vegaEmbed(element, spec, {
      mode, renderer: "svg", actions: false, ast: true, loader: refusingLoader(refused),
    });
    await embedded.view.runAsync();
  } catch (error) {
    return notDrawn(element, data, failure(error));
  }
  if (refused.length) element.appendChild(refusedNote(refused));
  resized();
}
function plotlyFigure(spec) {
  const layout = spec.layout && typeof spec.layout === "object" ? spec.layout : {};
  // Layout images by URL would be loads: only data: images stay.
  const dataImages = (images) => (Array.isArray(images) ? images.filter((image) =>
    image && typeof image.source === "string" && /^data:image\//i.test(image.source)) : undefined);
  for (const where of [layout, layout.template && layout.template.layout]) {
    if (where && typeof where === "object" && "images" in where) where.images = dataImages(where.images);
  }
  return { data: Array.isArray(spec.data) ? spec.data : [], layout };
}
async function drawPlotly(element, spec, data) {
  const figure = plotlyFigure(spec);
  const other = figure.data.map((trace) => (trace && trace.type) || "scatter").filter((type) => !PLOTLY_TRACES.has(type));
  if (other.length) {
    return notDrawn(element, data, `(a Plotly chart of ${Array.from(new Set(other)).join(", ")}: this view draws scatter, bar and pie)`);
  }
  runLibraries("plotly");
  if (typeof Plotly !== "object") return notDrawn(element, data, "(no Plotly in this view)");
  try {
    await Plotly.newPlot(element, figure.data, figure.layout, {
      responsive: true, displaylogo: false, showLink: false, showSendToCloud: false,
      showEditInChartStudio: false, modeBarButtonsToRemove: ["toImage", "sendDataToCloud"],
    });
  } catch (error) {
    return notDrawn(element, data, failure(error));
  }
  resized();
}
// A chart of the output's spec, drawn once the view has put it in the page; null if none.
function chartOutput(data) {
  let draw = null;
  const element = document.createElement("div");
  if (data[PLOTLY_MIME] != null) {
    const spec = parsedSpec(data[PLOTLY_MIME]);
    if (spec) { element.className = "chart plotly"; draw = () => drawPlotly(element, spec, data); }
  } else {
    for (const mime of Object.keys(data)) {
      const match = VEGA_MIME.exec(mime);
      if (!match) continue;
      const kind = match[1] ? "lite" : "vega";
      const spec = parsedSpec(data[mime]);
      if (!spec || !VEGA_VERSIONS[kind].includes(Number(match[2]))) continue;
      element.className = "chart vega";
      draw = () => drawVega(element, spec, kind === "lite" ? "vega-lite" : "vega", data);
      break;
    }
  }
  if (!draw) return null;
  // Plotly measures its container: drawn once show() has attached it.
  queueMicrotask(draw);
  return element;
}
renderers.push(chartOutput);

