// structuredClone with a transfer list detaches the sender's ArrayBuffer;
// a bad list fails with Node's errors before anything is cloned.
const ab = new Uint8Array([1, 2, 3]).buffer;
const copy = structuredClone({ buf: ab, n: 1 }, { transfer: [ab] });
console.log('sender', ab.byteLength, 'copy', copy.buf.byteLength, new Uint8Array(copy.buf).join(','));
try { structuredClone(ab); } catch (e) { console.log(e.name, e.message); }
const ab2 = new ArrayBuffer(4);
try { structuredClone(1, { transfer: [ab2, ab2] }); } catch (e) { console.log(e.name, e.message); }
try { structuredClone(1, { transfer: [{}] }); } catch (e) { console.log(e.name, e.message); }
console.log('ab2 kept', ab2.byteLength);
const u = new Uint16Array(4);
const clone2 = structuredClone(u, { transfer: [u.buffer] });
console.log('view', u.length, u.byteLength, clone2.length);
