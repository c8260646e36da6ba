// Key presses and a click arrive while a long task blocks the main thread:
// they queue, and are delivered in order once it ends, one task each, with
// a microtask checkpoint after each listener (the host dispatches them).
// Chromium runs them before a timer queued before the long task.
// Input: l01_input_during_long_task.input.json (times from the first line).
document.addEventListener('keydown', (e) => {
  console.log('keydown', e.key, e.code, e.isTrusted, e instanceof KeyboardEvent);
  Promise.resolve().then(() => console.log('microtask after keydown', e.key));
});
window.addEventListener('keydown', (e) => console.log('window keydown', e.key, e.target === document.body));
document.addEventListener('keyup', (e) => console.log('keyup', e.key));
document.addEventListener('mousedown', (e) => console.log('mousedown', e instanceof MouseEvent, e.clientX, e.clientY));
document.addEventListener('mouseup', () => console.log('mouseup'));
document.addEventListener('click', (e) => console.log('click', e.target === document.documentElement, e.isTrusted));
setTimeout(() => console.log('timer queued before the long task'), 0);
console.log('blocking');
const t0 = performance.now();
while (performance.now() - t0 < 800) {}
console.log('unblocked');
setTimeout(() => console.log('done'), 0);
