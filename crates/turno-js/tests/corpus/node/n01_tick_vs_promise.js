// process.nextTick callbacks run before promise jobs, both after the main module.
console.log('main start');
Promise.resolve().then(() => console.log('promise 1'));
process.nextTick(() => console.log('tick 1'));
Promise.resolve().then(() => console.log('promise 2'));
process.nextTick(() => console.log('tick 2'));
queueMicrotask(() => console.log('microtask'));
console.log('main end');
