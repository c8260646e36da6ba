// EventTarget dispatch (the DOM Standard, as Node 20 has it): listeners run
// synchronously inside dispatchEvent, in registration order; once, passive,
// handleEvent objects, stopImmediatePropagation and the return value; no
// microtask runs between listeners of a dispatch from script.
const t = new EventTarget();
t.addEventListener('ping', (e) => {
  console.log('first', e.type, e.eventPhase, e.target === t, e.currentTarget === t);
  Promise.resolve().then(() => console.log('microtask of first'));
});
t.addEventListener('ping', { handleEvent(e) { console.log('handleEvent', this !== t); } });
t.addEventListener('ping', () => console.log('once'), { once: true });
t.addEventListener('ping', (e) => { e.preventDefault(); console.log('passive', e.defaultPrevented); }, { passive: true });
console.log('before dispatch');
console.log('returned', t.dispatchEvent(new Event('ping', { cancelable: true })));
console.log('after dispatch, again:');
console.log('returned', t.dispatchEvent(new Event('ping', { cancelable: true })));

const u = new EventTarget();
const dup = () => console.log('registered twice, runs once');
u.addEventListener('x', dup);
u.addEventListener('x', dup);
u.addEventListener('x', (e) => { console.log('cancel'); e.preventDefault(); });
u.addEventListener('x', (e) => { console.log('stop'); e.stopImmediatePropagation(); });
u.addEventListener('x', () => console.log('never'));
console.log('not canceled?', u.dispatchEvent(new Event('x', { cancelable: true })));
console.log('not cancelable:', u.dispatchEvent(new Event('x')));

const removed = () => console.log('removed: never');
u.addEventListener('y', () => { console.log('removes the next'); u.removeEventListener('y', removed); });
u.addEventListener('y', removed);
u.dispatchEvent(new Event('y'));

const c = new CustomEvent('c', { detail: { n: 1 } });
u.addEventListener('c', (e) => console.log('detail', e.detail.n, e instanceof Event));
u.dispatchEvent(c);
console.log('phase after dispatch', c.eventPhase, c.currentTarget);
queueMicrotask(() => console.log('microtask queued last'));
