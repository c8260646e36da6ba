// Node 20 has no global scheduler (only require('timers/promises').scheduler,
// with wait and yield): feature detection takes the fallback branch, and a
// call fails naming it.
console.log(typeof scheduler, typeof TaskController, typeof TaskSignal);
const { scheduler: timersScheduler } = require('node:timers/promises');
console.log(typeof timersScheduler.wait, typeof timersScheduler.yield, typeof timersScheduler.postTask);
const post = typeof scheduler !== 'undefined' && scheduler.postTask
  ? (f) => scheduler.postTask(f)
  : (f) => setTimeout(f, 0);
post(() => console.log('fallback ran'));
try { scheduler.postTask(() => {}); } catch (e) { console.log(e.name, e.message); }
setTimeout(() => {
  scheduler.postTask(() => console.log('never'), { priority: 'background' });
}, 1);
