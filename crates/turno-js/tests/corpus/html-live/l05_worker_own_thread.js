// The seed's "move it to a worker, the only way to get a real second
// thread": the worker blocks its own loop for 300 ms while the page's
// timers keep running; the worker's timer waits for its own loop.
const w = new Worker('l05_worker_own_thread.worker.js');
let ticks = 0;
const iv = setInterval(() => { ticks++; }, 10);
w.onmessage = (e) => {
  clearInterval(iv);
  console.log('worker:', e.data);
  console.log('page timers ran while the worker was busy:', ticks >= 10);
  console.log('done');
};
w.postMessage('go');
