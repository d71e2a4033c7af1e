// A session's page: its phases on a time axis, its working set, its
// transcript, and the buttons that act on it.
"use strict";
const id = decodeURIComponent(location.pathname.split("/").pop());
document.getElementById("session-id").textContent = id;
const base = "/api/sessions/" + encodeURIComponent(id);

async function load() {
  try {
    const [status, memory, logs] = await Promise.all([api(base), api(base + "/memory"), api(base + "/logs")]);
    summary(status);
    phaseChoices(status.phases || [], status.phase);
    gantt(status.phases || []);
    phases(status.phases || []);
    workingSet(memory);
    transcript(logs);
    await resumeContext(id);
    showError(null);
    document.body.dataset.status = status.status;
    document.body.dataset.loaded = String(Date.now());
    followRunning(status);
  } catch (err) { showError(err); }
}

// While a step runs, its transcript grows with no change of the session's
// state to tell: the page reads it again every second.
let running = null;
function followRunning(status) {
  clearTimeout(running);
  if (status.status === "running") running = setTimeout(load, 1000);
}

function summary(s) {
  const n = (s.phases || []).findIndex((p) => p.name === s.phase) + 1;
  const fields = [
    ["Pipeline", s.pipeline], ["Spec", s.spec || "-"], ["Status", statusBadge(s.status, s.pause_reason)],
    ["Phase", (s.phase || "-") + (n > 0 ? " (" + n + " of " + s.phases.length + ")" : "")],
    ["Attempt", s.attempt], ["Tokens", s.tokens], ["Cost", money(s.cost_usd)],
    ["Started", when(s.created)], ["Elapsed", s.elapsed],
  ];
  if (s.pause_note) fields.push(["Pause note", s.pause_note]);
  if (s.fail_reason) fields.push(["Failed", s.fail_reason]);
  document.getElementById("summary").replaceChildren(...fields.map(([k, v]) =>
    el("div", { "data-field": k.toLowerCase() }, el("span", {}, k), v)));
}

// gantt draws a bar per phase on the axis of the session's working time,
// each as long as the phase took; a retry is marked ↻, a pause ‖ (the
// trigger that fired in the title).
function gantt(list) {
  const svgNS = "http://www.w3.org/2000/svg";
  const total = list.reduce((t, p) => t + Math.max(p.duration_ms || 0, 0), 0) || 1;
  const rowH = 22, labelW = 160, width = 900, height = list.length * rowH + 24;
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  const node = (tag, attrs, text) => {
    const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  const scale = (width - labelW - 10) / total;
  let at = 0;
  list.forEach((p, i) => {
    const y = i * rowH + 4;
    node("text", { x: 0, y: y + 14, class: "label" }, p.name);
    const w = Math.max(p.duration_ms > 0 ? p.duration_ms * scale : 0, 3);
    const bar = node("rect", { x: labelW + at * scale, y, width: w, height: rowH - 6, rx: 3,
      class: "bar " + (p.status || "pending"), "data-phase": p.name });
    const fired = (p.triggers_fired || []).map((f) => f.reason + (f.expression ? " (" + f.expression + ")" : "")).join(", ");
    const title = document.createElementNS(svgNS, "title");
    title.textContent = p.name + ": " + (p.status || "pending") + ", " + duration(p.duration_ms) +
      (p.retries ? ", " + p.retries + " retr" + (p.retries > 1 ? "ies" : "y") : "") + (fired ? "; fired: " + fired : "");
    bar.append(title);
    let mx = labelW + at * scale + w + 4;
    for (let r = 0; r < (p.retries || 0) + (p.restarts || 0); r++, mx += 12) node("text", { x: mx, y: y + 13, class: "mark retry" }, "↻");
    if (p.status === "paused" || (p.triggers_fired || []).length) node("text", { x: mx, y: y + 13, class: "mark pause" }, "‖");
    at += Math.max(p.duration_ms || 0, 0);
  });
  node("text", { x: labelW, y: height - 4, class: "label" }, "0");
  node("text", { x: width - 60, y: height - 4, class: "label" }, duration(total));
  document.getElementById("gantt").replaceChildren(svg);
}

function phases(list) {
  document.querySelector("#phases tbody").replaceChildren(...list.map((p) => el("tr", { "data-phase": p.name },
    el("td", {}, p.name), el("td", {}, statusBadge(p.status || "pending")), el("td", { class: "num" }, p.attempts),
    el("td", { class: "num" }, p.retries), el("td", { class: "num" }, p.tokens), el("td", { class: "num" }, money(p.cost_usd)),
    el("td", { class: "num" }, p.duration || "-"),
    el("td", { class: "num", title: (p.files_changed || []).join("\n") }, (p.files_changed || []).length),
    el("td", { class: "mono" }, (p.checkpoint || "").slice(0, 12)),
    el("td", {}, (p.triggers_fired || []).map((f) => f.reason).join(", ")))));
}

// resumeContext shows what the next agent step would be told, or why
// the session cannot be resumed.
async function resumeContext(id) {
  const out = document.getElementById("resume-context");
  const r = await fetch(`/api/sessions/${encodeURIComponent(id)}/resume-context`, { headers: { Accept: "application/json" } });
  const body = await r.json().catch(() => ({}));
  out.textContent = r.ok ? (body.resume_context || "(the next step is not an agent's: no resume context)") : (body.error || "");
}

function workingSet(m) {
  const lists = [["Summary", m.summary], ["Pinned facts", m.pinned_facts], ["Decisions", m.decisions],
    ["Open tasks", m.open_tasks], ["Done tasks", m.done_tasks], ["Project facts", m.project_facts]];
  const out = [];
  for (const [name, items] of lists) {
    if (!items || !items.length) continue;
    out.push(el("h3", {}, name), el("ul", { "data-list": name.toLowerCase() }, ...items.map((it) => item(name, it))));
  }
  if (!out.length) out.push(el("p", { class: "none" }, "Nothing in the working set yet."));
  document.getElementById("memory").replaceChildren(...out);
}

// item is a line of the working set; an open task has a button that
// closes it.
function item(list, it) {
  const li = el("li", { "data-id": it.id }, it.text);
  if (list === "Open tasks") {
    const done = el("button", { class: "small", "data-done": it.id }, "Done");
    done.addEventListener("click", () => run("done", { id: it.id }));
    li.append(" ", done);
  }
  return li;
}

// phaseChoices fills the phase the phase buttons act on, keeping the
// one chosen.
function phaseChoices(list, current) {
  const select = document.getElementById("phase-select");
  const chosen = select.value || current || "";
  select.replaceChildren(...list.map((p) => el("option", { value: p.name }, p.name)));
  if (list.some((p) => p.name === chosen)) select.value = chosen;
}

function transcript(pieces) {
  const out = [];
  for (const p of pieces) {
    out.push(el("div", { class: "file" }, "==> " + p.transcript + " <=="));
    if (p.items && p.items.length) {
      for (const it of p.items) {
        let text = it.text || "";
        if (it.kind === "tool_call") text = "→ " + it.tool + " " + (it.args || "");
        if (it.kind === "tool_result") text = "← " + (it.failed ? "failed: " : "") + text;
        if (it.kind === "usage") text = "tokens: " + (it.input_tokens || 0) + " in, " + (it.output_tokens || 0) + " out";
        out.push(el("div", { class: "item " + it.kind }, text));
      }
    } else {
      out.push(el("div", { class: "item" }, p.text));
    }
  }
  if (!out.length) out.push(el("p", { class: "none" }, "No transcript yet."));
  const logs = document.getElementById("logs");
  logs.replaceChildren(...out);
}

async function run(action, body) {
  const result = document.getElementById("result");
  try {
    const r = await act(id, action, body);
    result.replaceChildren(action + ": " + (r.result || r.status || "done"));
    if (r.phase) result.append(" (phase " + r.phase + ")");
    if (r.worktree) result.append(" — session " + r.session + " in " + r.worktree);
    result.hidden = false;
    showError(null);
    load();
  } catch (err) { result.hidden = true; showError(err); }
}

const notes = document.getElementById("notes");
document.getElementById("resume").addEventListener("click", () => run("resume", { notes: notes.value }));
document.getElementById("pause").addEventListener("click", () => run("pause", { notes: notes.value }));
document.getElementById("complete").addEventListener("click", () => run("complete", {}));
document.getElementById("pin").addEventListener("click", () => {
  const fact = document.getElementById("fact");
  run("pin", { text: fact.value }).then(() => { fact.value = ""; });
});

document.getElementById("add-task").addEventListener("click", () => {
  const task = document.getElementById("task");
  run("task", { text: task.value }).then(() => { task.value = ""; });
});
const phaseSelect = document.getElementById("phase-select");
const force = document.getElementById("force");
document.getElementById("resume-at").addEventListener("click", () => run("resume", { notes: notes.value, phase: phaseSelect.value }));
document.getElementById("rewind").addEventListener("click", () => run("rewind", { phase: phaseSelect.value, force: force.checked }));
document.getElementById("fork").addEventListener("click", () => run("fork", { phase: phaseSelect.value }));
document.getElementById("diff-link").href = "/diff?a=" + encodeURIComponent(id);

let pending = null;
follow((c) => {
  if (c.id !== id || pending) return;
  pending = setTimeout(() => { pending = null; load(); }, 50);
});
load();
