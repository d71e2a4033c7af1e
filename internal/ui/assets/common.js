// What both pages share: the API, with the server's token on each POST,
// and the live stream of session changes.
"use strict";
const pipelineToken = document.querySelector('meta[name="pipeline-token"]').content;

async function api(path, options) {
  const res = await fetch(path, options);
  const body = await res.json().catch(() => ({ error: res.status + " " + res.statusText }));
  if (!res.ok) {
    // The command's message, and what it says to do.
    const err = new Error((body.error || res.statusText) + (body.hint ? "\n" + body.hint : ""));
    err.status = res.status;
    throw err;
  }
  return body;
}

function act(id, action, body) {
  return api("/api/sessions/" + encodeURIComponent(id) + "/" + action, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Pipeline-Token": pipelineToken },
    body: JSON.stringify(body || {}),
  });
}

// follow calls onChange with each session change; the marker says whether
// the page follows.
function follow(onChange) {
  const live = document.getElementById("live");
  const es = new EventSource("/api/events");
  es.onopen = () => { live.textContent = "● live"; live.dataset.state = "open"; };
  es.onerror = () => { live.textContent = "○ reconnecting"; live.dataset.state = "closed"; };
  es.onmessage = (ev) => onChange(JSON.parse(ev.data));
  return es;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c ?? ""));
  return e;
}

function showError(err) {
  const p = document.getElementById("error");
  p.textContent = err ? String(err.message || err) : "";
  p.hidden = !err;
}

function statusBadge(status, reason) {
  const span = el("span", {}, el("span", { class: "status " + status }, status));
  if (reason) span.append(el("span", { class: "reason" }, "(" + reason + ")"));
  return span;
}

function money(v) { return "$" + (v || 0).toFixed(4); }

function duration(ms) {
  if (!(ms > 0)) return "-";
  const s = Math.round(ms / 1000);
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m";
}

function when(t) { return t ? new Date(t).toLocaleString() : "-"; }
