// Errors print as their stack (frame lines differ per runtime and are not compared).
const e = new Error('something failed');
console.log(e);
console.log(new TypeError('bad type'));
const withCode = new RangeError('out of range');
withCode.code = 'E_RANGE';
console.log(withCode);
console.log({ err: new Error('inside object') });
try {
  null.x;
} catch (err) {
  console.log(err instanceof TypeError, err.name);
}
console.log(String(new Error('as string')));
const noStack = new Error('no stack');
noStack.stack = undefined;
console.log(noStack);
console.log('message:', e.message);
