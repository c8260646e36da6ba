// Since Node 11, ticks and microtasks drain between two timers of the same list.
setTimeout(() => {
  console.log('timer 1');
  Promise.resolve().then(() => console.log('promise in timer 1'));
  process.nextTick(() => console.log('tick in timer 1'));
}, 5);
setTimeout(() => console.log('timer 2'), 5);
