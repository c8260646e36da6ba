// rAF callbacks of one frame run in order and get the same timestamp.
let first;
requestAnimationFrame((t) => { first = t; console.log('raf 1'); });
requestAnimationFrame((t) => console.log('raf 2, same timestamp:', t === first));
const id = requestAnimationFrame(() => console.log('cancelled, never runs'));
cancelAnimationFrame(id);
requestAnimationFrame(() => console.log('raf 3'));
console.log('script end');
