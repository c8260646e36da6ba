// queueMicrotask shares the promise job queue (FIFO), behind nextTick.
queueMicrotask(() => console.log('qm 1'));
Promise.resolve().then(() => console.log('p 1')).then(() => console.log('p 2'));
queueMicrotask(() => {
  console.log('qm 2');
  queueMicrotask(() => console.log('qm 3 (nested)'));
});
process.nextTick(() => console.log('tick'));
