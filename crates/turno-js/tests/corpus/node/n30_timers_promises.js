// node:timers/promises: the awaited timer resumes in the microtasks after
// its callback, an immediate resolves in the check phase, setInterval is an
// async iterator, and an aborted wait rejects with an AbortError.
const { setTimeout: sleep, setImmediate: immediate, setInterval: every } = require('node:timers/promises');
const timers = require('timers');

async function main() {
  setTimeout(() => console.log('plain timeout 10'), 10);
  const v = await sleep(10, 'slept 10');
  console.log(v);
  process.nextTick(() => console.log('tick after sleep'));
  setTimeout(() => console.log('plain timeout 0'), 0);
  console.log(await immediate('immediate value'));
  let n = 0;
  for await (const tick of every(5, 'tick')) {
    console.log(tick, ++n);
    if (n === 3) break;
  }
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 5);
  try {
    await sleep(50, 'never', { signal: ac.signal });
  } catch (e) {
    console.log(e.name, e.code, e.message);
  }
  console.log('same module', timers.promises.setTimeout === sleep);
}
main().then(() => console.log('done'));
Promise.resolve().then(() => console.log('microtask before any timer'));
