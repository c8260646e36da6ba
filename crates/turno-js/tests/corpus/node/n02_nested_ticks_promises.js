// A tick queued from a promise job waits until the whole microtask queue drains;
// a promise job queued from a tick runs after all pending ticks.
process.nextTick(() => {
  console.log('tick A');
  Promise.resolve().then(() => console.log('promise from tick A'));
  process.nextTick(() => console.log('tick from tick A'));
});
Promise.resolve().then(() => {
  console.log('promise B');
  process.nextTick(() => console.log('tick from promise B'));
  Promise.resolve().then(() => console.log('promise from promise B'));
});
process.nextTick(() => console.log('tick C'));
