// Chromium: a timer that comes due while a task runs reaches the run queue
// only after that task, behind every task posted meanwhile (a message, even
// a zero-delay timer posted later); the HTML Standard alone would run it in
// the order it became runnable (--browser spec: 'timer 1 ms' second).
const ch = new MessageChannel();
ch.port1.onmessage = (e) => console.log('message', e.data);
setTimeout(() => console.log('timer 1 ms'), 1);
setTimeout(() => console.log('timer 0 ms'), 0);
console.log('blocking');
const t0 = performance.now();
while (performance.now() - t0 < 30) {}
ch.port2.postMessage('posted after the timer was due');
setTimeout(() => console.log('timer 0 ms after'), 0);
setTimeout(() => console.log('done'), 50);
