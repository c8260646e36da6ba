// An uncaught exception in a callback ends the process with exit code 1;
// later callbacks never run.
console.log('before');
setTimeout(() => {
  console.log('in timer');
  throw new Error('boom');
}, 5);
setTimeout(() => console.log('never runs'), 10);
process.nextTick(() => console.log('tick'));
