// The analytics page: across the sessions below the folder, time and
// tokens per phase, retries per phase, pauses by reason and cost over
// time, drawn as SVG from GET /api/analytics.
"use strict";
const svgNS = "http://www.w3.org/2000/svg";
const pipelineFilter = document.getElementById("pipeline-filter");
pipelineFilter.value = new URLSearchParams(location.search).get("pipeline") || "";

// took is a time; under a second in milliseconds, which duration rounds.
const took = (ms) => (ms > 0 && ms < 1000 ? Math.round(ms) + "ms" : duration(ms));

async function load() {
  try {
    const [rows, a] = await Promise.all([api("/api/sessions"),
      api("/api/analytics" + (pipelineFilter.value ? "?pipeline=" + encodeURIComponent(pipelineFilter.value) : ""))]);
    pipelines(rows);
    document.getElementById("count").textContent = a.sessions + " session(s)";
    const name = (p) => (pipelineFilter.value ? "" : p.pipeline + " · ") + p.phase;
    bars("chart-time", a.phases.map((p) => ({ label: name(p), value: p.duration_ms,
      text: took(p.duration_ms) + " (" + took(p.duration_ms / p.sessions) + " a session)" })));
    bars("chart-tokens", a.phases.map((p) => ({ label: name(p), value: p.tokens, text: p.tokens + " · " + money(p.cost_usd) })));
    bars("chart-retries", a.phases.map((p) => ({ label: name(p), value: p.retries + p.restarts,
      text: p.retries + " retr" + (p.retries === 1 ? "y" : "ies") + ", " + p.restarts + " restart" + (p.restarts === 1 ? "" : "s") })));
    bars("chart-pauses", a.pauses.map((p) => ({ label: p.reason, value: p.count, text: String(p.count) })));
    costLine("chart-cost", a.cost);
    showError(null);
  } catch (err) { showError(err); }
  document.body.dataset.loaded = String(Date.now());
}

function pipelines(rows) {
  const value = pipelineFilter.value;
  const names = [...new Set(rows.map((r) => r.pipeline))].sort();
  pipelineFilter.replaceChildren(el("option", { value: "" }, "all"), ...names.map((n) => el("option", { value: n }, n)));
  pipelineFilter.value = value;
}

// svg makes a chart's SVG of the given size, and a function that adds a
// node to it.
function svg(width, height) {
  const root = document.createElementNS(svgNS, "svg");
  root.setAttribute("viewBox", "0 0 " + width + " " + height);
  const node = (tag, attrs, text, parent) => {
    const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    (parent || root).append(e);
    return e;
  };
  return [root, node];
}

// bars draws a horizontal bar per item, as long as its value.
function bars(id, items) {
  const box = document.getElementById(id);
  if (!items.length) { box.replaceChildren(el("p", { class: "none" }, "Nothing yet.")); return; }
  const rowH = 22, labelW = 180, width = 600, height = items.length * rowH + 4;
  const [root, node] = svg(width, height);
  const max = Math.max(1, ...items.map((it) => it.value));
  const scale = (width - labelW - 150) / max;
  items.forEach((it, i) => {
    const y = i * rowH + 2;
    node("text", { x: 0, y: y + 14, class: "label" }, it.label);
    const bar = node("rect", { x: labelW, y, width: Math.max(it.value * scale, 1), height: rowH - 6, rx: 2, class: "bar", "data-label": it.label, "data-value": it.value });
    node("title", {}, it.label + ": " + it.text, bar);
    node("text", { x: labelW + Math.max(it.value * scale, 1) + 4, y: y + 13, class: "label small" }, it.text);
  });
  box.replaceChildren(root);
}

// costLine draws the cost summed over the sessions by when each started,
// a point per session.
function costLine(id, points) {
  const box = document.getElementById(id);
  if (!points.length) { box.replaceChildren(el("p", { class: "none" }, "No sessions yet.")); return; }
  const width = 1000, height = 220, left = 70, bottom = 24, top = 10;
  const [root, node] = svg(width, height);
  const t0 = new Date(points[0].created).getTime(), t1 = new Date(points[points.length - 1].created).getTime();
  const maxY = Math.max(...points.map((p) => p.total_usd)) || 1;
  const x = (p) => left + (t1 > t0 ? (new Date(p.created).getTime() - t0) / (t1 - t0) : 0.5) * (width - left - 20);
  const y = (v) => top + (1 - v / maxY) * (height - top - bottom);
  node("line", { x1: left, y1: y(0), x2: width - 10, y2: y(0), class: "axis" });
  node("line", { x1: left, y1: top, x2: left, y2: y(0), class: "axis" });
  node("text", { x: 0, y: y(maxY) + 10, class: "label small" }, money(maxY));
  node("text", { x: 0, y: y(0), class: "label small" }, money(0));
  node("text", { x: left, y: height - 4, class: "label small" }, when(points[0].created));
  node("text", { x: width - 200, y: height - 4, class: "label small" }, when(points[points.length - 1].created));
  node("polyline", { points: points.map((p) => x(p) + "," + y(p.total_usd)).join(" "), class: "line" });
  for (const p of points) {
    const dot = node("circle", { cx: x(p), cy: y(p.total_usd), r: 4, class: "point", "data-session": p.session });
    node("title", {}, p.session + ": " + money(p.cost_usd) + " (" + money(p.total_usd) + " in all), " + when(p.created), dot);
  }
  box.replaceChildren(root);
}

pipelineFilter.addEventListener("change", () => {
  const u = new URL(location);
  if (pipelineFilter.value) u.searchParams.set("pipeline", pipelineFilter.value); else u.searchParams.delete("pipeline");
  history.replaceState(null, "", u);
  load();
});

let pending = null;
follow(() => {
  if (pending) return;
  pending = setTimeout(() => { pending = null; load(); }, 200);
});
load();
