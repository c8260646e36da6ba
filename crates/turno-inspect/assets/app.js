// The turno inspector page. Everything that comes from a trace is put in
// the page with textContent (never innerHTML), so a label holding markup
// shows as the characters it is.
"use strict";

const $ = (id) => document.getElementById(id);
const MAX_TEXT = 300;
const MAX_BOXES = 64;
const SVG = "http://www.w3.org/2000/svg";

function short(s) {
  s = String(s ?? "");
  return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + "\u2026 (" + s.length + " chars)" : s;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") { e.textContent = short(v); continue; }
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "style") e.setAttribute("style", v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = short(text);
  return e;
}

function fill(id, ...children) {
  const body = $(id);
  body.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
  return body;
}

function ms(ns) {
  return (Number(ns) / 1e6).toFixed(3) + " ms";
}

const state = { meta: null, step: 0, len: 0, loop: 0, pending: null, inflight: false, lastView: null, renderMs: [] };
window.__inspector = state;

// ---------------------------------------------------------------- stepping

async function go(k) {
  k = Math.max(0, Math.min(state.len, Math.round(k)));
  state.pending = k;
  if (state.inflight) return;
  state.inflight = true;
  try {
    while (state.pending !== null) {
      const want = state.pending;
      state.pending = null;
      const t0 = performance.now();
      const r = await fetch(`/api/step?k=${want}&loop=${state.loop}`);
      if (!r.ok) throw new Error(await r.text());
      const view = await r.json();
      if (state.pending === null) {
        render(view);
        state.renderMs.push(performance.now() - t0);
      }
    }
  } catch (e) {
    showError(String(e));
  } finally {
    state.inflight = false;
  }
}

async function jump(what, dir) {
  const r = await fetch(`/api/jump?k=${state.step}&what=${what}&dir=${dir}`);
  if (r.ok) go(await r.json());
}

function showError(msg) {
  const e = $("error");
  e.hidden = false;
  e.textContent = short(msg);
}

function wireToolbar() {
  $("start").onclick = () => go(0);
  $("back").onclick = () => go(state.step - 1);
  $("forward").onclick = () => go(state.step + 1);
  $("end").onclick = () => go(state.len);
  for (const b of document.querySelectorAll("[data-jump]")) {
    b.onclick = () => jump(b.dataset.jump, Number(b.dataset.dir));
  }
  $("slider").oninput = (e) => go(Number(e.target.value));
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.type !== "range") return;
    const keys = { ArrowRight: 1, ArrowLeft: -1 };
    if (e.key in keys) { go(state.step + keys[e.key]); e.preventDefault(); }
    else if (e.key === "Home") { go(0); e.preventDefault(); }
    else if (e.key === "End") { go(state.len); e.preventDefault(); }
  });
}

// ---------------------------------------------------------------- panes

function movedSet(view) {
  const s = new Map();
  for (const m of view.moved || []) s.set(m.lane + "|" + (m.item ?? ""), m);
  return s;
}

function render(view) {
  state.step = view.step;
  state.lastView = view;
  document.body.dataset.step = String(view.step);
  document.body.dataset.loop = String(view.loop ?? 0);
  $("step").textContent = String(view.step);
  $("slider").value = String(view.step);
  $("time").textContent = ms(view.world.t_ns);
  $("event").textContent = view.event ? short(JSON.stringify(view.event)) : "(start: no event applied)";
  if (state.meta.header.format === "turno-js-trace") renderJs(view);
  else renderActors(view);
  renderTimeline(view);
}

// The event's js_stack, when the event ran on the loop shown.
function eventStack(view) {
  return view.event && (view.event.loop ?? 0) === view.loop ? view.event.js_stack : null;
}

// The source of the loop shown: the program, or a worker's script.
function loopSource(view) {
  if (!view.loop) return state.meta.source;
  const w = (state.meta.workers || []).find((w) => w.id === view.loop);
  return w ? w.source : null;
}

function currentLine(view) {
  const stack = eventStack(view) || (view.world.js.stack.length ? view.world.js.js_stack : null);
  if (!stack || !stack.length) return null;
  // js_stack is written outermost first: the innermost frame is the last.
  const m = /:(\d+):(\d+)\)$/.exec(stack[stack.length - 1]);
  return m ? Number(m[1]) : null;
}

function renderJs(view) {
  const w = view.world, js = w.js, moved = movedSet(view);
  // source
  const src = loopSource(view);
  const line = currentLine(view);
  const body = $("source");
  if (!src) {
    fill("source", el("div", { class: "empty", text: "source not found (pass --source FILE)" }));
    delete body.dataset.built;
  } else if (body.dataset.built !== src.file) {
    body.replaceChildren(...src.lines.map((t, i) =>
      el("div", { class: "src-line", "data-line": i + 1 }, el("span", { class: "no", text: i + 1 }), el("span", { text: t }))));
    body.dataset.built = src.file;
    $("source-file").textContent = short(src.file);
  }
  if (src) {
    for (const c of body.querySelectorAll(".current")) c.classList.remove("current");
    if (line) {
      const cur = body.querySelector(`[data-line="${line}"]`);
      if (cur) { cur.classList.add("current"); cur.scrollIntoView({ block: "nearest" }); }
    }
  }
  // call stack: host frames, innermost on top, and the JavaScript frames of the event
  const frames = js.stack.map((f, i) => el("div", {
    class: "frame" + (moved.has("stack|" + (i + 1)) ? " moved" : ""), "data-depth": i + 1, text: f })).reverse();
  const popped = (view.moved || []).find((m) => m.lane === "stack" && m.action === "pop");
  // js_stack is outermost first; shown innermost on top, like the host frames.
  const jsFrames = (eventStack(view) || []).map((f) => el("div", { class: "frame js-frame", text: f })).reverse();
  fill("stack",
    popped ? el("div", { class: "frame box ghost pop", text: "popped: " + popped.label }) : null,
    ...frames,
    frames.length ? null : el("div", { class: "empty", text: "empty" }),
    jsFrames.length ? el("div", { class: "legend", text: "JavaScript frames at this event (js_stack):" }) : null,
    ...jsFrames);
  // queues
  const model = state.meta.header.model;
  const names = model === "node" ? ["nextTick", "microtask", "timers", "immediate"] : ["task", "microtask", "timers", "animation-frame"];
  fill("queues", ...names.map((q) => lane("queue:" + q, q, (js.queues[q] || []).map((e) => ({
    item: String(e.id), label: `${e.id} ${e.label}` + (e.due_ns !== null && e.due_ns !== undefined ? ` @${ms(e.due_ns)}` : "") + (e.source ? ` (${e.source})` : ""),
  })), view)));
  // promises
  const rows = Object.entries(js.promises).map(([id, p]) => el("tr", {
    "data-promise": id, class: moved.has("promise:" + id + "|") ? "moved" : "" },
    el("td", { text: id }),
    el("td", { class: "slot slot-state state-" + (p.state || "unknown"), text: p.state ?? "?" }),
    el("td", { class: "slot slot-result", text: p.result === null || p.result === undefined ? "\u2014" : (typeof p.result === "string" ? p.result : JSON.stringify(p.result)) }),
    el("td", { class: "slot slot-fulfill", text: p.fulfill_reactions ?? "undefined" }),
    el("td", { class: "slot slot-reject", text: p.reject_reactions ?? "undefined" }),
    el("td", { class: "slot slot-handled", text: p.is_handled ?? "?" }),
    el("td", { text: p.via })));
  fill("promises", rows.length ? el("table", {},
    el("tr", {}, ...["id", "[[PromiseState]]", "[[PromiseResult]]", "[[PromiseFulfillReactions]]", "[[PromiseRejectReactions]]", "[[PromiseIsHandled]]", "via"].map((h) => el("th", { text: h }))),
    ...rows) : el("div", { class: "empty", text: "no promise followed yet" }));
  // console
  const lines = w.console.lines.map(([stream, text], i) => el("div", {
    class: "console-line " + stream + (i === w.console.lines.length - 1 && moved.has("console|") ? " moved" : ""), text }));
  const extra = [...js.uncaught.map(([m, loc]) => el("div", { class: "console-line stderr", text: "Uncaught " + m + (loc ? " at " + loc : "") })),
    ...js.notes.map((n) => el("div", { class: "console-line note", text: "note: " + n }))];
  fill("console", w.console.forgotten ? el("div", { class: "more", text: w.console.forgotten + " earlier lines" }) : null, ...lines, ...extra,
    lines.length || extra.length ? null : el("div", { class: "empty", text: "nothing printed yet" }));
}

function lane(key, name, items, view) {
  const moved = movedSet(view);
  const boxes = items.slice(0, MAX_BOXES).map((it) => el("span", {
    class: "box" + (it.item !== null && moved.has(key + "|" + it.item) && moved.get(key + "|" + it.item).action === "push" ? " moved" : ""),
    "data-item": it.item, title: it.label, text: it.label }));
  const gone = (view.moved || []).filter((m) => m.lane === key && (m.action === "pop" || m.action === "drop"));
  const ghosts = gone.map((m) => el("span", { class: "box ghost " + m.action, "data-item": m.item, text: (m.action === "pop" ? "\u2190 " : "\u2717 ") + m.label }));
  const more = items.length > MAX_BOXES ? el("span", { class: "more", text: `+${items.length - MAX_BOXES} more` }) : null;
  return el("div", { class: "lane", "data-lane": key, "data-count": items.length },
    el("span", { class: "lane-name", text: `${name} (${items.length})` }),
    el("span", { class: "boxes" }, ...ghosts, ...boxes, more, items.length || ghosts.length ? null : el("span", { class: "empty", text: "empty" })));
}

function boxItems(list, untracked) {
  const items = list.map((b) => ({ item: b === null ? null : String(b), label: b === null ? "msg" : "#" + b }));
  for (let i = 0; i < Math.min(untracked || 0, MAX_BOXES); i++) items.push({ item: null, label: "msg" });
  return items;
}

function capacity(policy) {
  const m = /\((\d+)\)$/.exec(policy);
  return m ? Number(m[1]) : null;
}

function actorTable(w, view) {
  const ids = Object.keys(w.actors).sort((a, b) => Number(a) - Number(b));
  if (!ids.length) return el("div", { class: "empty", text: "no actor yet" });
  const rows = [];
  for (const id of ids) {
    const a = w.actors[id];
    const depth = a.user.boxes.length + a.user.untracked;
    const cap = capacity(a.policy) || Math.max(1, a.max_depth);
    const pct = Math.min(100, (100 * depth) / cap);
    const drops = Object.entries(a.drops).map(([p, n]) => `${p}: ${n}`).join(", ");
    const status = a.status.state === "alive" ? (a.in_turn ? "in turn (" + a.in_turn + ")" : "alive") : a.status.state + ": " + a.status.reason;
    rows.push(el("tr", { class: "actor", "data-actor": id, "data-name": a.name },
      el("td", { text: `#${id} ${a.name}` }),
      el("td", { text: a.policy }),
      el("td", { text: status + (a.muted_by !== null ? ` \u2014 muted by #${a.muted_by}` : "") }),
      el("td", {}, el("span", { class: "depth-bar", title: `${depth} of ${cap}` },
        el("span", { class: "depth-fill" + (depth >= cap && capacity(a.policy) ? " full" : ""), style: `width:${pct.toFixed(1)}%` })),
        el("span", { class: "depth", text: ` ${depth}` + (capacity(a.policy) ? ` / ${cap}` : "") })),
      el("td", { class: "drops", "data-drops": Object.values(a.drops).reduce((x, y) => x + y, 0), text: drops || "0" }),
      el("td", { class: "rejected", text: String(a.rejected + a.full) }),
      el("td", { class: "stash-size", text: String(a.stash.length) }),
      el("td", { text: String(Object.keys(a.timers).length) }),
      el("td", { text: String(a.turns) })));
  }
  return el("table", {}, el("tr", {}, ...["actor", "policy", "status", "mailbox depth", "drops by policy", "rejected/full", "stash", "timers", "turns"].map((h) => el("th", { text: h }))), ...rows);
}

function renderActors(view) {
  const w = view.world;
  const lanes = [];
  for (const id of Object.keys(w.actors).sort((a, b) => Number(a) - Number(b))) {
    const a = w.actors[id];
    lanes.push(lane(`actor:${id}:user`, `#${id} mailbox`, boxItems(a.user.boxes, a.user.untracked), view));
    if (a.stash.length || a.redelivery.length || (view.moved || []).some((m) => m.lane === `actor:${id}:stash`)) {
      lanes.push(lane(`actor:${id}:stash`, `#${id} stash`, boxItems([...a.redelivery, ...a.stash], 0), view));
    }
    const timers = Object.entries(a.timers).map(([t, d]) => ({ item: t, label: `timer ${t} @${ms(d)}` }));
    if (timers.length || (view.moved || []).some((m) => m.lane === `actor:${id}:timers`)) lanes.push(lane(`actor:${id}:timers`, `#${id} timers`, timers, view));
  }
  const t = w.totals;
  const totals = el("div", { class: "legend", text: `dropped: ${JSON.stringify(t.dropped)} \u00b7 rejected: ${t.rejected} \u00b7 full: ${t.full} \u00b7 dead letters: ${JSON.stringify(t.dead_letters)} \u00b7 stale replies: ${JSON.stringify(t.stale)} \u00b7 failed turns: ${t.failures}` });
  fill("actors", actorTable(w, view), totals, ...lanes);
  renderCharts(w, view);
  renderWaitFor(view.wait_for, w);
}

function renderCharts(w, view) {
  const charts = Object.entries(w.charts);
  if (!charts.length) { fill("charts", el("div", { class: "empty", text: "no statechart in this trace" })); return; }
  const out = [];
  for (const [id, c] of charts) {
    const active = new Set(c.active);
    const known = new Set(c.states.map((s) => s.id));
    const children = (parent) => c.states.filter((s) => (s.parent ?? null) === parent);
    const draw = (s) => el("div", { class: `state ${s.kind}` + (active.has(s.id) ? " active" : ""), "data-state": s.id },
      el("div", { class: "state-name", text: s.id }), ...children(s.id).map(draw));
    // A state entered but not defined is the machine's root (charts define
    // their states below it): it frames the whole diagram.
    let diagram = children(null).map(draw);
    for (const r of [...active].filter((s) => !known.has(s))) {
      diagram = [el("div", { class: "state compound active root", "data-state": r }, el("div", { class: "state-name", text: r }), ...diagram)];
    }
    out.push(el("div", { class: "chart", "data-chart": id },
      el("div", { text: `#${id} ${c.machine ?? "(no definition recorded)"} \u2014 event: ${c.event ?? "none"}` }),
      el("div", {}, ...diagram),
      el("div", { class: "legend", text: "active: " + [...active].join(", ") }),
      el("div", { class: "transitions" }, ...c.transitions.map((t) => el("div", { text: `${t.source} \u2192 ${t.targets.join(", ") || "(targetless)"}${t.event ? " on " + t.event : " (always)"}` })))));
  }
  fill("charts", ...out);
}

function renderWaitFor(g, w) {
  const edges = (g && g.edges) || [];
  if (!edges.length) { fill("waitfor", el("div", { class: "empty", text: "nobody waits for anybody" })); return; }
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))];
  const W = 360, H = 240, R = 90;
  const pos = new Map(nodes.map((n, i) => [n, [W / 2 + R * Math.cos((2 * Math.PI * i) / nodes.length), H / 2 + R * Math.sin((2 * Math.PI * i) / nodes.length)]]));
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H });
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 22, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6b6b70" }));
  defs.append(marker); s.append(defs);
  const onCycle = new Set();
  for (const e of edges) {
    const [x1, y1] = pos.get(e.from), [x2, y2] = pos.get(e.to);
    if (e.cycle) { onCycle.add(e.from); onCycle.add(e.to); }
    const line = svg("line", { class: "edge" + (e.cycle ? " cycle" : ""), x1, y1, x2, y2, "marker-end": "url(#arrow)", "data-from": e.from, "data-to": e.to });
    line.append(svg("title", {}, e.why));
    s.append(line);
    s.append(svg("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3, fill: e.cycle ? "#c62828" : "#6b6b70" }, e.why));
  }
  for (const n of nodes) {
    const [x, y] = pos.get(n);
    const g2 = svg("g", { class: "node" + (onCycle.has(n) ? " cycle" : ""), "data-actor": n });
    g2.append(svg("circle", { cx: x, cy: y, r: 16 }));
    const name = w.actors[n] ? w.actors[n].name : "";
    g2.append(svg("text", { x: x - 14, y: y + 4 }, `#${n}`));
    g2.append(svg("text", { x: x - 20, y: y + 30 }, name));
    s.append(g2);
  }
  const cyc = edges.some((e) => e.cycle);
  fill("waitfor", s, el("div", { class: cyc ? "drops" : "legend", text: cyc ? "cycle: these actors wait for each other (a logical deadlock)" : "no cycle" }));
}

function renderTimeline(view) {
  const m = state.meta;
  if (!m) return;
  const W = 900, H = 56, end = Math.max(1, m.end_t_ns);
  const x = (t) => 10 + ((W - 20) * Number(t)) / end;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", height: H, preserveAspectRatio: "none" });
  s.append(svg("line", { class: "axis", x1: 10, y1: 30, x2: W - 10, y2: 30 }));
  for (const [step, t] of m.renders) {
    const tick = svg("line", { class: "tick", x1: x(t), y1: 14, x2: x(t), y2: 46, "data-step": step });
    tick.append(svg("title", {}, `render at ${ms(t)} (step ${step})`));
    tick.addEventListener("click", () => go(step));
    s.append(tick);
  }
  s.append(svg("line", { class: "cursor", x1: x(view.world.t_ns), y1: 6, x2: x(view.world.t_ns), y2: 54 }));
  s.append(svg("text", { x: 10, y: 12 }, "0"));
  s.append(svg("text", { x: W - 120, y: 12 }, ms(m.end_t_ns)));
  fill("timeline", s, el("div", { class: "legend", text: `${m.renders.length} render steps \u00b7 ${m.tasks} tasks \u00b7 ${m.turns} turns \u00b7 indexed in ${m.index_ms.toFixed(0)} ms` }));
}

// ---------------------------------------------------------------- live mode

function startLive() {
  document.body.dataset.mode = "live";
  $("toolbar").hidden = true;
  $("title").textContent = "live";
  const token = new URLSearchParams(location.search).get("token");
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/live" + (token ? "?token=" + encodeURIComponent(token) : "");
  const history = new Map();
  const ws = new WebSocket(url);
  ws.onmessage = (msg) => {
    const snap = JSON.parse(msg.data);
    state.meta = { header: { format: "turno-trace" }, renders: [], end_t_ns: snap.world.t_ns };
    const view = { step: snap.world.step, world: snap.world, wait_for: snap.wait_for, moved: [], event: null };
    document.body.dataset.step = String(snap.world.step);
    $("step").textContent = String(snap.world.step);
    $("time").textContent = ms(snap.world.t_ns);
    $("event").textContent = `${snap.world.step} events so far`;
    renderActors(view);
    for (const [id, a] of Object.entries(snap.world.actors)) {
      const h = history.get(id) || [];
      h.push([snap.world.t_ns, a.user.boxes.length + a.user.untracked]);
      if (h.length > 600) h.shift();
      history.set(id, h);
    }
    renderDepths(history, snap.world);
  };
  ws.onclose = () => showError("live connection closed");
}

function renderDepths(history, w) {
  const W = 600, H = 160;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", height: H });
  let t0 = Infinity, t1 = -Infinity, dmax = 1;
  for (const h of history.values()) for (const [t, d] of h) { t0 = Math.min(t0, t); t1 = Math.max(t1, t); dmax = Math.max(dmax, d); }
  const colors = ["#0b63ce", "#c62828", "#1a7f37", "#b35900", "#7b1fa2", "#00838f"];
  let i = 0;
  const legend = [];
  for (const [id, h] of history) {
    const c = colors[i++ % colors.length];
    const pts = h.map(([t, d]) => `${(10 + ((W - 20) * (t - t0)) / Math.max(1, t1 - t0)).toFixed(1)},${(H - 10 - ((H - 20) * d) / dmax).toFixed(1)}`).join(" ");
    s.append(svg("polyline", { points: pts, fill: "none", stroke: c, "stroke-width": 1.5, "data-actor": id }));
    legend.push(el("span", { style: `color:${c}`, text: `#${id} ${w.actors[id] ? w.actors[id].name : ""}  ` }));
  }
  fill("depths", s, el("div", { class: "legend" }, ...legend, el("span", { text: `max ${dmax}` })));
}

// ---------------------------------------------------------------- start

async function main() {
  if (new URLSearchParams(location.search).has("live") || document.body.dataset.live === "1") return startLive();
  const r = await fetch("/api/meta");
  if (r.status === 404) return startLive();
  const meta = await r.json();
  state.meta = meta;
  state.len = meta.len;
  document.body.dataset.mode = meta.header.format === "turno-js-trace" ? "js" : "actor";
  $("title").textContent = short(meta.path) + (meta.header.model ? ` (${meta.header.model})` : "");
  $("len").textContent = String(meta.len);
  $("slider").max = String(meta.len);
  if (meta.source) $("source-file").textContent = short(meta.source.file);
  if (meta.workers && meta.workers.length) {
    // One event loop at a time: each has its own queues, stack and promises.
    const sel = $("loop");
    sel.append(el("option", { value: 0, text: "0: main" }),
      ...meta.workers.map((w) => el("option", { value: w.id, text: `${w.id}: worker ${w.name || w.file}` })));
    sel.onchange = () => {
      state.loop = Number(sel.value);
      go(state.step);
    };
    $("loop-picker").hidden = false;
  }
  if (meta.error) showError("the trace is cut here: " + meta.error);
  wireToolbar();
  await go(0);
  document.body.dataset.ready = "1";
}

main().catch((e) => showError(String(e)));
