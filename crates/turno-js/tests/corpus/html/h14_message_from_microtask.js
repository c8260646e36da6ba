// A message posted from a microtask is still a task: it waits for the checkpoint to finish.
const ch = new MessageChannel();
ch.port1.onmessage = (e) => console.log('message', e.data);
Promise.resolve().then(() => {
  ch.port2.postMessage('from microtask');
  Promise.resolve().then(() => console.log('later microtask'));
});
console.log('script end');
