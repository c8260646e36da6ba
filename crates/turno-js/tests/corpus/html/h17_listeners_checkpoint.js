// Each event listener is called from an empty stack, so a microtask
// checkpoint runs between two listeners of the same message.
const ch = new MessageChannel();
ch.port1.addEventListener('message', () => {
  console.log('listener 1');
  Promise.resolve().then(() => console.log('microtask of listener 1'));
});
ch.port1.onmessage = () => {
  console.log('onmessage');
  queueMicrotask(() => console.log('microtask of onmessage'));
};
ch.port1.addEventListener('message', () => console.log('listener 3'));
ch.port2.postMessage('m');
