// A transfer list moves an ArrayBuffer: the sender's is detached at once
// (structuredClone, MessagePort and window postMessage), and a bad list
// fails with Chromium's DataCloneError before anything is cloned.
const ab = new Uint8Array([1, 2, 3]).buffer;
const copy = structuredClone({ buf: ab, n: 1 }, { transfer: [ab] });
console.log('sender', ab.byteLength, 'copy', copy.buf.byteLength, new Uint8Array(copy.buf).join(','));
try { structuredClone(ab, { transfer: [ab] }); } catch (e) { console.log(e.name, e.message); }
try { structuredClone(ab); } catch (e) { console.log(e.name, e.message); }
const ab2 = new ArrayBuffer(4);
try { structuredClone(1, { transfer: [ab2, ab2] }); } catch (e) { console.log(e.name, e.message); }
try { structuredClone(1, { transfer: [{}] }); } catch (e) { console.log(e.name, e.message); }
console.log('ab2 kept', ab2.byteLength);
const c = new MessageChannel();
const big = new ArrayBuffer(8);
c.port1.onmessage = (e) => { console.log('port got', e.data.byteLength, 'sender now', big.byteLength); c.port1.close(); };
c.port2.postMessage(big, [big]);
console.log('after port post', big.byteLength);
const win = new ArrayBuffer(16);
window.addEventListener('message', (e) => console.log('window got', e.data.b.byteLength));
window.postMessage({ b: win }, '*', [win]);
console.log('after window post', win.byteLength);
const u = new Uint16Array(4);
const clone2 = structuredClone(u, { transfer: [u.buffer] });
console.log('view', u.length, u.byteLength, clone2.length);
