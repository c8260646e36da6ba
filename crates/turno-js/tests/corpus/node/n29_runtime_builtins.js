// Feature detection sees what Node 20 has: no Promise.withResolvers, no
// Object.groupBy, no new Set methods, no iterator helpers, no Iterator.
const checks = {
  'Promise.withResolvers': typeof Promise.withResolvers,
  'Promise.try': typeof Promise.try,
  'Object.groupBy': typeof Object.groupBy,
  'Map.groupBy': typeof Map.groupBy,
  'Set.prototype.union': typeof new Set().union,
  'Set.prototype.isSubsetOf': typeof Set.prototype.isSubsetOf,
  'Iterator': typeof globalThis.Iterator,
  'TypedArray': typeof globalThis.TypedArray,
  'iterator map': typeof [].values().map,
  'iterator toArray': typeof [].keys().toArray,
  'JSON.rawJSON': typeof JSON.rawJSON,
  'RegExp.escape': typeof RegExp.escape,
  'Array.prototype.findLast': typeof [].findLast,
  'Array.prototype.toSorted': typeof [].toSorted,
  'Object.hasOwn': typeof Object.hasOwn,
  'String.prototype.isWellFormed': typeof ''.isWellFormed,
  'structuredClone': typeof structuredClone,
  'SharedArrayBuffer': typeof SharedArrayBuffer,
};
for (const [k, v] of Object.entries(checks)) console.log(k, v);
// A polyfill guarded by feature detection takes Node 20's branch.
if (!Promise.withResolvers) {
  Promise.withResolvers = function () {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    return { promise, resolve, reject };
  };
  console.log('polyfilled');
}
const { promise, resolve } = Promise.withResolvers();
promise.then((v) => console.log('resolved', v));
resolve(42);
