// process is an EventEmitter: an unhandledRejection listener keeps the
// process alive and a late catch emits rejectionHandled, an
// uncaughtException listener takes a thrown error, beforeExit comes each
// time the loop empties (what its listener queues keeps it going), and
// exit comes once, its microtasks still run but not its timers.
let rounds = 0;
process.on('beforeExit', (code) => {
  console.log('beforeExit', code, rounds);
  if (rounds++ < 2) setTimeout(() => console.log('more work', rounds), 5);
});
process.on('exit', (code) => {
  console.log('exit', code, process.exitCode);
  setTimeout(() => console.log('never'), 0);
  Promise.resolve().then(() => console.log('never microtask'));
});
process.once('exit', () => console.log('exit once'));
process.on('unhandledRejection', (reason, p) => {
  console.log('unhandledRejection', reason.message, p instanceof Promise);
  setTimeout(() => p.catch(() => console.log('caught late')), 10);
});
process.on('rejectionHandled', (p) => console.log('rejectionHandled', p instanceof Promise));
process.on('uncaughtException', (err, origin) => {
  console.log('uncaughtException', err.message, origin);
});
setTimeout(() => { throw new Error('from timer'); }, 1);
setTimeout(() => console.log('still alive after the throw'), 2);
Promise.reject(new Error('nobody handles me'));
console.log('main done', process.listenerCount('exit'));
