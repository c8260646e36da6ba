// An unref'd timer fires at its own time while a referenced one keeps the
// loop alive: its immediate runs before the later referenced timer.
setTimeout(() => {
  console.log('unref 10');
  setImmediate(() => console.log('immediate queued by the unref timer'));
}, 10).unref();
setTimeout(() => console.log('ref 200'), 200);
const lonely = setTimeout(() => console.log('never: nothing keeps the loop alive'), 400);
lonely.unref();
console.log('hasRef', lonely.hasRef());
