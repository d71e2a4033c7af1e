// A session's page: its phases on a time axis, its working set, its
// transcript, and the buttons that act on it.
"use strict";
const id = decodeURIComponent(location.pathname.split("/").pop());
document.getElementById("session-id").textContent = id;
const base = "/api/sessions/" + encodeURIComponent(id);

async function load() {
  try {
    const [status, memory, logs, timeline] = await Promise.all([api(base), api(base + "/memory"), api(base + "/logs"),
      api(base + "/timeline").catch(() => null)]);
    summary(status);
    phaseChoices(status.phases || [], status.phase);
    if (timeline) gantt(timeline, Object.fromEntries((status.phases || []).map((p) => [p.name, p.status || "pending"])));
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
  if (s.fleet) fields.push(["Runs on", s.fleet.address ? "Temporal at " + s.fleet.address + " (namespace " + s.fleet.namespace + ")" : "a Temporal fleet"]);
  if (s.pause_note) fields.push(["Pause note", s.pause_note]);
  if (s.fail_reason) fields.push(["Failed", s.fail_reason]);
  document.getElementById("summary").replaceChildren(...fields.map(([k, v]) =>
    el("div", { "data-field": k.toLowerCase() }, el("span", {}, k), v)));
}

// gantt draws the session on the wall clock (GET .../timeline): a row
// per phase, its bar from its first step's start to its last one's end,
// and under it a row per attempt with a bar per step run; the pauses are
// bands across the chart, a retry is marked ↻ and a trigger that fired ▲,
// each saying what and why on hover.
function gantt(t, statuses) {
  const rows = [];
  for (const p of t.phases) {
    rows.push({ phase: p });
    for (const a of p.attempts) rows.push({ phase: p, attempt: a });
  }
  const rowH = 20, labelW = 170, width = 960, top = 18, height = top + rows.length * rowH + 22;
  const svg = svgNode(null, "svg", { viewBox: "0 0 " + width + " " + height });
  const t0 = Date.parse(t.start);
  // A pause still open shows as a band past the last event.
  const stillPaused = t.pauses.some((p) => !p.end || p.end.startsWith("0001"));
  const t1 = Math.max(Date.parse(t.end), t0 + 1) + (stillPaused ? Math.max((Date.parse(t.end) - t0) * 0.06, 1) : 0);
  const plotW = width - labelW - 14;
  const x = (at) => labelW + (Math.min(Math.max(Date.parse(at), t0), t1) - t0) * plotW / (t1 - t0);
  axis(svg, t0, t1, x, top, height);
  for (const p of t.pauses) {
    const open = !p.end || p.end.startsWith("0001");
    const end = open ? new Date(t1).toISOString() : p.end;
    titled(svgNode(svg, "rect", { x: x(p.start), y: top - 4, width: Math.max(x(end) - x(p.start), 2), height: rows.length * rowH + 4,
      class: "pause-band", "data-reason": p.reason }),
    "paused at " + p.phase + ": " + fired(p.fired) + "\n" + clock(p.start) + " → " + (open ? "still paused" : clock(end)));
    titled(svgNode(svg, "text", { x: x(p.start) + 2, y: top - 6, class: "mark pause", "data-reason": p.reason }, "‖"), "paused: " + fired(p.fired));
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    if (!r.attempt) return phaseRow(svg, r.phase, statuses[r.phase.name] || r.phase.status || "pending", x, y, rowH, width);
    svgNode(svg, "text", { x: 12, y: y + 13, class: "label small" }, "attempt " + r.attempt.number);
    if (r.attempt.retry) {
      titled(svgNode(svg, "text", { x: Math.max(x(r.attempt.start) - 12, labelW - 12), y: y + 14, class: "mark retry", "data-attempt": r.attempt.number }, "↻"),
        r.phase.name + ": attempt " + r.attempt.number + ", a retry, from " + clock(r.attempt.start));
    }
    for (const s of r.attempt.steps) stepBar(svg, r, s, x, y, rowH);
  });
  document.getElementById("gantt").replaceChildren(svg);
}

function svgNode(parent, tag, attrs, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.append(e);
  return e;
}

// titled gives an SVG element the text shown on hover.
function titled(e, text) {
  svgNode(e, "title", {}, text);
  return e;
}

function phaseRow(svg, p, status, x, y, rowH, width) {
  svgNode(svg, "text", { x: 0, y: y + 14, class: "label" }, p.name);
  const first = p.attempts[0], last = p.attempts[p.attempts.length - 1];
  const bx = first ? x(first.start) : width - 17, w = first ? Math.max(x(last.end) - bx, 3) : 3;
  const span = first ? ", " + clock(first.start) + " → " + clock(last.end) + " (" + duration(Date.parse(last.end) - Date.parse(first.start)) + ")" : "";
  titled(svgNode(svg, "rect", { x: bx, y: y + 3, width: w, height: rowH - 6, rx: 3, class: "bar " + status, "data-phase": p.name,
    "data-attempts": p.attempts.length }),
  p.name + ": " + status + span + ", " + p.attempts.length + " attempt" + (p.attempts.length === 1 ? "" : "s"));
}

function stepBar(svg, r, s, x, y, rowH) {
  const outcome = s.running ? "running" : s.stopped ? "stopped" : s.exit_code === 0 && !s.error ? "ok" : "failed";
  const bx = x(s.start), w = Math.max(x(s.end) - bx, 2);
  let text = r.phase.name + " · attempt " + r.attempt.number + " · " + s.name + ": " +
    (s.running ? "running" : s.stopped ? "stopped" : "exit " + s.exit_code) + ", " + (s.elapsed_ms > 0 ? duration(s.elapsed_ms) : "<1s") +
    (s.tokens ? ", " + s.tokens + " tokens" : "") + (s.cost_usd ? ", " + money(s.cost_usd) : "") + "\n" + clock(s.start, true) + " → " + clock(s.end, true);
  if (s.error) text += "\n" + s.error;
  for (const f of s.fired || []) text += "\nfired: " + fired(f);
  titled(svgNode(svg, "rect", { x: bx, y: y + 5, width: w, height: rowH - 10, class: "step " + outcome, "data-phase": r.phase.name,
    "data-attempt": r.attempt.number, "data-step": s.name }), text);
  for (const f of s.fired || []) {
    titled(svgNode(svg, "text", { x: x(f.at) - 4, y: y + 5, class: "mark fired", "data-reason": f.reason }, "▲"), "fired at " + clock(f.at, true) + ": " + fired(f));
  }
}

// fired says what a trigger was and why it fired.
function fired(f) {
  return f.reason + (f.expression && f.expression !== f.reason ? " (" + f.expression + ")" : "") +
    (f.values ? " [" + f.values + "]" : "") + (f.note ? ": " + f.note : "");
}

// axis draws the wall-clock ticks under the chart, about eight.
function axis(svg, t0, t1, x, top, height) {
  const span = t1 - t0;
  const nice = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 216e5, 432e5, 864e5];
  const step = nice.find((s) => span / s <= 8) || 864e5 * Math.ceil(span / 864e5 / 8);
  for (let at = Math.ceil(t0 / step) * step; at <= t1; at += step) {
    const iso = new Date(at).toISOString();
    svgNode(svg, "line", { x1: x(iso), x2: x(iso), y1: top - 4, y2: height - 18, class: "tick" });
    svgNode(svg, "text", { x: x(iso) - 24, y: height - 4, class: "label small axis-label" }, clock(iso, step < 1000));
  }
}

function clock(at, ms) {
  const d = new Date(at);
  const t = d.toLocaleTimeString([], { hour12: false });
  return ms ? t + "." + String(d.getMilliseconds()).padStart(3, "0") : t;
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
document.getElementById("fork").addEventListener("click", () =>
  run("fork", { phase: phaseSelect.value, worktree: document.getElementById("fork-folder").value }));
document.getElementById("diff-link").href = "/diff?a=" + encodeURIComponent(id);

let pending = null;
follow((c) => {
  if (c.id !== id || pending) return;
  pending = setTimeout(() => { pending = null; load(); }, 50);
});
load();
