// The html model's newest kinds in one run: a compositor and a
// main-thread animation (animation_start, compositor_frame, render_start's
// animations, animation_cancel), scripted input (user-interaction tasks
// with input_at_ns), a timer, a rAF callback and a promise.
const el = document.createElement('div');
document.body.appendChild(el);
const slide = el.animate([{ transform: 'translateX(0)' }, { transform: 'translateX(100px)' }], { duration: 200 });
const grow = el.animate([{ width: '0px' }, { width: '10px' }], { duration: 1000 });
document.addEventListener('keydown', (e) => console.log('key', e.key));
setTimeout(function later() { grow.cancel(); console.log('cancelled'); }, 60);
requestAnimationFrame(function frame(ts) { console.log('frame', ts > 0); });
Promise.resolve(1).then(function then(v) { console.log('then', v); });
const t0 = performance.now();
while (performance.now() - t0 < 40) {}
console.log('unblocked');
