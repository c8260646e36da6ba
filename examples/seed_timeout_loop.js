// The seed experiment, task version: the same body as
// seed_microtask_loop.js for BUDGET_MS, rescheduled with setTimeout(0).
// Each callback is a task, so the browser renders between them (about one
// frame per 16.7 ms); past nesting level 5 every timer is clamped to 4 ms,
// so the body runs about once per 4 ms plus its own cost.
//
//   turno js run examples/seed_timeout_loop.js --model html
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
  if (performance.now() - start < BUDGET_MS) setTimeout(body, 0);
  else finish();
}
function finish() {
  done = true;
  requestAnimationFrame(() => {
    console.log(`timeout loop: callbacks ${callbacks}, frames ${frames}, elapsed ${Math.round(performance.now() - start)} ms`);
    console.log('done');
  });
}
setTimeout(body, 0);
