// Browser tests of the turno inspector in Debian's chromium (Playwright).
//
//   node test.mjs            (from crates/turno-inspect/browser; see scripts/test.sh)
//
// Environment: TURNO_BIN (the `turno` binary), LIVE_DEMO_BIN and
// CHART_TRACE_BIN (turno-inspect's examples), CLUSTER_TRACE_BIN
// (turno-cluster's cluster_trace example), CHROMIUM (default /usr/bin/chromium), SHOTS (where
// screenshots go, default docs/inspector/), BIG=1 to also time a
// million-event trace (figures printed, not asserted; BIG_STEPS=1 prints
// each step), ONLY=TEXT to run only the tests whose name contains TEXT.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from "node:fs";
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
const CLUSTER = process.env.CLUSTER_TRACE_BIN || join(target, "debug/examples/cluster_trace");
const SHOTS = process.env.SHOTS || join(root, "docs/inspector");
for (const bin of [TURNO, LIVE, CHART, CLUSTER]) {
  if (!existsSync(bin)) { console.error(`missing ${bin}: run cargo test --workspace --all-features (or set TURNO_BIN / LIVE_DEMO_BIN / CHART_TRACE_BIN / CLUSTER_TRACE_BIN)`); process.exit(2); }
}
const tmp = mkdtempSync(join(tmpdir(), "turno-inspect-"));
mkdirSync(SHOTS, { recursive: true });

const children = [];
process.on("exit", () => {
  children.forEach((c) => c.kill("SIGKILL"));
  rmSync(tmp, { recursive: true, force: true });
});

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
  if (process.env.ONLY && !name.includes(process.env.ONLY)) return;
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
// The page's assets are compiled into the binary: every request it makes
// goes back to the inspector on 127.0.0.1 (checked at the end).
const foreign = [], refused = [];
page.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) refused.push(m.text()); });
page.on("request", (r) => { if (!/^(http|ws):\/\/127\.0\.0\.1:\d+\//.test(r.url())) foreign.push(r.url()); });

async function open(url) {
  await page.goto(url);
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
}
async function goto(k) {
  await page.evaluate((k) => window.__inspector && document.getElementById("slider") && (document.getElementById("slider").value = k, document.getElementById("slider").dispatchEvent(new Event("input"))), k);
  await page.waitForSelector(`body[data-step='${k}'][data-settled='${k}']`);
}
const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent));
const attrs = (sel, a) => page.$$eval(sel, (els, a) => els.map((e) => e.getAttribute(a)), a);

// A step waited for: rendered (`data-step`) and settled (`data-settled`:
// the actor rows and lanes off screen, which a jump leaves for later, drawn
// too), so what the test reads is the whole page at that step.
// The page keeps its elements across steps and updates only what a step
// changed. What it shows must not depend on how it got there: each step
// reached one event at a time (forward and back) must draw exactly what the
// same step reached by a jump from far away draws.
const paneHtml = (sel) => page.$eval(sel, (root) => {
  const walk = (n) => n.nodeType === 3 ? n.data : n.nodeType !== 1 ? "" :
    `<${n.tagName}${[...n.attributes].map((a) => ` ${a.name}="${a.value}"`).sort().join("")}>${[...n.childNodes].map(walk).join("")}</${n.tagName}>`;
  return walk(root);
});
async function sameByStepAndJump(panes, steps, len) {
  const snap = async () => (await Promise.all(panes.map(paneHtml))).join("\n");
  const byStep = new Map();
  await goto(steps[0]);
  byStep.set(steps[0], await snap());
  for (const k of steps.slice(1)) {
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector(`body[data-step='${k}'][data-settled='${k}']`);
    byStep.set(k, await snap());
  }
  for (const k of steps.slice(0, -1).reverse()) {
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector(`body[data-step='${k}'][data-settled='${k}']`);
    assert.equal(await snap(), byStep.get(k), `step ${k} reached back one step`);
  }
  for (const k of steps) {
    // From the far end: at least len / 2 steps away.
    const far = k < len / 2 ? len : 0;
    await goto(far);
    await goto(k);
    assert.equal(await snap(), byStep.get(k), `step ${k} reached by a jump from ${far}`);
  }
}

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
    await page.waitForSelector("body[data-step='11'][data-settled='11']");
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector("body[data-step='10'][data-settled='10']");
    assert.equal(await row(2, "slot-state"), "pending");
    // Next task: the next call into JavaScript from an empty stack (seq 13's stack_push).
    await page.click("#next-task");
    await page.waitForSelector("body[data-step='14'][data-settled='14']");
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["promise reaction: (anonymous)"]);
    // Step 13: the microtask left its queue (shown as the popped ghost) and runs.
    await goto(13);
    assert.deepEqual(await attrs("[data-lane='queue:microtask'] .box:not(.ghost)", "data-item"), []);
    assert.deepEqual(await attrs("[data-lane='queue:microtask'] .box.ghost.pop", "data-item"), ["1"]);
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), []);
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector("body[data-step='14'][data-settled='14']");
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["promise reaction: (anonymous)"]);
    assert.deepEqual(await attrs("#stack .frame.moved", "data-depth"), ["1"]);
    // Next render jumps to the render step (after render_start, seq 21:
    // the parser-finished task, DOMContentLoaded and load, runs before it).
    await page.click("#next-render");
    await page.waitForSelector("body[data-step='22'][data-settled='22']");
    assert.equal(await page.locator("#timeline line.tick").count(), 1);
    await page.click("#end");
    await page.waitForSelector("body[data-step='50'][data-settled='50']");
    assert.deepEqual(await texts("#console .console-line"), ["script microtask\n", "raf 1\n", "microtask from raf 1\n", "raf 2\n", "microtask from raf 2\n"]);
    await page.click("#start");
    await page.waitForSelector("body[data-step='0'][data-settled='0']");
    await sameByStepAndJump(["#queues", "#stack", "#promises", "#console"], Array.from({ length: 51 }, (_, i) => i), 50);
    await goto(41);
    for (const p of ["console", "timeline"]) await page.locator(`#pane-${p}`).screenshot({ path: join(SHOTS, `js-${p}.png`) });
    await page.screenshot({ path: join(SHOTS, "js-page.png") });
  } finally { stop(s); }
});

await test("javascript trace: the source line is the innermost js_stack frame", async () => {
  // n17: `delay(200, 'a')` on line 3 calls `new Promise` in `delay` whose
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
    // Step 17 (after seq 16): both messages wait in the worker's task queue
    // (queued once the worker's script has run); the page's own queue is
    // empty.
    await goto(17);
    assert.equal(await page.getAttribute("body", "data-loop"), "0");
    assert.deepEqual(await attrs("[data-lane='queue:task'] .box:not(.ghost)", "data-item"), []);
    await page.selectOption("#loop", "1");
    await page.waitForSelector("body[data-loop='1'][data-step='17'][data-settled='17']");
    assert.deepEqual(await attrs("[data-lane='queue:task'] .box:not(.ghost)", "data-item"), ["1", "2"]);
    assert.deepEqual(await attrs("[data-lane='queue:task'] .box.moved", "data-item"), ["2"]);
    // Step 34: each loop runs a task of its own at the same time.
    await goto(34);
    assert.deepEqual(await texts("#stack .frame:not(.js-frame):not(.ghost)"), ["event listener: onmessage", "task: message from loop 0"]);
    // The stack_push at seq 33 ran on the page: nothing moved in the worker.
    assert.equal(await page.locator("#stack .frame.moved").count(), 0);
    assert.equal(await page.locator("#stack .js-frame").count(), 0);
    // The worker's source is its own script, its current line from its js_stack.
    await goto(28);
    assert.match(await page.textContent("#source-file"), /l03_worker_messages\.worker\.js$/);
    assert.equal(await page.getAttribute(".src-line.current", "data-line"), "4");
    await page.locator("#pane-queues").screenshot({ path: join(SHOTS, "js-worker-queues.png") });
    await page.selectOption("#loop", "0");
    await page.waitForSelector("body[data-loop='0'][data-step='28'][data-settled='28']");
    assert.match(await page.textContent("#source-file"), /l03_worker_messages\.js$/);
    await goto(34);
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
    // The bar as drawn: its fill spans queued / 20 of it.
    const fill = () => page.$eval(`${consumer} .depth-fill`, (e) => [e.style.width, e.getBoundingClientRect().width / e.parentElement.getBoundingClientRect().width]);
    const [width, drawn] = await fill();
    assert.equal(width, `${Number((100 * queued / 20).toFixed(1))}%`);
    assert.ok(Math.abs(drawn - queued / 20) < 0.01, `fill drawn at ${drawn} of the bar`);
    // Early on, before the surplus built up, the bar is shorter.
    await goto(Math.floor(len / 10));
    const [, early] = await fill();
    assert.ok(early < drawn, `early ${early}, end ${drawn}`);
    await page.click("#next-turn");
    await page.waitForFunction((k) => Number(document.body.dataset.step) > k, Math.floor(len / 10));
    await page.locator("#pane-actors").screenshot({ path: join(SHOTS, "actors.png") });
  } finally { stop(s); }
});

// ------------------------------------------------------------------ queues over time
for (const policy of ["keep-newest", "suspend"]) {
  await test(`queues over time, overload demo (${policy}): the depth plot's maximum is the trace's, a click goes to a step of that depth, Little's law beside it`, async () => {
    const s = await serve(TURNO, ["demo", "overload", "--seconds", "5", "--capacity", "20", "--inspect", policy]);
    try {
      await open(s.url);
      const m = new RegExp(`${policy}\\(20\\): sent (\\d+), delivered (\\d+), dropped (\\d+), rejected (\\d+), queued (\\d+), max depth (\\d+)`).exec(s.err());
      assert.ok(m, s.err());
      const maxDepth = Number(m[6]);
      assert.ok(maxDepth >= 20, `a ${policy}(20) mailbox under a surplus fills: ${maxDepth}`);
      const plot = "#plots svg.queue-plot[data-name='consumer']";
      await page.waitForSelector(plot);
      assert.equal(Number(await page.getAttribute(plot, "data-max-depth")), maxDepth);
      // The bucket drawn deepest, clicked: the page goes to its step, and
      // the consumer's mailbox holds the plotted depth there.
      const { i, n, depth, step } = await page.evaluate(() => {
        const p = window.__inspector.plots.data.plots.find((p) => p.name === "consumer");
        const b = p.buckets;
        // A bucket in the middle of the run whose value is the maximum.
        const max = Math.max(...b.map((x) => x.depth));
        const i = b.findIndex((x, k) => x.depth === max && k > b.length / 3);
        return { i, n: b.length, depth: b[i].depth, step: b[i].step };
      });
      assert.ok(i >= 0);
      await page.locator(plot).scrollIntoViewIfNeeded();
      const box = await page.locator(plot).boundingBox();
      await page.mouse.click(box.x + (i + 0.5) * box.width / n, box.y + box.height / 2);
      await page.waitForSelector(`body[data-step='${step}'][data-settled='${step}']`);
      assert.equal((await page.textContent("tr.actor[data-name='consumer'] .depth")).trim(), `${depth} / 20`);
      // Another point: early on, before the surplus built up.
      const early = await page.evaluate(() => {
        const b = window.__inspector.plots.data.plots.find((p) => p.name === "consumer").buckets;
        const i = Math.floor(b.length / 20);
        return { i, n: b.length, depth: b[i].depth, step: b[i].step };
      });
      // (The page's layout moved with the step: the plot is found again.)
      await page.locator(plot).scrollIntoViewIfNeeded();
      const box2 = await page.locator(plot).boundingBox();
      await page.mouse.click(box2.x + (early.i + 0.5) * box2.width / early.n, box2.y + box2.height / 2);
      await page.waitForSelector(`body[data-step='${early.step}'][data-settled='${early.step}']`);
      assert.equal((await page.textContent("tr.actor[data-name='consumer'] .depth")).trim(), `${early.depth} / 20`);
      // The current step is marked where its time falls: at or before the
      // bucket clicked (a bucket's step is the last change of the depth
      // drawn there, which may come from an earlier pixel).
      const x = Number(await page.getAttribute(`${plot} line.cursor`, "x1"));
      const want = await page.evaluate(() => {
        const s = window.__inspector, d = s.plots.data;
        return ((s.lastView.world.t_ns - d.t0) / (d.t1 - d.t0)) * s.plots.data.plots[0].buckets.length;
      });
      assert.ok(Math.abs(x - want) < 0.1 && x <= early.i + 1, `cursor at ${x}, step at ${want}, clicked bucket ${early.i}`);
      // Little's law: lambda W against the mean depth, within a few percent
      // (a queue that never empties between its arrivals and departures).
      const little = page.locator("#plots .queue[data-actor] .little").first();
      const predicted = Number(await little.getAttribute("data-predicted"));
      const mean = Number(await little.getAttribute("data-mean"));
      assert.ok(mean > 5 && Math.abs(predicted - mean) / mean < 0.1, `lambda W ${predicted}, L ${mean}`);
      if (policy === "keep-newest") {
        // Evictions drawn below the depth.
        assert.ok(await page.locator(`${plot} rect.loss`).count() > 0);
        await page.locator("#pane-plots").screenshot({ path: join(SHOTS, "queues.png") });
      }
    } finally { stop(s); }
  });
}

// ------------------------------------------------------------------ long lanes
await test("a long lane shows its first boxes and counts the rest exactly; steps update lanes in place", async () => {
  const FLOOD = 5000, TIMERS = 40;
  const ev = [
    { kind: "spawn", actor: 2, name: "kinds", parent: null, policy: "keep-oldest(3)" },
    { kind: "enqueue", actor: 2, lane: "user", depth: 1 },
    { kind: "enqueue", actor: 2, lane: "user", depth: 2 },
    { kind: "enqueue", actor: 2, lane: "user", depth: 3 },
    { kind: "drop", actor: 2, policy: "keep_oldest", which: "incoming" },
    { kind: "turn_start", actor: 2, what: "message" },
    { kind: "stash", actor: 2, size: 1 },
    { kind: "turn_end", actor: 2, ok: true },
    { kind: "turn_start", actor: 2, what: "message" },
    { kind: "turn_end", actor: 2, ok: true },
    { kind: "unstash", actor: 2, count: 1 },
    { kind: "turn_start", actor: 2, what: "unstashed" },
    { kind: "turn_end", actor: 2, ok: true },
    { kind: "timer_set", actor: 2, timer: 100, deadline_ns: 5000 },
    { kind: "timer_set", actor: 2, timer: 101, deadline_ns: 6000 },
    { kind: "timer_cancel", actor: 2, timer: 101 },
    { kind: "timer_fire", actor: 2, timer: 100 },
    { kind: "turn_start", actor: 2, what: "timer" },
    { kind: "turn_end", actor: 2, ok: true },
    { kind: "enqueue", actor: 2, lane: "user", depth: 2 },
    { kind: "turn_start", actor: 2, what: "message" },
    { kind: "stash", actor: 2, size: 1 },
    { kind: "timer_set", actor: 2, timer: 102, deadline_ns: 7000 },
    { kind: "turn_end", actor: 2, ok: false },
    { kind: "fail", actor: 2, error: "boom" },
    { kind: "restart", actor: 2, restarts_in_period: 1 },
    { kind: "spawn", actor: 1, name: "flood", parent: null, policy: "unbounded" },
    { kind: "mute", actor: 1, by: 2 },
    { kind: "ask", actor: 1, request: 7, to: 2 },
    { kind: "unmute", actor: 1 },
    { kind: "enqueue", actor: 2, lane: "user", depth: 2 },
    { kind: "stop", actor: 2, reason: "stopped" },
  ];
  const kinds = ev.length;
  const first = ev.length; // the seq of the flood's first enqueue
  for (let i = 0; i < FLOOD; i++) ev.push({ kind: "enqueue", actor: 1, lane: "user", depth: i + 1 });
  for (let i = 0; i < TIMERS; i++) ev.push({ kind: "timer_set", actor: 1, timer: i + 1, deadline_ns: 1000 * (i + 1) });
  ev.push({ kind: "turn_start", actor: 1, what: "message" }, { kind: "turn_end", actor: 1, ok: true });
  const p = traceFile("long-lanes.jsonl", { format: "turno-trace", version: 1 }, ev);
  const s = await serve(TURNO, ["inspect", p]);
  try {
    await open(s.url);
    const len = ev.length, full = len - 2;
    const CAP = 16;
    const user = "[data-lane='actor:1:user']", timers = "[data-lane='actor:1:timers']";
    const seqs = (from, n) => Array.from({ length: n }, (_, i) => String(from + i));
    // Every message and timer queued: the first CAP boxes, and the rest
    // counted exactly (the trace keeps 4096 boxes and counts the last 904).
    await goto(full);
    assert.equal(await page.getAttribute(user, "data-count"), String(FLOOD));
    assert.equal(await page.textContent(`${user} .lane-name`), `#1 mailbox (${FLOOD})`);
    assert.deepEqual(await attrs(`${user} .box:not(.ghost)`, "data-item"), seqs(first, CAP));
    assert.equal(await page.textContent(`${user} .more`), `+${FLOOD - CAP} more`);
    assert.equal(await page.isVisible(`${user} .more`), true);
    assert.equal((await page.textContent("tr.actor[data-name='flood'] .depth")).trim(), String(FLOOD));
    assert.equal(await page.textContent(`${timers} .lane-name`), `#1 timers (${TIMERS})`);
    assert.equal(await page.locator(`${timers} .box`).count(), CAP);
    assert.equal(await page.textContent(`${timers} .more`), `+${TIMERS - CAP} more`);
    // One turn later the head box has gone: the next CAP, one fewer hidden.
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector(`body[data-step='${full + 1}'][data-settled='${full + 1}']`);
    assert.deepEqual(await attrs(`${user} .box:not(.ghost)`, "data-item"), seqs(first + 1, CAP));
    assert.deepEqual(await attrs(`${user} .box.ghost.pop`, "data-item"), [String(first)]);
    assert.equal(await page.textContent(`${user} .more`), `+${FLOOD - 1 - CAP} more`);
    assert.equal(await page.textContent(`${user} .lane-name`), `#1 mailbox (${FLOOD - 1})`);
    // A lane under the cap shows no count.
    await goto(first + 5);
    assert.equal(await page.locator(`${user} .box`).count(), 5);
    assert.equal(await page.isVisible(`${user} .more`), false);
    // Drops and the stash, as each step moves them.
    const kindsUser = "[data-lane='actor:2:user']", kindsStash = "[data-lane='actor:2:stash']", kindsRow = "tr.actor[data-name='kinds']";
    await goto(5);
    assert.deepEqual(await texts(`${kindsUser} .box.ghost.drop`), ["\u2717 incoming msg"]);
    assert.equal(await page.textContent(`${kindsRow} .drops`), "keep_oldest: 1");
    await goto(6);
    assert.deepEqual(await attrs(`${kindsUser} .box.ghost.pop`, "data-item"), ["1"]);
    await goto(7);
    assert.deepEqual(await attrs(`${kindsStash} .box.moved`, "data-item"), ["1"]);
    assert.equal(await page.textContent(`${kindsRow} .stash-size`), "1");
    await goto(12);
    assert.deepEqual(await attrs(`${kindsStash} .box.ghost.pop`, "data-item"), ["1"]);
    assert.equal(await page.textContent(`${kindsRow} .stash-size`), "0");
    // Every actor kind, stepped through one event at a time both ways,
    // draws what a jump to the same step draws; so does the flood's end.
    const steps = Array.from({ length: kinds + 3 }, (_, i) => i);
    await sameByStepAndJump(["#actors", "#waitfor"], steps, len);
    await sameByStepAndJump(["#actors"], [full - 2, full - 1, full, full + 1, full + 2], len);
    await goto(full);
    await page.locator("#pane-actors").screenshot({ path: join(SHOTS, "long-lanes.png") });
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
await test("chart trace: the chart drawn with its arrows, the active configuration and the transition taken highlighted", async () => {
  // A real run of turno-chart's interpreter; the chart's own snapshot
  // values (printed by the example) are what the page must highlight.
  const p = join(tmp, "chart.jsonl");
  const values = execFileSync(CHART, [p], { encoding: "utf8" }).trim().split("\n").map((l) => JSON.parse(l));
  const leaves = (v) => typeof v === "string" ? [v] : Object.values(v).flatMap(leaves);
  const want = values.map((v) => leaves(v).sort());
  const lines = readFileSync(p, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l));
  const define = lines.find((e) => e.kind === "chart_define");
  const chartActor = define.actor;
  const ends = lines.filter((e) => e.kind === "turn_end" && e.actor === chartActor).map((e) => e.seq + 1);
  // The transitions the chart took in its macrostep before step k (since
  // its last external event), as the trace names them: indices into the
  // definition's transitions.
  const takenAt = (k) => {
    const before = lines.slice(0, k).filter((e) => e.actor === chartActor);
    const start = before.map((e) => e.kind === "chart_event" && e.origin === "external").lastIndexOf(true);
    return before.slice(start + 1).filter((e) => e.kind === "chart_transition").map((e) => String(e.index));
  };
  // Green's two TIMER transitions to yellow differ only by guard; the
  // second (unguarded) one is taken.
  const fromGreen = define.transitions.map((d, i) => [d, i]).filter(([d]) => d.source === "crossing.light.green");
  assert.equal(fromGreen.length, 2);
  assert.ok(fromGreen[0][0].guard && !fromGreen[1][0].guard);
  let sawSecondGreen = false;
  const s = await serve(TURNO, ["inspect", p]);
  try {
    await open(s.url);
    const seen = [];
    let sawTaken = 0;
    for (const k of ends) {
      await goto(k);
      await page.waitForSelector("#charts [data-drawn='1'] svg");
      // An arrow for every transition of the definition, in its order.
      assert.deepEqual(await attrs("#charts g.transition", "data-transition"), define.transitions.map((_, i) => String(i)));
      assert.equal(await page.locator("#charts g.state").count(), define.states.length + 1);
      // The highlighted leaves: active states with no active state inside.
      const ids = await attrs("#charts g.state.active", "data-state");
      const active = ids.filter((a) => !ids.some((b) => b.startsWith(a + "."))).map((a) => a.split(".").pop());
      active.sort();
      if (JSON.stringify(seen[seen.length - 1]) !== JSON.stringify(active)) seen.push(active);
      // The transitions just taken, and only they.
      const taken = await attrs("#charts g.transition.taken", "data-transition");
      assert.deepEqual(taken, takenAt(k), `step ${k}`);
      if (taken.length) sawTaken++;
      if (taken.includes(String(fromGreen[1][1]))) {
        sawSecondGreen = true;
        assert.ok(!taken.includes(String(fromGreen[0][1])));
      }
      if (JSON.stringify(active) === JSON.stringify(["go", "halt"])) {
        const par = await attrs("#charts g.state.parallel.active", "data-state");
        assert.equal(par.length, 1);
        assert.equal(ids.filter((a) => a.startsWith(par[0] + ".")).length, 4);
        await page.locator("#pane-charts").screenshot({ path: join(SHOTS, "charts.png") });
      }
    }
    assert.deepEqual(seen, want);
    assert.deepEqual(want[want.length - 1], ["off"]);
    assert.ok(sawTaken > 0);
    assert.ok(sawSecondGreen, "the unguarded TIMER from green is the one marked");
  } finally { stop(s); }
});

// ------------------------------------------------------------------ the wizard's diagram
await test("the signup wizard's diagram: an arrow for every transition, the one just taken highlighted", async () => {
  // The demo draws its chart with the inspector's renderer.
  const data = mkdtempSync(join(tmp, "wizard-"));
  const s = await serve(TURNO, ["demo", "--port", "0", "--gateway-port", "0", "--data-dir", data]);
  const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  try {
    const click = (sel) => Promise.all([p.waitForNavigation(), p.click(sel)]);
    await p.goto(s.url);
    await p.waitForFunction(() => document.body.dataset.step === "personal");
    if ((await p.getAttribute("#workings", "aria-pressed")) !== "true") await click("#workings");
    await p.waitForSelector("#chart svg.statechart");
    // The transitions signup.json writes, by source state (the submit
    // step is turno-chart's submit machine, put in its place).
    const def = JSON.parse(readFileSync(join(root, "crates/turno-wizard/assets/signup.json"), "utf8"));
    const want = new Map();
    const walk = (s, id) => {
      if (id === "signup.submit") return;
      let n = 0;
      for (const t of Object.values(s.on || {})) n += Array.isArray(t) ? t.length : 1;
      want.set(id, n);
      for (const [k, c] of Object.entries(s.states || {})) walk(c, id + "." + k);
    };
    walk(def, def.id);
    const arrows = await p.$$eval("#chart g.transition", (gs) => gs.map((g) => [g.dataset.transition, g.dataset.source, g.querySelectorAll("path").length]));
    assert.deepEqual(arrows.map((a) => a[0]), arrows.map((_, i) => String(i)));
    assert.ok(arrows.every((a) => a[2] >= 1));
    for (const [id, n] of want) assert.equal(arrows.filter((a) => a[1] === id).length, n, `arrows from ${id}`);
    assert.ok(arrows.length > [...want.values()].reduce((a, b) => a + b, 0), "the submit machine's arrows too");
    assert.equal(await p.locator("#chart g.transition.taken").count(), 0);
    // A step: the NEXT arrow from personal is the one taken.
    await p.fill("#name", "Ada Lovelace");
    await p.fill("#email", "ada@example.org");
    await click("#ev-NEXT");
    await p.waitForFunction(() => document.body.dataset.step === "plan");
    const taken = async () => p.$$eval("#chart g.transition.taken", (gs) => gs.map((g) => [g.dataset.source, g.querySelector("title").textContent, g.dataset.targets, g.dataset.transition]));
    let t = await taken();
    assert.equal(t.length, 1);
    assert.equal(t[0][0], "signup.personal");
    assert.match(t[0][1], /^NEXT\b/);
    // Of personal's two NEXT arrows (to submit when editing, to plan), the
    // one the chart took, as the session reports it.
    assert.equal(t[0][2], "signup.plan");
    const reported = async () => p.evaluate(async () => (await (await fetch("/api/state", { cache: "no-store" })).json()).taken.map(String));
    assert.deepEqual(await reported(), [t[0][3]]);
    assert.deepEqual(await p.$$eval("#chart g.state.active", (gs) => gs.map((g) => g.dataset.state)), ["signup", "signup.plan"]);
    await p.check("input[name=plan][value=pro]");
    await p.selectOption("#billing", "monthly");
    await click("#ev-NEXT");
    await p.waitForFunction(() => document.body.dataset.step === "payment.card");
    t = await taken();
    assert.equal(t.length, 1);
    assert.equal(t[0][0], "signup.plan");
    assert.equal(t[0][2], "signup.payment");
    assert.deepEqual(await reported(), [t[0][3]]);
    await p.locator("#chart").screenshot({ path: join(SHOTS, "wizard-chart.png") });
  } finally { await p.close(); stop(s); }
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
await test("live mode follows a running demo, queues over time drawn as it runs", async () => {
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
    // Stash sizes: the batcher sets messages aside and takes them back five
    // at a time, so its stash size moves between 0 and 5.
    const batcher = "tr.actor[data-name='batcher'] .stash-size";
    await page.waitForSelector(batcher, { timeout: 20000 });
    const stashSizes = new Set();
    for (let i = 0; i < 400 && stashSizes.size < 3; i++) {
      stashSizes.add(Number(await page.textContent(batcher)));
      await page.waitForTimeout(50);
    }
    assert.ok(stashSizes.size >= 3 && [...stashSizes].every((n) => n >= 0 && n <= 5), [...stashSizes].join(","));
    // Current chart states: the light's active state follows the ticker's TIMER.
    await page.waitForSelector("#charts .chart g.state.active", { timeout: 20000 });
    const leaves = () => page.$$eval("#charts g.state.active", (els) => {
      const ids = els.map((e) => e.dataset.state);
      return ids.filter((a) => !ids.some((b) => b.startsWith(a + "."))).map((a) => a.split(".").pop()).join(",");
    });
    const seenStates = new Set();
    for (let i = 0; i < 200 && seenStates.size < 3; i++) {
      seenStates.add(await leaves());
      await page.waitForTimeout(50);
    }
    assert.deepEqual([...seenStates].sort(), ["green", "red", "yellow"]);
    assert.ok(await page.locator("#depths polyline").count() >= 4);
    // Queues over time, live: the server folds what the system did so far
    // into the plots, the page asks again as it runs, and each plot's
    // deepest point is the deepest the system's mailbox got (as the world
    // of the latest snapshot counts it).
    for (const name of ["consumer-newest", "consumer-suspend"]) {
      const plot = `#plots svg.queue-plot[data-name='${name}']`;
      await page.waitForSelector(plot, { timeout: 20000 });
      await page.waitForFunction(([plot, name]) => {
        const s = window.__inspector, a = Object.values(s.live.world.actors).find((a) => a.name === name);
        const drawn = Number(document.querySelector(plot)?.dataset.maxDepth);
        return a && drawn === a.max_depth && s.plots.data.plots.find((p) => p.name === name).max_depth === a.max_depth;
      }, [plot, name], { timeout: 20000 });
      const drawn = Number(await page.getAttribute(plot, "data-max-depth"));
      assert.ok(drawn >= 20, `${name}: a (20) mailbox under a surplus fills: ${drawn}`);
    }
    const before = await page.evaluate(() => ({ loads: window.__inspector.plots.loads, t1: window.__inspector.plots.data.t1 }));
    await page.waitForFunction((n) => window.__inspector.plots.loads >= n + 2, before.loads, { timeout: 20000 });
    const after = await page.evaluate(() => window.__inspector.plots.data);
    assert.ok(after.t1 > before.t1 && after.t0 === 0, `plots over [${after.t0}, ${after.t1}] after [0, ${before.t1}]`);
    // Live plots have no steps to go to: no cursor.
    assert.equal(await page.locator("#plots svg.queue-plot line.cursor").count(), 0);
    assert.ok(await page.locator("#plots svg.queue-plot[data-name='consumer-newest'] rect.loss").count() > 0);
    await page.locator("#pane-plots").screenshot({ path: join(SHOTS, "live-queues.png") });
    await page.locator("#pane-depths").screenshot({ path: join(SHOTS, "live-depths.png") });
    await page.locator("#pane-actors").screenshot({ path: join(SHOTS, "live-actors.png") });
  } finally { stop(s); }
});

// ------------------------------------------------------------------ a million events
// BIG=1: both trace families at a million events, the shapes of
// `turno-bench inspect`. Reported, not asserted: the whole open (from
// starting `turno inspect` to the page ready: process start, index, page
// load, the first step rendered and, for an actor trace, its queue plots
// drawn), the open as the browser sees it (navigation start to ready), the
// queue plots' part of it, and each step in the browser (from the input
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
      // Settled: the rows and lanes off screen drawn too (a jump leaves them for idle time).
      if (b.dataset.settled !== undefined && (!window.__marks.settled || window.__marks.settled[0] !== b.dataset.settled)) window.__marks.settled = [b.dataset.settled, performance.now()];
      const step = b.dataset.step;
      if (window.__marks.step && window.__marks.step[0] === step) return;
      window.__marks.step = [step, performance.now()];
      // Painted: the frame after the step's DOM changes (style, layout and
      // paint included) has been produced.
      requestAnimationFrame(() => setTimeout(() => { window.__marks.painted = [step, performance.now()]; }));
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready", "data-step", "data-settled"] });
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
        // Actor traces: the queue plots, drawn before the page says ready.
        const plotMs = await page.evaluate(() => window.__inspector.plots.ms || null);
        const len = Number(await page.textContent("#len"));
        const browser = [], painted = [], seen = [], cpu = [], settled = [];
        // The renderer's CPU time per step (Chrome's ThreadTime, the main
        // thread, and ProcessTime, the whole renderer): on a loaded machine
        // the wall times above include waiting for a core; these do not.
        const cdp = await page.context().newCDPSession(page);
        await cdp.send("Performance.enable");
        const times = async () => {
          const m = Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((x) => [x.name, x.value]));
          return [m.ThreadTime * 1000, m.ProcessTime * 1000, m.ScriptDuration * 1000, m.RecalcStyleDuration * 1000, m.LayoutDuration * 1000];
        };
        const timed = async (want, act) => {
          const a = Date.now();
          const t0s = await times();
          const [thread0, proc0] = t0s;
          const from = await page.evaluate(act);
          await page.waitForSelector(`body[data-step='${want}']`);
          seen.push(Date.now() - a);
          await page.waitForFunction((w) => window.__marks.painted && window.__marks.painted[0] === String(w), want);
          const [step, at] = await page.evaluate(() => window.__marks.step);
          assert.equal(step, String(want));
          browser.push(at - from);
          painted.push((await page.evaluate(() => window.__marks.painted))[1] - from);
          await page.waitForFunction((w) => window.__marks.settled && window.__marks.settled[0] === String(w), want);
          settled.push((await page.evaluate(() => window.__marks.settled))[1] - from);
          const t1s = await times();
          const [thread1, proc1] = t1s;
          cpu.push([thread1 - thread0, proc1 - proc0]);
          const [script, style, layout] = [2, 3, 4].map((i) => (t1s[i] - t0s[i]).toFixed(1));
          if (process.env.BIG_STEPS) {
            const [req, draw] = (await page.evaluate(() => window.__inspector.renderMs)).at(-1);
            console.log(`  step ${want}: ${(at - from).toFixed(1)} ms rendered, ${painted.at(-1).toFixed(1)} ms painted (request and decode ${req.toFixed(1)}, drawing ${draw.toFixed(1)}); ` +
              `all rows and lanes drawn ${settled.at(-1).toFixed(1)} ms; renderer CPU ${cpu.at(-1)[0].toFixed(1)} ms main thread, ${cpu.at(-1)[1].toFixed(1)} ms in all; script ${script}, style ${style}, layout ${layout} ms`);
          }
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
        // The page's own split of the same steps: the request (server and
        // transfer) with the JSON decode, and the drawing.
        const split = (await page.evaluate(() => window.__inspector.renderMs)).slice(-browser.length);
        const fetchMs = split.map((x) => x[0]).sort((x, y) => x - y), drawMs = split.map((x) => x[1]).sort((x, y) => x - y);
        const cpuMain = cpu.map((x) => x[0]).sort((x, y) => x - y), cpuAll = cpu.map((x) => x[1]).sort((x, y) => x - y);
        browser.sort((x, y) => x - y);
        painted.sort((x, y) => x - y);
        seen.sort((x, y) => x - y);
        settled.sort((x, y) => x - y);
        const f = (x) => x.toFixed(1);
        console.log(`BIG ${name}: ${len} events, ${mb} MB; ${/indexed in \S+ ms[^\n]*/.exec(s.err())?.[0] ?? s.err().trim()}; ` +
          `open: ${whole} ms from starting turno to the page ready, ${f(inPage)} ms from navigation; ` +
          (plotMs ? `queue plots drawn ${f(plotMs[2])} ms from navigation (request and decode ${f(plotMs[0])} ms, drawing ${f(plotMs[1])} ms); ` : "") +
          `step in the browser median ${f(median(browser))} ms, max ${f(browser[browser.length - 1])} ms, ` +
          `painted (the next frame produced) median ${f(median(painted))} ms, max ${f(painted[painted.length - 1])} ms; ` +
          `settled (off-screen rows and lanes drawn too) median ${f(median(settled))} ms, max ${f(settled[settled.length - 1])} ms; ` +
          `of which request and decode median ${f(median(fetchMs))} ms, max ${f(fetchMs[fetchMs.length - 1])} ms, ` +
          `drawing median ${f(median(drawMs))} ms, max ${f(drawMs[drawMs.length - 1])} ms; ` +
          `renderer CPU per step (to the frame painted, the test's own calls included) main thread median ${f(median(cpuMain))} ms, max ${f(cpuMain[cpuMain.length - 1])} ms, ` +
          `whole renderer median ${f(median(cpuAll))} ms, max ${f(cpuAll[cpuAll.length - 1])} ms; ` +
          `as the test sees it median ${median(seen)} ms, max ${seen[seen.length - 1]} ms (${seen.length} steps)`);
      } finally { stop(s); }
    });
  }
}

await test("cluster trace from the simulated cluster: one lane per node, a message followed from sender to receiver (send, wire, verdict, turn)", async () => {
  const p = join(tmp, "cluster.jsonl");
  const printed = execFileSync(CLUSTER, [p], { encoding: "utf8" }).trim().split("\n");
  const [header, ...events] = readFileSync(p, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const s = await serve(TURNO, ["inspect", p]);
  try {
    await open(s.url);
    const lanes = await attrs("#lanes .node-lane", "data-node");
    assert.deepEqual(lanes, header.nodes);
    assert.deepEqual(lanes, printed);
    // A send the receiving mailbox enqueued, as the file records it.
    const received = events.find((r) => r.kind === "remote_receive" && r.verdict === "enqueued" &&
      events.some((e) => e.kind === "remote_send" && e.how === "send" && e.msg === r.msg));
    const sent = events.find((e) => e.kind === "remote_send" && e.msg === received.msg);
    assert.notEqual(sent.node, received.node);
    const idx = await page.$$eval("#cluster-msg option", (os, id) => os.findIndex((o) => o.textContent.startsWith(id + " ")), sent.msg);
    assert.ok(idx > 0, `${sent.msg} listed`);
    await page.selectOption("#cluster-msg", { index: idx });
    const path = await page.$$eval("#cluster-path li", (ls) => ls.map((l) => ({ what: l.dataset.what, node: l.dataset.node, step: Number(l.dataset.step) })));
    assert.deepEqual(path.map((x) => x.what), ["send", "wire", "verdict", "turn"]);
    assert.deepEqual(path.map((x) => x.node), [sent.node, sent.node, received.node, received.node]);
    assert.ok(path.every((x, i) => i === 0 || path[i - 1].step < x.step), JSON.stringify(path));
    assert.equal(path[0].step, sent.seq + 1);
    assert.equal(path[2].step, received.seq + 1);
    // The four marks lit, each on its node's lane.
    const lit = await page.$$eval("#lanes .mark.follow", (ms) => ms.map((m) => `${m.closest(".node-lane").dataset.node} ${m.dataset.what}`));
    assert.deepEqual(lit.sort(), path.map((x) => `${x.node} ${x.what}`).sort());
    // Each step of the path goes to its event: the mark's kind, on its node.
    const kinds = ["remote_send", "remote_wire", "remote_receive", "turn_start"];
    for (const [i, x] of path.entries()) {
      await page.click(`#cluster-path li:nth-child(${i + 1})`);
      await page.waitForSelector(`body[data-step='${x.step}'][data-settled='${x.step}']`);
      const ev = events[x.step - 1];
      assert.equal(ev.kind, kinds[i]);
      assert.equal(ev.node, x.node);
      assert.ok((await page.textContent("#event")).includes(`"kind":"${kinds[i]}"`));
      assert.equal(await page.getAttribute("#cluster-path li.here", "data-what"), x.what);
    }
    await page.screenshot({ path: join(SHOTS, "cluster-follow.png") });
  } finally { stop(s); }
});

await test("every request the page made went to the inspector on 127.0.0.1, and its own policy refused nothing", async () => {
  assert.deepEqual(foreign, []);
  assert.deepEqual(refused, []);
});

await browser.close();
const failed = results.filter((r) => r[1] !== "ok").length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
