// return() on a suspended async generator settles in the same microtask
// as in V8 (one tick after the reaction that calls it).
async function* numbers() { yield 1; yield 2; }
const g = numbers();
g.next().then(() => {
  g.return('r').then((v) => console.log('return settled', JSON.stringify(v)));
  let n = 0;
  const tick = () => { n++; console.log('tick', n); if (n < 6) Promise.resolve().then(tick); };
  Promise.resolve().then(tick);
});
