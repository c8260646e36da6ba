// Browser tests of the signup wizard (`turno demo`) in Debian's chromium,
// driven by Playwright (playwright-core, executablePath).
//
//   node test.mjs            (from anywhere; see scripts/test.sh)
//
// Environment: TURNO_BIN (the `turno` binary, default target/debug/turno),
// CHROMIUM (default /usr/bin/chromium), SHOTS (where screenshots go,
// default docs/wizard/). Every test counts charges in the gateway's ledger
// (GET /stats of the gateway, which reads its SQLite file).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

// axe-core, from this folder's node_modules (npm ci), evaluated in the page
// (evaluation is not subject to the page's Content-Security-Policy).
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const target = process.env.CARGO_TARGET_DIR || join(root, "target");
const TURNO = process.env.TURNO_BIN || join(target, "debug/turno");
const SHOTS = process.env.SHOTS || join(root, "docs/wizard");
if (!existsSync(TURNO)) { console.error(`missing ${TURNO}: build it (cargo build -p turno-cli) or set TURNO_BIN`); process.exit(2); }
mkdirSync(SHOTS, { recursive: true });
const data = mkdtempSync(join(tmpdir(), "turno-wizard-"));

const children = [];
process.on("exit", () => {
  children.forEach((c) => c.kill("SIGKILL"));
  rmSync(data, { recursive: true, force: true });
});

// Starts `turno demo` on the run's data directory: on fresh ports, or on
// the ports of a server that was killed (a restart after a crash).
function start(ports = { wizard: 0, gateway: 0 }) {
  return new Promise((ok, fail) => {
    const args = ["demo", "--port", String(ports.wizard), "--gateway-port", String(ports.gateway), "--data-dir", data];
    const c = spawn(TURNO, args, { stdio: ["ignore", "pipe", "pipe"] });
    children.push(c);
    let out = "", err = "";
    const t = setTimeout(() => fail(new Error(`no URL from turno demo\n${out}\n${err}`)), 60000);
    c.stdout.on("data", (d) => {
      out += d;
      const w = /wizard is at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      const g = /payment gateway: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (w && g) { clearTimeout(t); ok({ url: w[1], gateway: g[1], child: c }); }
    });
    c.stderr.on("data", (d) => { err += d; });
    c.on("exit", (code) => fail(new Error(`turno demo exited ${code}\n${out}\n${err}`)));
  });
}

const results = [];
// ONLY=text runs the tests whose name holds it (while working on them).
const ONLY = process.env.ONLY;
async function test(name, f) {
  if (ONLY && !name.includes(ONLY)) return;
  const t0 = Date.now();
  try { await f(); results.push([name, "ok"]); console.log(`ok   ${name} (${Date.now() - t0} ms)`); }
  catch (e) { results.push([name, "FAILED"]); console.log(`FAIL ${name}\n${e.stack}`); }
}

let server = await start();
const stats = async () => (await fetch(server.gateway + "stats")).json();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const viewport = { width: 1280, height: 860 };

// A card number only this run uses (Luhn-valid), to search for afterwards.
const CARD = "4000 0566 5566 5556";
const CARD_DIGITS = CARD.replaceAll(" ", "");
const OTP = "731904";

const step = (page) => page.getAttribute("body", "data-step");
async function waitStep(page, s, timeout = 15000) {
  await page.waitForFunction((s) => document.body.dataset.step === s, s, { timeout });
}
async function click(page, ev) {
  await Promise.all([page.waitForNavigation(), page.click(`#ev-${ev}`)]);
}
async function toPayment(page, name = "Ada Lovelace", url = server.url) {
  await page.goto(url);
  await waitStep(page, "personal");
  await page.fill("#name", name);
  await page.fill("#email", "ada@example.org");
  await click(page, "NEXT");
  await waitStep(page, "plan");
  await page.check("input[name=plan][value=pro]");
  await page.selectOption("#billing", "monthly");
  await click(page, "NEXT");
  await waitStep(page, "payment.card");
}
async function fillCard(page) {
  await page.fill("#card_number", CARD);
  await page.fill("#expiry", "12/39");
  await page.fill("#holder", "Ada Lovelace");
  await page.fill("#otp", OTP);
}
async function toReview(page, url = server.url) {
  await toPayment(page, "Ada Lovelace", url);
  await fillCard(page);
  await click(page, "NEXT");
  await waitStep(page, "review");
}
// The demo operator's switch: shows (or hides) the statechart and the
// fault panel.
async function workings(page, on) {
  if ((await page.getAttribute("#workings", "aria-pressed")) === String(on)) return;
  await Promise.all([page.waitForNavigation(), page.click("#workings")]);
  assert.equal(await page.getAttribute("#workings", "aria-pressed"), String(on));
}
async function arm(page, { latency = "", charge = "", lookupDown = false, crash = false }) {
  await workings(page, true);
  await page.fill("#latency_ms", String(latency));
  await page.selectOption("#fault-charge", charge);
  await page.setChecked("#lookup_down", lookupDown);
  await page.setChecked("#crash", crash);
  await Promise.all([page.waitForNavigation(), page.click("#arm")]);
}
// No accessibility violations on the page as it is now (axe-core's
// WCAG 2 A/AA rules and its best practices).
async function axe(page, what) {
  await page.evaluate(AXE);
  const found = await page.evaluate(async () => (await window.axe.run(document, {
    runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
  })).violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`));
  assert.deepEqual(found, [], `axe on ${what}`);
}
// What the user reads: no state names, no HTTP status codes, no
// idempotency key outside the folded "details". The demo's workings (the
// statechart, the fault panel: the operator's, behind their switch) are
// left out.
async function plain(page, what) {
  const text = await page.evaluate(() => {
    const operator = [...document.querySelectorAll(".workings")];
    for (const el of operator) el.style.display = "none";
    const t = document.body.innerText; // a closed <details> shows its summary only
    for (const el of operator) el.style.display = "";
    return t;
  });
  assert.doesNotMatch(text, /\b(personal|plan|payment|review|submit|signup)\.[a-z]/, `a state name on ${what}`);
  assert.doesNotMatch(text, /\b(400|403|404|409|410|422|500|503)\b/, `a status code on ${what}`);
  const key = await page.evaluate(async () => (await (await fetch("/api/state", { cache: "no-store" })).json()).key);
  if (key) assert.ok(!text.includes(key), `the key in plain sight on ${what}`);
}
const path = (page) => new URL(page.url()).pathname;
async function fresh(options = {}) {
  const ctx = await browser.newContext({ viewport, ...options });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => console.log("page error:", e.message));
  return { ctx, page };
}

await test("a full signup by card: one page per step, one charge, receipt shown", async () => {
  const { ctx, page } = await fresh();
  const before = await stats();
  await page.goto(server.url);
  await waitStep(page, "personal");
  await page.screenshot({ path: join(SHOTS, "1-personal.png") });
  await page.fill("#name", "Ada Lovelace");
  await page.fill("#email", "ada@example.org");
  await click(page, "NEXT");
  await page.check("input[name=plan][value=pro]");
  await click(page, "NEXT");
  await waitStep(page, "payment.card");
  await fillCard(page);
  await page.screenshot({ path: join(SHOTS, "2-payment.png") });
  await click(page, "NEXT");
  await waitStep(page, "review");
  assert.match(await page.textContent("#pay"), /card ending in 5556/);
  await page.screenshot({ path: join(SHOTS, "3-review.png") });
  await click(page, "CONFIRM");
  await waitStep(page, "completed");
  assert.match(await page.textContent("#receipt"), /^ch_\d+$/);
  await workings(page, true);
  const active = await page.$$eval("#chart .state.active", (els) => els.map((e) => e.dataset.state));
  assert.ok(active.some((s) => s.endsWith("completed")), active.join());
  await page.screenshot({ path: join(SHOTS, "4-completed.png") });
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  await ctx.close();
});

await test("server-side validation: every bad field gets its message; nothing advances", async () => {
  const { ctx, page } = await fresh();
  await page.goto(server.url);
  await page.fill("#name", "R2-D2 <script>");
  await page.fill("#email", "ada@localhost");
  await click(page, "NEXT");
  assert.equal(await step(page), "personal");
  assert.match(await page.textContent("#name-error"), /may contain letters/);
  assert.match(await page.textContent("#email-error"), /not a domain name/);
  await page.fill("#name", "Ada Lovelace");
  await page.fill("#email", "ada@example.org");
  await click(page, "NEXT");
  await click(page, "NEXT"); // no plan chosen
  assert.equal(await step(page), "plan");
  assert.match(await page.textContent("#plan-error"), /Choose a plan/);
  await page.check("input[name=plan][value=basic]");
  await click(page, "NEXT");
  await page.fill("#card_number", "4000 0566 5566 5557");
  await page.fill("#expiry", "01/20");
  await page.fill("#holder", "Ada");
  await page.fill("#otp", "12");
  await click(page, "NEXT");
  assert.equal(await step(page), "payment.card");
  assert.match(await page.textContent("#card_number-error"), /check digit/);
  assert.match(await page.textContent("#expiry-error"), /expired in 01\/20/);
  assert.match(await page.textContent("#otp-error"), /6 digits/);
  assert.equal(await page.inputValue("#card_number"), "", "a volatile field is never echoed back");
  await page.screenshot({ path: join(SHOTS, "5-validation.png") });
  await ctx.close();
});

await test("history: back from review returns to the payment sub-step (bank)", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page);
  await click(page, "USE_BANK");
  await waitStep(page, "payment.bank");
  await page.fill("#iban", "DE89 3704 0044 0532 0130 00");
  await page.fill("#account_holder", "Ada Lovelace");
  await click(page, "NEXT");
  await waitStep(page, "review");
  await click(page, "BACK");
  await waitStep(page, "payment.bank");
  await ctx.close();
});

await test("double click on confirm (plus two replayed POSTs while sending): one charge request, one charge", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await arm(page, { latency: 1200 });
  const before = await stats();
  await page.dblclick("#ev-CONFIRM");
  // Two more CONFIRMs from the same session while it is sending (a replay
  // of the review form), outside the page so no navigation interferes.
  const cookie = (await ctx.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
  const sid = /turno_sid=([0-9a-f]+)/.exec(cookie)[1];
  const post = () => fetch(server.url + "event", { method: "POST", headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ sid, step: "review", event: "CONFIRM" }).toString(), redirect: "manual" }).then((r) => r.status);
  const replays = await Promise.all([post(), post()]);
  assert.deepEqual(replays, [303, 303], "the chart took CONFIRM and ignored it");
  await waitStep(page, "completed", 20000);
  const after = await stats();
  assert.equal(after.charge_requests - before.charge_requests, 1, "the graph sent one charge");
  assert.equal(after.charges - before.charges, 1);
  await ctx.close();
});

await test("injected timeout after charging -> uncertain -> resolved by key: one charge", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  // Latency on the lookup too, so the page is seen in uncertain.
  await arm(page, { charge: "timeout", latency: 1000 });
  const before = await stats();
  await click(page, "CONFIRM");
  await waitStep(page, "submit.uncertain", 10000);
  await page.screenshot({ path: join(SHOTS, "6-uncertain.png") });
  await waitStep(page, "completed", 15000);
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  assert.equal(after.charge_requests - before.charge_requests, 1, "resolved by the lookup, not by a resend");
  assert.ok(after.lookups > before.lookups);
  await ctx.close();
});

await test("lost reply: uncertain, resolved by key, one charge", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await arm(page, { charge: "lost", latency: 400 });
  const before = await stats();
  await click(page, "CONFIRM");
  await waitStep(page, "completed", 15000);
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  assert.equal(after.charge_requests - before.charge_requests, 1);
  assert.ok(after.lookups > before.lookups, "it went through uncertain");
  await ctx.close();
});

await test("server error: failed -> retry -> completed, one charge", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await arm(page, { charge: "error" });
  const before = await stats();
  await click(page, "CONFIRM");
  await waitStep(page, "submit.failed", 10000);
  assert.match(await page.textContent("#status"), /Nothing was charged/);
  await page.screenshot({ path: join(SHOTS, "7-failed.png") });
  await click(page, "RETRY");
  await waitStep(page, "completed", 10000);
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  assert.equal(after.charge_requests - before.charge_requests, 2);
  await ctx.close();
});

await test("timeout with lookups down: unresolvable page, no automatic retry", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await arm(page, { charge: "timeout", lookupDown: true });
  const before = await stats();
  await click(page, "CONFIRM");
  await waitStep(page, "submit.unresolvable", 15000);
  assert.match(await page.textContent("#status"), /Check your card or bank statement/);
  await page.screenshot({ path: join(SHOTS, "8-unresolvable.png") });
  const mid = await stats();
  assert.equal(mid.charge_requests - before.charge_requests, 1);
  await arm(page, {});
  await click(page, "RECHECK");
  await waitStep(page, "completed", 10000);
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  assert.equal(after.charge_requests - before.charge_requests, 1);
  await ctx.close();
});

await test("crash of the wizard server mid-submit: SIGKILL of the process while the gateway holds its reply -> a new process on the same files and ports -> one charge", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  // The gateway charges, then holds its reply for 6 s (the wizard would
  // give up at 2 s): the process is killed inside that window.
  await arm(page, { charge: "timeout" });
  const before = await stats();
  await click(page, "CONFIRM");
  assert.equal(await step(page), "submit.sending");
  const t0 = Date.now();
  while ((await stats()).charges === before.charges) {
    assert.ok(Date.now() - t0 < 10000, "the gateway never charged");
    await new Promise((r) => setTimeout(r, 10));
  }
  const mid = await page.evaluate(async () => (await (await fetch("/api/state", { cache: "no-store" })).json()).step);
  assert.equal(mid, "submit.sending", "charged, the reply not given yet");
  const ports = { wizard: new URL(server.url).port, gateway: new URL(server.gateway).port };
  const dead = new Promise((r) => server.child.once("exit", (code, signal) => r(signal)));
  server.child.kill("SIGKILL");
  assert.equal(await dead, "SIGKILL");
  await page.waitForFunction(() => /not answering/.test(document.body.innerText), null, { timeout: 15000, polling: 50 });
  await page.screenshot({ path: join(SHOTS, "9-crash.png") });
  // A new process (wizard and gateway, as `turno demo` runs them) on the
  // same data directory and ports: the page comes back by itself.
  const again = await start(ports);
  assert.equal(again.url, server.url);
  assert.equal(again.gateway, server.gateway);
  server = again;
  await waitStep(page, "completed", 20000);
  const after = await stats();
  assert.equal(after.charges - before.charges, 1, "exactly one charge in the ledger");
  assert.equal(after.charge_requests, 0, "the new process sent no charge: restored into uncertain, it looked the key up");
  assert.ok(after.lookups >= 1, "resolved by the key");
  await ctx.close();
});

await test("the fault panel's crash (in-process: state torn down, rebuilt from wizard.db) -> one charge", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await arm(page, { crash: true });
  const before = await stats();
  await page.click("#ev-CONFIRM");
  await page.waitForFunction(() => /restarting|not answering/.test(document.body.innerText), null, { timeout: 15000, polling: 50 });
  await waitStep(page, "completed", 20000);
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  assert.equal(after.charge_requests - before.charge_requests, 1, "restored into uncertain, not resent");
  await ctx.close();
});

await test("closed tab -> resumed at the same step, local draft refilled, no card number kept", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page);
  await page.fill("#card_number", CARD);
  await page.fill("#expiry", "11/38");
  await page.fill("#holder", "Grace Hopper");
  await page.fill("#otp", OTP);
  const local = await page.evaluate(() => JSON.stringify(localStorage));
  assert.ok(local.includes("Grace Hopper"), "the draft is saved at every change");
  assert.ok(!local.includes(CARD_DIGITS) && !local.includes(CARD) && !local.includes(OTP), "no volatile field in localStorage");
  await page.close();
  const again = await ctx.newPage();
  await again.goto(server.url);
  assert.equal(await step(again), "payment.card");
  assert.equal(await again.inputValue("#holder"), "Grace Hopper");
  assert.equal(await again.inputValue("#expiry"), "11/38");
  assert.equal(await again.inputValue("#card_number"), "");
  await ctx.close();
});

await test("draft link opened in a second browser context: same session, same step", async () => {
  const a = await fresh();
  await toPayment(a.page, "Alan Turing");
  await click(a.page, "USE_BANK");
  const href = await a.page.getAttribute("#draft-link", "href");
  const b = await fresh();
  await b.page.goto(new URL(href, server.url).href);
  await waitStep(b.page, "payment.bank");
  await b.page.screenshot({ path: join(SHOTS, "10-draft-link.png") });
  // A tampered link is refused.
  const bad = href.slice(0, -1) + (href.endsWith("0") ? "1" : "0");
  const c = await fresh();
  const r = await c.page.goto(new URL(bad, server.url).href);
  assert.equal(r.status(), 404);
  assert.match(await c.page.textContent("#refusal"), /not valid/);
  await Promise.all([a.ctx.close(), b.ctx.close(), c.ctx.close()]);
});

await test("a link from another site (a mail client, another page) finds the signup: no new session", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page, "Grace Hopper");
  const href = new URL(await page.getAttribute("#draft-link", "href"), server.url).href;
  const before = (await ctx.cookies()).find((c) => c.name.startsWith("turno"));
  // Another site: a page of another origin (here a data: URL, an opaque
  // origin) with links to the wizard, followed as top-level navigations.
  for (const link of [server.url, href]) {
    await page.goto(`data:text/html,<a id="out" href="${link}">continue your signup</a>`);
    await Promise.all([page.waitForNavigation(), page.click("#out")]);
    await waitStep(page, "payment.card");
    const same = new URL(await page.getAttribute("#draft-link", "href"), server.url).href;
    assert.equal(same, href, "the same signup, not a new one");
  }
  const after = (await ctx.cookies()).find((c) => c.name.startsWith("turno"));
  assert.equal(after.value, before.value, "the session cookie was not replaced");
  assert.equal(after.sameSite, "Lax");
  await ctx.close();
});

await test("real names: typed decomposed or in other scripts, accepted and shown as typed", async () => {
  const { ctx, page } = await fresh();
  await page.goto(server.url);
  await waitStep(page, "personal");
  // "José" with a combining acute accent (NFD), as some keyboards send it.
  await page.fill("#name", "Jose\u0301 Nu\u0301n\u0303ez");
  await page.fill("#email", "jose@example.org");
  await click(page, "NEXT");
  await waitStep(page, "plan");
  await Promise.all([page.waitForNavigation(), page.click("#ev-BACK")]);
  await waitStep(page, "personal");
  await page.fill("#name", "अर्जुन ☺");
  await click(page, "NEXT");
  await waitStep(page, "personal");
  const message = await page.textContent("body");
  assert.match(message, /not “☺” \(U\+263A\)/);
  assert.doesNotMatch(message, /\\u\{/);
  await ctx.close();
});

await test("a name in each script is accepted and kept as typed (composed): Devanagari, Thai, Arabic, Persian, Chinese, Greek, Cyrillic, Vietnamese", async () => {
  const { ctx, page } = await fresh();
  await page.goto(server.url);
  await waitStep(page, "personal");
  for (const name of ["अर्जुन शर्मा", "สมศักดิ์ ใจดี", "محمد الأمين", "نیک\u200cنام", "王小明", "Σωκράτης", "Пётр Ильич", "Nguye\u0302\u0303n Văn A"]) {
    await page.fill("#name", name);
    await page.fill("#email", "someone@example.org");
    await click(page, "NEXT");
    await waitStep(page, "plan");
    const kept = await page.evaluate(async () => (await (await fetch("/api/state", { cache: "no-store" })).json()).context.personal.name);
    assert.equal(kept, name.normalize("NFC"), name);
    await page.goBack();
    await waitStep(page, "personal");
    // The field holds the name again (as the server keeps it, or as the
    // browser restores what was typed on Back).
    assert.equal((await page.inputValue("#name")).normalize("NFC"), name.normalize("NFC"));
  }
  await ctx.close();
});

await test("forged and replayed requests are refused; a tampered local draft cannot move the step", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page);
  const sid = await page.getAttribute("body", "data-sid");
  const res = await page.evaluate(async (sid) => {
    const post = (f) => fetch("/event", { method: "POST", body: new URLSearchParams(f), redirect: "manual" }).then((r) => r.status);
    return {
      other: await post({ sid: "0".repeat(32), step: "payment.card", event: "BACK" }),
      stale: await post({ sid, step: "personal", event: "NEXT", name: "Eve", email: "eve@example.org" }),
      noSuch: await post({ sid, step: "payment.card", event: "CONFIRM" }),
    };
  }, sid);
  assert.deepEqual(res, { other: 403, stale: 409, noSuch: 400 });
  await page.evaluate((sid) => {
    const k = "turno-wizard:" + sid;
    const d = JSON.parse(localStorage.getItem(k) || '{"steps":{}}');
    d.step = "review";
    d.steps.review = { event: "CONFIRM" };
    localStorage.setItem(k, JSON.stringify(d));
  }, sid);
  await page.reload();
  assert.equal(await step(page), "payment.card");
  await ctx.close();
});

await test("forget me: server copy, draft link and localStorage gone", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page);
  await page.fill("#holder", "Someone");
  const href = await page.getAttribute("#draft-link", "href");
  await Promise.all([page.waitForNavigation(), page.click("#forget")]);
  assert.match(await page.textContent("#forgotten"), /deleted/);
  await axe(page, "the forgotten page");
  const keys = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("turno-wizard:")));
  assert.deepEqual(keys, []);
  const r = await page.goto(new URL(href, server.url).href);
  assert.equal(r.status(), 404);
  await page.goto(server.url);
  assert.equal(await step(page), "personal");
  await ctx.close();
});

await test("every step has its own URL; Back and Forward follow the chart; reload keeps the step; a step no longer open is explained", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page);
  assert.equal(path(page), "/payment/card");
  await page.goBack();
  await waitStep(page, "plan");
  assert.equal(path(page), "/plan");
  assert.ok(await page.isChecked("#plan-pro"), "the plan chosen is kept");
  await page.goBack();
  await waitStep(page, "personal");
  assert.equal(await page.inputValue("#name"), "Ada Lovelace");
  await page.goForward();
  await waitStep(page, "plan");
  await page.goForward();
  await waitStep(page, "payment.card");
  await page.reload();
  await waitStep(page, "payment.card");
  assert.equal(path(page), "/payment/card");
  await fillCard(page);
  await click(page, "NEXT");
  await waitStep(page, "review");
  assert.equal(path(page), "/review");
  await arm(page, { latency: 1500 });
  const before = await stats();
  await click(page, "CONFIRM");
  // Back while the payment is on its way: the review is not open any
  // more, and the page says so in words (no conflict page, no resend).
  const r = await page.goBack();
  assert.equal(r.status(), 200);
  await waitStep(page, "submit.sending");
  assert.match(await page.textContent("#notice"), /You went to “Check and pay”, but your payment has already been sent/);
  await plain(page, "the sending page");
  await axe(page, "the sending page");
  await waitStep(page, "completed", 15000);
  assert.equal(path(page), "/completed", "the page followed the session to its URL");
  await page.goBack();
  await waitStep(page, "completed");
  assert.match(await page.textContent("#notice"), /your signup is finished/);
  await page.reload();
  await waitStep(page, "completed");
  const after = await stats();
  assert.equal(after.charges - before.charges, 1);
  assert.equal(after.charge_requests - before.charge_requests, 1);
  await ctx.close();
});

await test("editing from review: change plan and details come back to review; the card number is asked again, with the reason", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await click(page, "EDIT_PLAN");
  await waitStep(page, "plan");
  assert.ok(await page.isChecked("#plan-pro"));
  assert.match(await page.textContent("#ev-NEXT"), /back to the review/);
  await page.check("#plan-team");
  await click(page, "NEXT");
  await waitStep(page, "review");
  assert.match(await page.textContent(".summary"), /Team/);
  assert.match(await page.textContent("#pay"), /card ending in 5556/, "the payment is kept");
  await click(page, "EDIT_PERSONAL");
  await waitStep(page, "personal");
  assert.equal(await page.inputValue("#email"), "ada@example.org");
  await page.fill("#name", "Ada King");
  await click(page, "NEXT");
  await waitStep(page, "review");
  assert.match(await page.textContent(".summary"), /Ada King/);
  await click(page, "BACK");
  await waitStep(page, "payment.card");
  assert.equal(await page.inputValue("#expiry"), "12/39");
  assert.equal(await page.inputValue("#holder"), "Ada Lovelace");
  assert.equal(await page.inputValue("#card_number"), "");
  assert.match(await page.textContent("#card-hint"), /type the card number .* again/);
  await page.screenshot({ path: join(SHOTS, "13-card-again.png") });
  assert.match(await page.getAttribute("#card_number", "aria-describedby"), /card-hint/);
  // A refused card form: the number is gone, and the page says why.
  await page.fill("#card_number", "4000 0566 5566 5557");
  await page.fill("#otp", OTP);
  await click(page, "NEXT");
  await waitStep(page, "payment.card");
  assert.equal(await page.inputValue("#card_number"), "");
  assert.match(await page.textContent("#card-hint"), /cleared because they are never stored/);
  assert.equal(await page.evaluate(() => document.activeElement.id), "card_number", "the focus is on the first field to fix");
  await axe(page, "a refused card form");
  await fillCard(page);
  await click(page, "NEXT");
  await waitStep(page, "review");
  await click(page, "CONFIRM");
  await waitStep(page, "completed");
  assert.match(await page.textContent("#status"), /€79\.00/);
  await ctx.close();
});

await test("the finished page: receipt and what next; no draft link, fault panel or forget me; a new signup from it", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await workings(page, true);
  assert.equal(await page.locator("#fault-form").count(), 1);
  await click(page, "CONFIRM");
  await waitStep(page, "completed");
  await plain(page, "the finished page");
  assert.match(await page.textContent("#receipt"), /^ch_\d+$/);
  assert.match(await page.textContent("#step"), /What happens next/);
  for (const gone of ["#draft-link", "#forget", "#fault-form", "#step-form button"]) {
    assert.equal(await page.locator(gone).count(), 0, `${gone} on the finished page`);
  }
  const sid = await page.getAttribute("body", "data-sid");
  await Promise.all([page.waitForNavigation(), page.click("#start-over")]);
  await waitStep(page, "personal");
  assert.notEqual(await page.getAttribute("body", "data-sid"), sid);
  await ctx.close();
});

await test("the demo's workings (statechart, fault panel) behind one switch, off by default, kept across pages", async () => {
  const { ctx, page } = await fresh();
  await page.goto(server.url);
  await waitStep(page, "personal");
  assert.equal(await page.locator("#chart").count(), 0);
  assert.equal(await page.locator("#fault-form").count(), 0);
  await workings(page, true);
  assert.equal(path(page), "/personal");
  assert.equal(await page.locator("#chart .state.active").count() > 0, true);
  assert.equal(await page.locator("#fault-form").count(), 1);
  await page.fill("#name", "Ada Lovelace");
  await page.fill("#email", "ada@example.org");
  await click(page, "NEXT");
  assert.equal(await page.locator("#fault-form").count(), 1, "the switch holds on the next page");
  await workings(page, false);
  assert.equal(await page.locator("#chart").count(), 0);
  await ctx.close();
});

await test("Spanish from the browser's language; the switch changes it and it is kept", async () => {
  const { ctx, page } = await fresh({ locale: "es-ES" });
  await page.goto(server.url);
  await waitStep(page, "personal");
  assert.equal(await page.getAttribute("html", "lang"), "es");
  assert.equal(await page.textContent("#title"), "Sobre ti");
  assert.equal(await page.textContent("label[for=name]"), "Nombre completo");
  await axe(page, "the first page in Spanish");
  await page.fill("#email", "jose@example");
  await click(page, "NEXT");
  assert.equal(await page.textContent("#name-error"), "Nombre completo: es obligatorio.");
  assert.match(await page.textContent("#email-error"), /no es un nombre de dominio/);
  assert.equal(await page.textContent("#notice"), "Algunos campos necesitan tu atención.");
  await page.fill("#name", "José Núñez");
  await page.fill("#email", "jose@example.org");
  await click(page, "NEXT");
  await waitStep(page, "plan");
  assert.equal(await page.textContent("#title"), "Elige un plan");
  assert.match(await page.textContent("#plans"), /Pro 29,00\u00a0€ al mes/);
  await page.screenshot({ path: join(SHOTS, "12-spanish.png") });
  await Promise.all([page.waitForNavigation(), page.click("#lang-en")]);
  await waitStep(page, "plan");
  assert.equal(await page.getAttribute("html", "lang"), "en");
  assert.equal(await page.textContent("#title"), "Choose a plan");
  await page.reload();
  assert.equal(await page.textContent("#title"), "Choose a plan", "the choice is kept over the browser's language");
  await Promise.all([page.waitForNavigation(), page.click("#lang-es")]);
  assert.equal(await page.textContent("#title"), "Elige un plan");
  await ctx.close();
});

await test("keyboard only, 360 px wide: the whole signup; every page axe-clean and without sideways scrolling", async () => {
  const { ctx, page } = await fresh({ viewport: { width: 360, height: 740 } });
  const fits = async (what) => {
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(w <= 360, `${what} is ${w} px wide`);
  };
  // Tab until `sel` has the focus: it is reachable in the focus order.
  const tabTo = async (sel) => {
    for (let i = 0; i < 40; i++) {
      if (await page.evaluate((sel) => document.activeElement?.matches(sel), sel)) return;
      await page.keyboard.press("Tab");
    }
    assert.fail(`${sel} is not reachable with Tab`);
  };
  const enter = async () => Promise.all([page.waitForNavigation(), page.keyboard.press("Enter")]);
  await page.goto(server.url);
  await waitStep(page, "personal");
  await fits("the first page");
  await axe(page, "the first page");
  await tabTo("#name");
  await page.keyboard.type("Maximiliana Wolfeschlegelsteinhausenbergerdorff");
  await tabTo("#email");
  await page.keyboard.type("not-an-address");
  await enter();
  await waitStep(page, "personal");
  assert.equal(await page.evaluate(() => document.activeElement.id), "email", "the focus is on the field to fix");
  assert.equal(await page.getAttribute("#email", "aria-describedby"), "email-error");
  await fits("a refused form");
  await axe(page, "a refused form");
  await plain(page, "a refused form");
  await page.keyboard.press("Control+A");
  await page.keyboard.type("maximiliana.wolfeschlegelsteinhausenbergerdorff@a-very-long-domain-name.example.org");
  await enter();
  await waitStep(page, "plan");
  await fits("the plan page");
  await axe(page, "the plan page");
  await tabTo("input[name=plan]");
  await page.keyboard.press("ArrowDown");
  assert.ok(await page.isChecked("#plan-pro"), "arrow keys choose a plan");
  await tabTo("#ev-NEXT");
  await enter();
  await waitStep(page, "payment.card");
  await fits("the card page");
  await axe(page, "the card page");
  for (const [sel, text] of [["#card_number", CARD], ["#expiry", "12/39"], ["#holder", "Maximiliana"], ["#otp", OTP]]) {
    await tabTo(sel);
    await page.keyboard.type(text);
  }
  await enter();
  await waitStep(page, "review");
  await fits("the review page");
  await page.screenshot({ path: join(SHOTS, "11-narrow.png"), fullPage: true });
  await axe(page, "the review page");
  await plain(page, "the review page");
  await tabTo("#ev-CONFIRM");
  await enter();
  await waitStep(page, "completed");
  await fits("the finished page");
  await axe(page, "the finished page");
  await ctx.close();
});

await test("the other pages are axe-clean and plain too: failed, unresolvable, out of date, forget-me refused, a bad link", async () => {
  const { ctx, page } = await fresh();
  await toPayment(page);
  await click(page, "USE_BANK");
  await waitStep(page, "payment.bank");
  await axe(page, "the bank page");
  await page.fill("#iban", "DE89 3704 0044 0532 0130 00");
  await page.fill("#account_holder", "Ada Lovelace");
  await click(page, "NEXT");
  await waitStep(page, "review");
  await arm(page, { charge: "error" });
  await axe(page, "the review page with the demo's workings");
  await click(page, "CONFIRM");
  await waitStep(page, "submit.failed", 10000);
  await axe(page, "the failed page");
  await plain(page, "the failed page");
  await page.click("#details summary");
  assert.match(await page.textContent("#key"), /^[0-9a-f]{32}$/, "the key is in the details");
  assert.match(await page.textContent("#reason"), /nothing was charged/, "the gateway's words are in the details");
  // A form of an earlier step, replayed: out of date, said in words.
  const sid = await page.getAttribute("body", "data-sid");
  const r = await page.evaluate(async (sid) => {
    const res = await fetch("/event", { method: "POST", body: new URLSearchParams({ sid, step: "plan", event: "BACK" }) });
    return { status: res.status, html: await res.text() };
  }, sid);
  assert.equal(r.status, 409);
  await page.setContent(r.html);
  assert.match(await page.textContent("#refusal"), /That form was for “Choose a plan”, but your signup has moved on to “The payment did not go through”/);
  await page.goto(server.url);
  await waitStep(page, "submit.failed");
  await arm(page, { charge: "lost", latency: 300, lookupDown: true });
  await click(page, "RETRY");
  await waitStep(page, "submit.uncertain", 10000);
  await axe(page, "the checking page");
  await Promise.all([page.waitForNavigation(), page.click("#forget")]);
  assert.match(await page.textContent("#title"), /Not deleted yet/);
  assert.match(await page.textContent("#at"), /Your signup is at “Checking your payment”/);
  await axe(page, "the forget-me refusal");
  await plain(page, "the forget-me refusal");
  await page.goto(server.url);
  await waitStep(page, "submit.unresolvable", 15000);
  await axe(page, "the unresolvable page");
  await plain(page, "the unresolvable page");
  const bad = await page.goto(new URL("/d/" + "0".repeat(32), server.url).href);
  assert.equal(bad.status(), 404);
  await axe(page, "a bad draft link");
  await plain(page, "a bad draft link");
  await ctx.close();
});

await test("a refused payment cancelled: the cancelled page says nothing was charged, plainly and axe-clean, without draft tools", async () => {
  const { ctx, page } = await fresh();
  await toReview(page);
  await arm(page, { charge: "error" });
  const before = await stats();
  await click(page, "CONFIRM");
  await waitStep(page, "submit.failed", 10000);
  await click(page, "CANCEL");
  await waitStep(page, "submit.abandoned");
  assert.equal(path(page), "/submit/abandoned");
  assert.match(await page.textContent("#status"), /You cancelled the payment\. Nothing was charged\./);
  assert.equal(await page.locator("#forget, #draft-link, #fault-form").count(), 0);
  await axe(page, "the cancelled page");
  await plain(page, "the cancelled page");
  const after = await stats();
  assert.equal(after.charges - before.charges, 0);
  await ctx.close();
});

await test("the card number and one-time code are in no database file", async () => {
  const files = readdirSync(data).map((f) => join(data, f));
  assert.ok(files.some((f) => f.endsWith("wizard.db")) && files.some((f) => f.endsWith("gateway.db")), files.join());
  for (const f of files) {
    const bytes = readFileSync(f);
    for (const needle of [CARD_DIGITS, CARD, OTP]) {
      assert.equal(bytes.indexOf(Buffer.from(needle)), -1, `${needle} found in ${f}`);
    }
  }
  // ...while the files do hold the sessions (the search is not vacuous).
  const all = Buffer.concat(files.map((f) => readFileSync(f)));
  assert.notEqual(all.indexOf(Buffer.from("ada@example.org")), -1);
});

// The three-node demo (`turno demo cluster`): three node processes, three
// nats-servers, PostgreSQL and the gateway, behind the supervisor's front
// door. Its own data directory; the supervisor stops everything at SIGINT.
function startCluster() {
  const dir = mkdtempSync(join(tmpdir(), "turno-cluster-"));
  return new Promise((ok, fail) => {
    const c = spawn(TURNO, ["demo", "cluster", "--port", "0", "--data-dir", dir], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(c);
    let out = "", err = "";
    const waiting = [];
    const exited = new Promise((r) => c.once("exit", (code, signal) => r({ code, signal })));
    const t = setTimeout(() => fail(new Error(`no URL from turno demo cluster\n${out}\n${err}`)), 60000);
    c.stdout.on("data", (d) => {
      out += d;
      for (const w of waiting.splice(0)) (w.re.test(out.slice(w.from)) ? w.ok : (x) => waiting.push(x))(w);
      const u = /wizard is at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      const g = /payment gateway: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (u && g) {
        clearTimeout(t);
        ok({
          url: u[1], gateway: g[1], child: c, exited, dir,
          stats: async () => (await fetch(g[1] + "stats")).json(),
          // Resolves once the supervisor has printed a line matching `re`
          // (from `from` in its output on).
          line: (re, from = 0) => new Promise((ok) => (re.test(out.slice(from)) ? ok() : waiting.push({ re, from, ok }))),
          out: () => out,
        });
      }
    });
    c.stderr.on("data", (d) => { err += d; });
    c.on("exit", (code) => fail(new Error(`turno demo cluster exited ${code}\n${out}\n${err}`)));
  });
}

// A signup at review on the cluster, its next charge held by the gateway
// (charged, then the reply held for 6 s; the node gives up at 2 s). Goes
// on to sending, waits for the charge in the ledger; the owner node then.
async function heldCharge(cluster, page, { elsewhere = false } = {}) {
  await toReview(page, cluster.url);
  await workings(page, true);
  const owner = (await page.textContent("#owner")).trim();
  assert.match(owner, /^n[123]$/, "the page names the session's owner node");
  assert.match((await page.textContent("#served-by")).trim(), /^n[123]$/, "and the node that served it");
  let via = null;
  if (elsewhere) {
    // Straight to a node that does not own the session (the session's
    // cookie holds on every port of 127.0.0.1): its events go to the
    // owner over NATS.
    const nodes = [...cluster.out().matchAll(/node (n[123]): (http:\/\/127\.0\.0\.1:\d+\/)/g)];
    via = nodes.find(([, name]) => name !== owner);
    await page.goto(via[2] + "review");
    await waitStep(page, "review");
    assert.equal((await page.textContent("#served-by")).trim(), via[1]);
    assert.equal((await page.textContent("#owner")).trim(), owner);
  }
  await page.selectOption("#fault-charge", "timeout");
  await Promise.all([page.waitForNavigation(), page.click("#arm")]);
  const before = await cluster.stats();
  await click(page, "CONFIRM");
  assert.equal(await step(page), "submit.sending");
  const t0 = Date.now();
  while ((await cluster.stats()).charges === before.charges) {
    assert.ok(Date.now() - t0 < 10000, "the gateway never charged");
    await new Promise((r) => setTimeout(r, 10));
  }
  const mid = await page.evaluate(async () => (await (await fetch("/api/state", { cache: "no-store" })).json()).step);
  assert.equal(mid, "submit.sending", "charged, the reply not given yet");
  return { owner, before, via };
}

// The session completed on another node with exactly one charge, not
// sent again (the new owner restored it into uncertain and looked the key
// up).
async function endsWithOneCharge(cluster, page, owner, before) {
  await waitStep(page, "completed", 30000);
  const after = await cluster.stats();
  assert.equal(after.charges - before.charges, 1, "exactly one charge in the ledger");
  assert.equal(after.charge_requests - before.charge_requests, 1, "the new owner sent no charge: restored into uncertain, it looked the key up");
  assert.ok(after.lookups - before.lookups >= 1, "resolved by the key");
  assert.notEqual((await page.textContent("#owner")).trim(), owner, "another node owns the session now");
}

let cluster = null;
await test("three nodes: the owner node killed mid-submit (SIGKILL while the gateway holds its reply) -> completed on the node that took its shard over, one charge", async () => {
  cluster = await startCluster();
  const { ctx, page } = await fresh();
  try {
    const { owner, before, via } = await heldCharge(cluster, page, { elsewhere: true });
    const from = cluster.out().length;
    await Promise.all([page.waitForNavigation(), page.click("#kill-owner")]);
    await cluster.line(new RegExp(`kill ${owner} `), from);
    await endsWithOneCharge(cluster, page, owner, before);
    await page.screenshot({ path: join(SHOTS, "14-cluster-kill.png") });
    // The confirmation, sent to a node that did not own the session, went
    // to the owner over NATS.
    const v = await page.evaluate(async () => (await (await fetch("/api/state", { cache: "no-store" })).json()));
    assert.equal(v.served_by, via[1]);
    assert.ok(v.forwarded >= 1, `events this node sent to an owner over NATS: ${JSON.stringify(v)}`);
  } finally {
    await ctx.close();
  }
});

await test("three nodes: the owner node paused mid-submit (SIGSTOP past its lease) -> completed elsewhere, one charge; woken, its write is refused as fenced", async () => {
  assert.ok(cluster, "the cluster started");
  const { ctx, page } = await fresh();
  try {
    const { owner, before } = await heldCharge(cluster, page);
    const from = cluster.out().length;
    await Promise.all([page.waitForNavigation(), page.click("#pause-owner")]);
    await cluster.line(new RegExp(`pause ${owner} `), from);
    await endsWithOneCharge(cluster, page, owner, before);
    // Continued, the old owner takes the charge's outcome: its write
    // carries the epoch it lost, and the store refuses it.
    await cluster.line(new RegExp(`${owner} is back`), from);
    const node = new RegExp(`node ${owner}: (http://127\\.0\\.0\\.1:\\d+/)`).exec(cluster.out())[1];
    const sid = (await ctx.cookies()).find((c) => c.name === "turno_sid").value;
    const t0 = Date.now();
    let seen;
    for (;;) {
      seen = await (await fetch(node + "api/state", { headers: { cookie: `turno_sid=${sid}` } })).json();
      if (seen.fenced >= 1 || Date.now() - t0 > 10000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(seen.served_by, owner);
    assert.ok(seen.fenced >= 1, `the woken node's fenced writes: ${JSON.stringify(seen)}`);
    assert.equal(seen.step, "completed", "the store kept the new owner's state");
    assert.equal((await cluster.stats()).charges - before.charges, 1);
  } finally {
    await ctx.close();
  }
});

await test("three nodes: the owner node cut off from PostgreSQL and NATS mid-submit (a partition past its lease) -> completed elsewhere, one charge", async () => {
  assert.ok(cluster, "the cluster started");
  const { ctx, page } = await fresh();
  try {
    const { owner, before } = await heldCharge(cluster, page);
    const from = cluster.out().length;
    await Promise.all([page.waitForNavigation(), page.click("#partition-owner")]);
    await cluster.line(new RegExp(`partition ${owner} `), from);
    await endsWithOneCharge(cluster, page, owner, before);
  } finally {
    await ctx.close();
  }
});

if (cluster) {
  await test("three nodes: the supervisor stops at SIGINT and exits cleanly", async () => {
    cluster.child.kill("SIGINT");
    const end = await cluster.exited;
    rmSync(cluster.dir, { recursive: true, force: true });
    assert.equal(end.code, 0, `exit ${JSON.stringify(end)}\n${cluster.out()}`);
  });
}

await browser.close();
server.child.kill("SIGINT");
const failed = results.filter((r) => r[1] !== "ok");
console.log(`${results.length - failed.length}/${results.length} browser tests passed`);
process.exit(failed.length ? 1 : 0);
