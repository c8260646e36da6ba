// TaskController: setPriority moves the signal's queued tasks to the new
// priority (keeping their place among the tasks of that priority) and
// fires prioritychange at once; a nested change is refused; a task given
// its own priority does not follow the signal's; TaskSignal.any follows a
// priority source.
// Each section starts 20 ms after the one before it, from a timer that
// section posted, so a slow page load cannot make them overlap.
const sections = [
() => {
  const c = new TaskController({ priority: 'background' });
  console.log('signal', c.signal.priority, c.signal instanceof AbortSignal, c.signal instanceof TaskSignal);
  c.signal.addEventListener('prioritychange', (e) => console.log('prioritychange', e.previousPriority, '->', c.signal.priority, e instanceof TaskPriorityChangeEvent));
  c.signal.onprioritychange = (e) => console.log('onprioritychange', e.previousPriority);
  scheduler.postTask(() => console.log('controlled 1'), { signal: c.signal });
  scheduler.postTask(() => console.log('user-visible 1'));
  scheduler.postTask(() => console.log('controlled 2'), { signal: c.signal });
  scheduler.postTask(() => console.log('own priority user-blocking'), { signal: c.signal, priority: 'user-blocking' });
  scheduler.postTask(() => console.log('user-visible 2'));
  scheduler.postTask(() => console.log('own priority background'), { signal: c.signal, priority: 'background' });
  c.setPriority('user-blocking');
  console.log('after setPriority', c.signal.priority);
  c.setPriority('user-blocking');
  console.log('same priority: no event');
  try { c.setPriority('nope'); } catch (e) { console.log(e.name + ': ' + e.message); }
  c.signal.addEventListener('prioritychange', () => {
    try { c.setPriority('background'); } catch (e) { console.log('nested', e.name + ': ' + e.message); }
  }, { once: true });
  c.setPriority('user-visible');
  console.log('now', c.signal.priority);
},
() => {
  console.log('--- TaskSignal.any');
  const c = new TaskController({ priority: 'user-visible' });
  const follows = TaskSignal.any([], { priority: c.signal });
  const fixed = TaskSignal.any([c.signal], { priority: 'background' });
  const plain = TaskSignal.any([c.signal]);
  follows.onprioritychange = (e) => console.log('dependent prioritychange', e.previousPriority, '->', follows.priority);
  console.log('priorities', follows.priority, fixed.priority, plain.priority);
  scheduler.postTask(() => console.log('on fixed'), { signal: fixed });
  scheduler.postTask(() => console.log('on follows'), { signal: follows });
  scheduler.postTask(() => console.log('user-visible'));
  c.setPriority('user-blocking');
  console.log('after', follows.priority, fixed.priority, plain.priority);
  c.abort();
  console.log('aborted', follows.aborted, fixed.aborted, plain.aborted);
  scheduler.postTask(() => console.log('never'), { signal: fixed }).catch((e) => console.log('fixed rejected', e.name));
  try { new TaskController({ priority: 'urgent' }); } catch (e) { console.log(e.name + ': ' + e.message); }
  try { new TaskController(5); } catch (e) { console.log(e.name + ': ' + e.message); }
  try { new TaskPriorityChangeEvent('prioritychange', {}); } catch (e) { console.log(e.name + ': ' + e.message); }
  try { new TaskSignal(); } catch (e) { console.log(e.name + ': ' + e.message); }
  console.log(String(scheduler), Object.prototype.toString.call(c.signal), Object.prototype.toString.call(c));
},
];
const runSection = (i) => {
  if (i === sections.length) return;
  setTimeout(() => runSection(i + 1), 20);
  sections[i]();
};
setTimeout(() => runSection(0), 0);
