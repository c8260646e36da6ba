// Nested setTimeout(0): the first levels run back to back; from nesting
// level 6 on the delay is clamped to 4 ms. So 20 ms after the chain starts
// it has run about 9 times, where without the clamp it would have finished
// all 100 runs. (A range, because Chromium's virtual time picks up some
// real-time noise; the exact levels are checked by the unit tests. The
// chain starts from a timer so that page-load time does not count.)
let n = 0;
function nest() {
  n += 1;
  if (n < 100) setTimeout(nest, 0);
}
setTimeout(function start() {
  setTimeout(() => console.log('runs by 20 ms within 4..20:', n >= 4 && n <= 20), 20);
  setTimeout(nest, 0);
}, 0);
