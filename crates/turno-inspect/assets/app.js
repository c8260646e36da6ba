// The turno inspector page. Everything that comes from a trace is put in
// the page with textContent (never innerHTML), so a label holding markup
// shows as the characters it is.
"use strict";

const $ = (id) => document.getElementById(id);
const MAX_TEXT = 300;
// Boxes drawn per lane; the rest of a lane is counted ("+k more").
const LANE_CAP = 16;
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
    // Through the CSSOM: the page's policy (no inline style) refuses a
    // style attribute set as markup.
    else if (k === "style") e.style.cssText = v;
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
        const t1 = performance.now();
        render(view);
        // [request and decode, draw] per step, for the browser test's report.
        state.renderMs.push([t1 - t0, performance.now() - t1]);
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
  const prev = state.lastView;
  state.step = view.step;
  state.lastView = view;
  document.body.dataset.step = String(view.step);
  document.body.dataset.loop = String(view.loop ?? 0);
  $("step").textContent = String(view.step);
  $("slider").value = String(view.step);
  $("time").textContent = ms(view.world.t_ns);
  $("event").textContent = view.event ? short(JSON.stringify(view.event)) : "(start: no event applied)";
  if (state.meta.header.format === "turno-js-trace") renderJs(view);
  else { renderActors(view, prev); markPlots(view.world.t_ns); }
  renderTimeline(view);
  markCluster(view.step);
  settle();
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
  place($("queues"), names.map((q) => {
    const list = js.queues[q] || [];
    return lane("queue:" + q, q, list.length, list.slice(0, LANE_CAP).map((e) => ({
      item: String(e.id), label: `${e.id} ${e.label}` + (e.due_ns !== null && e.due_ns !== undefined ? ` @${ms(e.due_ns)}` : "") + (e.source ? ` (${e.source})` : ""),
    })), movedIn(view, "queue:" + q));
  }));
  renderPromises(js, moved);
  renderConsole(w, js, moved);
}

const promisePane = { rows: new Map(), table: null, none: null };

function renderPromises(js, moved) {
  const p = promisePane;
  if (!p.table) {
    p.head = el("tr", {}, ...["id", "[[PromiseState]]", "[[PromiseResult]]", "[[PromiseFulfillReactions]]", "[[PromiseRejectReactions]]", "[[PromiseIsHandled]]", "via"].map((h) => el("th", { text: h })));
    p.table = el("table", {}, p.head);
    p.none = el("div", { class: "empty", text: "no promise followed yet" });
    fill("promises", p.none, p.table);
  }
  const rows = [p.head];
  for (const [id, pr] of Object.entries(js.promises)) {
    let r = p.rows.get(id);
    if (!r) {
      const td = (cls) => el("td", { class: cls });
      r = { state: td("slot slot-state"), result: td("slot slot-result"), fulfill: td("slot slot-fulfill"), reject: td("slot slot-reject"), handled: td("slot slot-handled"), via: td() };
      r.root = el("tr", { "data-promise": id }, el("td", { text: id }), r.state, r.result, r.fulfill, r.reject, r.handled, r.via);
      p.rows.set(id, r);
    }
    setAttr(r.root, "class", moved.has("promise:" + id + "|") ? "moved" : null);
    setAttr(r.state, "class", "slot slot-state state-" + (pr.state || "unknown"));
    setText(r.state, pr.state ?? "?");
    setText(r.result, pr.result === null || pr.result === undefined ? "\u2014" : (typeof pr.result === "string" ? pr.result : JSON.stringify(pr.result)));
    setText(r.fulfill, pr.fulfill_reactions ?? "undefined");
    setText(r.reject, pr.reject_reactions ?? "undefined");
    setText(r.handled, pr.is_handled ?? "?");
    setText(r.via, pr.via);
    rows.push(r.root);
  }
  place(p.table, rows);
  p.table.hidden = rows.length === 1;
  p.none.hidden = rows.length > 1;
}

// The console's lines by their number since the start (a line never
// changes once written), so a step adds or removes only lines that came
// or went.
const consolePane = { lines: new Map(), lit: null, extraKey: null };

function renderConsole(w, js, moved) {
  const c = consolePane;
  if (!c.body) {
    c.forgotten = el("div", { class: "more" });
    c.extra = el("div", {});
    c.empty = el("div", { class: "empty", text: "nothing printed yet" });
    c.body = fill("console", c.forgotten);
  }
  const first = w.console.forgotten, n = w.console.lines.length;
  const next = new Map(), els = [c.forgotten];
  for (let i = 0; i < n; i++) {
    const [stream, text] = w.console.lines[i];
    const e = c.lines.get(first + i) || el("div", { class: "console-line " + stream, text });
    next.set(first + i, e);
    els.push(e);
  }
  c.lines = next;
  if (c.lit) c.lit.classList.remove("moved");
  c.lit = n && moved.has("console|") ? next.get(first + n - 1) : null;
  if (c.lit) c.lit.classList.add("moved");
  c.forgotten.hidden = !first;
  if (first) setText(c.forgotten, first + " earlier lines");
  const extraKey = JSON.stringify([js.uncaught, js.notes]);
  if (extraKey !== c.extraKey) {
    c.extraKey = extraKey;
    c.extra.replaceChildren(...js.uncaught.map(([m, loc]) => el("div", { class: "console-line stderr", text: "Uncaught " + m + (loc ? " at " + loc : "") })),
      ...js.notes.map((t) => el("div", { class: "console-line note", text: "note: " + t })));
  }
  els.push(c.extra, c.empty);
  c.empty.hidden = n > 0 || c.extra.firstChild !== null;
  place(c.body, els);
}

// ------------------------------------------------------- drawn in place
// A step changes a few boxes; the panes keep their elements across steps
// and touch only what differs, so a step costs what it changed, not the
// size of the world.

function setText(e, v) {
  v = short(v);
  if (e.__text !== v) { e.__text = v; e.textContent = v; }
}

function setAttr(e, k, v) {
  v = v === null || v === undefined ? null : String(v);
  if (e.getAttribute(k) !== v) {
    if (v === null) e.removeAttribute(k); else e.setAttribute(k, v);
  }
}

// Makes `els` the children of `parent`, in order, moving or removing only
// the children that are out of place.
function place(parent, els) {
  const keep = new Set(els);
  for (let c = parent.firstChild; c;) { const n = c.nextSibling; if (!keep.has(c)) c.remove(); c = n; }
  let ref = parent.firstChild;
  for (const e of els) {
    if (e === ref) ref = ref.nextSibling;
    else parent.insertBefore(e, ref);
  }
}

// Lanes by key (`queue:microtask`, `actor:3:user`...), kept across steps.
const lanes = new Map();

function laneRecord(key) {
  let r = lanes.get(key);
  if (r) return r;
  const name = el("span", { class: "lane-name" });
  const ghosts = el("span", { class: "ghosts" }), items = el("span", { class: "items" });
  const more = el("span", { class: "more" }), empty = el("span", { class: "empty", text: "empty" });
  more.hidden = true;
  const root = el("div", { class: "lane", "data-lane": key }, name, el("span", { class: "boxes" }, ghosts, items, more, empty));
  r = { root, name, ghosts, items, more, empty, byKey: new Map(), lit: [] };
  lanes.set(key, r);
  return r;
}

// One lane: `total` elements of which `items` are the first (at most
// LANE_CAP, each `{ item, label }`), and `moved`, what this step did to it.
// The boxes of elements still there are kept; only the ones that came or
// went are added or removed, and "+k more" counts the rest exactly.
function lane(key, name, total, items, moved) {
  const r = laneRecord(key);
  setText(r.name, `${name} (${total})`);
  setAttr(r.root, "data-count", total);
  const next = new Map(), els = [];
  let nameless = 0;
  for (const it of items) {
    // Nameless boxes (messages the trace did not number) are told apart by position.
    let k = it.item === null ? "\u0000" + nameless++ : it.item;
    while (next.has(k)) k += "\u0000";
    let e = r.byKey.get(k);
    if (!e) {
      e = document.createElement("span");
      e.className = "box";
      if (it.item !== null) e.setAttribute("data-item", it.item);
    }
    if (e.__label !== it.label) { e.__label = it.label; e.title = e.textContent = short(it.label); }
    next.set(k, e);
    els.push(e);
  }
  r.byKey = next;
  place(r.items, els);
  for (const e of r.lit) e.classList.remove("moved");
  r.lit = [];
  const ghosts = [];
  for (const m of moved) {
    if (m.action === "push") {
      const e = m.item === null ? undefined : next.get(m.item);
      if (e) { e.classList.add("moved"); r.lit.push(e); }
    } else if (m.action === "pop" || m.action === "drop") {
      ghosts.push(el("span", { class: "box ghost " + m.action, "data-item": m.item, text: (m.action === "pop" ? "\u2190 " : "\u2717 ") + m.label }));
    }
  }
  if (ghosts.length || r.ghosts.firstChild) r.ghosts.replaceChildren(...ghosts);
  const hidden = total - items.length;
  r.more.hidden = hidden <= 0;
  if (hidden > 0) setText(r.more, `+${hidden} more`);
  r.empty.hidden = total > 0 || ghosts.length > 0;
  return r.root;
}

function movedIn(view, key) {
  return (view.moved || []).filter((m) => m.lane === key);
}

// The first LANE_CAP boxes of `lists` (in order), then nameless ones for
// the `untracked` messages counted after them.
function boxItems(lists, untracked) {
  const items = [];
  for (const list of lists) {
    for (let i = 0; i < list.length && items.length < LANE_CAP; i++) {
      const b = list[i];
      items.push({ item: b === null ? null : String(b), label: b === null ? "msg" : "#" + b });
    }
  }
  for (let i = 0; i < untracked && items.length < LANE_CAP; i++) items.push({ item: null, label: "msg" });
  return items;
}

function capacity(policy) {
  const m = /\((\d+)\)$/.exec(policy);
  return m ? Number(m[1]) : null;
}

// Which actors a step can have changed, or null for all of them. One step
// apart, only the event between the two steps changed anything, and an
// actor event changes its own actor's view only (the totals, charts and
// wait-for graph are redrawn apart); the actors highlighted before or now
// are redrawn too, to move the highlights.
function changedActors(view, prev) {
  if (!prev || prev.loop !== view.loop || Math.abs(view.step - prev.step) !== 1) return null;
  const e = (view.step > prev.step ? view : prev).event;
  if (!e) return null;
  const ids = new Set();
  if (e.actor !== undefined && e.actor !== null) ids.add(String(e.actor));
  for (const v of [view, prev]) {
    for (const m of v.moved || []) {
      const x = /^actor:(\d+):/.exec(m.lane);
      if (x) ids.add(x[1]);
    }
  }
  return ids;
}

// `seen`: the rows and lane groups on screen (or near it), by view key
// (`row:ID`, `lanes:ID`), kept by an IntersectionObserver. A jump redraws
// those only and marks the rest `stale`; a stale one is redrawn from the
// current view when it comes into view, or when the page is idle, so a
// jump costs what is on screen, not the number of actors. `data-settled`
// names the step once nothing is stale.
const actorPane = { built: false, ids: null, rows: new Map(), groups: new Map(), seen: new Set(), stale: new Set(), observer: null, catchUp: null, view: null };

function viewKey(e) {
  return e.__viewKey;
}

// Redraws the stale row or lane group `key` from the view shown.
function redrawStale(key) {
  const p = actorPane, view = p.view;
  p.stale.delete(key);
  const [what, id] = key.split(":");
  const a = view && view.world.actors[id];
  if (!a) return;
  if (what === "row") updateActorRow(actorRow(id), id, a);
  else actorLanes(id, a, view);
}

function settle() {
  if (!actorPane.stale.size) document.body.dataset.settled = String(state.step);
}

// Redraws stale rows and lanes while the page is idle, a few at a time.
function scheduleCatchUp() {
  const p = actorPane;
  if (p.catchUp !== null || !p.stale.size) return;
  const idle = window.requestIdleCallback || ((f) => setTimeout(() => f({ timeRemaining: () => 8 }), 16));
  p.catchUp = idle((deadline) => {
    p.catchUp = null;
    for (const key of p.stale) {
      redrawStale(key);
      if (deadline.timeRemaining() < 2) break;
    }
    settle();
    scheduleCatchUp();
  }, { timeout: 200 });
}

function observe(e, key) {
  const p = actorPane;
  e.__viewKey = key;
  if (p.observer) p.observer.observe(e);
}

function buildActorPane() {
  const p = actorPane;
  if (typeof IntersectionObserver === "function") {
    p.observer = new IntersectionObserver((entries) => {
      for (const en of entries) {
        const key = viewKey(en.target);
        if (en.isIntersecting) {
          p.seen.add(key);
          if (p.stale.has(key)) redrawStale(key);
        } else p.seen.delete(key);
      }
      settle();
    }, { rootMargin: "200px" });
  }
  p.none = el("div", { class: "empty", text: "no actor yet" });
  p.head = el("tr", {}, ...["actor", "policy", "status", "mailbox depth", "drops by policy", "rejected/full", "stash", "timers", "turns"].map((h) => el("th", { text: h })));
  p.table = el("table", {}, p.head);
  p.totals = el("div", { class: "legend" });
  p.lanes = el("div", { class: "actor-lanes" });
  fill("actors", p.none, p.table, p.totals, p.lanes);
  p.built = true;
}

function actorRow(id) {
  let r = actorPane.rows.get(id);
  if (r) return r;
  const td = (cls) => el("td", { class: cls });
  r = { name: td(), policy: td(), status: td(), drops: td("drops"), rejected: td("rejected"), stash: td("stash-size"), timers: td(), turns: td(),
    fill: el("span", { class: "depth-fill" }), depth: el("span", { class: "depth" }) };
  r.bar = el("span", { class: "depth-bar" }, r.fill);
  r.root = el("tr", { class: "actor", "data-actor": id }, r.name, r.policy, r.status, el("td", {}, r.bar, r.depth), r.drops, r.rejected, r.stash, r.timers, r.turns);
  actorPane.rows.set(id, r);
  observe(r.root, "row:" + id);
  return r;
}

function updateActorRow(r, id, a) {
  const depth = a.user.boxes.length + a.user.untracked;
  const cap = capacity(a.policy) || Math.max(1, a.max_depth);
  const pct = Math.min(100, (100 * depth) / cap);
  const drops = Object.entries(a.drops).map(([p, n]) => `${p}: ${n}`).join(", ");
  const status = a.status.state === "alive" ? (a.in_turn ? "in turn (" + a.in_turn + ")" : "alive") : a.status.state + ": " + a.status.reason;
  setAttr(r.root, "data-name", a.name);
  setText(r.name, `#${id} ${a.name}`);
  setText(r.policy, a.policy);
  setText(r.status, status + (a.muted_by !== null ? ` \u2014 muted by #${a.muted_by}` : ""));
  setAttr(r.bar, "title", `${depth} of ${cap}`);
  setAttr(r.fill, "class", "depth-fill" + (depth >= cap && capacity(a.policy) ? " full" : ""));
  const width = `${pct.toFixed(1)}%`;
  if (r.fill.__width !== width) { r.fill.__width = width; r.fill.style.width = width; }
  setText(r.depth, ` ${depth}` + (capacity(a.policy) ? ` / ${cap}` : ""));
  setAttr(r.drops, "data-drops", Object.values(a.drops).reduce((x, y) => x + y, 0));
  setText(r.drops, drops || "0");
  setText(r.rejected, String(a.rejected + a.full));
  setText(r.stash, String(a.stash.length));
  setText(r.timers, String(Object.keys(a.timers).length));
  setText(r.turns, String(a.turns));
}

// An actor's lanes: its mailbox, and its stash and timers when it has any
// (or this step moved one).
function actorLanes(id, a, view) {
  let g = actorPane.groups.get(id);
  if (!g) { g = el("div", { class: "actor-lane-group", "data-actor": id }); actorPane.groups.set(id, g); observe(g, "lanes:" + id); }
  const key = (what) => `actor:${id}:${what}`;
  const out = [lane(key("user"), `#${id} mailbox`, a.user.boxes.length + a.user.untracked, boxItems([a.user.boxes], a.user.untracked), movedIn(view, key("user")))];
  const stashMoved = movedIn(view, key("stash"));
  if (a.stash.length || a.redelivery.length || stashMoved.length) {
    out.push(lane(key("stash"), `#${id} stash`, a.redelivery.length + a.stash.length, boxItems([a.redelivery, a.stash], 0), stashMoved));
  }
  const timers = [];
  let n = 0;
  for (const t in a.timers) if (n++ < LANE_CAP) timers.push({ item: t, label: `timer ${t} @${ms(a.timers[t])}` });
  const timersMoved = movedIn(view, key("timers"));
  if (n || timersMoved.length) out.push(lane(key("timers"), `#${id} timers`, n, timers, timersMoved));
  place(g, out);
  return g;
}

function renderActors(view, prev) {
  const w = view.world, p = actorPane;
  if (!p.built) buildActorPane();
  p.view = view;
  const ids = Object.keys(w.actors).sort((a, b) => Number(a) - Number(b));
  const changed = changedActors(view, prev);
  const idsKey = ids.join(",");
  for (const id of ids) {
    const fresh = !p.rows.has(id);
    if (fresh || (changed !== null && changed.has(id)) || (changed === null && !p.observer)) {
      updateActorRow(actorRow(id), id, w.actors[id]);
      actorLanes(id, w.actors[id], view);
      p.stale.delete("row:" + id);
      p.stale.delete("lanes:" + id);
    } else if (changed === null) {
      // A jump: what is on screen now, the rest when it is seen or idle.
      for (const key of ["row:" + id, "lanes:" + id]) {
        if (p.seen.has(key)) { p.stale.delete(key); redrawStale(key); } else p.stale.add(key);
      }
    }
  }
  for (const key of p.stale) if (!(key.split(":")[1] in w.actors)) p.stale.delete(key);
  if (p.ids !== idsKey) {
    p.ids = idsKey;
    place(p.table, [p.head, ...ids.map((id) => p.rows.get(id).root)]);
    place(p.lanes, ids.map((id) => p.groups.get(id)));
    p.none.hidden = ids.length > 0;
    p.table.hidden = ids.length === 0;
  }
  const t = w.totals;
  setText(p.totals, `dropped: ${JSON.stringify(t.dropped)} \u00b7 rejected: ${t.rejected} \u00b7 full: ${t.full} \u00b7 dead letters: ${JSON.stringify(t.dead_letters)} \u00b7 stale replies: ${JSON.stringify(t.stale)} \u00b7 failed turns: ${t.failures}`);
  renderCharts(w, view);
  renderWaitFor(view.wait_for, w);
  scheduleCatchUp();
}

let chartsDrawn = null, waitForDrawn = null;
// Each chart's picture, by actor: the definition it was drawn for and the
// drawing (made by the server's renderer, the one of `turno chart svg`).
const chartPictures = new Map();

// The transitions the chart took since its last external event (the
// macrostep in progress or just finished), as positions in its
// definition (the picture's data-transition): what the trace's
// chart_transition events name, so a self-transition, or one of two
// transitions that differ only by guard, is the one marked. A trace from
// a writer that records no positions (its chart_define names no root)
// marks the last transition by its source, targets and event.
function takenIndices(c) {
  if (c.root != null) return (c.taken || []).map(String);
  if (!c.last_transition) return [];
  const [src, targets] = c.last_transition;
  const same = (t) => t.source === src && t.targets.length === targets.length && t.targets.every((x, i) => x === targets[i]);
  const all = c.transitions.map((t, i) => [t, i]).filter(([t]) => same(t));
  if (!all.length) return [];
  const byEvent = all.find(([t]) => (t.event ?? null) === (c.event ?? null));
  return [String((byEvent || all[0])[1])];
}

function markChart(box, c) {
  const pic = box.querySelector("svg");
  if (!pic) return;
  const active = new Set(c.active);
  for (const g of pic.querySelectorAll("[data-state]")) g.classList.toggle("active", active.has(g.dataset.state));
  const taken = new Set(takenIndices(c));
  for (const g of pic.querySelectorAll("[data-transition]")) {
    const on = taken.has(g.dataset.transition);
    g.classList.toggle("taken", on);
    for (const p of g.querySelectorAll("path")) p.setAttribute("marker-end", on ? "url(#sc-arrow-taken)" : "url(#sc-arrow)");
  }
  box.dataset.taken = [...taken].join(" ");
}

function renderCharts(w, view) {
  // Redrawn only when a chart changed (a step rarely touches one).
  const key = JSON.stringify(w.charts);
  if (key === chartsDrawn) return;
  chartsDrawn = key;
  const charts = Object.entries(w.charts);
  if (!charts.length) { fill("charts", el("div", { class: "empty", text: "no statechart in this trace" })); chartPictures.clear(); return; }
  const out = [];
  for (const [id, c] of charts) {
    const def = JSON.stringify([c.machine, c.states, c.transitions]);
    let p = chartPictures.get(id);
    if (!p || p.def !== def) {
      p = { def, box: el("div", { class: "chart-picture", "data-chart-picture": id }) };
      chartPictures.set(id, p);
      const token = new URLSearchParams(location.search).get("token");
      fetch(`/api/chart.svg?k=${view.step ?? 0}&actor=${id}` + (token ? "&token=" + encodeURIComponent(token) : "")).then(async (r) => {
        if (!r.ok) throw new Error(await r.text());
        const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
        const pic = doc.documentElement;
        if (pic.nodeName !== "svg" || chartPictures.get(id) !== p) return;
        p.box.replaceChildren(document.importNode(pic, true));
        markChart(p.box, p.chart);
        p.box.dataset.drawn = "1";
      }).catch((e) => { p.box.replaceChildren(el("div", { class: "drops", text: "cannot draw the chart: " + e.message })); });
    }
    p.chart = c;
    markChart(p.box, c);
    out.push(el("div", { class: "chart", "data-chart": id },
      el("div", { text: `#${id} ${c.machine ?? "(no definition recorded)"} \u2014 event: ${c.event ?? "none"}` }),
      p.box,
      el("div", { class: "legend", text: "active: " + [...c.active].join(", ") })));
  }
  fill("charts", ...out);
}

function renderWaitFor(g, w) {
  const edges = (g && g.edges) || [];
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))];
  // Redrawn only when the graph (or a name on it) changed.
  const key = JSON.stringify([edges, nodes.map((n) => w.actors[n] ? w.actors[n].name : "")]);
  if (key === waitForDrawn) return;
  waitForDrawn = key;
  if (!edges.length) { fill("waitfor", el("div", { class: "empty", text: "nobody waits for anybody" })); return; }
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

// ---------------------------------------------------------------- queues over time
// The server's index folds each actor's series into one bucket per pixel
// (/api/queues): the page draws what it gets, whatever the trace's size.
// In live mode the page asks again every PLOT_EVERY ms, so the plots
// follow the running system over the window the server keeps.
const plots = { data: null, px: 0, svgs: [], live: false, token: null, loads: 0 };
window.__inspector.plots = plots;
const PLOT_H = 90, LOSS_H = 14, PLOT_EVERY = 1000;

async function loadPlots() {
  const body = $("plots");
  const px = Math.max(100, Math.min(4096, Math.floor(body.clientWidth - 8)));
  const t0 = performance.now();
  const r = await fetch(`/api/queues?px=${px}` + (plots.token ? "&token=" + encodeURIComponent(plots.token) : ""));
  if (!r.ok) { fill("plots", el("div", { class: "drops", text: await r.text() })); return; }
  plots.data = await r.json();
  plots.px = px;
  plots.loads++;
  const t1 = performance.now();
  drawPlots();
  // [request and decode, drawing, drawn at (page clock)], for the bench.
  plots.ms = [t1 - t0, performance.now() - t1, performance.now()];
}

function seconds(s) {
  return s >= 1 ? s.toFixed(3) + " s" : (s * 1e3).toFixed(3) + " ms";
}

function drawPlots() {
  const d = plots.data, px = plots.px;
  if (plots.live) $("pane-plots").querySelector("h2 small").textContent = `(per actor: mailbox depth, messages lost, sojourn; the system's last ${d.window_ns / 1e9} s at most, redrawn every ${PLOT_EVERY / 1000} s)`;
  if (!d.plots.length) { fill("plots", el("div", { class: "empty", text: plots.live ? "no mailbox traffic yet" : "no mailbox traffic in this trace" })); return; }
  plots.svgs = [];
  const out = [];
  for (const p of d.plots) {
    const b = p.buckets, n = b.length;
    const maxDepth = Math.max(1, ...b.map((x) => x.depth));
    const lost = b.map((x) => x.evicted + x.dropped + x.rejected + x.full);
    const maxLost = Math.max(1, ...lost);
    const maxSojourn = Math.max(1, ...b.map((x) => x.sojourn_max_ns));
    const W = n, H = PLOT_H + LOSS_H + 4;
    const s = svg("svg", { class: "queue-plot", viewBox: `0 0 ${W} ${H}`, width: W, height: H, preserveAspectRatio: "none",
      "data-actor": p.actor, "data-name": p.name, "data-kind": p.kind, "data-max-depth": Math.max(...b.map((x) => x.depth)) });
    s.append(svg("rect", { class: "plot-bg", x: 0, y: 0, width: W, height: PLOT_H }));
    // Depth: the deepest point of each pixel, as a filled step line.
    let path = `M0,${PLOT_H}`;
    b.forEach((x, i) => { const y = PLOT_H - (x.depth / maxDepth) * (PLOT_H - 2); path += ` L${i},${y.toFixed(1)} L${i + 1},${y.toFixed(1)}`; });
    path += ` L${n},${PLOT_H} Z`;
    s.append(svg("path", { class: "depth-area", d: path }));
    // Sojourn of the messages taken in each pixel (mean), on its own scale.
    let soj = "";
    b.forEach((x, i) => { if (x.taken) soj += `${soj ? " L" : "M"}${i + 0.5},${(PLOT_H - (x.sojourn_mean_ns / maxSojourn) * (PLOT_H - 2)).toFixed(1)}`; });
    if (soj) s.append(svg("path", { class: "sojourn-line", d: soj }));
    // Losses, below: one bar per pixel.
    lost.forEach((l, i) => { if (l) s.append(svg("rect", { class: "loss", x: i, width: 1, y: PLOT_H + 4 + LOSS_H * (1 - l / maxLost), height: LOSS_H * l / maxLost })); });
    // A running system has no steps to go to: live plots end at its
    // latest event, with no cursor and no click.
    if (!plots.live) {
      const cursor = svg("line", { class: "cursor", x1: 0, x2: 0, y1: 0, y2: H });
      s.append(cursor);
      s.addEventListener("click", (e) => {
        const r = s.getBoundingClientRect();
        const i = Math.max(0, Math.min(n - 1, Math.floor(((e.clientX - r.left) / r.width) * n)));
        go(b[i].step);
      });
      plots.svgs.push({ cursor, p });
    }
    const sum = (k) => b.reduce((a, x) => a + x[k], 0);
    const losses = ["evicted", "dropped", "rejected", "full"].filter((k) => sum(k)).map((k) => `${k} ${sum(k)}`).join(", ") || "none";
    const L = p.little;
    out.push(el("div", { class: "queue", "data-actor": p.actor, "data-kind": p.kind },
      el("div", { class: "queue-title", text: `#${p.actor} ${p.kind === "stream" ? "stream " : ""}${p.name} ${p.policy} \u2014 depth (blue, max ${p.max_depth}), sojourn of taken messages (orange, up to ${seconds(maxSojourn / 1e9)}), lost below (red): ${losses}` }),
      s,
      el("div", { class: "little", "data-predicted": L.predicted_depth, "data-mean": L.mean_depth,
        text: `Little's law: arrivals ${L.arrival_rate.toFixed(1)}/s \u00d7 mean sojourn ${seconds(L.mean_sojourn_s)} = ${L.predicted_depth.toFixed(2)} queued, against a mean depth of ${L.mean_depth.toFixed(2)}` })));
  }
  fill("plots", ...out);
  if (state.lastView && !plots.live) markPlots(state.lastView.world.t_ns);
}

// Live mode: the plots again once the last ones are drawn, while the
// connection is open.
async function followPlots(ws) {
  if (ws.readyState > WebSocket.OPEN) return;
  try { await loadPlots(); } catch (e) { showError("queue plots: " + e); }
  setTimeout(() => followPlots(ws), PLOT_EVERY);
}

// The current step's time on every plot.
function markPlots(t) {
  const d = plots.data;
  if (!d) return;
  for (const { cursor, p } of plots.svgs) {
    const x = ((Number(t) - d.t0) / Math.max(1, d.t1 - d.t0)) * p.buckets.length;
    cursor.setAttribute("x1", x.toFixed(1));
    cursor.setAttribute("x2", x.toFixed(1));
  }
}

// The timeline is drawn once; a step moves its cursor.
const timeline = { cursor: null };

function renderTimeline(view) {
  const m = state.meta;
  if (!m) return;
  const W = 900, H = 56, end = Math.max(1, m.end_t_ns);
  const x = (t) => 10 + ((W - 20) * Number(t)) / end;
  if (!timeline.cursor) {
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", height: H, preserveAspectRatio: "none" });
    s.append(svg("line", { class: "axis", x1: 10, y1: 30, x2: W - 10, y2: 30 }));
    for (const [step, t] of m.renders) {
      const tick = svg("line", { class: "tick", x1: x(t), y1: 14, x2: x(t), y2: 46, "data-step": step });
      tick.append(svg("title", {}, `render at ${ms(t)} (step ${step})`));
      tick.addEventListener("click", () => go(step));
      s.append(tick);
    }
    timeline.cursor = svg("line", { class: "cursor", y1: 6, y2: 54 });
    s.append(timeline.cursor);
    s.append(svg("text", { x: 10, y: 12 }, "0"));
    s.append(svg("text", { x: W - 120, y: 12 }, ms(m.end_t_ns)));
    fill("timeline", s, el("div", { class: "legend", text: `${m.renders.length} render steps \u00b7 ${m.tasks} tasks \u00b7 ${m.turns} turns \u00b7 indexed in ${m.index_ms.toFixed(0)} ms` }));
  }
  const cx = x(view.world.t_ns);
  setAttr(timeline.cursor, "x1", cx);
  setAttr(timeline.cursor, "x2", cx);
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
  plots.live = true;
  plots.token = token;
  followPlots(ws);
  ws.onmessage = (msg) => {
    const snap = JSON.parse(msg.data);
    state.live = snap;
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

// ---------------------------------------------------------------- cluster

// A cluster trace: one lane per node, each remote message's marks (send,
// wire, verdict, turn) on the lanes of the nodes that recorded them.
const cluster = { data: null, tracks: new Map(), msg: null };
const MARKS = [["send", "send"], ["wire", "wire"], ["receive", "verdict"], ["turn", "turn"]];

async function loadCluster() {
  const r = await fetch("/api/cluster");
  if (!r.ok) return;
  cluster.data = await r.json();
  const len = Math.max(1, state.len);
  const lanes = cluster.data.nodes.map((n) => {
    const track = el("div", { class: "node-track" }, el("span", { class: "cursor" }));
    cluster.tracks.set(n, track);
    return el("div", { class: "node-lane", "data-node": n }, el("span", { class: "node-name", text: n }), track);
  });
  fill("lanes", ...lanes);
  cluster.data.messages.forEach((m, i) => {
    for (const [key, what] of MARKS) {
      const k = m[key];
      const track = k && cluster.tracks.get(k.node);
      if (!track) continue;
      const mark = el("span", { class: "mark", "data-msg": i, "data-what": what, "data-step": k.step + 1, title: `${m.msg} ${what} (step ${k.step + 1})` });
      mark.style.left = `${(100 * (k.step + 1)) / len}%`;
      mark.onclick = () => { pickMessage(i); go(k.step + 1); };
      track.append(mark);
    }
  });
  const sel = $("cluster-msg");
  sel.append(el("option", { value: "", text: "(none)" }), ...cluster.data.messages.map((m, i) =>
    el("option", { value: i, text: `${m.msg} ${m.how ?? "?"} to ${m.to_node ?? "?"} ${m.to_path ?? ""}: ${m.verdict ?? "no verdict"}` })));
  sel.onchange = () => pickMessage(sel.value === "" ? null : Number(sel.value));
  $("pane-cluster").hidden = false;
}

// Follows message `i`: its marks lit on the lanes, its path listed in
// order (each a step to go to).
function pickMessage(i) {
  cluster.msg = i;
  $("cluster-msg").value = i === null ? "" : String(i);
  for (const m of document.querySelectorAll("#lanes .mark")) m.classList.toggle("follow", i !== null && m.dataset.msg === String(i));
  const m = i === null ? null : cluster.data.messages[i];
  const items = !m ? [] : MARKS.filter(([key]) => m[key]).map(([key, what]) => {
    const k = m[key];
    const li = el("li", { "data-what": what, "data-node": k.node, "data-step": k.step + 1,
      text: `${what}${what === "verdict" ? ": " + m.verdict : ""} on ${k.node} (step ${k.step + 1})` });
    li.onclick = () => go(k.step + 1);
    return li;
  });
  fill("cluster-path", ...items);
  document.body.dataset.follow = i === null ? "" : String(i);
  markCluster(state.step);
}

function markCluster(step) {
  if (!cluster.data) return;
  const len = Math.max(1, state.len);
  for (const t of cluster.tracks.values()) t.firstChild.style.left = `${(100 * step) / len}%`;
  for (const li of document.querySelectorAll("#cluster-path li")) li.classList.toggle("here", li.dataset.step === String(step));
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
  if (document.body.dataset.mode === "actor") await loadPlots();
  if (meta.header.nodes || meta.header.node) await loadCluster();
  document.body.dataset.ready = "1";
}

main().catch((e) => showError(String(e)));
