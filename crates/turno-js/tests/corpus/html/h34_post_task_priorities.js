// scheduler.postTask's priorities against the page's other tasks:
// user-blocking runs before zero-delay timers and messages, user-visible
// takes turns with them in posting order, background waits for all of
// them; the document's load events still come first.
console.log('typeof scheduler', typeof scheduler, typeof scheduler.postTask, typeof scheduler.yield);
document.addEventListener('DOMContentLoaded', () => console.log('DOMContentLoaded'));
window.addEventListener('load', () => console.log('load'));
setTimeout(() => console.log('timeout 0'), 0);
scheduler.postTask(() => console.log('background 1'), { priority: 'background' });
scheduler.postTask(() => console.log('user-visible 1'));
scheduler.postTask(() => console.log('user-blocking 1'), { priority: 'user-blocking' });
const mc = new MessageChannel();
mc.port1.onmessage = () => console.log('message');
mc.port2.postMessage(0);
scheduler.postTask(() => console.log('user-visible 2'), { priority: 'user-visible' });
scheduler.postTask(() => console.log('user-blocking 2'), { priority: 'user-blocking' });
// The last task of this part starts the next one.
scheduler.postTask(() => { console.log('background 2'); setTimeout(fromBackground, 0); }, { priority: 'background' });
setTimeout(() => console.log('timeout 0 again'), 0);
Promise.resolve().then(() => console.log('microtask'));
console.log('script end');
function fromBackground() {
  console.log('--- from a background task');
  scheduler.postTask(() => {
    console.log('background task');
    scheduler.postTask(() => console.log('background posted'), { priority: 'background' });
    setTimeout(() => console.log('timeout posted'), 0);
    scheduler.postTask(() => console.log('user-visible posted'));
    scheduler.postTask(() => console.log('user-blocking posted'), { priority: 'user-blocking' });
  }, { priority: 'background' });
}
