// The worker of l05_worker_own_thread.js (not a snippet of its own).
onmessage = () => {
  const t0 = performance.now();
  setTimeout(() => postMessage('its timer ran after ' + (performance.now() - t0 >= 300 ? 'the' : 'only part of the') + ' 300 ms loop'), 0);
  while (performance.now() - t0 < 300) {}
};
