// Tasks queued while a port's first message is dispatched (a zero-delay
// timer, the other port's first message) run before its waiting messages.
const c = new MessageChannel();
c.port1.onmessage = (e) => {
  console.log('port1 got', e.data);
  if (e.data === 'a') { setTimeout(() => console.log('timeout from a'), 0); c.port1.postMessage('x'); }
  if (e.data === 'b') c.port1.postMessage('w');
};
c.port2.onmessage = (e) => {
  console.log('port2 got', e.data);
  c.port2.postMessage('reply to ' + e.data);
};
c.port2.postMessage('a');
c.port2.postMessage('b');
setTimeout(() => console.log('timeout from script'), 0);
