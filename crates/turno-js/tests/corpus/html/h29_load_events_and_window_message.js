// The document's readiness events come right after the script's microtasks,
// before any task it queued; window.postMessage queues a message task in
// posting order with zero-delay timers and MessageChannel messages.
console.log('readyState at script', document.readyState);
document.addEventListener('DOMContentLoaded', () => { console.log('DOMContentLoaded', document.readyState); Promise.resolve().then(() => console.log('microtask after DCL')); });
window.addEventListener('load', () => console.log('load', document.readyState));
document.addEventListener('readystatechange', () => console.log('readystatechange', document.readyState));
window.addEventListener('message', (e) => console.log('message', e.data, e.origin, e.source === window, e.ports.length));
window.postMessage('one', '*');
setTimeout(() => console.log('timeout 0'), 0);
window.postMessage({ n: 2 }.n, '*');
const c = new MessageChannel();
c.port1.onmessage = (e) => console.log('port', e.data);
c.port2.postMessage('p');
Promise.resolve().then(() => console.log('microtask'));
setTimeout(() => console.log('timeout 5'), 5);
