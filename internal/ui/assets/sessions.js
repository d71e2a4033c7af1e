// The sessions page: every session below the folder, filtered by status,
// pipeline and spec, kept current by /api/events; and the search over
// their transcripts, notes and working sets.
"use strict";
const params = new URLSearchParams(location.search);
const filter = document.getElementById("status-filter");
filter.value = params.get("status") || "";
const pipelineFilter = document.getElementById("pipeline-filter");
const specFilter = document.getElementById("spec-filter");
// The chosen pipeline and spec, kept while the choices are rebuilt.
const chosen = { pipeline: params.get("pipeline") || "", spec: params.get("spec") || "" };
let allRows = [];

async function load() {
  const q = filter.value ? "?status=" + encodeURIComponent(filter.value) : "";
  try {
    allRows = await api("/api/sessions" + q);
    choices(pipelineFilter, allRows.map((r) => r.pipeline), chosen.pipeline);
    choices(specFilter, allRows.map((r) => r.spec || ""), chosen.spec);
    render(shown());
    showError(null);
  } catch (err) { showError(err); }
}

// choices fills a filter with the values the sessions have.
function choices(select, values, value) {
  const names = [...new Set(values.filter((v) => v))].sort();
  if (value && !names.includes(value)) names.push(value);
  select.replaceChildren(el("option", { value: "" }, "all"),
    ...names.map((v) => el("option", { value: v }, select === specFilter ? specName(v) : v)));
  select.value = value;
}

// shown are the rows of the chosen pipeline and spec.
function shown() {
  return allRows.filter((r) => (!chosen.pipeline || r.pipeline === chosen.pipeline) && (!chosen.spec || r.spec === chosen.spec));
}

function specName(spec) {
  if (!spec) return "-";
  const parts = spec.split("/");
  const base = parts.pop();
  return /^(readme|index|spec)\.md$/i.test(base) && parts.length ? parts.pop() + "/" + base : base;
}

function render(rows) {
  const body = document.querySelector("#sessions tbody");
  body.replaceChildren(...rows.map(row));
  document.getElementById("none").hidden = rows.length > 0;
  document.getElementById("count").textContent = rows.length + " session(s)";
  document.body.dataset.loaded = String(Date.now());
}

function row(s) {
  const phase = el("td", { class: "phase" }, s.phase || "-");
  if (s.phases > 0) {
    const done = s.status === "completed" ? s.phases : Math.max(0, s.phase_number - 1);
    phase.append(" (" + (s.status === "completed" ? s.phases : s.phase_number) + " of " + s.phases + ")");
    const bar = el("span", { class: "progress", title: done + " of " + s.phases + " phases done" }, el("span"));
    bar.firstChild.style.width = Math.round(100 * done / s.phases) + "%";
    phase.append(bar);
  }
  const tr = el("tr", { "data-id": s.id, "data-status": s.status },
    el("td", { class: "id" }, el("a", { href: "/session/" + encodeURIComponent(s.id) }, s.id)),
    el("td", {}, s.pipeline),
    el("td", {}, specName(s.spec)),
    el("td", { class: "state" }, statusBadge(s.status, s.pause_reason)),
    phase,
    el("td", { class: "num" }, s.tokens),
    el("td", { class: "num" }, money(s.cost_usd)),
    el("td", {}, when(s.created)),
    el("td", { class: "num" }, duration(new Date(s.updated) - new Date(s.created))));
  return tr;
}

// setParam keeps a filter in the page's URL.
function setParam(name, value) {
  const u = new URL(location);
  if (value) u.searchParams.set(name, value); else u.searchParams.delete(name);
  history.replaceState(null, "", u);
}

filter.addEventListener("change", () => { setParam("status", filter.value); load(); });
for (const [name, select] of [["pipeline", pipelineFilter], ["spec", specFilter]]) {
  select.addEventListener("change", () => {
    chosen[name] = select.value;
    setParam(name, select.value);
    render(shown());
  });
}

// search asks the product's search (pipeline search) and lists its hits,
// each a link to its session; the filters apply to them too.
async function search(query) {
  const section = document.getElementById("search-results");
  setParam("q", query);
  if (!query.trim()) { section.hidden = true; return; }
  try {
    const r = await api("/api/search?q=" + encodeURIComponent(query));
    const ids = new Set(shown().map((s) => s.id));
    const hits = chosen.pipeline || chosen.spec ? r.hits.filter((h) => ids.has(h.session)) : r.hits;
    document.getElementById("search-query").textContent = r.query + " (" + hits.length + " hit" + (hits.length === 1 ? "" : "s") + ")";
    document.getElementById("hits").replaceChildren(...hits.map(hit));
    if (!hits.length) document.getElementById("hits").append(el("li", { class: "none" }, "No hits."));
    section.hidden = false;
    showError(null);
  } catch (err) { showError(err); }
}

function hit(h) {
  const where = [h.phase, h.attempt ? "attempt " + h.attempt : "", h.step, h.kind + (h.section ? " " + h.section : ""),
    h.turn ? "turn " + h.turn : "", h.tool || ""].filter((x) => x).join(" · ");
  const snippet = el("div", { class: "snippet" });
  // The matches, between « and », are shown as <mark>: as text, never HTML.
  (h.marked || h.snippet).split(/(«[^»]*»)/).forEach((part) => {
    snippet.append(part.startsWith("«") && part.endsWith("»") ? el("mark", {}, part.slice(1, -1)) : part);
  });
  return el("li", { "data-session": h.session },
    el("a", { href: "/session/" + encodeURIComponent(h.session) }, h.session), " ", el("span", { class: "where" }, where), snippet);
}

const searchBox = document.getElementById("search");
searchBox.value = params.get("q") || "";
document.getElementById("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); search(searchBox.value); });
document.getElementById("search-close").addEventListener("click", () => { searchBox.value = ""; search(""); });
if (searchBox.value) search(searchBox.value);

// A change reloads the list, once per burst of changes.
let pending = null;
follow(() => {
  if (pending) return;
  pending = setTimeout(() => { pending = null; load(); }, 50);
});
load();
