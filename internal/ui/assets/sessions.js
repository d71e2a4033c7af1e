// The sessions page: every session below the folder, filtered by status,
// kept current by /api/events.
"use strict";
const filter = document.getElementById("status-filter");
filter.value = new URLSearchParams(location.search).get("status") || "";

async function load() {
  const q = filter.value ? "?status=" + encodeURIComponent(filter.value) : "";
  try {
    render(await api("/api/sessions" + q));
    showError(null);
  } catch (err) { showError(err); }
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

filter.addEventListener("change", () => {
  const u = new URL(location);
  if (filter.value) u.searchParams.set("status", filter.value); else u.searchParams.delete("status");
  history.replaceState(null, "", u);
  load();
});

// A change reloads the list, once per burst of changes.
let pending = null;
follow(() => {
  if (pending) return;
  pending = setTimeout(() => { pending = null; load(); }, 50);
});
load();
