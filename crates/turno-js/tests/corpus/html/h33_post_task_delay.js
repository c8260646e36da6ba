// Delayed scheduler.postTask tasks against timers. Everything one task
// posts with the same delay becomes runnable together: the user-blocking
// task runs first even when a setTimeout with that delay was posted
// before it, user-visible tasks and timers keep their posting order, and
// background comes last. The delays are set from a task, after the page
// has loaded.
let t0;
const at = (s) => console.log(s, '@' + Math.round(performance.now() - t0));
setTimeout(() => {
  t0 = performance.now();
  at('start');
  setTimeout(() => at('timeout 10'), 10);
  scheduler.postTask(() => at('user-blocking delay 10'), { priority: 'user-blocking', delay: 10 });
  scheduler.postTask(() => at('user-visible delay 10'), { priority: 'user-visible', delay: 10 });
  scheduler.postTask(() => at('background delay 10'), { priority: 'background', delay: 10 });
  setTimeout(() => at('timeout 10 again'), 10);
  scheduler.postTask(() => at('user-blocking delay 5'), { priority: 'user-blocking', delay: 5 });
  setTimeout(() => at('timeout 5'), 5);
  scheduler.postTask(() => at('user-visible delay 5'), { delay: 5 });
  scheduler.postTask(() => at('background delay 3'), { priority: 'background', delay: 3 });
  scheduler.postTask(() => at('fraction delay 2.7'), { delay: 2.7 });
  setTimeout(() => {
    at('timeout 20');
    scheduler.postTask(() => at('user-visible delay 0'), { delay: 0 });
    setTimeout(() => at('timeout 0'), 0);
    scheduler.postTask(() => at('user-blocking delay 0'), { priority: 'user-blocking', delay: 0 });
    setTimeout(() => at('timeout 1'), 1);
    scheduler.postTask(() => at('user-blocking delay 1'), { priority: 'user-blocking', delay: 1 });
    scheduler.postTask(() => at('background delay 1'), { priority: 'background', delay: 1 });
  }, 20);
}, 50);
