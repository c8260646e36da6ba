// A call of something that is no function names what was called, in the
// uncaught report and in the error's string, as Chromium does.
console.log('start');
setTimeout(() => { const o = {}; o.missing(); }, 0);
setTimeout(() => { window.notThere('x'); }, 0);
setTimeout(() => { const lib = { v: 1 }; new lib.Thing(); }, 0);
setTimeout(() => {
  try { const k = 'p'; const o = { q: {} }; o.q[k](); } catch (e) { console.log(String(e)); }
}, 0);
setTimeout(() => console.log('still running'), 0);
