
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
