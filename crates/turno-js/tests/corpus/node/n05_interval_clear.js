// setInterval repeats until cleared; each run is followed by its microtasks.
// (Gaps are wide so that Node's real start-up time cannot reorder them.)
let n = 0;
const id = setInterval(() => {
  n += 1;
  console.log('interval', n);
  Promise.resolve(n).then((v) => console.log('after interval', v));
  if (n === 3) {
    clearInterval(id);
    console.log('cleared');
  }
}, 100);
setTimeout(() => console.log('t250'), 250);
setTimeout(() => console.log('t500'), 500);
