// Timers run by due time; equal due times keep the order they were set in.
setTimeout(() => console.log('t60'), 60);
setTimeout(() => console.log('t20 a'), 20);
setTimeout(() => console.log('t40'), 40);
setTimeout(() => console.log('t20 b'), 20);
setTimeout(() => {
  console.log('t20 c');
  setTimeout(() => console.log('t20 c + 10'), 10);
}, 20);
