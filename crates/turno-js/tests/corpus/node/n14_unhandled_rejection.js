// An unhandled rejection is fatal (exit 1) once the microtasks have drained;
// a rejection handled in time is not.
const handled = Promise.reject(new Error('handled later'));
Promise.resolve().then(() => handled.catch((e) => console.log('caught', e.message)));
console.log('sync');
setTimeout(() => {
  console.log('timer');
  Promise.reject(new Error('nobody catches this'));
}, 5);
setTimeout(() => console.log('never'), 10);
