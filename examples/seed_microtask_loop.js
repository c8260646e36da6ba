// The seed experiment, microtask version: run the same body as
// seed_timeout_loop.js for BUDGET_MS, rescheduling it with queueMicrotask.
// Microtasks drain before the browser may render, so the page freezes: the
// body runs as fast as the CPU allows, and one frame is painted, at the end.
//
//   turno js run examples/seed_microtask_loop.js --model html --max-steps 10000000
const BUDGET_MS = 1000;
const start = performance.now();
let callbacks = 0;
let frames = 0;
let done = false;
requestAnimationFrame(function frame() {
  frames++;
  if (!done) requestAnimationFrame(frame);
});
function body() {
  callbacks++;
  if (performance.now() - start < BUDGET_MS) queueMicrotask(body);
  else finish();
}
function finish() {
  done = true;
  requestAnimationFrame(() => {
    console.log(`microtask loop: callbacks ${callbacks}, frames ${frames}, elapsed ${Math.round(performance.now() - start)} ms`);
    console.log('done');
  });
}
queueMicrotask(body);
