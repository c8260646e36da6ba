// A checkpoint drains microtasks queued by microtasks, in FIFO order.
Promise.resolve().then(() => {
  console.log('p1');
  queueMicrotask(() => console.log('qm from p1'));
  Promise.resolve().then(() => console.log('p from p1'));
});
queueMicrotask(() => console.log('qm1'));
Promise.resolve().then(() => console.log('p2')).then(() => console.log('p2 then'));
setTimeout(() => {
  console.log('timer');
  Promise.resolve().then(() => console.log('timer microtask'));
}, 10);
setTimeout(() => console.log('timer 2'), 10);
