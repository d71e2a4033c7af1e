// The diff page: two sessions side by side, phase by phase, as pipeline
// diff A B compares them (GET /api/diff).
"use strict";
const params = new URLSearchParams(location.search);
const pickA = document.getElementById("a"), pickB = document.getElementById("b");

// sessionChoices fills both pickers with the sessions below the folder.
async function sessionChoices() {
  // The newest thousand: a page of 10,000 options helps no one.
  const rows = await api("/api/sessions?limit=1000");
  for (const [select, value] of [[pickA, params.get("a")], [pickB, params.get("b")]]) {
    select.replaceChildren(el("option", { value: "" }, "—"),
      ...rows.map((s) => el("option", { value: s.id }, s.id + " · " + s.pipeline + " · " + s.status)));
    if (value && !rows.some((s) => s.id === value)) select.append(el("option", { value }, value));
    select.value = value || "";
  }
}

async function load() {
  const a = params.get("a"), b = params.get("b");
  if (!a || !b) { document.body.dataset.loaded = String(Date.now()); return; }
  try {
    const d = await api("/api/diff?a=" + encodeURIComponent(a) + "&b=" + encodeURIComponent(b));
    side("side-a", "A", d.a, d.tokens.a, d.cost_usd.a, d.elapsed_ms.a);
    side("side-b", "B", d.b, d.tokens.b, d.cost_usd.b, d.elapsed_ms.b);
    document.getElementById("divergence").textContent = d.same ? "The same: no divergence." :
      "Diverged at phase " + d.divergence.phase + ": " + d.divergence.text;
    document.getElementById("divergence").className = "divergence " + (d.same ? "same" : "diverged");
    chart(d.phases);
    table(d.phases);
    summaries(d.phases);
    document.getElementById("diff").hidden = false;
    showError(null);
  } catch (err) { showError(err); }
  document.body.dataset.loaded = String(Date.now());
}

function side(node, name, head, tokens, cost, elapsed) {
  document.getElementById(node).replaceChildren(
    el("h2", {}, name + ": ", el("a", { href: "/session/" + encodeURIComponent(head.id) }, head.id)),
    el("div", {}, "Pipeline ", head.pipeline, head.spec ? " · spec " + head.spec : ""),
    el("div", {}, statusBadge(head.status)),
    el("div", {}, "Tokens ", tokens, " · cost ", money(cost), " · time ", duration(elapsed)),
    el("div", {}, "Agents ", (head.agents || []).join(", ") || "-"));
}

const pair = (p, fmt) => fmt(p.a) + (p.a === p.b ? "" : " → " + fmt(p.b));
const list = (xs) => (xs && xs.length ? xs.join(" ") : "-");

function table(phases) {
  document.querySelector("#diff-phases tbody").replaceChildren(...phases.map((p) => el("tr",
    { "data-phase": p.name, "data-in": p.in, class: (p.differs || []).length ? "differs" : "" },
    el("td", {}, p.name + (p.in === "both" ? "" : " (only " + p.in.toUpperCase() + ")")),
    el("td", { class: "a-status" }, p.in === "b" ? "-" : statusBadge(p.status.a || "pending")),
    el("td", { class: "b-status" }, p.in === "a" ? "-" : statusBadge(p.status.b || "pending")),
    el("td", { class: "num" }, pair(p.attempts, String)),
    el("td", { class: "num" }, pair(p.tokens, String)),
    el("td", { class: "num" }, pair(p.cost_usd, money)),
    el("td", { class: "num" }, pair(p.duration_ms, duration)),
    el("td", {}, list(p.exit_codes.a) + " / " + list(p.exit_codes.b)),
    el("td", {}, list(p.triggers_fired.a) + " / " + list(p.triggers_fired.b)),
    el("td", {}, [...(p.files_added || []).map((f) => "+" + f), ...(p.files_removed || []).map((f) => "-" + f)].join(" ") || "-"))));
}

// chart draws each phase's time in A and B as two bars side by side.
function chart(phases) {
  const svgNS = "http://www.w3.org/2000/svg";
  const max = Math.max(1, ...phases.flatMap((p) => [p.duration_ms.a, p.duration_ms.b]));
  const rowH = 34, labelW = 160, width = 900, height = phases.length * rowH + 8;
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  const node = (tag, attrs, text) => {
    const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  const scale = (width - labelW - 80) / max;
  phases.forEach((p, i) => {
    const y = i * rowH + 4;
    node("text", { x: 0, y: y + 18, class: "label" }, p.name);
    [["a", p.in !== "b"], ["b", p.in !== "a"]].forEach(([s, has], j) => {
      if (!has) return;
      const w = Math.max(p.duration_ms[s] * scale, 2);
      node("rect", { x: labelW, y: y + j * 13, width: w, height: 11, class: "bar side-" + s + " " + (p.status[s] || "pending"),
        "data-phase": p.name, "data-side": s });
      node("text", { x: labelW + w + 4, y: y + j * 13 + 10, class: "label small" }, s.toUpperCase() + " " + duration(p.duration_ms[s]));
    });
  });
  document.getElementById("diff-chart").replaceChildren(svg);
}

function summaries(phases) {
  const out = [];
  for (const p of phases) {
    if (!p.summary.a && !p.summary.b) continue;
    out.push(el("h3", {}, p.name), el("div", { class: "sides" },
      el("pre", { class: "side" }, p.summary.a || "-"), el("pre", { class: "side" }, p.summary.b || "-")));
  }
  if (!out.length) out.push(el("p", { class: "none" }, "No summaries."));
  document.getElementById("summaries").replaceChildren(...out);
}

document.getElementById("pick").addEventListener("submit", (ev) => {
  ev.preventDefault();
  location.search = "?a=" + encodeURIComponent(pickA.value) + "&b=" + encodeURIComponent(pickB.value);
});
sessionChoices().catch(showError);
load();
