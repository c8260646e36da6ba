// Promise.all / race / allSettled / any and their job counts.
const delay = (ms, v) => new Promise((r) => setTimeout(() => r(v), ms));
Promise.all([delay(200, 'a'), delay(100, 'b'), 3]).then((v) => console.log('all', v));
Promise.race([delay(300, 'slow'), delay(50, 'fast')]).then((v) => console.log('race', v));
Promise.allSettled([Promise.reject(new Error('no')), 1]).then((r) => console.log('settled', r.map((x) => x.status)));
Promise.any([Promise.reject(1), delay(150, 'any')]).then((v) => console.log('any', v));
new Promise((resolve) => resolve(Promise.resolve('thenable'))).then((v) => console.log('resolved with promise', v));
Promise.resolve('direct').then((v) => console.log(v));
Promise.resolve().then(() => console.log('tick 1')).then(() => console.log('tick 2')).then(() => console.log('tick 3'));
// (The timers are 50 ms or more apart: with 5 ms between them, real Node
// printed `all` before `any` in about one run in eight on a loaded machine
// (load average 7), so the oracle's own order was not stable.
// The code stays on lines 2 to 9: the inspector's browser test names
// positions in it.)
