// Runs one snippet in Debian's headless Chromium through the DevTools
// protocol (playwright-core), in real time, and prints what it logged as
// JSON: {"out": [...console lines...], "err": [...uncaught errors...]}.
//
//   node drive.mjs SNIPPET.js [INPUT.json] [--until PREFIX] [--limit-ms N]
//
// The snippet runs as a classic script in an empty page. It ends when it
// logs a line starting with PREFIX (default "done") or after --limit-ms
// (default 10000). INPUT.json is the explorer's input script (see
// crates/turno-js/src/input.rs); its `at_ms` are counted from the snippet's
// first console line, so a snippet logs once, then blocks, and the input
// arrives while it is blocked, as in the explorer. Events are sent without
// waiting for acknowledgement: Chromium queues them while the main thread is
// busy.
//
// The page is served from 127.0.0.1 (an ephemeral port) together with the
// snippet's directory, so `new Worker('NAME.worker.js')` loads a worker
// script that lies next to the snippet, as the explorer does with the
// program's directory. Playwright reports a dedicated worker's console lines
// as the page's, so they are collected too, in the order they arrive.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';

const args = process.argv.slice(2);
let until = 'done';
let limitMs = 10000;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--until') until = args[++i];
  else if (args[i] === '--limit-ms') limitMs = Number(args[++i]);
  else files.push(args[i]);
}
const [snippetPath, inputPath] = files;
const snippet = readFileSync(snippetPath, 'utf8');
const input = inputPath ? JSON.parse(readFileSync(inputPath, 'utf8')) : [];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--no-first-run', '--disable-renderer-backgrounding', '--disable-background-timer-throttling'],
});
const page = await browser.newPage({ viewport: { width: 400, height: 300 } });
const out = [];
const err = [];
let finish;
const finished = new Promise((r) => { finish = r; });
let inputStarted = false;
const client = await page.context().newCDPSession(page);

function expand(e) {
  const t = e.type;
  const key = (k, type) => ({ method: 'Input.dispatchKeyEvent', params: { type, key: k, code: codeOf(k), text: type === 'keyDown' && k.length === 1 ? k : undefined, windowsVirtualKeyCode: vk(k) } });
  const mouse = (type) => ({ method: 'Input.dispatchMouseEvent', params: { type, x: e.x || 0, y: e.y || 0, button: 'left', buttons: type === 'mousePressed' ? 1 : 0, clickCount: 1 } });
  if (t === 'keydown') return [key(e.key, 'keyDown')];
  if (t === 'keyup') return [key(e.key, 'keyUp')];
  if (t === 'key') return [key(e.key, 'keyDown'), key(e.key, 'keyUp')];
  if (t === 'mousedown') return [mouse('mousePressed')];
  if (t === 'mouseup') return [mouse('mouseReleased')];
  if (t === 'click') return [mouse('mousePressed'), mouse('mouseReleased')];
  throw new Error('unknown input type ' + t);
}
function codeOf(k) { return /^[a-z]$/i.test(k) ? 'Key' + k.toUpperCase() : /^[0-9]$/.test(k) ? 'Digit' + k : k === ' ' ? 'Space' : k; }
function vk(k) { return k.length === 1 ? k.toUpperCase().charCodeAt(0) : ({ Enter: 13, Escape: 27, Tab: 9, Backspace: 8 })[k] || 0; }

function startInput() {
  if (inputStarted) return;
  inputStarted = true;
  for (const e of input) {
    setTimeout(() => { for (const m of expand(e)) client.send(m.method, m.params).catch(() => {}); }, e.at_ms);
  }
}

page.on('console', (m) => {
  const text = m.text();
  out.push(text);
  startInput();
  if (text.startsWith(until)) finish();
});
page.on('pageerror', (e) => { err.push(String(e.message)); });
const timer = setTimeout(finish, limitMs);
const html = '<!doctype html><html><head><meta charset="utf-8"></head><body></body></html>';
const root = resolve(dirname(snippetPath));
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === '/favicon.ico') { res.writeHead(204); res.end(); return; }
  if (path === '/') { res.writeHead(200, { 'content-type': 'text/html' }); res.end(html); return; }
  const file = resolve(join(root, path));
  let body;
  try { body = file.startsWith(root + '/') ? readFileSync(file) : null; } catch (_) { body = null; }
  if (body === null) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': 'text/javascript' });
  res.end(body);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
await page.goto(`http://127.0.0.1:${server.address().port}/`);
page.evaluate(`setTimeout(() => { const s = document.createElement('script'); s.textContent = ${JSON.stringify(snippet)}; document.body.appendChild(s); }, 0)`).catch(() => {});
await finished;
clearTimeout(timer);
// Let lines logged in the same task as the final one arrive.
await new Promise((r) => setTimeout(r, 100));
await browser.close();
server.close();
process.stdout.write(JSON.stringify({ out, err }) + '\n');
