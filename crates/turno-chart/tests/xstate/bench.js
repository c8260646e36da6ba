// XState's side of `turno-bench chart`: the same machine and events, timed
// in the same run. Prints JSON lines:
//   {"case": "pure"|"actor", "n": N, "secs": median, "per_sec": ...}
//   {"case": "memory", "n": K, "bytes_per_actor": ...}
// Usage: node --expose-gc bench.js MACHINE.json EVENTS.json N RUNS K
'use strict';
const fs = require('fs');
const { createMachine, createActor, initialTransition, transition } = require('xstate');

const [machinePath, eventsPath, nArg, runsArg, kArg] = process.argv.slice(2);
const config = JSON.parse(fs.readFileSync(machinePath, 'utf8'));
const names = JSON.parse(fs.readFileSync(eventsPath, 'utf8'));
const n = Number(nArg);
const runs = Number(runsArg);
const k = Number(kArg);
const machine = createMachine(config);
const events = names.map((type) => ({ type }));

function median(f) {
  f();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    f();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

function report(kase, secs) {
  console.log(JSON.stringify({ case: kase, n, secs, per_sec: n / secs }));
}

let check = null;
report('pure', median(() => {
  let [s] = initialTransition(machine);
  for (let i = 0; i < n; i++) {
    [s] = transition(machine, s, events[i % events.length]);
  }
  check = JSON.stringify(s.value);
}));

report('actor', median(() => {
  const a = createActor(machine).start();
  for (let i = 0; i < n; i++) a.send(events[i % events.length]);
  const v = JSON.stringify(a.getSnapshot().value);
  if (v !== check) throw new Error(`actor ended in ${v}, pure in ${check}`);
  a.stop();
}));
console.log(JSON.stringify({ case: 'final_value', value: JSON.parse(check) }));

if (global.gc) {
  const keep = [];
  global.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < k; i++) keep.push(createActor(machine).start());
  global.gc();
  const after = process.memoryUsage().heapUsed;
  console.log(JSON.stringify({ case: 'memory', n: k, bytes_per_actor: (after - before) / k }));
  if (keep.length !== k) throw new Error('lost actors');
}
