// Job counts: async return of a promise, thenables, await of a thenable, nested resolution.
const log = (...a) => console.log(...a);
async function retP() { return Promise.resolve('retP'); }
async function retV() { return 'retV'; }
retP().then(log);
retV().then(log);
const thenable = { then(r) { log('thenable.then called'); r('thenable'); } };
Promise.resolve(thenable).then(log);
(async () => { const v = await thenable; log('awaited', v); })();
new Promise((r) => r(Promise.resolve('nested'))).then(log);
Promise.resolve().then(() => log('a1')).then(() => log('a2')).then(() => log('a3')).then(() => log('a4')).then(() => log('a5'));
(async () => { try { await Promise.reject(new Error('rej')); } catch (e) { log('caught', e.message); } finally { log('finally'); } })();
Promise.all([]).then(() => log('all empty'));
Promise.race([]).then(() => log('never'));
queueMicrotask(() => log('qm'));
process.nextTick(() => log('tick'));
(async function* () { yield 1; })().next().then((r) => log('gen', r));
