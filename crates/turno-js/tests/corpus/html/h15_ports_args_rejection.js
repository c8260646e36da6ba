// Timer arguments; a port with addEventListener only receives after start();
// an unhandled rejection is reported but does not stop the page.
setTimeout((a, b) => console.log('args', a, b), 50, 'x', 2);
const ch = new MessageChannel();
ch.port2.addEventListener('message', (e) => console.log('listener', e.data));
ch.port1.postMessage('queued before start');
setTimeout(() => {
  console.log('starting port');
  ch.port2.start();
}, 100);
Promise.reject(new Error('unhandled in page'));
setTimeout(() => console.log(typeof window, typeof self, window === globalThis), 150);
