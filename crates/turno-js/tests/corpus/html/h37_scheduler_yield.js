// scheduler.yield(): the continuation runs before other tasks of the
// yielding task's priority but after higher ones; it inherits the
// priority and the signal of the postTask task it yields from (following
// a TaskController's changes, rejecting once the signal aborts), and is
// user-visible in a timer's callback. The inheritance follows the
// promise chain (the rest of an async callback after awaiting a timer),
// not the timers the task sets.
// Each section starts 20 ms after the one before it, from a timer that
// section posted, so a slow page load cannot make them overlap.
const sections = [
() => {
  scheduler.postTask(async () => {
    console.log('user-visible task');
    scheduler.postTask(() => console.log('user-blocking posted'), { priority: 'user-blocking' });
    scheduler.postTask(() => console.log('user-visible posted'));
    setTimeout(() => console.log('timeout posted'), 0);
    scheduler.postTask(() => console.log('background posted'), { priority: 'background' });
    await scheduler.yield();
    console.log('user-visible continuation');
  });
},
() => {
  console.log('--- background');
  scheduler.postTask(async () => {
    console.log('background task');
    scheduler.postTask(() => console.log('user-visible posted 2'));
    scheduler.postTask(() => console.log('background posted 2'), { priority: 'background' });
    await scheduler.yield();
    console.log('background continuation');
  }, { priority: 'background' });
},
async () => {
  console.log('--- timer callback');
  scheduler.postTask(() => console.log('user-blocking posted 3'), { priority: 'user-blocking' });
  scheduler.postTask(() => console.log('user-visible posted 3'));
  setTimeout(() => console.log('timeout posted 3'), 0);
  await scheduler.yield();
  console.log('timer continuation');
},
() => {
  console.log('--- user-blocking');
  scheduler.postTask(async () => {
    console.log('user-blocking task');
    scheduler.postTask(() => console.log('user-blocking posted 4'), { priority: 'user-blocking' });
    await scheduler.yield();
    console.log('user-blocking continuation');
  }, { priority: 'user-blocking' });
},
() => {
  console.log('--- controller');
  const c = new TaskController({ priority: 'background' });
  scheduler.postTask(async () => {
    console.log('controlled task');
    scheduler.postTask(() => console.log('user-visible posted 5'));
    await null;
    c.setPriority('user-blocking');
    scheduler.postTask(() => console.log('user-blocking posted 5'), { priority: 'user-blocking' });
    await scheduler.yield();
    console.log('continuation at the new priority');
    c.abort('stop');
    try { await scheduler.yield(); console.log('resolved'); } catch (e) { console.log('yield after abort rejected', e); }
  }, { signal: c.signal }).catch((e) => console.log('task promise rejected', e));
},
() => {
  console.log('--- abort while yielding');
  const c = new TaskController();
  scheduler.postTask(async () => {
    const p = scheduler.yield();
    c.abort('halt');
    try { await p; console.log('resolved'); } catch (e) { console.log('continuation rejected', e); }
  }, { signal: c.signal }).catch((e) => console.log('task promise rejected', e));
},
() => {
  console.log('--- after awaiting a timer');
  scheduler.postTask(async () => {
    await new Promise((r) => setTimeout(r, 1));
    scheduler.postTask(() => console.log('user-visible posted 6'));
    scheduler.postTask(() => console.log('background posted 6'), { priority: 'background' });
    await scheduler.yield();
    console.log('background continuation after the timer');
  }, { priority: 'background' });
},
() => {
  console.log('--- in a timer set by a background task');
  scheduler.postTask(() => {
    setTimeout(async () => {
      scheduler.postTask(() => console.log('user-visible posted 7'));
      scheduler.postTask(() => console.log('background posted 7'), { priority: 'background' });
      await scheduler.yield();
      console.log('user-visible continuation in the timer');
    }, 0);
  }, { priority: 'background' });
},
];
const runSection = (i) => {
  if (i === sections.length) return;
  setTimeout(() => runSection(i + 1), 20);
  sections[i]();
};
setTimeout(() => runSection(0), 0);
