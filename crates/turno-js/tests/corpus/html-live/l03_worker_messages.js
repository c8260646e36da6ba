// A dedicated worker runs its own event loop: each message is a task there
// (its microtasks run before the worker's next task, a timer it sets waits
// behind the message already queued), every reply is a task here, in the
// order posted; once terminate() is called nothing more arrives.
const w = new Worker('l03_worker_messages.worker.js');
w.onmessage = (e) => {
  console.log('page got', e.data);
  if (e.data === 'timeout b') {
    w.terminate();
    console.log('terminated');
    setTimeout(() => console.log('done'), 400);
  }
};
w.postMessage('a');
w.postMessage('b');
console.log('posted');
