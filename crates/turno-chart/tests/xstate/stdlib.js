// The standard implementations (guards, actions, delays, actors) that
// turno-chart registers by name in `turno_chart::stdlib`, written again for
// XState so that both sides run the same JSON machines. Keep the two in step:
// docs/statecharts.md lists them.
'use strict';
const { assign, enqueueActions, fromCallback, fromPromise, and, or, not, stateIn } = require('xstate');

const get = (obj, key) => (obj == null ? undefined : obj[key]);
const lt = (a, b) => typeof a === 'number' && typeof b === 'number' && a < b;
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const both = (a, b) => typeof a === 'number' && typeof b === 'number';
// `ctxCompare` and `calc`: the other side is context[otherKey], else value.
const operand = (context, p) => ('otherKey' in p ? get(context, p.otherKey) : p.value);
const compare = {
  '==': same,
  '!=': (a, b) => !same(a, b),
  '<': (a, b) => both(a, b) && a < b,
  '<=': (a, b) => both(a, b) && a <= b,
  '>': (a, b) => both(a, b) && a > b,
  '>=': (a, b) => both(a, b) && a >= b,
};
const arithmetic = {
  add: (a, b) => a + b,
  sub: (a, b) => a - b,
  mul: (a, b) => a * b,
  div: (a, b) => a / b,
  mod: (a, b) => a % b,
  min: (a, b) => Math.min(a, b),
  max: (a, b) => Math.max(a, b),
};

const guards = {
  pass: () => true,
  fail: () => false,
  ctxEq: ({ context }, p) => JSON.stringify(get(context, p.key)) === JSON.stringify(p.value),
  ctxLt: ({ context }, p) => lt(get(context, p.key), p.value),
  ctxGte: ({ context }, p) => typeof get(context, p.key) === 'number' && !lt(get(context, p.key), p.value),
  eventEq: ({ event }, p) => JSON.stringify(get(event, p.key)) === JSON.stringify(p.value),
  eventGt: ({ event }, p) => lt(p.value, get(event, p.key)),
  ctxCompare: ({ context }, p) =>
    p.op in compare ? compare[p.op](get(context, p.key), operand(context, p)) : false,
};

const num = (v) => (typeof v === 'number' ? v : 0);

// `seen.log` collects the root actor's log lines (`seen.root`) for
// `--show log`; a child's lines are its own.
const actions = (seen) => ({
  inc: assign(({ context }, p) => ({ [p.key]: num(get(context, p.key)) + (p.by ?? 1) })),
  set: assign((_, p) => ({ [p.key]: p.value })),
  setFromEvent: assign(({ event }, p) => ({ [p.key]: get(event, p.from) ?? null })),
  append: assign(({ context }, p) => ({
    [p.key]: (typeof get(context, p.key) === 'string' ? get(context, p.key) : '') + p.value,
  })),
  calc: assign(({ context }, p) => {
    const f = arithmetic[p.op];
    const r = f ? f(num(get(context, p.key)), num(operand(context, p))) : NaN;
    return { [p.key]: Number.isFinite(r) ? r : null };
  }),
  copy: assign(({ context }, p) => ({ [p.key]: get(context, p.from) ?? null })),
  // The first branch whose guard passes: its actions, in order.
  choose: enqueueActions(({ enqueue, check }, p) => {
    for (const b of p.branches) {
      if (b.guard === undefined || check(convertGuard(b.guard))) {
        for (const a of b.actions === undefined ? [] : [].concat(b.actions)) enqueue(a);
        break;
      }
    }
  }),
  raise: enqueueActions(({ enqueue }, p) => {
    const opts = {};
    if (p.delay !== undefined) opts.delay = p.delay;
    if (p.id !== undefined) opts.id = p.id;
    enqueue.raise(p.event, opts);
  }),
  cancel: enqueueActions(({ enqueue }, p) => enqueue.cancel(p.id)),
  emit: enqueueActions(({ enqueue }, p) => enqueue.emit(p.event)),
  sendTo: enqueueActions(({ enqueue }, p) => {
    const opts = {};
    if (p.delay !== undefined) opts.delay = p.delay;
    enqueue.sendTo(p.to, p.event, opts);
  }),
  sendParent: enqueueActions(({ enqueue }, p) => enqueue.sendParent(p.event)),
  // XState's `spawnChild(src, {id, systemId, input})`: an `input` template
  // is computed from the context and event when the action runs.
  spawnChild: enqueueActions(({ enqueue }, p) => {
    const opts = {};
    if (p.id !== undefined) opts.id = p.id;
    if (p.systemId !== undefined) opts.systemId = p.systemId;
    if (p.input !== undefined) opts.input = template(p.input);
    enqueue.spawnChild(p.src, opts);
  }),
  stopChild: enqueueActions(({ enqueue }, p) => enqueue.stopChild(p.id)),
  log: ({ event, self }, p) => {
    if (!seen || self !== seen.root) return;
    const m = p && p.message;
    seen.log.push(m === undefined ? event.type : typeof m === 'string' ? m : JSON.stringify(m));
  },
});

const delays = {
  short: 50,
  medium: 200,
  long: 1000,
  ctxDelay: ({ context }) => num(get(context, 'delay')),
};

const actors = {
  // Resolves with its input, once the current step is over.
  echo: fromPromise(async ({ input }) => input ?? null),
  // Rejects with its input.
  reject: fromPromise(async ({ input }) => {
    throw input ?? null;
  }),
  // Never settles: the state that invoked it must be left by other means.
  never: fromPromise(() => new Promise(() => {})),
  // A callback actor: every event it receives goes back to its parent,
  // its type suffixed with ".mirrored".
  mirror: fromCallback(({ sendBack, receive }) => {
    receive((e) => sendBack({ ...e, type: `${e.type}.mirrored` }));
  }),
};

// Guards written as JSON data ({"type": "and", "guards": [...]}, "or",
// {"type": "not", "guard": g}, {"type": "stateIn", "state": ...}) become
// XState's guard combinators; named guards stay as they are.
function convertGuard(g) {
  if (g && typeof g === 'object' && !Array.isArray(g)) {
    if (g.type === 'and') return and(g.guards.map(convertGuard));
    if (g.type === 'or') return or(g.guards.map(convertGuard));
    if (g.type === 'not') return not(convertGuard(g.guard));
    if (g.type === 'stateIn') return stateIn(g.state);
  }
  return g;
}

function convertTransitions(t) {
  if (t === undefined || t === null || typeof t === 'string') return t;
  if (Array.isArray(t)) return t.map(convertTransitions);
  if (t.guard !== undefined) return { ...t, guard: convertGuard(t.guard) };
  return t;
}

function convertTransitionMap(m) {
  if (!m) return m;
  const out = {};
  for (const k of Object.keys(m)) out[k] = convertTransitions(m[k]);
  return out;
}

// Rewrites a JSON machine config into the form XState's createMachine takes.
// `input` and `output` templates: {"$context": KEY} and {"$event": KEY}
// objects anywhere become the context's or the event's field (null when
// absent), computed as XState computes input and output.
function isTemplate(v) {
  if (Array.isArray(v)) return v.some(isTemplate);
  if (v && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 1 && (keys[0] === '$context' || keys[0] === '$event')) return true;
    return Object.values(v).some(isTemplate);
  }
  return false;
}

function resolve(t, context, event) {
  if (Array.isArray(t)) return t.map((x) => resolve(x, context, event));
  if (t && typeof t === 'object') {
    const keys = Object.keys(t);
    if (keys.length === 1 && keys[0] === '$context') return get(context, t.$context) ?? null;
    if (keys.length === 1 && keys[0] === '$event') return get(event, t.$event) ?? null;
    const out = {};
    for (const k of keys) out[k] = resolve(t[k], context, event);
    return out;
  }
  return t;
}

const template = (t) => (isTemplate(t) ? ({ context, event }) => resolve(t, context, event) : t);

function convertState(s) {
  const out = { ...s };
  if (s.output !== undefined) out.output = template(s.output);
  if (s.on) out.on = convertTransitionMap(s.on);
  if (s.after) out.after = convertTransitionMap(s.after);
  if (s.always !== undefined) out.always = convertTransitions(s.always);
  if (s.onDone !== undefined) out.onDone = convertTransitions(s.onDone);
  if (s.invoke !== undefined) {
    const inv = Array.isArray(s.invoke) ? s.invoke : [s.invoke];
    out.invoke = inv.map((i) => ({
      ...i,
      ...(i.input !== undefined ? { input: template(i.input) } : {}),
      ...(i.onDone !== undefined ? { onDone: convertTransitions(i.onDone) } : {}),
      ...(i.onError !== undefined ? { onError: convertTransitions(i.onError) } : {}),
    }));
  }
  if (s.states) {
    out.states = {};
    for (const k of Object.keys(s.states)) out.states[k] = convertState(s.states[k]);
  }
  return out;
}

module.exports = { guards, actions, delays, actors, convertState };
