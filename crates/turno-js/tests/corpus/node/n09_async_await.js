// await on a native promise takes one job; returning a promise from then takes two more.
async function f(name) {
  console.log(name, 'start');
  await null;
  console.log(name, 'after await 1');
  await Promise.resolve();
  console.log(name, 'after await 2');
  return name;
}
f('a').then((v) => console.log('done', v));
f('b');
Promise.resolve()
  .then(() => { console.log('then 1'); return Promise.resolve('x'); })
  .then((v) => console.log('then 2', v));
Promise.resolve().then(() => console.log('p1')).then(() => console.log('p2')).then(() => console.log('p3')).then(() => console.log('p4'));
console.log('sync end');
