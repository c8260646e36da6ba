// DOM dispatch from script: capture then target then bubble along
// element -> body -> html -> document -> window, in registration order;
// once, passive, handleEvent, stopImmediatePropagation, stopPropagation and
// the return value; no microtask runs between listeners, because the
// script that called dispatchEvent is still on the stack.
const el = document.createElement('div');
document.body.appendChild(el);
const phase = (e) => ['none', 'capture', 'target', 'bubble'][e.eventPhase];
window.addEventListener('hit', (e) => console.log('window capture', phase(e)), true);
document.addEventListener('hit', (e) => console.log('document capture', phase(e)), { capture: true });
el.addEventListener('hit', (e) => {
  console.log('el 1', phase(e), e.target === el, e.currentTarget === el);
  Promise.resolve().then(() => console.log('microtask of el 1'));
});
el.addEventListener('hit', { handleEvent(e) { console.log('el handleEvent', this !== el); } });
el.addEventListener('hit', () => console.log('el once'), { once: true });
el.addEventListener('hit', (e) => { e.preventDefault(); console.log('el passive', e.defaultPrevented); }, { passive: true });
document.body.addEventListener('hit', (e) => console.log('body bubble', phase(e), e.currentTarget === document.body));
document.addEventListener('hit', (e) => console.log('document bubble', phase(e)));
window.addEventListener('hit', (e) => console.log('window bubble', phase(e), e.currentTarget === window));
console.log('returned', el.dispatchEvent(new Event('hit', { bubbles: true, cancelable: true })));
console.log('again, not bubbling');
console.log('returned', el.dispatchEvent(new Event('hit', { cancelable: true })));

const t = new EventTarget();
t.addEventListener('x', (e) => { console.log('cancel'); e.preventDefault(); });
t.addEventListener('x', (e) => { console.log('stop'); e.stopImmediatePropagation(); });
t.addEventListener('x', () => console.log('never'));
console.log('x returned', t.dispatchEvent(new Event('x', { cancelable: true })));
el.addEventListener('stopper', (e) => { console.log('el stops propagation'); e.stopPropagation(); });
el.addEventListener('stopper', () => console.log('same target still runs'));
document.addEventListener('stopper', () => console.log('never: document'));
el.dispatchEvent(new CustomEvent('stopper', { bubbles: true, detail: 7 }));
el.onclick = (e) => { console.log('onclick handler', e.detail); return false; };
console.log('click returned', el.dispatchEvent(new CustomEvent('click', { cancelable: true, detail: 3 })));
queueMicrotask(() => console.log('microtask queued last'));
