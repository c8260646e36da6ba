// The DOM Standard marks every dependent signal aborted before any abort
// event fires; a dependent of a dependent follows the source signal.
const c = new AbortController();
const a = AbortSignal.any([c.signal]);
const b = AbortSignal.any([a, c.signal]);
c.signal.addEventListener('abort', () => console.log('c abort; a.aborted', a.aborted, 'b.aborted', b.aborted));
a.addEventListener('abort', () => console.log('a abort; b.aborted', b.aborted, 'same reason', a.reason === c.signal.reason));
b.addEventListener('abort', () => console.log('b abort; same reason', b.reason === c.signal.reason));
c.abort();
console.log('after', a.aborted, b.aborted);
