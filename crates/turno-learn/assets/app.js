"use strict";
// turno learn: the page's script. Everything a snippet produces is drawn as
// text (textContent), never as markup.

// ---------------------------------------------------------------- words --
const WORDS = {
  en: {
    "title": "The event loop, as a page you press",
    "intro": "One thread runs your JavaScript. It takes a task, runs it to the end, empties the microtask queue, and, in a browser, sometimes paints. Everything below is live: press it, edit it, step it. The steppers run your code on turno's explorer (real JavaScript on a model of the loop, on virtual time); the other half runs it right here, in this page.",
    "nav.freeze": "The freeze button", "nav.steppers": "Steppers", "nav.both": "Run both", "nav.guess": "Guess", "nav.node": "Node is different",
    "freeze.h": "1. The freeze button",
    "freeze.p1": "The green bar moves because a requestAnimationFrame callback moves it, once per frame, on the main thread. The amber bar moves by a CSS transform animation, which the browser's compositor runs on its own thread. The red button keeps the main thread busy in a loop for as long as you choose. While it runs: the green bar and the frame counter stop; the amber bar keeps going; what you type waits, and appears all at once when the loop ends.",
    "freeze.frames": "Frames painted:", "freeze.type": "Type here while it is frozen:", "freeze.block": "Block for (ms):", "freeze.go": "Freeze the page",
    "freeze.report": (r) => `The main thread was blocked for ${r.ms} ms. Longest gap between two frames: ${r.gap} ms. Keys that arrived during the block: ${r.keys}, shown ${r.after} ms after it ended.`,
    "freeze.h2": "The same scenario on the explorer",
    "freeze.p2": "The same page as a program on the explorer's html model: a requestAnimationFrame loop, an animation on the compositor lane, a timer that blocks the main thread for 400 ms, and two keys pressed during the block (at 300 ms and 400 ms). Step through it: the compositor keeps drawing frames while the main thread is busy; the keys wait in the task queue and run after the loop.",
    "steppers.h": "2. Steppers",
    "steppers.p": "Pick a snippet, edit it, and walk through it one push at a time: buttons, the slider, or the arrow keys once the state panel has focus. Every edit runs again at once. The promise table shows the slots the specification gives every promise: [[PromiseState]], [[PromiseResult]], its two reaction lists and [[PromiseIsHandled]]. The Node tab runs the same code on the Node model, with its phases and process.nextTick.",
    "both.h": "3. Run both",
    "both.p": "Two loops with the same body and the same budget (200 ms): one schedules itself with queueMicrotask, the other with setTimeout(…, 0). Each counts its callbacks and the frames painted from its start until the page paints again after it ends. The microtask loop never lets the browser paint; the task loop lets it paint between tasks. Run them here, in your browser, and on the explorer with its cost model (10 ns per engine instruction).",
    "both.go": "Run both loops", "both.callbacks": "callbacks", "both.frames": "frames",
    "both.mt.page": "microtask loop, this page", "both.mt.explorer": "microtask loop, explorer",
    "both.t.page": "setTimeout loop, this page", "both.t.explorer": "setTimeout loop, explorer",
    "both.essay": "What to expect: the microtask loop paints exactly one frame, the one after it ends, however many callbacks it ran; the setTimeout loop paints about one frame per 16.7 ms and runs far fewer callbacks, because after five nested timers each one waits at least 4 ms.",
    "both.code": "The code",
    "guess.h": "4. Guess",
    "guess.p": "Put the lines in the order you think they print (the arrows move a line), then check. The answer comes twice: from your own browser, running the snippet in a sandboxed frame, and from the explorer. The page says whether the two agree, and opens the stepper on the snippet.",
    "guess.check": "Check", "guess.open": "Step through it",
    "guess.right": "Your order is right.", "guess.wrong": "Not this time.",
    "guess.browser": "Your browser printed:", "guess.explorer": "The explorer printed:",
    "guess.agree": "They agree.", "guess.disagree": "They disagree.",
    "node.h": "5. Node is different",
    "node.p": "Node's loop goes round in phases: timers, pending callbacks, poll (I/O), check (setImmediate), close. Inside a timer callback, setImmediate always runs before a new setTimeout(…, 0): the check phase comes before the loop returns to the timers phase. And process.nextTick is not a microtask: its queue is emptied before the promise jobs, after every callback.",
    "st.first": "first step", "st.prev": "step back", "st.next": "step forward", "st.last": "last step",
    "st.share": "Share link", "st.running": "running…",
    "st.stack": "Call stack", "st.jsstack": "JavaScript frames", "st.queues": "Queues", "st.promises": "Promises", "st.console": "Console", "st.loop": "Loop",
    "st.empty": "(empty)", "st.start": "Step 0: nothing has run yet.",
    "st.step": (k, n) => `step ${k} of ${n}`,
    "st.at": (t) => `t = ${t}`,
    "st.phase": "phase", "st.frames": "frames rendered", "st.compositor": "compositor frames", "st.animations": "animations",
    "st.cut": (n, m) => `showing the first ${n} of ${m} steps`,
    "st.problem": "Stopped:", "st.error": "Error", "st.uncaught": "Uncaught",
    "p.state": "[[PromiseState]]", "p.result": "[[PromiseResult]]", "p.fulfill": "[[PromiseFulfillReactions]]", "p.reject": "[[PromiseRejectReactions]]", "p.handled": "[[PromiseIsHandled]]", "p.via": "followed from",
    "snip.competitors": "Three competitors", "snip.slots": "A promise and its slots", "snip.chain": "Three .thens", "snip.await": "async / await null",
    "snip.immediate": "setImmediate vs setTimeout", "snip.tick": "nextTick before promises", "snip.phases": "The phases",
    "snip.shared": "Shared snippet",
    "tl.main": "main thread", "tl.raf": "rAF callbacks", "tl.compositor": "compositor", "tl.input": "input",
    "tl.page": "This page, the last freeze:", "tl.explorer": "The explorer's run (the line is the current step; click to jump):",
  },
  es: {
    "title": "El bucle de eventos, en una página que se pulsa",
    "intro": "Un solo hilo ejecuta tu JavaScript. Toma una tarea, la ejecuta hasta el final, vacía la cola de microtareas y, en un navegador, a veces pinta. Todo lo que sigue está vivo: púlsalo, edítalo, recórrelo paso a paso. Los recorridos ejecutan tu código en el explorador de turno (JavaScript de verdad sobre un modelo del bucle, en tiempo virtual); la otra mitad lo ejecuta aquí mismo, en esta página.",
    "nav.freeze": "El botón que congela", "nav.steppers": "Paso a paso", "nav.both": "Los dos bucles", "nav.guess": "Adivina", "nav.node": "Node es distinto",
    "freeze.h": "1. El botón que congela",
    "freeze.p1": "La barra verde se mueve porque una llamada de requestAnimationFrame la mueve, una vez por fotograma, en el hilo principal. La barra ámbar se mueve con una animación CSS de transform, que el compositor del navegador ejecuta en su propio hilo. El botón rojo mantiene ocupado el hilo principal en un bucle el tiempo que elijas. Mientras dura: la barra verde y el contador se paran; la ámbar sigue; lo que escribas espera, y aparece de golpe cuando el bucle termina.",
    "freeze.frames": "Fotogramas pintados:", "freeze.type": "Escribe aquí mientras está congelada:", "freeze.block": "Bloquear durante (ms):", "freeze.go": "Congelar la página",
    "freeze.report": (r) => `El hilo principal estuvo bloqueado ${r.ms} ms. Mayor hueco entre dos fotogramas: ${r.gap} ms. Teclas llegadas durante el bloqueo: ${r.keys}, mostradas ${r.after} ms después de que terminara.`,
    "freeze.h2": "El mismo escenario en el explorador",
    "freeze.p2": "La misma página como programa en el modelo html del explorador: un bucle de requestAnimationFrame, una animación en el carril del compositor, un temporizador que bloquea el hilo principal 400 ms y dos teclas pulsadas durante el bloqueo (a los 300 ms y a los 400 ms). Recórrelo: el compositor sigue dibujando fotogramas mientras el hilo principal está ocupado; las teclas esperan en la cola de tareas y se ejecutan después del bucle.",
    "steppers.h": "2. Paso a paso",
    "steppers.p": "Elige un fragmento, edítalo y recórrelo inserción a inserción: con los botones, el deslizador o las flechas del teclado cuando el panel de estado tiene el foco. Cada cambio se vuelve a ejecutar enseguida. La tabla de promesas muestra las ranuras que la especificación da a cada promesa: [[PromiseState]], [[PromiseResult]], sus dos listas de reacciones y [[PromiseIsHandled]]. La pestaña Node ejecuta el mismo código en el modelo de Node, con sus fases y process.nextTick.",
    "both.h": "3. Los dos bucles",
    "both.p": "Dos bucles con el mismo cuerpo y el mismo presupuesto (200 ms): uno se reprograma con queueMicrotask, el otro con setTimeout(…, 0). Cada uno cuenta sus llamadas y los fotogramas pintados desde que empieza hasta que la página vuelve a pintar después de que termine. El bucle de microtareas no deja pintar al navegador; el de tareas le deja pintar entre tarea y tarea. Ejecútalos aquí, en tu navegador, y en el explorador con su modelo de coste (10 ns por instrucción del motor).",
    "both.go": "Ejecutar los dos bucles", "both.callbacks": "llamadas", "both.frames": "fotogramas",
    "both.mt.page": "bucle de microtareas, esta página", "both.mt.explorer": "bucle de microtareas, explorador",
    "both.t.page": "bucle de setTimeout, esta página", "both.t.explorer": "bucle de setTimeout, explorador",
    "both.essay": "Qué esperar: el bucle de microtareas pinta exactamente un fotograma, el de después de terminar, por muchas llamadas que haya hecho; el de setTimeout pinta más o menos un fotograma cada 16,7 ms y hace muchas menos llamadas, porque tras cinco temporizadores anidados cada uno espera al menos 4 ms.",
    "both.code": "El código",
    "guess.h": "4. Adivina",
    "guess.p": "Ordena las líneas como crees que se imprimen (las flechas mueven una línea) y comprueba. La respuesta llega dos veces: de tu propio navegador, que ejecuta el fragmento en un marco aislado, y del explorador. La página dice si coinciden y abre el recorrido paso a paso sobre el fragmento.",
    "guess.check": "Comprobar", "guess.open": "Recorrerlo paso a paso",
    "guess.right": "Tu orden es correcto.", "guess.wrong": "Esta vez no.",
    "guess.browser": "Tu navegador imprimió:", "guess.explorer": "El explorador imprimió:",
    "guess.agree": "Coinciden.", "guess.disagree": "No coinciden.",
    "node.h": "5. Node es distinto",
    "node.p": "El bucle de Node da vueltas por fases: temporizadores, llamadas pendientes, sondeo (E/S), comprobación (setImmediate), cierre. Dentro de la llamada de un temporizador, setImmediate siempre va antes que un setTimeout(…, 0) nuevo: la fase de comprobación llega antes de que el bucle vuelva a la de temporizadores. Y process.nextTick no es una microtarea: su cola se vacía antes que los trabajos de las promesas, después de cada llamada.",
    "st.first": "primer paso", "st.prev": "paso atrás", "st.next": "paso adelante", "st.last": "último paso",
    "st.share": "Enlace para compartir", "st.running": "ejecutando…",
    "st.stack": "Pila de llamadas", "st.jsstack": "Marcos de JavaScript", "st.queues": "Colas", "st.promises": "Promesas", "st.console": "Consola", "st.loop": "Bucle",
    "st.empty": "(vacía)", "st.start": "Paso 0: todavía no se ha ejecutado nada.",
    "st.step": (k, n) => `paso ${k} de ${n}`,
    "st.at": (t) => `t = ${t}`,
    "st.phase": "fase", "st.frames": "fotogramas renderizados", "st.compositor": "fotogramas del compositor", "st.animations": "animaciones",
    "st.cut": (n, m) => `se muestran los primeros ${n} de ${m} pasos`,
    "st.problem": "Detenido:", "st.error": "Error", "st.uncaught": "Sin capturar",
    "p.state": "[[PromiseState]]", "p.result": "[[PromiseResult]]", "p.fulfill": "[[PromiseFulfillReactions]]", "p.reject": "[[PromiseRejectReactions]]", "p.handled": "[[PromiseIsHandled]]", "p.via": "seguida desde",
    "snip.competitors": "Tres competidores", "snip.slots": "Una promesa y sus ranuras", "snip.chain": "Tres .then", "snip.await": "async / await null",
    "snip.immediate": "setImmediate frente a setTimeout", "snip.tick": "nextTick antes que las promesas", "snip.phases": "Las fases",
    "snip.shared": "Fragmento compartido",
    "tl.main": "hilo principal", "tl.raf": "llamadas rAF", "tl.compositor": "compositor", "tl.input": "entrada",
    "tl.page": "Esta página, la última congelación:", "tl.explorer": "La ejecución del explorador (la línea es el paso actual; haz clic para saltar):",
  },
};

let lang = (navigator.language || "en").toLowerCase().startsWith("es") ? "es" : "en";
try { const saved = localStorage.getItem("turno-learn-lang"); if (saved === "en" || saved === "es") lang = saved; } catch (_) { /* no storage */ }
const onLang = [];

function t(key, ...args) {
  const w = WORDS[lang][key] ?? WORDS.en[key] ?? key;
  return typeof w === "function" ? w(...args) : w;
}

function setLang(l) {
  lang = l;
  try { localStorage.setItem("turno-learn-lang", l); } catch (_) { /* no storage */ }
  document.documentElement.lang = l;
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const b of document.querySelectorAll(".lang button")) b.setAttribute("aria-pressed", String(b.dataset.lang === l));
  onLang.forEach((f) => f());
}

// ------------------------------------------------------------- helpers --
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function ms(ns) {
  const v = ns / 1e6;
  return (Number.isInteger(v) ? v : v.toFixed(3)) + " ms";
}

async function runOnExplorer(body) {
  const r = await fetch("/api/run", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return r.json();
}

// base64url of UTF-8, for the share link
function encodeShare(obj) {
  const bytes = new TextEncoder().encode(JSON.stringify(obj));
  let s = "";
  bytes.forEach((b) => { s += String.fromCharCode(b); });
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
function decodeShare(text) {
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(s, (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

// ------------------------------------------------------------ snippets --
const SNIPPETS = {
  main: [
    { key: "snip.competitors", code:
`setTimeout(() => console.log('timer'), 0);
Promise.resolve().then(() => console.log('promise'));
console.log('script');
` },
    { key: "snip.slots", code:
`const p = new Promise((resolve) => {
  setTimeout(() => resolve('done'), 100);
});
p.then((v) => console.log('fulfilled with', v));
p.catch((e) => console.log('rejected with', e));
console.log('pending for now');
` },
    { key: "snip.chain", code:
`Promise.resolve(1)
  .then((x) => x + 1)
  .then((x) => x * 2)
  .then((x) => console.log('result', x));
console.log('sync');
` },
    { key: "snip.await", code:
`async function f() {
  console.log('f starts');
  await null;
  console.log('f resumes');
}
f();
Promise.resolve().then(() => console.log('then'));
console.log('script ends');
` },
  ],
  node: [
    { key: "snip.immediate", code:
`setTimeout(() => {
  setTimeout(() => console.log('timeout'), 0);
  setImmediate(() => console.log('immediate'));
}, 0);
` },
    { key: "snip.tick", code:
`Promise.resolve().then(() => console.log('promise'));
process.nextTick(() => console.log('nextTick'));
console.log('main');
` },
    { key: "snip.phases", code:
`setImmediate(() => console.log('check phase: immediate'));
setTimeout(() => {
  console.log('timers phase: timeout');
  process.nextTick(() => console.log('nextTick after the timeout'));
  Promise.resolve().then(() => console.log('promise after the nextTick'));
}, 5);
` },
  ],
  freeze: [
    { key: "freeze.h2", input: [{ at_ms: 300, type: "key", key: "h" }, { at_ms: 400, type: "key", key: "i" }], code:
`const bar = document.createElement('div');
document.body.appendChild(bar);
bar.animate([{ transform: 'translateX(0)' }, { transform: 'translateX(300px)' }],
  { duration: 1000, iterations: Infinity });
let frames = 0;
function frame() {
  frames++;
  if (performance.now() < 700) requestAnimationFrame(frame);
}
requestAnimationFrame(frame);
document.body.addEventListener('keydown', (e) =>
  console.log('key ' + e.key + ' at ' + Math.round(performance.now()) + ' ms'));
setTimeout(function block() {
  console.log('block starts at ' + Math.round(performance.now()) + ' ms, frames ' + frames);
  const end = performance.now() + 400;
  let x = 1;
  while (performance.now() < end) {
    x = (x * 31 + 7) % 1000003; x = (x * 31 + 7) % 1000003;
    x = (x * 31 + 7) % 1000003; x = (x * 31 + 7) % 1000003;
    x = (x * 31 + 7) % 1000003; x = (x * 31 + 7) % 1000003;
  }
  console.log('block ends at ' + Math.round(performance.now()) + ' ms, frames ' + frames);
}, 200);
` },
  ],
};

// ------------------------------------------------------------ timeline --
// Lanes on one time axis (milliseconds): the main thread's busy spans, the
// rAF callbacks, the compositor's frames (busy: drawn while the main thread
// was busy), and each key from its arrival to its handling.
function drawLanes(box, tl, cursor) {
  box.textContent = "";
  if (!tl) return;
  const span = Math.max(tl.end - tl.start, 1);
  const pos = (v) => `${Math.max(0, Math.min(100, (100 * (v - tl.start)) / span)).toFixed(3)}%`;
  const lane = (name, cls) => {
    const track = el("div", { class: "lane-track" });
    box.append(el("div", { class: "lane " + cls }, el("span", { class: "lane-name", text: name }), track));
    return track;
  };
  const bar = (track, a, b, cls, label) => {
    const d = el("div", { class: "span " + (cls || ""), "data-from": String(Math.round(a)), "data-to": String(Math.round(b)), title: label || "" });
    d.style.left = pos(a);
    d.style.width = `${Math.max(0, (100 * (b - a)) / span).toFixed(3)}%`;
    if (label) d.textContent = label;
    track.append(d);
  };
  const tick = (track, v, cls) => {
    const d = el("div", { class: "tick " + (cls || ""), "data-t": String(Math.round(v)) });
    d.style.left = pos(v);
    track.append(d);
  };
  const main = lane(t("tl.main"), "l-main");
  for (const [a, b] of tl.busy) bar(main, a, b, "busy");
  const raf = lane(t("tl.raf"), "l-raf");
  for (const f of tl.frames) tick(raf, f);
  if (tl.compositor) {
    const comp = lane(t("tl.compositor"), "l-comp");
    for (const [f, state] of tl.compositor) tick(comp, f, state);
  }
  const input = lane(t("tl.input"), "l-input");
  for (const i of tl.inputs) bar(input, i.at, i.handled, "wait", i.key);
  const axis = el("div", { class: "lane axis" }, el("span", { class: "lane-name" }),
    el("div", { class: "lane-track" }, el("span", { class: "from", text: `${Math.round(tl.start)} ms` }), el("span", { class: "to", text: `${Math.round(tl.end)} ms` })));
  box.append(axis);
  if (cursor != null) {
    const c = el("div", { class: "cursor", "data-t": String(cursor) });
    c.style.left = `calc(var(--lane-name) + (100% - var(--lane-name)) * ${Math.max(0, Math.min(1, (cursor - tl.start) / span)).toFixed(5)})`;
    box.append(c);
  }
}

// The timeline of an explorer run, from its steps' events.
function explorerTimeline(answer) {
  const tl = { start: 0, end: answer.end_time_ns / 1e6, busy: [], frames: [], compositor: [], inputs: [] };
  let open = null;
  const keys = {};
  for (const st of answer.steps) {
    const e = st.event;
    if (!e || (e.loop ?? 0) !== 0) continue;
    const at = e.t_ns / 1e6;
    if (e.kind === "stack_push" && e.depth === 1) open = at;
    else if (e.kind === "stack_pop" && e.depth === 0 && open != null) { tl.busy.push([open, at]); open = null; }
    else if (e.kind === "render_start") tl.frames.push(e.frame_time_ns / 1e6);
    else if (e.kind === "compositor_frame") tl.compositor.push([e.frame_time_ns / 1e6, e.main_thread]);
    else if (e.kind === "enqueue" && e.source === "user-interaction" && /keydown/.test(e.label || "")) {
      keys[e.id] = { at: e.input_at_ns / 1e6, handled: at, key: (e.label || "").replace(/^input: keydown /, "") };
    } else if (e.kind === "dequeue" && keys[e.id]) { keys[e.id].handled = at; tl.inputs.push(keys[e.id]); delete keys[e.id]; }
  }
  return tl;
}

// ------------------------------------------------------------- stepper --
const QUEUES = {
  html: ["task", "microtask", "timers", "animation-frame"],
  node: ["nextTick", "microtask", "timers", "immediate"],
};

function describe(ev) {
  if (!ev) return t("st.start");
  const k = ev.kind;
  const parts = [k];
  if (ev.queue) parts.push(ev.queue);
  if (ev.label) parts.push(ev.label);
  if (ev.frame && typeof ev.frame === "string") parts.push(ev.frame);
  if (k === "render_start" || k === "render_end") parts.push("#" + ev.frame);
  if (ev.text) parts.push(JSON.stringify(ev.text.replace(/\n$/, "")));
  if (ev.phase) parts.push(ev.phase);
  if (ev.state) parts.push(ev.state);
  if (k === "time_advance") parts.push(ms(ev.from_ns) + " → " + ms(ev.to_ns));
  if (ev.main_thread) parts.push("main thread: " + ev.main_thread);
  return parts.join(" · ");
}

const steppers = {};

class Stepper {
  constructor(root) {
    this.root = root;
    this.id = root.id;
    this.model = root.dataset.model || "html";
    this.list = SNIPPETS[root.dataset.snippets || root.dataset.fixed] || [];
    this.fixed = !!root.dataset.fixed;
    this.current = 0;
    this.input = this.list[0]?.input || [];
    this.answer = null;
    this.k = 0;
    this.runSeq = 0;
    this.build();
    this.load(0);
    onLang.push(() => { this.labels(); this.draw(); });
  }

  build() {
    const r = this.root;
    this.tabs = el("div", { class: "tabs", role: "tablist" });
    if (!this.fixed) {
      this.list.forEach((s, i) => this.tabs.append(el("button", { type: "button", class: "tab", "data-i": String(i), onclick: () => this.load(i) })));
    }
    this.models = el("div", { class: "models", role: "group" });
    for (const m of ["html", "node"]) {
      this.models.append(el("button", { type: "button", class: "model", "data-model": m, text: m === "html" ? "HTML (Chromium)" : "Node", onclick: () => { this.model = m; this.markModel(); this.run(); } }));
    }
    if (this.fixed) this.models.hidden = true;
    this.gutter = el("pre", { class: "gutter", "aria-hidden": "true" });
    this.editor = el("textarea", { class: "code", spellcheck: "false", rows: "10", "aria-label": "code" });
    this.editor.addEventListener("input", () => { this.syncGutter(); clearTimeout(this.timer); this.timer = setTimeout(() => this.run(), 250); });
    this.editor.addEventListener("scroll", () => { this.gutter.scrollTop = this.editor.scrollTop; });
    this.problem = el("div", { class: "problem", role: "status" });
    this.first = el("button", { type: "button", class: "first", text: "|◀", onclick: () => this.go(0) });
    this.prev = el("button", { type: "button", class: "prev", text: "◀", onclick: () => this.go(this.k - 1) });
    this.slider = el("input", { type: "range", class: "slider", min: "0", max: "0", value: "0" });
    this.slider.addEventListener("input", () => this.go(Number(this.slider.value)));
    this.next = el("button", { type: "button", class: "next", text: "▶", onclick: () => this.go(this.k + 1) });
    this.last = el("button", { type: "button", class: "last", text: "▶|", onclick: () => this.go(this.steps().length - 1) });
    this.pos = el("span", { class: "pos" });
    this.shareBtn = el("button", { type: "button", class: "share", onclick: () => this.share() });
    this.shareLink = el("a", { class: "share-link" });
    this.state = el("div", { class: "state", tabindex: "0" });
    this.state.addEventListener("keydown", (e) => {
      if (e.key === "ArrowRight") { this.go(this.k + 1); e.preventDefault(); }
      else if (e.key === "ArrowLeft") { this.go(this.k - 1); e.preventDefault(); }
      else if (e.key === "Home") { this.go(0); e.preventDefault(); }
      else if (e.key === "End") { this.go(this.steps().length - 1); e.preventDefault(); }
    });
    this.lanes = el("div", { class: "lanes", hidden: "" });
    this.lanesTitle = el("p", { class: "lanes-title", hidden: "" });
    this.lanes.addEventListener("click", (e) => {
      const track = this.lanes.querySelector(".lane-track");
      if (!track || !this.timeline) return;
      const r = track.getBoundingClientRect();
      const at = this.timeline.start + ((e.clientX - r.left) / r.width) * (this.timeline.end - this.timeline.start);
      const k = this.steps().findIndex((st) => st.t_ns / 1e6 >= at);
      this.go(k < 0 ? this.steps().length - 1 : k);
    });
    const controls = el("div", { class: "controls" }, this.first, this.prev, this.slider, this.next, this.last, this.pos, this.fixed ? null : this.shareBtn, this.fixed ? null : this.shareLink);
    r.append(this.tabs, this.models, el("div", { class: "edit" }, this.gutter, this.editor), this.problem, controls, this.lanesTitle, this.lanes, this.state);
    this.labels();
  }

  labels() {
    this.first.title = t("st.first"); this.prev.title = t("st.prev"); this.next.title = t("st.next"); this.last.title = t("st.last");
    this.shareBtn.textContent = t("st.share");
    this.lanesTitle.textContent = t("tl.explorer");
    this.tabs.querySelectorAll(".tab").forEach((b) => { const s = this.list[Number(b.dataset.i)]; b.textContent = s ? t(s.key) : ""; });
  }

  markModel() {
    this.models.querySelectorAll(".model").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.model === this.model)));
    this.root.dataset.model = this.model;
  }

  load(i, code, model) {
    this.current = i;
    const s = this.list[i];
    this.editor.value = code ?? (s ? s.code : "");
    if (model) this.model = model;
    this.tabs.querySelectorAll(".tab").forEach((b) => b.setAttribute("aria-selected", String(Number(b.dataset.i) === i)));
    this.markModel();
    this.syncGutter();
    return this.run();
  }

  syncGutter() {
    const n = this.editor.value.split("\n").length;
    const bad = this.answer?.problem?.line;
    this.gutter.textContent = "";
    for (let i = 1; i <= n; i++) {
      this.gutter.append(el("span", { class: i === bad ? "bad" : "", text: String(i) }), "\n");
    }
  }

  steps() { return this.answer?.steps || []; }

  async run() {
    const seq = ++this.runSeq;
    this.root.dataset.busy = "1";
    this.problem.textContent = t("st.running");
    let answer;
    try {
      answer = await runOnExplorer({ code: this.editor.value, model: this.model, input: this.model === "html" ? this.input : [] });
    } catch (e) {
      answer = { problem: { kind: "crashed", message: String(e) }, steps: [], stdout: [], uncaught: [] };
    }
    if (seq !== this.runSeq) return;
    this.answer = answer;
    this.runs = (this.runs || 0) + 1;
    this.root.dataset.runs = String(this.runs);
    delete this.root.dataset.busy;
    this.showProblem();
    this.syncGutter();
    const n = this.steps().length;
    this.slider.max = String(Math.max(0, n - 1));
    this.timeline = this.root.dataset.timeline && n ? explorerTimeline(answer) : null;
    this.lanes.hidden = this.lanesTitle.hidden = !this.timeline;
    this.go(0);
  }

  showProblem() {
    const a = this.answer;
    this.problem.textContent = "";
    this.problem.className = "problem";
    const p = a.problem;
    if (p) {
      this.problem.classList.add("bad");
      const where = p.line ? `snippet.js:${p.line}:${p.column} ` : "";
      this.problem.append(el("strong", { text: p.kind === "syntax" ? t("st.error") + ": " : t("st.problem") + " " }), where + p.message);
      this.problem.dataset.kind = p.kind;
      if (p.line) { this.problem.dataset.line = String(p.line); this.problem.dataset.column = String(p.column); }
    } else {
      delete this.problem.dataset.kind; delete this.problem.dataset.line; delete this.problem.dataset.column;
    }
    for (const u of a.uncaught || []) {
      if (p && p.kind === "syntax") break;
      this.problem.classList.add("bad");
      this.problem.append(el("div", { text: `${t("st.uncaught")}: ${u.line ? `snippet.js:${u.line}:${u.column} ` : ""}${u.message}` }));
    }
    if (a.events && a.steps && a.events + 1 > a.steps.length) this.problem.append(el("div", { text: t("st.cut", a.steps.length, a.events + 1) }));
  }

  go(k) {
    const n = this.steps().length;
    this.k = Math.max(0, Math.min(k, Math.max(0, n - 1)));
    this.slider.value = String(this.k);
    this.draw();
  }

  // Draws step k from the step alone: what is drawn never depends on the
  // way the step was reached.
  draw() {
    const steps = this.steps();
    const n = steps.length;
    this.pos.textContent = n ? t("st.step", this.k, n - 1) : "";
    this.root.dataset.step = String(this.k);
    this.root.dataset.steps = String(n);
    this.state.textContent = "";
    const s = steps[this.k];
    if (!s) return;
    if (this.timeline) drawLanes(this.lanes, this.timeline, s.t_ns / 1e6);
    const js = s.js;
    this.state.append(el("div", { class: "event" }, el("span", { class: "t", text: t("st.at", ms(s.t_ns)) }), " ", el("span", { text: describe(s.event) })));

    const stack = el("ol", { class: "stack" });
    [...js.stack].reverse().forEach((f) => stack.append(el("li", { text: f })));
    if (!js.stack.length) stack.append(el("li", { class: "none", text: t("st.empty") }));
    const jsStack = el("ol", { class: "jsstack" });
    if (js.stack.length) [...js.js_stack].reverse().forEach((f) => jsStack.append(el("li", { text: f })));

    const queues = el("div", { class: "queues" });
    for (const q of QUEUES[this.model] || QUEUES.html) {
      const list = el("ol", { class: "queue", "data-queue": q });
      for (const e of js.queues[q] || []) {
        let label = e.label;
        if (e.due_ns != null) label += " @" + ms(e.due_ns);
        if (e.source) label += " (" + e.source + ")";
        list.append(el("li", { text: label }));
      }
      queues.append(el("div", { class: "q" }, el("h5", { text: q }), list));
    }

    const promises = el("table", { class: "promises" });
    const ids = Object.keys(js.promises);
    if (ids.length) {
      promises.append(el("tr", {}, ...["#", "p.via", "p.state", "p.result", "p.fulfill", "p.reject", "p.handled"].map((h) => el("th", { text: h === "#" ? "#" : t(h) }))));
      for (const id of ids) {
        const p = js.promises[id];
        const show = (v) => (v == null ? "–" : typeof v === "string" ? v : JSON.stringify(v));
        promises.append(el("tr", { "data-promise": id }, ...[id, p.via, p.state, p.result, p.fulfill_reactions, p.reject_reactions, p.is_handled].map((v) => el("td", { text: show(v) }))));
      }
    } else {
      promises.append(el("tr", {}, el("td", { class: "none", text: t("st.empty") })));
    }

    const consoleBox = el("pre", { class: "console" });
    const cons = this.answer.console || { lines: [], forgotten: 0 };
    for (const [stream, text] of cons.lines.slice(0, Math.max(0, s.console_len - cons.forgotten))) {
      consoleBox.append(el("span", { class: stream, text: text.replace(/\n$/, "") }));
    }

    const loop = el("dl", { class: "loop" });
    const add = (k, v) => loop.append(el("dt", { text: k }), el("dd", { text: v }));
    if (js.phase) add(t("st.phase"), `${js.phase[0]} (#${js.phase[1]})`);
    if (this.model === "html") {
      add(t("st.frames"), String(js.frames) + (js.rendering != null ? ` (▶ #${js.rendering})` : ""));
      add(t("st.compositor"), String(js.compositor_frames) + (js.last_compositor_frame ? ` (${ms(js.last_compositor_frame[0])}, main thread: ${js.last_compositor_frame[1]})` : ""));
      const anims = Object.values(js.animations).map((a) => `${a.label} [${a.driven_by}]`);
      add(t("st.animations"), anims.length ? anims.join(", ") : "–");
    }

    const box = (cls, title, ...body) => el("section", { class: cls }, el("h4", { text: title }), ...body);
    this.state.append(el("div", { class: "cols" },
      box("c-stack", t("st.stack"), stack, js.stack.length && js.js_stack.length ? el("h5", { text: t("st.jsstack") }) : null, jsStack),
      box("c-queues", t("st.queues"), queues),
      box("c-loop", t("st.loop"), loop),
      box("c-promises", t("st.promises"), promises),
      box("c-console", t("st.console"), consoleBox)));
  }

  share() {
    const frag = "#s=" + encodeShare({ code: this.editor.value, model: this.model });
    const url = location.origin + location.pathname + frag;
    this.shareLink.href = frag;
    this.shareLink.textContent = url;
    history.replaceState(null, "", frag);
  }
}

// -------------------------------------------------------------- freeze --
function setupFreeze() {
  const bar = document.getElementById("raf-bar");
  const counter = document.getElementById("frame-count");
  const typed = document.getElementById("typed");
  const report = document.getElementById("freeze-report");
  const lanes = document.getElementById("freeze-lanes");
  const lanesTitle = document.getElementById("freeze-lanes-title");
  let pageTimeline = null;
  const drawPageLanes = () => {
    lanes.hidden = lanesTitle.hidden = !pageTimeline;
    lanesTitle.textContent = t("tl.page");
    drawLanes(lanes, pageTimeline, null);
  };
  onLang.push(drawPageLanes);
  // What the page saw, for the reader's report (and the browser tests).
  const log = { frames: [], keys: [], inputs: [], blocks: [] };
  window.__freeze = log;
  let frames = 0;
  function frame(ts) {
    frames++;
    // When the callback ran (the frame's own timestamp is when the frame
    // began, which may be during a block whose end the callback waited for).
    log.frames.push(performance.now());
    if (log.frames.length > 2000) log.frames.splice(0, 1000);
    counter.textContent = String(frames);
    bar.style.transform = `translateX(${(ts / 8) % 300}px)`;
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
  typed.addEventListener("keydown", (e) => log.keys.push({ key: e.key, sent: e.timeStamp, handled: performance.now() }));
  typed.addEventListener("input", () => log.inputs.push({ value: typed.value, at: performance.now() }));
  document.getElementById("freeze-go").addEventListener("click", () => {
    const blockMs = Math.max(100, Math.min(5000, Number(document.getElementById("block-ms").value) || 2000));
    typed.focus();
    const start = performance.now();
    const framesBefore = frames;
    while (performance.now() - start < blockMs) { /* the main thread is busy */ }
    const end = performance.now();
    log.blocks.push({ start, end, framesBefore, framesAfter: frames });
    // After the loop: report once the keys that waited have been handled.
    setTimeout(() => {
      const during = log.keys.filter((k) => k.sent >= start && k.sent < end);
      const ts = log.frames;
      let gap = 0;
      for (let i = 1; i < ts.length; i++) gap = Math.max(gap, ts[i] - ts[i - 1]);
      const after = during.length ? Math.round(Math.min(...during.map((k) => k.handled)) - end) : 0;
      report.textContent = t("freeze.report", { ms: Math.round(end - start), gap: Math.round(gap), keys: during.length ? during.map((k) => k.key).join("") : "–", after });
      // This run on the lanes the explorer's run is drawn on, times from
      // the start of the block.
      const from = start - 300, to = end + 250;
      pageTimeline = {
        start: -300, end: Math.round(to - start),
        busy: [[0, end - start]],
        frames: ts.filter((f) => f >= from && f <= to).map((f) => f - start),
        inputs: log.keys.filter((k) => k.sent >= from && k.sent <= to).map((k) => ({ at: k.sent - start, handled: k.handled - start, key: k.key })),
      };
      drawPageLanes();
    }, 300);
  });
}

// ------------------------------------------------------------ run both --
// One loop, run as it is in this page and, as its own source text, on the
// explorer: the same body, the same 200 ms budget. Frames are counted by
// its own rAF callbacks from its start to the first frame after it ends.
function loopProgram(kind, done) {
  function work() { let x = 0; for (let i = 0; i < 1000; i++) x += i * i; return x; }
  let callbacks = 0, frames = 0, finished = false;
  const start = performance.now();
  const again = kind === "microtask" ? () => queueMicrotask(step) : () => setTimeout(step, 0);
  function frame() {
    frames++;
    if (finished) done({ callbacks, frames });
    else requestAnimationFrame(frame);
  }
  function step() {
    callbacks++;
    work();
    if (performance.now() - start < 200) again();
    else finished = true;
  }
  requestAnimationFrame(frame);
  again();
}

function bothProgram(kind) {
  return `(${loopProgram.toString()})(${JSON.stringify(kind)}, (r) => console.log(JSON.stringify(r)));\n`;
}

function runInPage(kind) {
  return new Promise((resolve) => loopProgram(kind, resolve));
}

function setupBoth() {
  document.getElementById("both-code").textContent = loopProgram.toString() + "\n\nloopProgram(\"microtask\", report);\nloopProgram(\"task\", report);";
  const btn = document.getElementById("both-go");
  btn.addEventListener("click", async () => {
    btn.disabled = true;
    const put = (id, v) => { document.getElementById(id).textContent = String(v); };
    for (const [kind, pre] of [["microtask", "mt"], ["task", "t"]]) {
      const real = await runInPage(kind);
      put(`${pre}-page-n`, real.callbacks); put(`${pre}-page-f`, real.frames);
      const a = await runOnExplorer({ code: bothProgram(kind), model: "html", steps: false });
      let exp = null;
      try { exp = JSON.parse(a.stdout[a.stdout.length - 1]); } catch (_) { /* shown below */ }
      if (exp) { put(`${pre}-exp-n`, exp.callbacks); put(`${pre}-exp-f`, exp.frames); }
      else { put(`${pre}-exp-n`, a.problem ? a.problem.message : "?"); put(`${pre}-exp-f`, "?"); }
    }
    btn.disabled = false;
    document.getElementById("both").dataset.done = "1";
  });
}

// --------------------------------------------------------------- guess --
const GUESSES = [
  `console.log('1: script start');
setTimeout(() => console.log('2: timeout'), 0);
Promise.resolve().then(() => console.log('3: promise'));
queueMicrotask(() => console.log('4: microtask'));
console.log('5: script end');
`,
  `async function a() {
  console.log('a: before await');
  await null;
  console.log('a: after await');
}
setTimeout(() => console.log('timeout'), 0);
a();
Promise.resolve()
  .then(() => console.log('then 1'))
  .then(() => console.log('then 2'));
console.log('script end');
`,
];

// Runs `code` in a fresh sandboxed frame (scripts only, no same-origin);
// resolves with the lines it printed.
function runInSandbox(code) {
  return new Promise((resolve) => {
    const frame = el("iframe", { src: "/sandbox.html", sandbox: "allow-scripts", hidden: "", title: "sandbox" });
    const id = Math.random().toString(36).slice(2);
    function onMessage(e) {
      if (e.source !== frame.contentWindow) return;
      if (e.data && e.data.ready) { frame.contentWindow.postMessage({ id, code, wait: 300 }, "*"); return; }
      if (e.data && e.data.id === id) {
        window.removeEventListener("message", onMessage);
        frame.remove();
        resolve(e.data.lines);
      }
    }
    window.addEventListener("message", onMessage);
    document.body.append(frame);
  });
}

function setupGuess(i) {
  const root = document.getElementById("guess-" + i);
  const code = GUESSES[i];
  const pre = el("pre", { class: "code", text: code });
  const lines = [...code.matchAll(/console\.log\('([^']*)'\)/g)].map((m) => m[1]);
  // A fixed shuffle: the order of the source is never the answer's.
  const order = lines.map((l, j) => [l, (j * 7 + 3) % lines.length]).sort((a, b) => a[1] - b[1]).map((x) => x[0]);
  const list = el("ol", { class: "order" });
  const draw = () => {
    list.textContent = "";
    order.forEach((l, j) => {
      const up = el("button", { type: "button", class: "up", text: "↑", onclick: () => { if (j > 0) { [order[j - 1], order[j]] = [order[j], order[j - 1]]; draw(); } } });
      const down = el("button", { type: "button", class: "down", text: "↓", onclick: () => { if (j < order.length - 1) { [order[j + 1], order[j]] = [order[j], order[j + 1]]; draw(); } } });
      list.append(el("li", { "data-line": l }, up, down, " ", el("code", { text: l })));
    });
  };
  draw();
  const check = el("button", { type: "button", class: "check" });
  const open = el("button", { type: "button", class: "open", hidden: "" });
  const result = el("div", { class: "result", role: "status" });
  const labels = () => { check.textContent = t("guess.check"); open.textContent = t("guess.open"); };
  labels();
  onLang.push(labels);
  let last = null;
  const show = () => {
    if (!last) return;
    result.textContent = "";
    const { browser, explorer } = last;
    const same = (a, b) => a.length === b.length && a.every((x, j) => x === b[j]);
    const right = same(order, browser);
    const agree = same(browser, explorer);
    result.append(
      el("p", { class: right ? "good verdict" : "bad verdict", text: right ? t("guess.right") : t("guess.wrong") }),
      el("div", { class: "answers" },
        el("div", {}, el("h5", { text: t("guess.browser") }), el("pre", { class: "browser", text: browser.join("\n") })),
        el("div", {}, el("h5", { text: t("guess.explorer") }), el("pre", { class: "explorer", text: explorer.join("\n") }))),
      el("p", { class: agree ? "good agreement" : "bad agreement", text: agree ? t("guess.agree") : t("guess.disagree") }));
    root.dataset.agree = String(agree);
    root.dataset.right = String(right);
  };
  onLang.push(show);
  check.addEventListener("click", async () => {
    check.disabled = true;
    const [browser, a] = await Promise.all([runInSandbox(code), runOnExplorer({ code, model: "html" })]);
    last = { browser, explorer: a.stdout || [] };
    show();
    // The stepper opens on the snippet at once; the button takes the
    // reader there (the answer stays in view until then).
    steppers["stepper-main"].load(-1, code, "html");
    open.hidden = false;
    check.disabled = false;
  });
  open.addEventListener("click", () => {
    document.getElementById("steppers").scrollIntoView();
  });
  root.append(pre, list, el("p", {}, check, " ", open), result);
}

// ---------------------------------------------------------------- start --
function start() {
  for (const b of document.querySelectorAll(".lang button")) b.addEventListener("click", () => setLang(b.dataset.lang));
  setupFreeze();
  for (const root of document.querySelectorAll(".stepper")) steppers[root.id] = new Stepper(root);
  setupBoth();
  GUESSES.forEach((_, i) => setupGuess(i));
  setLang(lang);
  const m = /^#s=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (m) {
    try {
      const shared = decodeShare(m[1]);
      if (typeof shared.code === "string") {
        steppers["stepper-main"].load(-1, shared.code, shared.model === "node" ? "node" : "html");
        document.getElementById("steppers").scrollIntoView();
      }
    } catch (_) { /* a broken link loads the page as usual */ }
  }
}

start();
