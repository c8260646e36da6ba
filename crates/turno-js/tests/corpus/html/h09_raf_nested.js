// A rAF requested inside a rAF callback waits for the next frame.
let t1;
requestAnimationFrame((t) => {
  t1 = t;
  console.log('frame 1');
  requestAnimationFrame((t2) => console.log('frame 2, later:', t2 > t1));
});
requestAnimationFrame(() => console.log('frame 1, second callback'));
