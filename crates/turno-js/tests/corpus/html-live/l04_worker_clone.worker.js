// The worker of l04_worker_clone.js (not a snippet of its own).
onmessage = (e) => {
  const d = e.data;
  postMessage([
    'n ' + d.n,
    'self ' + (d.self === d),
    'shared ' + (d.a === d.b),
    'date ' + (d.when instanceof Date) + ' ' + d.when.getTime(),
    'map ' + (d.m instanceof Map) + ' ' + (d.m.get('k') instanceof Set) + ' ' + [...d.m.get('k')].join(','),
    'bytes ' + (d.bytes instanceof Uint8Array) + ' ' + d.bytes.join(','),
    'point ' + (Object.getPrototypeOf(d.p) === Object.prototype) + ' ' + d.p.x,
  ].join('; '));
  postMessage('scope ' + typeof window + ' ' + typeof document + ' ' + (self === globalThis) + ' ' + typeof postMessage);
  try { postMessage({ f() {} }); } catch (err) { postMessage('worker: ' + err.name); }
  d.list.push(4);
  postMessage(d.list);
  postMessage('done');
};
