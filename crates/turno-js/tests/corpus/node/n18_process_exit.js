// process.exit ends the run at once with the given code.
setTimeout(() => console.log('never'), 10);
process.nextTick(() => {
  console.log('exiting');
  process.exit(3);
});
Promise.resolve().then(() => console.log('never either'));
console.log('main');
