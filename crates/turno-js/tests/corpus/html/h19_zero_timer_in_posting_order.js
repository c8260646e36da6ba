// Chromium posts a zero-delay timer as an ordinary task at once, so it runs
// in posting order with messages (the spec-only profile would also run it
// in the order it became runnable: at once). Two messages to one port in a
// row are another matter: Chromium queues a port's next message only after
// the previous one's dispatch (h22).
const ch = new MessageChannel();
ch.port1.onmessage = (e) => console.log('message', e.data);
setTimeout(() => console.log('timeout 1'), 0);
ch.port2.postMessage(1);
setTimeout(() => console.log('timeout 2'), 0);
ch.port2.postMessage(2);
