// Nested setTimeout(0): levels 1 to 5 run back to back; from level 6 on the
// delay is clamped to 4 ms. By 20 ms the chain has therefore run about 10
// times: without the clamp it would have finished all 40 runs, with a clamp
// from the start about 5. (A range, because Chromium's virtual time picks up
// some real-time noise.)
let n = 0;
function nest() {
  n += 1;
  if (n < 40) setTimeout(nest, 0);
}
setTimeout(nest, 0);
setTimeout(() => {
  console.log('runs by 20 ms within 6..15:', n >= 6 && n <= 15);
}, 20);
