// Cleared timers never run, even when the clear comes from a timer due at the same time.
const a = setTimeout(() => console.log('never a'), 10);
clearTimeout(a);
let b;
setTimeout(() => { console.log('clears b'); clearTimeout(b); }, 20);
b = setTimeout(() => console.log('never b'), 20);
setTimeout(() => console.log('done'), 30);
