// AbortController and AbortSignal in Node 20: abort event, reason,
// listeners removed by a signal, AbortSignal.abort() and .timeout().
const ac = new AbortController();
const t = new EventTarget();
t.addEventListener('tick', () => console.log('tick listener'), { signal: ac.signal });
t.dispatchEvent(new Event('tick'));
ac.signal.addEventListener('abort', (e) => console.log('abort event', e.type, ac.signal.aborted));
ac.signal.onabort = () => console.log('onabort');
ac.abort();
ac.abort('twice');
console.log('reason', ac.signal.reason.name, ac.signal.reason.message, ac.signal.reason instanceof DOMException);
t.dispatchEvent(new Event('tick'));
console.log('after abort, the listener is gone');

const withReason = new AbortController();
withReason.abort('my reason');
console.log('custom reason', withReason.signal.reason);
try { withReason.signal.throwIfAborted(); } catch (e) { console.log('thrown', e); }

const s = AbortSignal.abort();
console.log('AbortSignal.abort()', s.aborted, s.reason.name);

const late = new EventTarget();
late.addEventListener('z', () => console.log('never: signal already aborted'), { signal: s });
late.dispatchEvent(new Event('z'));

const ts = AbortSignal.timeout(20);
ts.addEventListener('abort', () => {
  console.log('timeout fired', ts.reason.name, ts.reason.message);
  Promise.resolve().then(() => console.log('microtask after first timeout listener'));
});
ts.addEventListener('abort', () => console.log('second timeout listener'));
// AbortSignal.timeout does not keep the process alive; this timer does.
setTimeout(() => console.log('keep-alive timer', ts.aborted), 40);
