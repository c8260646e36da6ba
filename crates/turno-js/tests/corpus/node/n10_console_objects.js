// console.log formats objects like util.inspect.
console.log({});
console.log({ a: 1, b: 'two', c: true, d: null, e: undefined });
console.log({ nested: { deeper: { deepest: { tooDeep: 1 } } } });
console.log({ 'needs-quotes': 1, valid_id: 2, 3: 'three' });
console.log({ s: "it's", t: 'say "hi"', u: 'line\nbreak' });
class Point { constructor(x, y) { this.x = x; this.y = y; } }
console.log(new Point(1, 2));
console.log(Object.create(null));
console.log(function named() {}, () => {}, class Foo {});
console.log(new Map([['a', 1], ['b', { c: 2 }]]), new Set([1, 'x']));
console.log({ sym: Symbol('s'), [Symbol('key')]: 1, big: 12n, neg: -0, nan: NaN });
const circ = { name: 'c' };
circ.self = circ;
console.log(circ);
console.log({ longKeyNumberOne: 'aaaaaaaaaaaaaaa', longKeyNumberTwo: 'bbbbbbbbbbbbbbbb', longKeyThree: 'ccccc' });
console.log({ arr: [[1, [2, [3, [4]]]]], fn: function inner() {} });
console.log([undefined, null], [{}], [[]]);
console.log('%s is %d years', 'Bob', 42, 'extra');
