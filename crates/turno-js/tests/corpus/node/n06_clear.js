// Cleared timers and immediates never run, even when cleared by a sibling.
const a = setTimeout(() => console.log('never a'), 10);
clearTimeout(a);
let b;
setTimeout(() => {
  console.log('first clears b');
  clearTimeout(b);
}, 10);
b = setTimeout(() => console.log('never b'), 10);
setTimeout(() => {
  const i1 = setImmediate(() => { console.log('imm 1'); clearImmediate(i2); });
  const i2 = setImmediate(() => console.log('never imm 2'));
  setImmediate(() => console.log('imm 3'));
  void i1;
}, 20);
