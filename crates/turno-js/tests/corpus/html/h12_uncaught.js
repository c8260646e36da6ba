// An uncaught exception is reported, but the page keeps running.
setTimeout(() => {
  console.log('before throw');
  throw new Error('boom');
}, 10);
setTimeout(() => console.log('still running'), 20);
