// setImmediate from an immediate waits for the next loop iteration;
// ticks and microtasks run between immediates.
setImmediate(() => {
  console.log('imm 1');
  setImmediate(() => console.log('imm 3 (next iteration)'));
  process.nextTick(() => console.log('tick after imm 1'));
  Promise.resolve().then(() => console.log('promise after imm 1'));
});
setImmediate(() => console.log('imm 2'));
