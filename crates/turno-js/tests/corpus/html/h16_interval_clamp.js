// setInterval(f, 0) is clamped to 4 ms once its nesting level passes 5, so by
// 20 ms it has run about 10 times (a range: Chromium's virtual time has some
// real-time noise).
let n = 0;
const id = setInterval(() => {
  n += 1;
  if (n === 40) clearInterval(id);
}, 0);
setTimeout(() => {
  console.log('runs by 20 ms within 6..15:', n >= 6 && n <= 15);
  clearInterval(id);
}, 20);
console.log('scheduled');
