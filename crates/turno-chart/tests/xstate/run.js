// Runs an XState v5 JSON machine against a list of events and time
// advances, printing the same JSON lines as `turno chart run`:
//   {"step": i, "value": <snapshot.value>, "status": "active"|"done"|"error"}
// with "error" (the error's message, or the rejected value) when the status
// is "error". A case folder with show.json (a list such as
// ["context", "emitted", "log", "children"]) prints those fields too, as
// `turno chart run --show context,emitted,log,children` does.
//
// Usage: node run.js MACHINE.json EVENTS.json
//        node run.js --batch < CASES
// With --batch, stdin holds case folders (one per line, each with
// machine.json and events.json) and stdout gets one JSON line per case,
// in order: {"case": DIR, "output": "<the lines above>"} or
// {"case": DIR, "error": "..."}. One Node process then runs a whole corpus;
// every case still gets its own machine, actor and clock.
//
// Child charts: each charts/NAME.json beside MACHINE.json is a machine that
// `invoke: {src: NAME}` starts (as `turno chart run --chart NAME=FILE`).
//
// Time is simulated: {"advance_ms": N} fires every due delayed event in
// deadline order (ties in the order they were scheduled), each at its own
// deadline, so a delay scheduled by a fired event counts from that deadline.
'use strict';
const fs = require('fs');
const path = require('path');
const { setup, createActor } = require('xstate');
const lib = require('./stdlib');

class StepClock {
  constructor() {
    this.now = 0;
    this.seq = 0;
    this.timers = new Map();
  }
  setTimeout(fn, ms) {
    const id = this.seq++;
    this.timers.set(id, { due: this.now + ms, id, fn });
    return id;
  }
  clearTimeout(id) {
    this.timers.delete(id);
  }
  nextDue(limit) {
    let next = null;
    for (const t of this.timers.values()) {
      if (t.due > limit) continue;
      if (!next || t.due < next.due || (t.due === next.due && t.id < next.id)) next = t;
    }
    return next;
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

const errorOf = (e) => (e instanceof Error ? e.message : e === undefined ? null : e);

// A child actor as `--show children` prints it: its logic's name, status,
// and for a machine its value, context and own children.
function childView(ref) {
  const s = ref.getSnapshot();
  const out = { src: typeof ref.src === 'string' ? ref.src : null, status: s.status };
  if (s.value !== undefined) {
    out.value = s.value;
    out.context = s.context === undefined ? null : s.context;
  }
  const kids = childrenView(s.children);
  if (Object.keys(kids).length > 0) out.children = kids;
  return out;
}

function childrenView(children) {
  const out = {};
  for (const [id, ref] of Object.entries(children || {})) {
    if (ref) out[id] = childView(ref);
  }
  return out;
}

function line(step, snap, show, seen) {
  const out = { step, value: snap.value, status: snap.status };
  if (snap.status === 'error') out.error = errorOf(snap.error);
  for (const field of show) {
    if (field === 'context') out.context = snap.context === undefined ? null : snap.context;
    if (field === 'emitted') out.emitted = seen.emitted;
    if (field === 'log') out.log = seen.log;
    if (field === 'children') out.children = childrenView(snap.children);
  }
  seen.emitted = [];
  seen.log = [];
  return JSON.stringify(out);
}

async function runCase(machinePath, eventsPath) {
  const config = JSON.parse(fs.readFileSync(machinePath, 'utf8'));
  const items = JSON.parse(fs.readFileSync(eventsPath, 'utf8'));
  const showPath = path.join(path.dirname(machinePath), 'show.json');
  const show = fs.existsSync(showPath) ? JSON.parse(fs.readFileSync(showPath, 'utf8')) : [];
  const seen = { emitted: [], log: [] };
  const actors = { ...lib.actors };
  const impl = { guards: lib.guards, actions: lib.actions(seen), delays: lib.delays, actors };
  const chartsDir = path.join(path.dirname(machinePath), 'charts');
  if (fs.existsSync(chartsDir)) {
    for (const f of fs.readdirSync(chartsDir).sort()) {
      if (!f.endsWith('.json')) continue;
      const child = JSON.parse(fs.readFileSync(path.join(chartsDir, f), 'utf8'));
      actors[f.slice(0, -5)] = setup(impl).createMachine(lib.convertState(child));
    }
  }
  const machine = setup(impl).createMachine(lib.convertState(config));
  const clock = new StepClock();
  const actor = createActor(machine, { clock });
  // A failed actor (an action that throws, an unhandled actor error) shows
  // as status "error" with its error; later items reach no one.
  actor.subscribe({ error: () => {} });
  actor.on('*', (e) => seen.emitted.push(e));
  seen.root = actor;
  actor.start();
  await settle();
  const out = [line(0, actor.getSnapshot(), show, seen)];
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item.advance_ms === 'number') {
      const target = clock.now + item.advance_ms;
      for (;;) {
        const t = clock.nextDue(target);
        if (!t) break;
        clock.timers.delete(t.id);
        clock.now = t.due;
        t.fn();
        await settle();
      }
      clock.now = target;
    } else {
      actor.send(item);
      await settle();
    }
    out.push(line(i + 1, actor.getSnapshot(), show, seen));
  }
  actor.stop();
  return out.join('\n') + '\n';
}

const describe = (e) => String(e && e.stack ? e.stack : e);

async function batch() {
  const dirs = fs
    .readFileSync(0, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);
  for (const dir of dirs) {
    let result;
    try {
      const output = await runCase(path.join(dir, 'machine.json'), path.join(dir, 'events.json'));
      result = { case: dir, output };
    } catch (e) {
      result = { case: dir, error: describe(e) };
    }
    process.stdout.write(JSON.stringify(result) + '\n');
  }
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--batch') return batch();
  process.stdout.write(await runCase(args[0], args[1]));
}

main().catch((e) => {
  process.stderr.write(describe(e) + '\n');
  process.exit(2);
});
