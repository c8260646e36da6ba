// Two timers due together are two tasks: the first one's microtasks run in between.
setTimeout(() => {
  console.log('timer 1');
  Promise.resolve().then(() => console.log('microtask of timer 1'));
}, 10);
setTimeout(() => console.log('timer 2'), 10);
