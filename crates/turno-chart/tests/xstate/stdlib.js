// The standard implementations (guards, actions, delays, actors) that
// turno-chart registers by name in `turno_chart::stdlib`, written again for
// XState so that both sides run the same JSON machines. Keep the two in step:
// docs/statecharts.md lists them.
'use strict';
const { assign, enqueueActions, fromPromise, and, or, not, stateIn } = require('xstate');

const get = (obj, key) => (obj == null ? undefined : obj[key]);
const lt = (a, b) => typeof a === 'number' && typeof b === 'number' && a < b;

const guards = {
  pass: () => true,
  fail: () => false,
  ctxEq: ({ context }, p) => JSON.stringify(get(context, p.key)) === JSON.stringify(p.value),
  ctxLt: ({ context }, p) => lt(get(context, p.key), p.value),
  ctxGte: ({ context }, p) => typeof get(context, p.key) === 'number' && !lt(get(context, p.key), p.value),
  eventEq: ({ event }, p) => JSON.stringify(get(event, p.key)) === JSON.stringify(p.value),
  eventGt: ({ event }, p) => lt(p.value, get(event, p.key)),
};

const num = (v) => (typeof v === 'number' ? v : 0);

const actions = {
  inc: assign(({ context }, p) => ({ [p.key]: num(get(context, p.key)) + (p.by ?? 1) })),
  set: assign((_, p) => ({ [p.key]: p.value })),
  setFromEvent: assign(({ event }, p) => ({ [p.key]: get(event, p.from) ?? null })),
  append: assign(({ context }, p) => ({
    [p.key]: (typeof get(context, p.key) === 'string' ? get(context, p.key) : '') + p.value,
  })),
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
  log: () => {},
};

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
function convertState(s) {
  const out = { ...s };
  if (s.on) out.on = convertTransitionMap(s.on);
  if (s.after) out.after = convertTransitionMap(s.after);
  if (s.always !== undefined) out.always = convertTransitions(s.always);
  if (s.onDone !== undefined) out.onDone = convertTransitions(s.onDone);
  if (s.invoke !== undefined) {
    const inv = Array.isArray(s.invoke) ? s.invoke : [s.invoke];
    out.invoke = inv.map((i) => ({
      ...i,
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
