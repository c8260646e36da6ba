// async/await in the page: the same microtask ordering as anywhere.
async function f(name) {
  console.log(name, 'start');
  await null;
  console.log(name, 'after await');
  return name;
}
f('a').then((v) => console.log('done', v));
f('b');
Promise.resolve().then(() => console.log('p1')).then(() => console.log('p2')).then(() => console.log('p3'));
console.log('sync end');
