// Extra arguments reach timer, immediate and tick callbacks.
setTimeout((a, b) => console.log('timeout', a, b), 1, 'x', 2);
setTimeout((a) => {
  setImmediate((c, d) => console.log('immediate', c, d), 'y', [3]);
  process.nextTick((e) => console.log('tick', e), { f: 4 });
  console.log('timer', a);
}, 5, 'z');
