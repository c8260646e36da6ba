// postMessage copies with structuredClone's semantics: shared and circular
// references kept, Map/Set/Date/typed arrays rebuilt in the worker's realm,
// prototypes dropped; a function or a symbol is a DataCloneError thrown to
// the caller, on both sides. The copy is made when postMessage is called.
const w = new Worker('l04_worker_clone.worker.js');
w.onmessage = (e) => {
  if (e.data === 'done') { console.log('done'); return; }
  console.log('page got', Array.isArray(e.data) ? 'array ' + e.data.join(',') : e.data);
};
try { w.postMessage(function f() {}); } catch (err) { console.log('function:', err.name, err instanceof DOMException, err.code); }
try { w.postMessage({ s: Symbol('x') }); } catch (err) { console.log('symbol:', err.message); }
class Point { constructor() { this.x = 1; } }
const shared = { k: 1 };
const o = { n: 1, list: [1, 2, 3], when: new Date(0), m: new Map([['k', new Set([1, 2])]]), bytes: new Uint8Array([1, 2, 3]), p: new Point(), a: shared, b: shared };
o.self = o;
w.postMessage(o);
o.n = 2;
o.list.push(99);
console.log('posted');
