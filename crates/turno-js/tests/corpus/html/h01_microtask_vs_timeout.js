// The script is a task; its microtasks run at the checkpoint after it, before any timer.
console.log('script start');
setTimeout(() => console.log('timeout'), 0);
Promise.resolve().then(() => console.log('promise 1')).then(() => console.log('promise 2'));
queueMicrotask(() => console.log('microtask'));
console.log('script end');
