// The stack empties after each rAF callback, so its microtasks run before the next one.
requestAnimationFrame(() => {
  console.log('raf 1');
  Promise.resolve().then(() => console.log('microtask from raf 1'));
});
requestAnimationFrame(() => {
  console.log('raf 2');
  queueMicrotask(() => console.log('microtask from raf 2'));
});
Promise.resolve().then(() => console.log('script microtask'));
