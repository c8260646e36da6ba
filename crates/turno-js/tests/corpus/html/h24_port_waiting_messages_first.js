// A port's messages already waiting when a dispatch ends run before what
// its handler posted to the other port after the first of them.
const c = new MessageChannel();
c.port1.onmessage = (e) => {
  console.log('port1 got', e.data);
  if (e.data === 'a') { c.port1.postMessage('x'); c.port1.postMessage('y'); }
};
c.port2.onmessage = (e) => {
  console.log('port2 got', e.data);
  if (e.data === 'x') c.port2.postMessage('z');
};
c.port2.postMessage('a');
c.port2.postMessage('b');
c.port2.postMessage('c');
