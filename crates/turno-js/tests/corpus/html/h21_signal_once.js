// AbortController / AbortSignal in the page: a signal removes its
// listeners; abort events, reasons, AbortSignal.timeout, whose abort event
// the browser dispatches from a task, so a microtask checkpoint follows
// each of its listeners (unlike controller.abort() called from script).
const ac = new AbortController();
document.addEventListener('tick', () => console.log('tick listener'), { signal: ac.signal });
document.dispatchEvent(new Event('tick'));
ac.signal.addEventListener('abort', () => {
  console.log('abort listener 1', ac.signal.aborted);
  Promise.resolve().then(() => console.log('microtask of abort listener 1'));
});
ac.signal.onabort = () => console.log('onabort');
ac.abort();
console.log('reason', ac.signal.reason.name, ac.signal.reason instanceof DOMException);
document.dispatchEvent(new Event('tick'));
const r = new AbortController();
r.abort('my reason');
console.log('custom reason', r.signal.reason);
try { r.signal.throwIfAborted(); } catch (e) { console.log('thrown', e); }
console.log('AbortSignal.abort()', AbortSignal.abort().reason.name);
const ts = AbortSignal.timeout(10);
ts.addEventListener('abort', () => {
  console.log('timeout listener 1', ts.reason.name);
  Promise.resolve().then(() => console.log('microtask of timeout listener 1'));
});
ts.addEventListener('abort', () => console.log('timeout listener 2'));
ts.addEventListener('abort', () => console.log('once listener'), { once: true });
