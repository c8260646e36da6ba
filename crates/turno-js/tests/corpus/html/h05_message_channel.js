// MessageChannel messages are tasks, delivered in order; microtasks run between them.
const ch = new MessageChannel();
ch.port1.onmessage = (e) => {
  console.log('message', e.data);
  Promise.resolve().then(() => console.log('microtask after', e.data));
};
ch.port2.postMessage('one');
ch.port2.postMessage('two');
Promise.resolve().then(() => console.log('script microtask'));
console.log('script end');
