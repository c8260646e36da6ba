// setInterval repeats until cleared; microtasks run after each run.
let n = 0;
const id = setInterval(() => {
  n += 1;
  console.log('interval', n);
  Promise.resolve().then(() => console.log('microtask after', n));
  if (n === 3) clearInterval(id);
}, 20);
setTimeout(() => console.log('t50'), 50);
setTimeout(() => console.log('t200, count', n), 200);
