// Timers fire by due time; equal due times keep insertion order.
// (Gaps are wide so that Node's real start-up time cannot reorder them.)
setTimeout(() => console.log('t600'), 600);
setTimeout(() => console.log('t10 a'), 10);
setTimeout(() => console.log('t300'), 300);
setTimeout(() => console.log('t10 b'), 10);
setTimeout(() => {
  console.log('t10 c');
  setTimeout(() => console.log('t10 c + 5'), 5);
}, 10);
