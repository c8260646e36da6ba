// An error thrown by a queueMicrotask callback is fatal; Node's excerpt
// points where the error was made, and the microtasks behind it never run.
console.log('start');
queueMicrotask(() => { throw new Error('from microtask'); });
queueMicrotask(() => console.log('second microtask'));
setTimeout(() => console.log('timer'), 0);
