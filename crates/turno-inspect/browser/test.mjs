// Browser tests of the turno inspector in Debian's chromium (Playwright).
//
//   node test.mjs            (from crates/turno-inspect/browser; see scripts/test.sh)
//
// Environment: TURNO_BIN (the `turno` binary), LIVE_DEMO_BIN and
// CHART_TRACE_BIN (turno-inspect's examples), CHROMIUM (default /usr/bin/chromium), SHOTS (where
// screenshots go, default docs/inspector/), BIG=1 to also time a
// million-event trace (figures printed, not asserted).
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const target = process.env.CARGO_TARGET_DIR || join(root, "target");
const TURNO = process.env.TURNO_BIN || join(target, "debug/turno");
const LIVE = process.env.LIVE_DEMO_BIN || join(target, "debug/examples/live_demo");
const CHART = process.env.CHART_TRACE_BIN || join(target, "debug/examples/chart_trace");
const SHOTS = process.env.SHOTS || join(root, "docs/inspector");
for (const bin of [TURNO, LIVE, CHART]) {
  if (!existsSync(bin)) { console.error(`missing ${bin}: run cargo test --workspace --all-features (or set TURNO_BIN / LIVE_DEMO_BIN / CHART_TRACE_BIN)`); process.exit(2); }
}
const tmp = mkdtempSync(join(tmpdir(), "turno-inspect-"));
mkdirSync(SHOTS, { recursive: true });

const children = [];
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

// Starts a command that prints the inspector's URL; resolves with it.
function serve(cmd, args, opts = {}) {
  return new Promise((ok, fail) => {
    const c = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...opts });
    children.push(c);
    let out = "", err = "";
    const t = setTimeout(() => fail(new Error(`no URL from ${cmd} ${args.join(" ")}\n${out}\n${err}`)), 60000);
    c.stdout.on("data", (d) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+\/\S*)/.exec(out);
      if (m) { clearTimeout(t); ok({ url: m[1], child: c, out: () => out, err: () => err }); }
    });
    c.stderr.on("data", (d) => { err += d; });
    c.on("exit", (code) => fail(new Error(`${cmd} exited ${code}\n${out}\n${err}`)));
  });
}

function stop(s) { s.child.kill("SIGINT"); }

function traceFile(name, header, events) {
  const p = join(tmp, name);
  writeFileSync(p, [JSON.stringify(header), ...events.map((e, i) => JSON.stringify({ seq: i, t_ns: e.t_ns ?? 0, ...e }))].join("\n") + "\n");
  return p;
}

const results = [];
async function test(name, f) {
  const t0 = Date.now();
  try { await f(); results.push([name, "ok", Date.now() - t0]); console.log(`ok   ${name} (${Date.now() - t0} ms)`); }
  catch (e) { results.push([name, "FAILED", 0]); console.log(`FAIL ${name}\n${e.stack}`); }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
page.on("pageerror", (e) => console.log("page error:", e.message));

async function open(url) {
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
}
async function goto(k) {
  await page.evaluate((k) => window.__inspector && document.getElementById("slider") && (document.getElementById("slider").value = k, document.getElementById("slider").dispatchEvent(new Event("input"))), k);
  await page.waitForSelector(`body[data-step='${k}']`);
}
const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent));
const attrs = (sel, a) => page.$$eval(sel, (els, a) => els.map((e) => e.getAttribute(a)), a);

// ------------------------------------------------------------------ JavaScript
await test("javascript trace: stepping, queues, promise slots, source line", async () => {
  const js = "crates/turno-js/tests/corpus/html/h08_raf_microtasks.js";
  const s = await serve(TURNO, ["js", "run", js, "--model", "html", "--inspect"]);
  try {
    await open(s.url);
    assert.equal(await page.textContent("#step"), "0");
    // Step 4: both animation frame callbacks queued in order; the second just pushed.
    await goto(4);
    assert.deepEqual(await attrs("[data-lane='queue:animation-frame'] .box:not(.ghost)", "data-item"), ["1", "2"]);
    assert.deepEqual(await attrs("[data-lane='queue:animation-frame'] .box.moved", "data-item"), ["2"]);
    assert.equal(await page.getAttribute(".src-line.current", "data-line"), "6");
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["script"]);
    // Step 10: promise 2 pending with empty reaction lists, promise 1 handled.
    await goto(10);
    const row = (id, cls) => page.textContent(`tr[data-promise='${id}'] .${cls}`);
    assert.equal(await row(2, "slot-state"), "pending");
    assert.equal(await row(2, "slot-fulfill"), "0");
    assert.equal(await row(2, "slot-reject"), "0");
    assert.equal(await row(2, "slot-handled"), "false");
    assert.equal(await row(1, "slot-state"), "fulfilled");
    assert.equal(await row(1, "slot-result"), "undefined");
    assert.equal(await row(1, "slot-handled"), "true");
    assert.equal(await row(1, "slot-fulfill"), "undefined");
    assert.deepEqual(await attrs("[data-lane='queue:microtask'] .box:not(.ghost)", "data-item"), ["1"]);
    assert.equal(await page.getAttribute(".src-line.current", "data-line"), "10");
    for (const p of ["source", "stack", "queues", "promises"]) await page.locator(`#pane-${p}`).screenshot({ path: join(SHOTS, `js-${p}.png`) });
    // Keyboard: forward then back returns to the same view.
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector("body[data-step='11']");
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector("body[data-step='10']");
    assert.equal(await row(2, "slot-state"), "pending");
    // Step 13: the microtask left its queue (shown as the popped ghost) and runs.
    await goto(13);
    assert.deepEqual(await attrs("[data-lane='queue:microtask'] .box:not(.ghost)", "data-item"), []);
    assert.deepEqual(await attrs("[data-lane='queue:microtask'] .box.ghost.pop", "data-item"), ["1"]);
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), []);
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector("body[data-step='14']");
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["promise reaction: (anonymous)"]);
    assert.deepEqual(await attrs("#stack .frame.moved", "data-depth"), ["1"]);
    // Next render jumps to the render step (after render_start, seq 18).
    await page.click("#next-render");
    await page.waitForSelector("body[data-step='19']");
    assert.equal(await page.locator("#timeline line.tick").count(), 1);
    await page.click("#end");
    await page.waitForSelector("body[data-step='47']");
    assert.deepEqual(await texts("#console .console-line"), ["script microtask\n", "raf 1\n", "microtask from raf 1\n", "raf 2\n", "microtask from raf 2\n"]);
    await page.click("#start");
    await page.waitForSelector("body[data-step='0']");
    await goto(38);
    for (const p of ["console", "timeline"]) await page.locator(`#pane-${p}`).screenshot({ path: join(SHOTS, `js-${p}.png`) });
    await page.screenshot({ path: join(SHOTS, "js-page.png") });
  } finally { stop(s); }
});

await test("javascript trace: the source line is the innermost js_stack frame", async () => {
  // n17: `delay(20, 'a')` on line 3 calls `new Promise` in `delay` whose
  // executor calls setTimeout on line 2: js_stack (outermost first) is
  // [<main> 3:19, delay 2:26, executor 2:55].
  const js = "crates/turno-js/tests/corpus/node/n17_promise_combinators.js";
  const s = await serve(TURNO, ["js", "run", js, "--inspect"]);
  try {
    await open(s.url);
    await goto(2);
    assert.equal(await page.getAttribute(".src-line.current", "data-line"), "2");
    const frames = await texts("#stack .js-frame");
    assert.equal(frames.length, 3);
    assert.match(frames[0], /:2:55\)$/);
    assert.match(frames[2], /^<main> \(.*:3:19\)$/);
  } finally { stop(s); }
});

// ------------------------------------------------------------------ actors
await test("javascript trace with a worker: one event loop at a time", async () => {
  // turno-js records the page and a dedicated worker, each its own loop.
  const js = "crates/turno-js/tests/corpus/html-live/l03_worker_messages.js";
  const s = await serve(TURNO, ["js", "run", js, "--model", "html", "--inspect"]);
  try {
    await open(s.url);
    assert.equal(await page.isVisible("#loop-picker"), true);
    const options = await texts("#loop option");
    assert.equal(options.length, 2);
    assert.equal(options[0], "0: main");
    assert.match(options[1], /^1: worker (.*\/)?l03_worker_messages\.worker\.js$/);
    // Step 14 (after seq 13): both messages wait in the worker's task queue;
    // the page's own queue is empty.
    await goto(14);
    assert.equal(await page.getAttribute("body", "data-loop"), "0");
    assert.deepEqual(await attrs("[data-lane='queue:task'] .box:not(.ghost)", "data-item"), []);
    await page.selectOption("#loop", "1");
    await page.waitForSelector("body[data-loop='1'][data-step='14']");
    assert.deepEqual(await attrs("[data-lane='queue:task'] .box:not(.ghost)", "data-item"), ["1", "2"]);
    assert.deepEqual(await attrs("[data-lane='queue:task'] .box.moved", "data-item"), ["2"]);
    // Step 31: each loop runs a task of its own at the same time.
    await goto(31);
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["event listener: onmessage", "task: message from loop 0"]);
    // The stack_push at seq 30 ran on the page: nothing moved in the worker.
    assert.equal(await page.locator("#stack .frame.moved").count(), 0);
    assert.equal(await page.locator("#stack .js-frame").count(), 0);
    // The worker's source is its own script, its current line from its js_stack.
    await goto(25);
    assert.match(await page.textContent("#source-file"), /l03_worker_messages\.worker\.js$/);
    assert.equal(await page.getAttribute(".src-line.current", "data-line"), "4");
    await page.locator("#pane-queues").screenshot({ path: join(SHOTS, "js-worker-queues.png") });
    await page.selectOption("#loop", "0");
    await page.waitForSelector("body[data-loop='0'][data-step='25']");
    assert.match(await page.textContent("#source-file"), /l03_worker_messages\.js$/);
    await goto(31);
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["task: message from loop 1"]);
    assert.deepEqual(await attrs("#stack .frame.moved", "data-depth"), ["1"]);
  } finally { stop(s); }
});

await test("actor trace from the overload demo: depth bars and drop counts", async () => {
  const s = await serve(TURNO, ["demo", "overload", "--seconds", "5", "--capacity", "20", "--inspect", "keep-newest"]);
  try {
    await open(s.url);
    const m = /keep-newest\(20\): sent (\d+), delivered (\d+), dropped (\d+), rejected \d+, queued (\d+)/.exec(s.err());
    assert.ok(m, s.err());
    const dropped = Number(m[3]);
    assert.ok(dropped > 0);
    const len = Number(await page.textContent("#len"));
    await goto(len);
    const consumer = "tr.actor[data-name='consumer']";
    assert.equal(await page.getAttribute(`${consumer} .drops`, "data-drops"), String(dropped));
    assert.equal((await page.textContent(`${consumer} .drops`)).trim(), `keep_newest: ${dropped}`);
    // The depth the page reconstructs is what the mailbox held at the end.
    const queued = Number(m[4]);
    assert.ok(queued >= 15, "a keep-newest(20) mailbox under a 20/s surplus stays nearly full");
    assert.equal((await page.textContent(`${consumer} .depth`)).trim(), `${queued} / 20`);
    assert.equal(await page.getAttribute(`${consumer} .depth-fill`, "style"), `width:${(100 * queued / 20).toFixed(1)}%`);
    // Early on, before the surplus built up, the bar is shorter.
    await goto(Math.floor(len / 10));
    const early = await page.getAttribute(`${consumer} .depth-fill`, "style");
    assert.ok(Number(/width:([\d.]+)%/.exec(early)[1]) < 100, early);
    await page.click("#next-turn");
    await page.waitForFunction((k) => Number(document.body.dataset.step) > k, Math.floor(len / 10));
    await page.locator("#pane-actors").screenshot({ path: join(SHOTS, "actors.png") });
  } finally { stop(s); }
});

// ------------------------------------------------------------------ wait-for graph
await test("wait-for graph: an ask cycle is drawn in red", async () => {
  const p = traceFile("cycle.jsonl", { format: "turno-trace", version: 1 }, [
    { kind: "spawn", actor: 1, name: "alice", parent: 0, policy: "reject(4)" },
    { kind: "spawn", actor: 2, name: "bob", parent: 0, policy: "reject(4)" },
    { kind: "spawn", actor: 3, name: "carol", parent: 0, policy: "suspend(2)" },
    { kind: "ask", actor: 1, request: 10, to: 2 },
    { kind: "mute", actor: 3, by: 1 },
    { kind: "ask", actor: 2, request: 11, to: 1 },
  ]);
  const s = await serve(TURNO, ["inspect", p]);
  try {
    await open(s.url);
    await goto(5);
    assert.equal(await page.locator("#waitfor line.edge").count(), 2);
    assert.equal(await page.locator("#waitfor line.edge.cycle").count(), 0);
    await goto(6);
    assert.equal(await page.locator("#waitfor line.edge.cycle").count(), 2);
    assert.deepEqual((await attrs("#waitfor line.edge:not(.cycle)", "data-from")), ["3"]);
    const stroke = await page.$eval("#waitfor line.edge.cycle", (e) => getComputedStyle(e).stroke);
    assert.equal(stroke, "rgb(198, 40, 40)");
    await page.locator("#pane-waitfor").screenshot({ path: join(SHOTS, "waitfor.png") });
  } finally { stop(s); }
});

// ------------------------------------------------------------------ statecharts
await test("chart trace: the active configuration is highlighted", async () => {
  // A real run of turno-chart's interpreter; the chart's own snapshot
  // values (printed by the example) are what the page must highlight.
  const p = join(tmp, "chart.jsonl");
  const values = execFileSync(CHART, [p], { encoding: "utf8" }).trim().split("\n").map((l) => JSON.parse(l));
  const leaves = (v) => typeof v === "string" ? [v] : Object.values(v).flatMap(leaves);
  const want = values.map((v) => leaves(v).sort());
  const lines = readFileSync(p, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l));
  const chartActor = lines.find((e) => e.kind === "chart_define").actor;
  const ends = lines.filter((e) => e.kind === "turn_end" && e.actor === chartActor).map((e) => e.seq + 1);
  const s = await serve(TURNO, ["inspect", p]);
  try {
    await open(s.url);
    const seen = [];
    for (const k of ends) {
      await goto(k);
      // The highlighted leaves: active states with no active state inside.
      const active = await page.$$eval("#charts .state.active", (els) => els.filter((e) => !e.querySelector(".state.active")).map((e) => e.dataset.state.split(".").pop()));
      active.sort();
      if (JSON.stringify(seen[seen.length - 1]) !== JSON.stringify(active)) seen.push(active);
      if (JSON.stringify(active) === JSON.stringify(["go", "halt"])) {
        assert.equal(await page.locator("#charts .state.parallel.active .state.active").count(), 4);
        await page.locator("#pane-charts").screenshot({ path: join(SHOTS, "charts.png") });
      }
    }
    assert.deepEqual(seen, want);
    assert.deepEqual(want[want.length - 1], ["off"]);
  } finally { stop(s); }
});

// ------------------------------------------------------------------ hostile
await test("a hostile trace renders as text, never as markup", async () => {
  const evil = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">";
  const huge = "A".repeat(2_000_000);
  const deep = JSON.parse("[".repeat(100) + "]".repeat(100));
  const p = join(tmp, "hostile.jsonl");
  const header = { format: "turno-js-trace", version: 1, model: "node", file: evil };
  const lines = [header,
    { seq: 0, t_ns: 0, kind: "enqueue", queue: "microtask", id: 1, label: evil },
    { seq: 1, t_ns: 0, kind: "stack_push", frame: evil, depth: 1 },
    { seq: 2, t_ns: 0, kind: "output", stream: "stdout", text: evil + "\n" },
    { seq: 3, t_ns: 0, kind: "enqueue", queue: "timers", id: 2, label: huge, due_ns: 5 },
    { seq: 4, t_ns: 0, kind: "promise_observed", promise: 1, via: evil },
    { seq: 5, t_ns: 0, kind: "promise", promise: 1, state: "fulfilled", result: deep, fulfill_reactions: null, reject_reactions: null, is_handled: true },
  ].map((x) => JSON.stringify(x));
  lines.push('{"seq":6,"t_ns":0,"kind":"output","stream":"stdout","text":"x","deep":' + "[".repeat(5000) + "]".repeat(5000) + "}");
  writeFileSync(p, lines.join("\n") + "\n");
  const s = await serve(TURNO, ["inspect", p]);
  try {
    await open(s.url);
    await goto(6);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(await page.locator("script").count(), 1);
    assert.equal(await page.locator("#panes img").count(), 0);
    assert.ok((await texts("[data-lane='queue:microtask'] .box")).includes("1 " + evil));
    assert.ok((await texts("#console .console-line")).includes(evil + "\n"));
    const big = (await texts("[data-lane='queue:timers'] .box"))[0];
    assert.ok(big.length < 400 && /\(\d{7} chars\)$/.test(big), big.slice(0, 80));
    // Nesting deeper than the reader's limit ends the trace with a clear error.
    assert.equal(await page.textContent("#len"), "6");
    assert.match(await page.textContent("#error"), /line 8: not JSON: recursion limit exceeded/);
    await page.locator("#pane-queues").screenshot({ path: join(SHOTS, "hostile.png") });
  } finally { stop(s); }
});

// ------------------------------------------------------------------ live
await test("live mode follows a running demo", async () => {
  const s = await serve(LIVE, ["20"]);
  try {
    await page.goto(s.url);
    await page.waitForSelector("#actors tr.actor", { timeout: 20000 });
    await page.waitForFunction(() => Number(document.body.dataset.step) > 500, null, { timeout: 20000 });
    const newest = "tr.actor[data-name='consumer-newest']";
    await page.waitForFunction((sel) => Number(document.querySelector(sel + " .drops")?.dataset.drops) > 0, newest, { timeout: 20000 });
    const first = Number(await page.getAttribute(`${newest} .drops`, "data-drops"));
    await page.waitForFunction(([sel, n]) => Number(document.querySelector(sel + " .drops").dataset.drops) > n, [newest, first], { timeout: 20000 });
    await page.waitForFunction((sel) => document.querySelector(sel + " .depth").textContent.trim() === "20 / 20", newest, { timeout: 20000 });
    // The suspend pair: the producer is muted by its consumer at times (a wait-for edge).
    await page.waitForSelector("#waitfor line.edge", { state: "attached", timeout: 20000 });
    assert.ok(await page.locator("#depths polyline").count() >= 4);
    await page.locator("#pane-depths").screenshot({ path: join(SHOTS, "live-depths.png") });
    await page.locator("#pane-actors").screenshot({ path: join(SHOTS, "live-actors.png") });
  } finally { stop(s); }
});

// ------------------------------------------------------------------ a million events
// BIG=1: both trace families at a million events, the shapes of
// `turno-bench inspect`. Reported, not asserted: the whole open (from
// starting `turno inspect` to the first step rendered: process start,
// index, page load), the open as the browser sees it (navigation start to
// the first step rendered), and each step in the browser (from the input
// to its step rendered) and as the test sees it.
function bigJs(p) {
  const out = [JSON.stringify({ format: "turno-js-trace", version: 1, model: "node", file: "big.js" })];
  let seq = 0, t = 0;
  const push = (o) => out.push(JSON.stringify({ seq: seq++, t_ns: t, ...o }));
  for (let i = 0; seq < 1_000_000; i++) {
    push({ kind: "enqueue", queue: "microtask", id: i, label: "PromiseJob", js_stack: [`<main> (big.js:${i % 50 + 1}:1)`] });
    push({ kind: "dequeue", queue: "microtask", id: i });
    push({ kind: "stack_push", frame: "promise reaction: f", depth: 1 });
    push({ kind: "output", stream: "stdout", text: `line ${i}\n` });
    push({ kind: "stack_pop", frame: "promise reaction: f", depth: 0 });
    if (i % 100 === 0) { push({ kind: "time_advance", from_ns: t, to_ns: t + 1000 }); t += 1000; }
  }
  writeFileSync(p, out.join("\n") + "\n");
}
// An overloaded keep-oldest(64) mailbox: three messages arrive for every
// one handled, over 16 actors, and a timer now and then.
function bigActor(p) {
  const out = [JSON.stringify({ format: "turno-trace", version: 1 })];
  let seq = 0, t = 0;
  const push = (o) => out.push(JSON.stringify({ seq: seq++, t_ns: t, ...o }));
  const A = 16, CAP = 64, depth = new Array(A + 1).fill(0);
  for (let a = 1; a <= A; a++) push({ kind: "spawn", actor: a, name: `worker-${a}`, parent: null, policy: `keep-oldest(${CAP})` });
  for (let i = 0; seq < 1_000_002; i++) {
    const a = i % A + 1;
    t += 1000;
    for (let j = 0; j < 3; j++) {
      if (depth[a] < CAP) push({ kind: "enqueue", actor: a, lane: "user", depth: ++depth[a] });
      else push({ kind: "drop", actor: a, policy: "keep_oldest", which: "incoming" });
    }
    if (depth[a] > 0) {
      depth[a]--;
      push({ kind: "turn_start", actor: a, what: "message" });
      push({ kind: "turn_end", actor: a, ok: true });
    }
    if (i % 97 === 0) push({ kind: "timer_set", actor: a, timer: i, deadline_ns: t + 5_000_000 });
  }
  writeFileSync(p, out.join("\n") + "\n");
}
const median = (xs) => xs[xs.length >> 1];
if (process.env.BIG) {
  // When the page sets data-ready (the first step rendered) and each
  // data-step (a step rendered), in the page's clock (0: navigation start).
  await page.addInitScript(() => {
    window.__marks = {};
    new MutationObserver(() => {
      const b = document.body;
      if (!b) return;
      if (b.dataset.ready === "1" && window.__marks.ready === undefined) window.__marks.ready = performance.now();
      window.__marks.step = [b.dataset.step, performance.now()];
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready", "data-step"] });
  });
  for (const [name, write] of [["js", bigJs], ["actor", bigActor]]) {
    await test(`a million-event ${name} trace: open and step times (reported)`, async () => {
      const p = join(tmp, `big-${name}.jsonl`);
      write(p);
      const mb = (readFileSync(p).length / 1e6).toFixed(0);
      const t0 = Date.now();
      const s = await serve(TURNO, ["inspect", p]);
      try {
        await open(s.url);
        const whole = Date.now() - t0;
        const inPage = await page.evaluate(() => window.__marks.ready);
        const len = Number(await page.textContent("#len"));
        const browser = [], seen = [];
        const timed = async (want, act) => {
          const a = Date.now();
          const from = await page.evaluate(act);
          await page.waitForSelector(`body[data-step='${want}']`);
          seen.push(Date.now() - a);
          const [step, at] = await page.evaluate(() => window.__marks.step);
          assert.equal(step, String(want));
          browser.push(at - from);
        };
        for (const k of [1, 2, 3, 500_000, 500_001, 999_999, 123_457, 777_777].map((k) => Math.min(k, len))) {
          await timed(k, `(() => { const t = performance.now(), s = document.getElementById("slider");
            s.value = ${k}; s.dispatchEvent(new Event("input")); return t; })()`);
        }
        for (let i = 0; i < 10; i++) {
          const want = Number(await page.textContent("#step")) + 1;
          await timed(want, `(() => { const t = performance.now();
            document.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight" })); return t; })()`);
        }
        browser.sort((x, y) => x - y);
        seen.sort((x, y) => x - y);
        const f = (x) => x.toFixed(1);
        console.log(`BIG ${name}: ${len} events, ${mb} MB; ${/indexed in \S+ ms[^\n]*/.exec(s.err())?.[0] ?? s.err().trim()}; ` +
          `open: ${whole} ms from starting turno to the first step rendered, ${f(inPage)} ms from navigation; ` +
          `step in the browser median ${f(median(browser))} ms, max ${f(browser[browser.length - 1])} ms; ` +
          `as the test sees it median ${median(seen)} ms, max ${seen[seen.length - 1]} ms (${seen.length} steps)`);
      } finally { stop(s); }
    });
  }
}

await browser.close();
const failed = results.filter((r) => r[1] !== "ok").length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
