// Browser tests of `turno learn` in Debian's chromium (Playwright).
//
//   node test.mjs            (from crates/turno-learn/browser; see scripts/test.sh)
//
// Environment: TURNO_BIN (the `turno` binary; the page is served by `turno
// learn --port 0`), CHROMIUM (default /usr/bin/chromium), SHOTS (where the
// screenshots of docs/learn.md go, default docs/learn/), ONLY=TEXT to run
// only the tests whose name contains TEXT.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const target = process.env.CARGO_TARGET_DIR || join(root, "target");
const TURNO = process.env.TURNO_BIN || join(target, "debug/turno");
const SHOTS = process.env.SHOTS || join(root, "docs/learn");
if (!existsSync(TURNO)) { console.error(`missing ${TURNO}: run cargo build -p turno-cli (or set TURNO_BIN)`); process.exit(2); }
mkdirSync(SHOTS, { recursive: true });

const children = [];
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

// Starts `turno learn`; resolves with the URL it prints.
function serve() {
  return new Promise((ok, fail) => {
    const c = spawn(TURNO, ["learn", "--port", "0"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    children.push(c);
    let out = "", err = "";
    const t = setTimeout(() => fail(new Error(`no URL from turno learn\n${out}\n${err}`)), 60000);
    c.stdout.on("data", (d) => {
      out += d;
      const m = /^(http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(out);
      if (m) { clearTimeout(t); ok(m[1]); }
    });
    c.stderr.on("data", (d) => { err += d; });
    c.on("exit", (code) => fail(new Error(`turno learn exited ${code}\n${out}\n${err}`)));
  });
}

const results = [];
async function test(name, f) {
  if (process.env.ONLY && !name.includes(process.env.ONLY)) return;
  const t0 = Date.now();
  try { await f(); results.push([name, "ok"]); console.log(`ok   ${name} (${Date.now() - t0} ms)`); }
  catch (e) { results.push([name, "FAILED"]); console.log(`FAIL ${name}\n${e.stack}`); }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const url = await serve();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const context = await browser.newContext({ viewport: { width: 1300, height: 1000 }, locale: "en-US" });
const page = await context.newPage();
const pageErrors = [], foreign = [], refused = [];
page.on("pageerror", (e) => { pageErrors.push(e.message); console.log("page error:", e.message); });
page.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) refused.push(m.text()); });
page.on("request", (r) => { if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(r.url())) foreign.push(r.url()); });
await page.goto(url);
await page.waitForFunction(() => ["stepper-main", "stepper-node", "stepper-freeze"].every((id) => document.getElementById(id).dataset.runs));

// What a stepper draws at its current step.
const drawn = (id) => page.locator(`#${id} .state`).innerText();
const stepOf = async (id) => Number(await page.locator(`#${id}`).getAttribute("data-step"));
const stepsOf = async (id) => Number(await page.locator(`#${id}`).getAttribute("data-steps"));
async function jump(id, k) {
  await page.evaluate(([id, k]) => {
    const s = document.querySelector(`#${id} .slider`);
    s.value = String(k);
    s.dispatchEvent(new Event("input", { bubbles: true }));
  }, [id, k]);
}
async function waitRun(id, before) {
  await page.waitForFunction(([id, n]) => {
    const r = document.getElementById(id);
    return Number(r.dataset.runs) > n && !r.dataset.busy;
  }, [id, before], { timeout: 30000 });
}
const runsOf = async (id) => Number(await page.locator(`#${id}`).getAttribute("data-runs"));

// Walks a stepper to its end with the buttons (or the arrow keys) and back
// to its start, and jumps with the slider to every step: the same step
// must be drawn the same way however it was reached.
async function walk(id, { keys = false } = {}) {
  const n = await stepsOf(id);
  assert.ok(n > 1, `${id}: ${n} steps`);
  await page.locator(`#${id} .first`).click();
  assert.equal(await stepOf(id), 0);
  const forward = [await drawn(id)];
  if (keys) await page.locator(`#${id} .state`).focus();
  for (let k = 1; k < n; k++) {
    if (keys) await page.keyboard.press("ArrowRight");
    else await page.locator(`#${id} .next`).click();
    assert.equal(await stepOf(id), k);
    forward.push(await drawn(id));
  }
  // At the end, forward stays at the end.
  if (keys) await page.keyboard.press("ArrowRight"); else await page.locator(`#${id} .next`).click();
  assert.equal(await stepOf(id), n - 1);
  for (let k = n - 2; k >= 0; k--) {
    if (keys) await page.keyboard.press("ArrowLeft");
    else await page.locator(`#${id} .prev`).click();
    assert.equal(await stepOf(id), k);
    assert.equal(await drawn(id), forward[k], `${id}: step ${k} back`);
  }
  for (const k of [...forward.keys()].reverse()) {
    await jump(id, k);
    assert.equal(await stepOf(id), k);
    assert.equal(await drawn(id), forward[k], `${id}: step ${k} by jumping`);
  }
  await page.locator(`#${id} .last`).click();
  assert.equal(await stepOf(id), n - 1);
  return forward;
}

await test("the page is in English or Spanish as the browser asks, and switches", async () => {
  assert.equal(await page.locator("h1").innerText(), "The event loop, as a page you press");
  const es = await browser.newContext({ locale: "es-ES" });
  const p = await es.newPage();
  await p.goto(url);
  assert.equal(await p.locator("h1").innerText(), "El bucle de eventos, en una página que se pulsa");
  assert.equal(await p.locator("#steppers h2").innerText(), "2. Paso a paso");
  await p.locator("#lang-en").click();
  assert.equal(await p.locator("h1").innerText(), "The event loop, as a page you press");
  await es.close();
  await page.locator("#lang-es").click();
  assert.equal(await page.locator("#both-go").innerText(), "Ejecutar los dos bucles");
  await page.locator("#lang-en").click();
  assert.equal(await page.locator("#both-go").innerText(), "Run both loops");
});

await test("freeze: the rAF counter stops, the CSS animation keeps moving, the keys come after", async () => {
  await page.locator("#freeze").scrollIntoViewIfNeeded();
  const cdp = await context.newCDPSession(page);
  const blockMs = 1500;
  // Frames the compositor sends to the screen while the main thread is
  // blocked: with the amber animation running and, as the control, paused.
  const during = {};
  for (const paused of [false, true]) {
    await page.evaluate((p) => {
      document.getElementById("css-bar").style.animationPlayState = p ? "paused" : "running";
      document.getElementById("typed").value = "";
    }, paused);
    const frames = [];
    const onFrame = (f) => { frames.push({ at: Date.now(), data: f.data }); cdp.send("Page.screencastFrameAck", { sessionId: f.sessionId }).catch(() => {}); };
    cdp.on("Page.screencastFrame", onFrame);
    await cdp.send("Page.startScreencast", { format: "png", everyNthFrame: 1 });
    await sleep(300);
    await page.fill("#block-ms", String(blockMs));
    const blocks = (await page.evaluate(() => window.__freeze.blocks.length));
    const t0 = Date.now();
    await page.evaluate(() => setTimeout(() => document.getElementById("freeze-go").click(), 50));
    await sleep(450);
    // Keys typed while the page is frozen (not awaited: each waits for the
    // page to take it).
    const typing = [
      cdp.send("Input.dispatchKeyEvent", { type: "keyDown", key: "h", code: "KeyH", text: "h", windowsVirtualKeyCode: 72 }),
      cdp.send("Input.dispatchKeyEvent", { type: "keyUp", key: "h", code: "KeyH", windowsVirtualKeyCode: 72 }),
      cdp.send("Input.dispatchKeyEvent", { type: "keyDown", key: "i", code: "KeyI", text: "i", windowsVirtualKeyCode: 73 }),
      cdp.send("Input.dispatchKeyEvent", { type: "keyUp", key: "i", code: "KeyI", windowsVirtualKeyCode: 73 }),
    ];
    await sleep(700);
    const t1 = Date.now();
    await Promise.all(typing);
    await page.waitForFunction((n) => window.__freeze.blocks.length > n, blocks);
    await sleep(600);
    await cdp.send("Page.stopScreencast");
    cdp.off("Page.screencastFrame", onFrame);
    const inBlock = frames.filter((f) => f.at > t0 + 250 && f.at < t1);
    during[paused ? "paused" : "running"] = new Set(inBlock.map((f) => f.data)).size;
    const log = await page.evaluate(() => ({ ...window.__freeze }));
    const block = log.blocks[log.blocks.length - 1];
    assert.ok(block.end - block.start >= blockMs - 1);
    // No rAF callback ran during the block: the frame counter stood still.
    assert.equal(block.framesAfter, block.framesBefore);
    const gaps = log.frames.slice(1).map((t, i) => t - log.frames[i]);
    assert.ok(Math.max(...gaps) >= blockMs - 50, `longest gap between rAF frames ${Math.max(...gaps)} ms`);
    // The keys pressed during the block were handled after it, together.
    const keys = log.keys.filter((k) => k.sent >= block.start && k.sent < block.end);
    assert.ok(keys.length >= 1, JSON.stringify(log.keys));
    for (const k of log.keys.filter((k) => k.sent >= block.start)) assert.ok(k.handled >= block.end, JSON.stringify(k));
    const inputs = log.inputs.filter((i) => i.at >= block.start);
    assert.ok(inputs.length >= 1 && inputs.every((i) => i.at >= block.end), JSON.stringify(inputs));
    assert.equal(await page.inputValue("#typed"), "hi");
    if (!paused) {
      await page.waitForFunction(() => /blocked for/.test(document.getElementById("freeze-report").textContent));
      const took = Math.round(block.end - block.start);
      assert.match(await page.locator("#freeze-report").innerText(), new RegExp(`blocked for ${took} ms`));
      // The same run on the lanes: one busy span, no rAF frame inside it,
      // the keys waiting from their arrival to the end of the block.
      const lanes = page.locator("#freeze-lanes");
      assert.equal(await lanes.locator(".l-main .span.busy").count(), 1);
      const busyTo = Number(await lanes.locator(".l-main .span.busy").getAttribute("data-to"));
      assert.equal(busyTo, took);
      const rafTicks = (await lanes.locator(".l-raf .tick").evaluateAll((ts) => ts.map((t) => Number(t.dataset.t))));
      assert.ok(rafTicks.length > 5 && rafTicks.every((v) => v <= 5 || v >= busyTo - 5), JSON.stringify(rafTicks));
      const waits = await lanes.locator(".l-input .span.wait").evaluateAll((ws) => ws.map((w) => [Number(w.dataset.from), Number(w.dataset.to)]));
      assert.ok(waits.length >= 1 && waits.some(([a, b]) => a > 0 && a < busyTo && b >= busyTo), JSON.stringify(waits));
      await page.locator("#freeze .freeze-live").screenshot({ path: join(SHOTS, "freeze.png") });
    }
  }
  // The screen changed while the main thread was blocked only because the
  // compositor animation moved: with it paused, nothing changed.
  assert.ok(during.running >= 3, `distinct frames during the block: ${during.running}`);
  assert.ok(during.paused <= 1, `distinct frames during the block with the animation paused: ${during.paused}`);
  await page.evaluate(() => { document.getElementById("css-bar").style.animationPlayState = "running"; });
  await cdp.detach();
});

await test("freeze on the explorer: the compositor draws while the main thread is busy, the keys wait", async () => {
  const id = "stepper-freeze";
  const steps = await walk(id);
  const busy = steps.filter((s) => /setTimeout callback: block/.test(s) && /main thread: busy/.test(s) && /compositor_frame/.test(s));
  assert.ok(busy.length >= 10, `compositor frames during the block: ${busy.length}`);
  assert.ok(steps.some((s) => /input: keydown h/.test(s) && /input: keydown i/.test(s)), "both keys queued together");
  const last = steps[steps.length - 1];
  assert.match(last, /block ends at 600 ms/);
  assert.match(last, /key h at 600 ms/);
  assert.match(last, /key i at 600 ms/);
  // The lanes: the block from 200 to 600 ms on the main thread, compositor
  // frames drawn meanwhile, both keys waiting until 600 ms; the cursor
  // follows the step.
  const lanes = page.locator(`#${id} .lanes`);
  assert.ok(await lanes.locator(".l-main .span.busy[data-from='200'][data-to='600']").count() === 1);
  assert.ok(await lanes.locator(".l-comp .tick.busy").count() >= 10);
  assert.deepEqual(await lanes.locator(".l-input .span").evaluateAll((ws) => ws.map((w) => [w.textContent, Number(w.dataset.from), Number(w.dataset.to)])), [["h", 300, 600], ["i", 400, 600]]);
  const mid = steps.indexOf(busy[Math.floor(busy.length / 2)]);
  await jump(id, mid);
  const cursor = Number(await lanes.locator(".cursor").getAttribute("data-t"));
  assert.ok(cursor > 200 && cursor < 600, String(cursor));
  assert.match(await drawn(id), new RegExp(`t = ${cursor.toFixed(3).replace(".", "\\.")} ms`));
  await page.locator("#freeze").screenshot({ path: join(SHOTS, "freeze-explorer.png") });
});

await test("every snippet of the steppers steps to the end and back, and jumps to the same steps", async () => {
  const tabs = await page.locator("#stepper-main .tab").count();
  assert.equal(tabs, 4);
  for (let i = 0; i < tabs; i++) {
    for (const model of ["html", "node"]) {
      const before = await runsOf("stepper-main");
      await page.locator(`#stepper-main .tab[data-i="${i}"]`).click();
      await waitRun("stepper-main", before);
      if (model === "node") {
        const b = await runsOf("stepper-main");
        await page.locator('#stepper-main .model[data-model="node"]').click();
        await waitRun("stepper-main", b);
      }
      const steps = await walk("stepper-main", { keys: i % 2 === 1 });
      assert.equal(await page.locator("#stepper-main .problem").innerText(), "");
      assert.ok(steps.length > 3);
      if (model === "node") {
        await page.locator('#stepper-main .model[data-model="html"]').click();
        await waitRun("stepper-main", await runsOf("stepper-main") - 1);
      }
    }
  }
  const nodeTabs = await page.locator("#stepper-node .tab").count();
  assert.equal(nodeTabs, 3);
  for (let i = 0; i < nodeTabs; i++) {
    const before = await runsOf("stepper-node");
    await page.locator(`#stepper-node .tab[data-i="${i}"]`).click();
    await waitRun("stepper-node", before);
    await walk("stepper-node");
  }
});

await test("the three competitors: script, promise, timer; the stack and the queues along the way", async () => {
  const before = await runsOf("stepper-main");
  await page.locator('#stepper-main .tab[data-i="0"]').click();
  await waitRun("stepper-main", before);
  const steps = await walk("stepper-main");
  assert.match(steps[steps.length - 1], /Console\s+script\s+promise\s+timer/);
  // A step with the promise job in the microtask queue and the timer's task
  // in the task queue, while the script is on the stack.
  const k = steps.findIndex((s) => /Call stack\s+script/.test(s) && /microtask\s+PromiseJob/.test(s) && /task\s+\(anonymous\) \(timer\)/.test(s));
  assert.ok(k > 0);
  await jump("stepper-main", k);
  await page.locator("#steppers").screenshot({ path: join(SHOTS, "steppers.png") });
});

await test("a promise and its slots: pending, then fulfilled with its result, handled", async () => {
  const before = await runsOf("stepper-main");
  await page.locator('#stepper-main .tab[data-i="1"]').click();
  await waitRun("stepper-main", before);
  const steps = await walk("stepper-main");
  const row = (s) => s.split("\n").filter((l) => /^\d+\t/.test(l));
  const pending = steps.findIndex((s) => row(s).some((r) => /^1\tthen\tpending\t–\t2\t2\ttrue$/.test(r)));
  assert.ok(pending > 0, "p pending with two reactions of each kind");
  const last = row(steps[steps.length - 1]);
  assert.ok(last.some((r) => /^1\tthen\tfulfilled\t'done'\t–\t–\ttrue$/.test(r)), last.join("\n"));
  assert.match(await page.locator("#stepper-main .state").innerText(), /\[\[PromiseIsHandled\]\]/);
  await jump("stepper-main", pending + 4);
  await page.locator("#stepper-main").screenshot({ path: join(SHOTS, "promise-slots.png") });
});

await test("an edited snippet runs again; a syntax error is shown at its line and column", async () => {
  const id = "stepper-main";
  let before = await runsOf(id);
  await page.locator(`#${id} textarea`).fill("console.log('edited');\nqueueMicrotask(() => console.log('then this'));\n");
  await waitRun(id, before);
  await page.locator(`#${id} .last`).click();
  assert.match(await drawn(id), /Console\s+edited\s+then this/);
  before = await runsOf(id);
  await page.locator(`#${id} textarea`).fill("console.log('a');\nlet x = ;\n");
  await waitRun(id, before);
  const problem = page.locator(`#${id} .problem`);
  assert.equal(await problem.getAttribute("data-kind"), "syntax");
  assert.equal(await problem.getAttribute("data-line"), "2");
  assert.equal(await problem.getAttribute("data-column"), "9");
  assert.match(await problem.innerText(), /snippet\.js:2:9 SyntaxError/);
  assert.equal(await page.locator(`#${id} .gutter .bad`).innerText(), "2");
  await page.locator(`#${id}`).screenshot({ path: join(SHOTS, "syntax-error.png") });
  before = await runsOf(id);
  await page.locator(`#${id} textarea`).fill("console.log('before');\nwhile (true) {}\n");
  await waitRun(id, before);
  assert.equal(await problem.getAttribute("data-kind"), "loop_budget");
  assert.match(await problem.innerText(), /one loop ran more than 2000000 times/);
  before = await runsOf(id);
  await page.locator(`#${id} textarea`).fill("let s = 'x';\nfor (;;) s = s + s;\n");
  await waitRun(id, before);
  assert.equal(await problem.getAttribute("data-kind"), "memory");
  assert.match(await problem.innerText(), /memory budget \(512 MiB\)/);
});

await test("a share link carries the code and the model", async () => {
  const id = "stepper-main";
  const code = "process.nextTick(() => console.log('shared tick'));\nconsole.log('shared');\n";
  const before = await runsOf(id);
  await page.locator(`#${id} textarea`).fill(code);
  await waitRun(id, before);
  const b2 = await runsOf(id);
  await page.locator(`#${id} .model[data-model="node"]`).click();
  await waitRun(id, b2);
  await page.locator(`#${id} .share`).click();
  const link = await page.locator(`#${id} .share-link`).innerText();
  assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/#s=[A-Za-z0-9_-]+$/);
  const p = await context.newPage();
  await p.goto(link);
  await p.waitForFunction(() => Number(document.getElementById("stepper-main").dataset.runs) >= 1 && document.querySelector("#stepper-main textarea").value.includes("shared"));
  assert.equal(await p.locator("#stepper-main textarea").inputValue(), code);
  assert.equal(await p.locator("#stepper-main").getAttribute("data-model"), "node");
  await p.waitForFunction(() => !document.getElementById("stepper-main").dataset.busy);
  await p.locator("#stepper-main .last").click();
  assert.match(await p.locator("#stepper-main .state").innerText(), /Console\s+shared\s+shared tick/);
  await p.close();
  await page.locator(`#${id} .model[data-model="html"]`).click();
});

await test("run both: one frame for the microtask loop, many for the task loop, in the page and on the explorer", async () => {
  await page.locator("#both").scrollIntoViewIfNeeded();
  await page.locator("#both-go").click();
  await page.waitForFunction(() => document.getElementById("both").dataset.done, null, { timeout: 60000 });
  const n = async (id) => Number(await page.locator(`#${id}`).innerText());
  assert.equal(await n("mt-page-f"), 1);
  assert.equal(await n("mt-exp-f"), 1);
  assert.ok(await n("t-page-f") >= 5, `task loop frames in the page: ${await n("t-page-f")}`);
  assert.ok(await n("t-exp-f") >= 5, `task loop frames on the explorer: ${await n("t-exp-f")}`);
  assert.ok(await n("mt-page-n") > await n("t-page-n"));
  assert.ok(await n("mt-exp-n") > await n("t-exp-n"));
  await page.locator("#both").screenshot({ path: join(SHOTS, "run-both.png") });
});

await test("guess: the browser and the explorer agree on both snippets; the right order is recognised", async () => {
  for (const i of [0, 1]) {
    const g = page.locator(`#guess-${i}`);
    await g.scrollIntoViewIfNeeded();
    await g.locator(".check").click();
    await page.waitForFunction((i) => document.getElementById(`guess-${i}`).dataset.agree, i, { timeout: 30000 });
    assert.equal(await g.getAttribute("data-agree"), "true");
    assert.match(await g.locator(".agreement").innerText(), /They agree/);
    const answer = (await g.locator("pre.browser").innerText()).split("\n");
    assert.equal(answer.join("\n"), await g.locator("pre.explorer").innerText());
    // Order the lines as the answer says, with the arrows, and check again.
    for (let j = 0; j < answer.length; j++) {
      for (;;) {
        const lines = await g.locator("ol.order li").evaluateAll((ls) => ls.map((l) => l.dataset.line));
        const at = lines.indexOf(answer[j]);
        if (at === j) break;
        await g.locator("ol.order li").nth(at).locator(".up").click();
      }
    }
    const runs = await runsOf("stepper-main");
    await g.locator(".check").click();
    await page.waitForFunction((i) => document.getElementById(`guess-${i}`).dataset.right === "true", i, { timeout: 30000 });
    // The check opened the stepper on the snippet.
    await waitRun("stepper-main", runs);
    assert.equal(await page.locator("#stepper-main textarea").inputValue(), await g.locator("pre.code").innerText());
    assert.match(await g.locator(".verdict").innerText(), /Your order is right/);
  }
  assert.deepEqual((await page.locator("#guess-0 pre.browser").innerText()).split("\n"), ["1: script start", "5: script end", "3: promise", "4: microtask", "2: timeout"]);
  await page.locator("#guess").screenshot({ path: join(SHOTS, "guess.png") });
  await page.locator("#guess-1 .open").click();
  await page.waitForFunction(() => {
    const r = document.getElementById("steppers").getBoundingClientRect();
    return r.top < window.innerHeight && r.bottom > 0;
  }, null, { timeout: 10000 });
  assert.match(await page.locator("#stepper-main textarea").inputValue(), /a: before await/);
  await page.locator("#stepper-main .last").click();
  assert.match(await drawn("stepper-main"), /Console\s+a: before await\s+script end\s+a: after await\s+then 1\s+then 2\s+timeout/);
});

await test("Node is different: setImmediate before setTimeout in a timer, nextTick before promises, the phases", async () => {
  const id = "stepper-node";
  const outputs = [];
  for (let i = 0; i < 3; i++) {
    const before = await runsOf(id);
    await page.locator(`#${id} .tab[data-i="${i}"]`).click();
    await waitRun(id, before);
    const steps = await walk(id);
    outputs.push(steps[steps.length - 1].split("Console")[1].trim().split("\n").map((l) => l.trim()).filter(Boolean));
    if (i === 0) {
      assert.ok(steps.some((s) => /phase\s+check/.test(s)), "the check phase is shown");
      assert.ok(steps.some((s) => /phase\s+timers/.test(s)), "the timers phase is shown");
      assert.ok(steps.some((s) => /immediate\s+\(anonymous\)/.test(s)), "the immediate queue is drawn");
    }
    if (i === 1) assert.ok(steps.some((s) => /nextTick\s+\(anonymous\)/.test(s) && /microtask\s+PromiseJob/.test(s)));
  }
  assert.deepEqual(outputs[0], ["immediate", "timeout"]);
  assert.deepEqual(outputs[1], ["main", "nextTick", "promise"]);
  assert.deepEqual(outputs[2], ["check phase: immediate", "timers phase: timeout", "nextTick after the timeout", "promise after the nextTick"]);
  const before = await runsOf(id);
  await page.locator('#stepper-node .tab[data-i="0"]').click();
  await waitRun(id, before);
  const n = await stepsOf(id);
  for (let k = 0; k < n; k++) {
    await jump(id, k);
    if (/immediate\s+\(anonymous\)/.test(await drawn(id)) && /phase\s+timers/.test(await drawn(id))) break;
  }
  await page.locator("#node").screenshot({ path: join(SHOTS, "node.png") });
});

await test("the page reached nothing but its own server, and raised no error", async () => {
  assert.deepEqual(foreign, []);
  assert.deepEqual(refused, []);
  assert.deepEqual(pageErrors, []);
});

await browser.close();
const failed = results.filter((r) => r[1] !== "ok");
console.log(`${results.length - failed.length} passed, ${failed.length} failed`);
process.exit(failed.length ? 1 : 0);
