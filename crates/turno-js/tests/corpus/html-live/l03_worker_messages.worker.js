// The worker of l03_worker_messages.js (not a snippet of its own).
onmessage = (e) => {
  Promise.resolve().then(() => postMessage('micro ' + e.data));
  setTimeout(() => postMessage('timeout ' + e.data), 0);
  postMessage('sync ' + e.data);
  // Due long after the page has terminated this worker: never arrives.
  if (e.data === 'b') setTimeout(() => postMessage('after terminate'), 200);
};
