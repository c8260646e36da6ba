// Chromium delivers a MessagePort's messages one task at a time: the first
// message to an idle port gets a task at once; the task for the next one is
// queued only after the previous dispatch (its listeners and their
// microtasks) is over, so zero-delay timers set in between run before the
// port's later messages; another port has its own chain. --browser spec
// queues one task per message when it is posted ('message b' right after
// 'timeout 1').
const ch = new MessageChannel();
const other = new MessageChannel();
other.port1.onmessage = (e) => console.log('other port', e.data);
ch.port1.onmessage = (e) => {
  console.log('message', e.data);
  if (e.data === 'b') {
    ch.port2.postMessage('from listener');
    Promise.resolve().then(() => setTimeout(() => console.log('timeout from microtask'), 0));
  }
};
setTimeout(() => {
  console.log('timer callback');
  ch.port2.postMessage('a');
  setTimeout(() => console.log('timeout 1'), 0);
  ch.port2.postMessage('b');
  other.port2.postMessage('x');
  setTimeout(() => console.log('timeout 2'), 0);
}, 0);
