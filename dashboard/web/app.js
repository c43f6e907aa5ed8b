// The dashboard's page: it draws each state the server streams
// (/api/stream, server-sent events, one a second). No library, nothing
// loaded from elsewhere.
"use strict";
const $ = (id) => document.getElementById(id);
const history = []; // [time ms, pages/s]
let lockTerm = { epoch: 0, full: 1 }; // the longest time left seen on this epoch's lock: its TTL, about
const token = new URLSearchParams(location.search).get("token");
const q = token ? "?token=" + encodeURIComponent(token) : "";

function text(el, s) { el.textContent = s; }
function rows(table, pairs) {
  table.replaceChildren(...pairs.map(([k, v]) => {
    const tr = document.createElement("tr");
    const a = document.createElement("td"); a.textContent = k;
    const b = document.createElement("td"); b.textContent = v; b.className = "n";
    tr.append(a, b); return tr;
  }));
}
function dur(ns) {
  const s = ns / 1e9;
  return s < 10 ? s.toFixed(1) + " s" : s < 120 ? Math.round(s) + " s" : Math.round(s / 60) + " min";
}

function draw(st) {
  text($("crawl"), "“" + st.crawl + "”");
  const badge = $("state");
  badge.className = "badge " + (st.done ? "done" : "running");
  text(badge, st.done ? "done" : "running");
  text($("updated"), "Updated " + new Date(st.at).toLocaleTimeString() + ".");
  const c = st.counters || {};
  text($("pages"), c.pages || 0);
  text($("rate"), (st.pages_per_second || 0).toFixed(1));
  const statuses = Object.keys(c).filter((k) => k.startsWith("status:")).sort()
    .map((k) => [ "HTTP " + k.slice(7), c[k] ]);
  rows($("outcomes"), [["ok", c.ok || 0], ["http_error", c.http_error || 0], ["failed", c.failed || 0],
    ["skipped", c.skipped || 0], ["unchanged (304)", c.unchanged || 0], ...statuses]);
  history.push([Date.now(), st.pages_per_second || 0]);
  while (history.length > 300) history.shift();
  chart();
  const f = st.frontier || {};
  const drain = st.pages_per_second > 0 ? dur(f.queued / st.pages_per_second * 1e9) : "—";
  rows($("sizes"), [["queued", f.queued || 0], ["in flight", f.in_flight || 0], ["deferred (retries)", f.deferred || 0],
    ["failed for good", f.failed || 0], ["time to drain", drain], ["shards", st.shards]]);
  text($("leader-id"), st.leader ? st.leader.id : "none");
  text($("epoch"), st.leader ? st.leader.epoch : st.epoch);
  const ttl = st.leader ? st.lock_ttl_ns : 0;
  if (st.leader && st.leader.epoch !== lockTerm.epoch) lockTerm = { epoch: st.leader.epoch, full: 1 };
  lockTerm.full = Math.max(lockTerm.full, ttl);
  $("ttl-bar").style.width = Math.min(100, 100 * ttl / lockTerm.full) + "%";
  text($("ttl"), st.leader ? "lock expires in " + dur(ttl) + " unless renewed" : "no holder: a worker takes the lock at its next campaign");
  $("worker-list").replaceChildren(...(st.workers || []).map((w) => {
    const li = document.createElement("li"); li.textContent = w + (st.leader && st.leader.id === w ? "  (scheduler)" : ""); return li;
  }));
  const hosts = st.top_hosts || [];
  const rate = st.rate === null ? "no limit" : st.rate + "/s, burst " + st.burst;
  $("host-table").replaceChildren(...[["host", "queued", "due in"]].concat(hosts.map((h) => [h.host, h.queued, dur(h.due_in_ns)])).map((r, i) => {
    const tr = document.createElement("tr");
    r.forEach((v, j) => { const td = document.createElement(i ? "td" : "th"); td.textContent = v; if (j) td.className = "n"; tr.append(td); });
    return tr;
  }));
  const paused = Object.entries(st.paused_hosts_ns || {});
  text($("paused"), (st.hosts_queued || 0) + " hosts with URLs queued; each host's bucket: " + rate +
    (paused.length ? "; paused: " + paused.map(([h, d]) => h + " " + dur(d)).join(", ") : ""));
  const b = st.bloom || {};
  const fill = b.bits ? b.bits_set / b.bits : 0;
  $("bloom-bar").style.width = (fill * 100).toFixed(1) + "%";
  text($("bloom-text"), (b.count || 0) + " URLs seen in " + (b.layers || 0) + " layer(s); " + (fill * 100).toFixed(2) +
    "% of bits set; estimated false-positive rate " + ((b.estimated_fp_rate || 0) * 100).toFixed(4) + "% (bound " + ((b.fp_rate || 0) * 100).toFixed(2) + "%)");
  $("events").replaceChildren(...(st.events || []).map((e) => {
    const li = document.createElement("li");
    const t = document.createElement("time"); t.textContent = new Date(e.at).toLocaleTimeString();
    li.append(t, e.text); li.dataset.kind = e.kind; return li;
  }));
}

function chart() {
  const cv = $("chart"), g = cv.getContext("2d");
  g.clearRect(0, 0, cv.width, cv.height);
  if (history.length < 2) return;
  const max = Math.max(1, ...history.map((p) => p[1]));
  g.strokeStyle = "#27a"; g.lineWidth = 2; g.beginPath();
  history.forEach((p, i) => {
    const x = i / (history.length - 1) * cv.width, y = cv.height - p[1] / max * (cv.height - 10) - 2;
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
  g.fillStyle = "#556"; g.fillText(max.toFixed(0) + " pages/s", 4, 12);
}

let last = 0; // when the last state came
const es = new EventSource("api/stream" + q);
es.onmessage = (m) => {
  last = Date.now();
  const st = JSON.parse(m.data);
  if (st.error) { const b = $("state"); b.className = "badge error"; b.textContent = st.error; return; }
  draw(st);
};
// The browser reconnects by itself; say so only when states stop coming.
es.onerror = () => setTimeout(() => {
  if (Date.now() - last > 3000) { const b = $("state"); b.className = "badge error"; b.textContent = "reconnecting…"; }
}, 3000);
