// The sessions page: the sessions below the folder, a page at a time
// (GET /api/list), filtered by status, pipeline and spec, kept current by
// /api/events; and the search over their transcripts, notes and working
// sets.
"use strict";
const params = new URLSearchParams(location.search);
const filter = document.getElementById("status-filter");
const pipelineFilter = document.getElementById("pipeline-filter");
const specFilter = document.getElementById("spec-filter");
// The filters and the page shown, kept in the page's URL.
const view = {
  status: params.get("status") || "", pipeline: params.get("pipeline") || "", spec: params.get("spec") || "",
  offset: Math.max(0, parseInt(params.get("offset") || "0", 10) || 0),
};
filter.value = view.status;
const pageLength = Math.min(Math.max(parseInt(params.get("limit") || "100", 10) || 100, 1), 1000);
// loading counts the listings asked; only the last one's answer is drawn.
let loading = 0;
let shownIDs = new Set();

async function load() {
  const q = new URLSearchParams({ offset: view.offset, limit: pageLength });
  for (const k of ["status", "pipeline", "spec"]) if (view[k]) q.set(k, view[k]);
  const mine = ++loading;
  try {
    const page = await api("/api/list?" + q);
    if (mine !== loading) return;
    choices(pipelineFilter, page.pipelines, view.pipeline, (v) => v);
    choices(specFilter, page.specs, view.spec, specName);
    render(page);
    showError(null);
  } catch (err) { showError(err); }
}

// choices fills a filter with the values the sessions have.
function choices(select, values, value, label) {
  const names = [...values];
  if (value && !names.includes(value)) names.push(value);
  select.replaceChildren(el("option", { value: "" }, "all"), ...names.map((v) => el("option", { value: v }, label(v))));
  select.value = value;
}

function specName(spec) {
  if (!spec) return "-";
  const parts = spec.split("/");
  const base = parts.pop();
  return /^(readme|index|spec)\.md$/i.test(base) && parts.length ? parts.pop() + "/" + base : base;
}

function render(page) {
  const body = document.querySelector("#sessions tbody");
  body.replaceChildren(...page.sessions.map(row));
  shownIDs = new Set(page.sessions.map((s) => s.id));
  document.getElementById("none").hidden = page.total > 0;
  const counts = Object.entries(page.statuses).sort().map(([k, n]) => n + " " + k).join(", ");
  document.getElementById("count").textContent = page.matched + " of " + page.total + " session(s)" + (counts ? " · " + counts : "");
  const pager = document.getElementById("pager");
  pager.hidden = page.matched <= page.sessions.length && page.offset === 0;
  document.getElementById("page-of").textContent = page.sessions.length ?
    (page.offset + 1) + "–" + (page.offset + page.sessions.length) + " of " + page.matched : "none";
  document.getElementById("newer").disabled = page.offset === 0;
  document.getElementById("older").disabled = page.offset + page.sessions.length >= page.matched;
  document.body.dataset.loaded = String(Date.now());
  document.body.dataset.rows = String(page.sessions.length);
}

function phaseCell(s) {
  const phase = el("td", { class: "phase" }, s.phase || "-");
  if (s.phases > 0) {
    const done = s.status === "completed" ? s.phases : Math.max(0, s.phase_number - 1);
    phase.append(" (" + (s.status === "completed" ? s.phases : s.phase_number) + " of " + s.phases + ")");
    const bar = el("span", { class: "progress", title: done + " of " + s.phases + " phases done" }, el("span"));
    bar.firstChild.style.width = Math.round(100 * done / s.phases) + "%";
    phase.append(bar);
  }
  return phase;
}

function stateCell(s) {
  const cell = el("td", { class: "state" }, statusBadge(s.status, s.pause_reason));
  if (s.on_fleet || s.fleet) cell.append(" ", el("span", { class: "on-fleet", title: "runs on " + (s.on_fleet || "a fleet") }, "fleet"));
  return cell;
}

function row(s) {
  const attempts = el("td", { class: "num attempts" }, s.attempts || "-");
  if (s.attempts > 0 && s.phase_number > 0) attempts.title = s.attempts + " attempt(s) over the phases run so far";
  return el("tr", { "data-id": s.id, "data-status": s.status, "data-fleet": s.fleet ? "yes" : "no" },
    el("td", { class: "id" }, el("a", { href: "/session/" + encodeURIComponent(s.id) }, s.id)),
    el("td", {}, s.pipeline),
    el("td", {}, specName(s.spec)),
    stateCell(s),
    phaseCell(s),
    attempts,
    el("td", { class: "num" }, s.tokens),
    el("td", { class: "num" }, money(s.cost_usd)),
    el("td", {}, when(s.created)),
    el("td", { class: "num" }, duration(new Date(s.updated) - new Date(s.created))));
}

// changed shows a change of a session on the page at once, in its row:
// its status and its phase; the listing read again follows.
function changed(c) {
  if (!shownIDs.has(c.id)) return;
  const tr = document.querySelector(`#sessions tr[data-id="${CSS.escape(c.id)}"]`);
  if (!tr) return;
  tr.dataset.status = c.status;
  // The badge only: a fleet session keeps its mark.
  const state = tr.querySelector("td.state");
  state.firstChild.replaceWith(statusBadge(c.status, c.pause_reason));
  const phase = tr.querySelector("td.phase");
  if (c.phase && phase.firstChild && phase.firstChild.nodeType === Node.TEXT_NODE) phase.firstChild.textContent = c.phase;
  tr.dataset.changed = String(Date.now());
}

// setParam keeps a filter in the page's URL.
function setParam(name, value) {
  const u = new URL(location);
  if (value) u.searchParams.set(name, value); else u.searchParams.delete(name);
  history.replaceState(null, "", u);
}

function choose(name, value) {
  view[name] = value;
  setParam(name, value);
  view.offset = 0;
  setParam("offset", "");
  load();
}

filter.addEventListener("change", () => choose("status", filter.value));
pipelineFilter.addEventListener("change", () => choose("pipeline", pipelineFilter.value));
specFilter.addEventListener("change", () => choose("spec", specFilter.value));
for (const [id, step] of [["newer", -pageLength], ["older", pageLength]]) {
  document.getElementById(id).addEventListener("click", () => {
    view.offset = Math.max(0, view.offset + step);
    setParam("offset", view.offset ? String(view.offset) : "");
    load();
  });
}

// search asks the product's search (pipeline search) and lists its hits,
// each a link to its session; the pipeline and spec filters apply to
// them too.
async function search(query) {
  const section = document.getElementById("search-results");
  setParam("q", query);
  if (!query.trim()) { section.hidden = true; return; }
  try {
    const r = await api("/api/search?q=" + encodeURIComponent(query));
    let hits = r.hits;
    if (view.pipeline || view.spec) {
      const q = new URLSearchParams({ limit: 0 });
      for (const k of ["pipeline", "spec"]) if (view[k]) q.set(k, view[k]);
      const ids = new Set((await api("/api/sessions?" + q)).map((s) => s.id));
      hits = hits.filter((h) => ids.has(h.session));
    }
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

// A change shows in its row at once; the page is read again once per
// burst of changes (a new session, the counts, the order).
let pending = null;
follow((c) => {
  changed(c);
  if (pending) return;
  pending = setTimeout(() => { pending = null; load(); }, 100);
});
load();
