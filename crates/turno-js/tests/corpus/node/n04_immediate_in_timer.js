// Inside a timer callback, setImmediate always beats setTimeout(0):
// the check phase comes before the next timers phase.
setTimeout(() => {
  setTimeout(() => console.log('timeout'), 0);
  setImmediate(() => console.log('immediate'));
  process.nextTick(() => console.log('tick'));
  console.log('in timer');
}, 5);
