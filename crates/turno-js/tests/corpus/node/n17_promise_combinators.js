// Promise.all / race / allSettled / any and their job counts.
const delay = (ms, v) => new Promise((r) => setTimeout(() => r(v), ms));
Promise.all([delay(20, 'a'), delay(10, 'b'), 3]).then((v) => console.log('all', v));
Promise.race([delay(30, 'slow'), delay(5, 'fast')]).then((v) => console.log('race', v));
Promise.allSettled([Promise.reject(new Error('no')), 1]).then((r) => console.log('settled', r.map((x) => x.status)));
Promise.any([Promise.reject(1), delay(15, 'any')]).then((v) => console.log('any', v));
new Promise((resolve) => resolve(Promise.resolve('thenable'))).then((v) => console.log('resolved with promise', v));
Promise.resolve('direct').then((v) => console.log(v));
Promise.resolve().then(() => console.log('tick 1')).then(() => console.log('tick 2')).then(() => console.log('tick 3'));
