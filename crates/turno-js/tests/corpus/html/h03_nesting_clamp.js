// Nested setTimeout(0): from nesting level 6 on, the delay is clamped to 4 ms.
let n = 0;
let prev = 0;
function nest() {
  n += 1;
  const now = performance.now();
  if (n >= 2) console.log('nest', n, 'delta', Math.round(now - prev));
  prev = now;
  if (n < 10) setTimeout(nest, 0);
}
setTimeout(nest, 0);
