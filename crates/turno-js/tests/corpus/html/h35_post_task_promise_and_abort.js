// The promise scheduler.postTask returns: settled with the callback's
// value (or its exception, not reported as an error) only after the
// callback's own microtasks have all run; an abort before then rejects it
// with the signal's reason, an abort after does nothing (even while a
// returned promise is pending); bad arguments reject with Chromium's
// TypeError.
// Each section starts 20 ms after the one before it, from a timer that
// section posted, so a slow page load cannot make them overlap.
const sections = [
() => {
  const p = scheduler.postTask(() => { console.log('task a'); Promise.resolve().then(() => console.log('microtask in a')); return 42; });
  console.log('returns a promise', p instanceof Promise);
  p.then((v) => console.log('a resolved', v));
  scheduler.postTask(() => { console.log('task b'); throw new Error('boom'); }).catch((e) => console.log('b rejected', e.message));
  const c = new TaskController();
  scheduler.postTask(() => console.log('task c never runs'), { signal: c.signal }).catch((e) => console.log('c rejected', e.name, e.message));
  c.abort();
  const ac = new AbortController();
  ac.abort('why');
  scheduler.postTask(() => console.log('task d never runs'), { signal: ac.signal }).catch((e) => console.log('d rejected', e));
  scheduler.postTask((...args) => console.log('arguments', args.length));
  scheduler.postTask(async () => { console.log('async task'); await null; console.log('after await'); return 'x'; }).then((v) => console.log('async resolved', v));
  console.log('task end');
},
() => {
  console.log('--- bad arguments');
  const show = (p, what) => p.then(() => console.log(what, 'ran'), (e) => console.log(what, e.name + ': ' + e.message));
  show(scheduler.postTask(), 'no callback');
  show(scheduler.postTask(42), 'number callback');
  show(scheduler.postTask(() => {}, 5), 'number options');
  show(scheduler.postTask(() => {}, { priority: 'urgent' }), 'bad priority');
  show(scheduler.postTask(() => {}, { delay: -5 }), 'negative delay');
  show(scheduler.postTask(() => {}, { delay: 'soon' }), 'NaN delay');
  show(scheduler.postTask(() => {}, { delay: Infinity }), 'infinite delay');
  show(scheduler.postTask(() => {}, { signal: {} }), 'object signal');
  show(scheduler.postTask(() => {}, { signal: null }), 'null signal');
  show(scheduler.postTask(() => {}, { delay: -0.5 }), 'delay -0.5');
  show(scheduler.postTask(() => {}, null), 'null options');
},
() => {
  console.log('--- abort after the task started');
  const c1 = new TaskController();
  scheduler.postTask(() => { console.log('sync task aborts its signal'); c1.abort('late'); return 7; }, { signal: c1.signal })
    .then((v) => console.log('sync resolved', v), (e) => console.log('sync rejected', e));
  const c2 = new TaskController();
  scheduler.postTask(async () => { console.log('async task'); await null; c2.abort('later'); return 8; }, { signal: c2.signal })
    .then((v) => console.log('async resolved', v), (e) => console.log('async rejected', e));
  const c3 = new TaskController();
  scheduler.postTask(() => 9, { signal: c3.signal }).then((v) => { console.log('plain resolved', v); c3.abort('too late'); });
  const c4 = new TaskController();
  scheduler.postTask(() => console.log('delayed never runs'), { signal: c4.signal, delay: 5 }).catch((e) => console.log('delayed rejected', e.name));
  setTimeout(() => { console.log('abort at 2 ms'); c4.abort(); }, 2);
},
() => {
  console.log('--- settled after the microtasks');
  scheduler.postTask(() => {
    Promise.resolve().then(() => console.log('m1')).then(() => console.log('m2')).then(() => console.log('m3'));
    return 1;
  }).then(() => console.log('resolved after m3'));
  scheduler.postTask(() => {
    Promise.resolve().then(() => console.log('n1')).then(() => console.log('n2'));
    throw new Error('late');
  }).catch((e) => console.log('rejected after n2', e.message));
  let finish;
  const c = new TaskController();
  scheduler.postTask(() => new Promise((res) => { finish = res; }), { signal: c.signal })
    .then((v) => console.log('pending result resolved', v), (e) => console.log('pending result rejected', e));
  setTimeout(() => { c.abort('ignored'); console.log('aborted after the task'); finish(5); }, 5);
},
];
const runSection = (i) => {
  if (i === sections.length) return;
  setTimeout(() => runSection(i + 1), 20);
  sections[i]();
};
setTimeout(() => runSection(0), 0);
