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
// table fills el with a header row and rows of cells; numbers align right.
function table(el, head, body) {
  if (!body.length) body = [["none"]];
  el.replaceChildren(...[head].concat(body).map((r, i) => {
    const tr = document.createElement("tr");
    r.forEach((v, j) => {
      const td = document.createElement(i ? "td" : "th");
      if (v instanceof Node) td.append(v); else td.textContent = v;
      if (j && typeof v !== "string") td.className = "n";
      tr.append(td);
    });
    return tr;
  }));
}
function meter(frac, label) {
  const wrap = document.createElement("span"); wrap.className = "meter";
  const bar = document.createElement("span"); bar.className = "bar"; const fill = document.createElement("span");
  fill.style.width = Math.max(0, Math.min(100, frac * 100)) + "%"; bar.append(fill);
  wrap.append(bar, " " + label); return wrap;
}
function dur(ns) {
  const s = ns / 1e9;
  return s < 10 ? s.toFixed(1) + " s" : s < 120 ? Math.round(s) + " s" : Math.round(s / 60) + " min";
}

// control sends one of the dashboard's controls (crawler dashboard
// --control): a POST carrying the token in its header, never in the URL.
async function control(path, body) {
  const said = $("ctl-said");
  said.textContent = "…";
  try {
    const r = await fetch("api/control/" + path, { method: "POST", body: body ? JSON.stringify(body) : "",
      headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" } });
    const t = (await r.text()).trim();
    said.textContent = r.ok ? JSON.parse(t).did : "refused: " + t;
  } catch (e) {
    said.textContent = "failed: " + e;
  }
}
$("pause-crawl").addEventListener("click", () => control("pause"));
$("resume-crawl").addEventListener("click", () => control("resume"));
$("pause-host").addEventListener("click", () => control("host", { host: $("ctl-host").value, action: "pause" }));
$("clear-host").addEventListener("click", () => control("host", { host: $("ctl-host").value, action: "clear" }));
// hostCell is a host's name in a table: with the controls, a button that
// picks it for them.
function hostCell(st, host) {
  if (!(st.control && token)) return host;
  const b = document.createElement("button");
  b.className = "pick"; b.textContent = host; b.title = "pick " + host + " for the controls above";
  b.addEventListener("click", () => { $("ctl-host").value = host; $("ctl-host").focus(); });
  return b;
}
// clearCell is a button that clears host (its pause, block and own rate).
function clearCell(st, host, label) {
  if (!(st.control && token)) return "";
  const b = document.createElement("button");
  b.className = "clear"; b.textContent = label; b.dataset.host = host;
  b.addEventListener("click", () => control("host", { host, action: "clear" }));
  return b;
}
$("block-host").addEventListener("click", () => {
  const host = $("ctl-host").value;
  if (confirm("Block " + host + "? No request will go to it again, and its queued URLs end with records.")) control("host", { host, action: "block" });
});

function draw(st) {
  text($("crawl"), "“" + st.crawl + "”");
  $("controls").hidden = !(st.control && token);
  text($("mode"), st.control && token ? "Live from Redis; its controls change the crawl, each an event in the log." : "Live from Redis, read-only.");
  const badge = $("state");
  const state = st.done ? "done" : st.hold ? "paused" : "running";
  badge.className = "badge " + state;
  text(badge, state);
  badge.title = st.hold && !st.done ? "paused by " + st.hold.by + " since " + new Date(st.hold.since).toLocaleString() : "";
  text($("updated"), "Updated " + new Date(st.at).toLocaleTimeString() + ".");
  const c = st.counters || {};
  text($("pages"), c.pages || 0);
  text($("rate"), (st.pages_per_second || 0).toFixed(1));
  const statuses = Object.keys(c).filter((k) => k.startsWith("status:")).sort()
    .map((k) => [ "HTTP " + k.slice(7), c[k] ]);
  rows($("outcomes"), [["ok", c.ok || 0], ["http_error", c.http_error || 0], ["failed", c.failed || 0],
    ["skipped", c.skipped || 0], ["unchanged (304)", c.unchanged || 0], ...statuses]);
  if (st.history) history.splice(0, history.length, ...st.history); // the server's, when the page opens
  history.push([Date.parse(st.at), st.pages_per_second || 0]);
  while (history.length > 300) history.shift();
  chart();
  const f = st.frontier || {};
  const drain = st.pages_per_second > 0 ? dur(f.queued / st.pages_per_second * 1e9) : "—";
  rows($("sizes"), [["queued", f.queued || 0], ["in flight", f.in_flight || 0], ["deferred (retries)", f.deferred || 0],
    ["failed for good", f.failed || 0], ["hosts at their cap in flight", f.hosts_at_cap || 0], ["time to drain", drain]]);
  text($("leader-id"), st.leader ? st.leader.id : "none");
  text($("epoch"), st.leader ? st.leader.epoch : st.epoch);
  const ttl = st.leader ? st.leader.ttl_ns : 0;
  if (st.leader && st.leader.epoch !== lockTerm.epoch) lockTerm = { epoch: st.leader.epoch, full: 1 };
  lockTerm.full = Math.max(lockTerm.full, ttl);
  $("ttl-bar").style.width = Math.min(100, 100 * ttl / lockTerm.full) + "%";
  text($("ttl"), st.leader ? "lock expires in " + dur(ttl) + " unless renewed" : "no holder: a worker takes the lock at its next campaign");
  const lead = st.leader ? st.leader.id : "";
  table($("worker-table"), ["worker", "state", "pages", "leases", "last heartbeat"], (st.workers || []).map((w) =>
    [w.id + (w.id === lead ? " (scheduler)" : ""), w.alive ? "alive" : "lapsed", w.pages, w.leases, w.beat_ago_ns < 0 ? "—" : dur(w.beat_ago_ns) + " ago"]));
  const hosts = st.top_hosts || [];
  const paused = st.paused_hosts || [];
  const pausedOf = new Map(paused.map((p) => [p.host, p]));
  table($("host-table"), ["host", "queued", "next URL in", "tokens now", "rate", "set by"], hosts.map((h) => {
    const b = h.bucket || {};
    const p = pausedOf.get(h.host);
    const rate = b.rate ? (b.rate >= 1 ? b.rate.toFixed(1) : b.rate.toPrecision(2)) + "/s" : "no limit";
    return [hostCell(st, h.host), h.queued, p ? "paused " + dur(p.left_ns) : h.due_in_ns ? dur(h.due_in_ns) : "now",
      !b.rate ? "—" : b.tokens >= 0 ? meter(b.tokens / b.burst, b.tokens.toFixed(2) + " of " + b.burst)
        : meter(0, "0 of " + b.burst + ", " + (-b.tokens).toFixed(2) + " promised ahead"), rate, h.interval_why || (b.rate ? "" : "—")];
  }));
  const limit = st.rate === null ? "no limit: a bucket holds only pauses and hosts' own delays" : st.rate + " requests/s a host, burst " + st.burst;
  text($("hosts-note"), (st.hosts_queued || 0) + " hosts with URLs queued (the longest queues, re-read every 10 s); the crawl's pace: " + limit + ".");
  table($("paused-table"), ["host", "for", "after", ""], paused.map((p) => [hostCell(st, p.host), dur(p.left_ns), p.why || "a 429/503", clearCell(st, p.host, "Resume")]));
  table($("rules-table"), ["host", "rate", "burst", ""], (st.host_rules || []).map((r) => [hostCell(st, r.host), r.blocked ? "blocked" : r.rate ? r.rate + "/s" : "no limit",
    r.blocked ? "—" : r.burst, clearCell(st, r.host, "Clear")]));
  const groups = st.export_groups || [];
  $("groups").hidden = groups.length === 0;
  table($("group-table"), ["group", "readers", "given, not acknowledged", "not given yet", "state"], groups.map((g) =>
    [g.name, g.consumers, g.pending, g.lag, g.fill >= st.lag_fill ? "LAGS: its oldest unread records may be dropped" : "keeping up"]));
  const addrs = st.addresses || [];
  $("addresses").hidden = addrs.length === 0;
  table($("address-table"), ["address", "tokens given", "hosts", "some of them"], addrs.map((a) =>
    [a.addr, a.tokens, a.hosts, (a.named || []).join(" ") + (a.hosts > (a.named || []).length ? " …" : "")]));
  const r = st.render;
  $("render").hidden = !r;
  if (r) {
    text($("render-text"), r.line);
    const verdict = { render: "needs a browser", plain: "plain is enough", "?": "learning" };
    const learned = Object.entries(r.learned || {}).sort((a, b) => a[0].localeCompare(b[0]));
    const laned = (r.hosts || []).filter((h) => !(r.learned || {})[h]).map((h) => [h, "put in the render lane (--render-match)"]);
    table($("render-table"), ["host", "verdict"], learned.map(([h, v]) => [h, verdict[v] || v]).concat(laned).slice(0, 20));
  }
  const shards = st.shards || [];
  const pages = shards.reduce((n, x) => n + x.pages, 0) || 1;
  table($("shard-table"), ["shard", "hosts", "queued", "in flight", "pages", "share"], shards.map((x) =>
    [x.tag, x.hosts, x.queued, x.in_flight, x.pages, meter(x.pages / pages, (100 * x.pages / pages).toFixed(0) + "%")]));
  const b = st.bloom || {};
  const fill = b.bits ? b.bits_set / b.bits : 0;
  $("bloom-bar").style.width = (fill * 100).toFixed(1) + "%";
  const nShards = (st.shards || []).length;
  const where = nShards > 1 ? " layer(s) over " + nShards + " shards' filters; " : " layer(s); ";
  text($("bloom-text"), (b.count || 0) + " URLs seen in " + (b.layers || 0) + where + (fill * 100).toFixed(2) +
    "% of bits set; estimated false-positive rate " + ((b.estimated_fp_rate || 0) * 100).toFixed(4) + "% (bound " + ((b.fp_rate || 0) * 100).toFixed(2) + "%)");
  const item = (e) => {
    const li = document.createElement("li");
    const t = document.createElement("time"); t.textContent = new Date(e.at).toLocaleTimeString();
    li.append(t, e.text); li.dataset.kind = e.kind; return li;
  };
  $("events").replaceChildren(...(st.events || []).map(item));
  $("timeline").replaceChildren(...(st.timeline || []).map(item));
}

function chart() {
  const cv = $("chart"), g = cv.getContext("2d");
  g.clearRect(0, 0, cv.width, cv.height);
  if (history.length < 2) return;
  const max = Math.max(1, ...history.map((p) => p[1])) * 1.25; // headroom: a steady rate is not drawn on the top edge
  g.strokeStyle = "#27a"; g.lineWidth = 2; g.beginPath();
  history.forEach((p, i) => {
    const x = i / (history.length - 1) * cv.width, y = cv.height - p[1] / max * (cv.height - 10) - 2;
    i ? g.lineTo(x, y) : g.moveTo(x, y);
  });
  g.stroke();
  g.fillStyle = "#556"; g.font = "12px system-ui, sans-serif"; g.fillText(max.toFixed(0) + " pages/s", 4, 14);
}

let last = 0; // when the last state came
const es = new EventSource("api/stream" + q);
// A stream refused (no token, or a wrong one) only closes: ask once, to say why.
fetch("api/state" + q).then((r) => {
  if (r.status === 401) {
    es.close();
    const b = $("state"); b.className = "badge error";
    b.textContent = token ? "wrong token: open the page as /?token= and the dashboard's token" : "this dashboard needs its token: open the page as /?token= and the dashboard's token";
  }
}).catch(() => {});
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
