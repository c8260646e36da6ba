// structuredClone: deep copies with shared and circular references kept,
// Map, Set, Date, RegExp, typed arrays; prototypes are not; functions fail.
const shared = { n: 1 };
const src = { a: [1, 2, { b: 'c' }], m: new Map([['k', shared]]), s: new Set([shared]), d: new Date(0), r: /x+/gi, u: new Uint8Array([1, 2, 3]) };
src.self = src;
const c = structuredClone(src);
console.log(c !== src, c.self === c, c.a[2].b, c.m.get('k') === [...c.s][0], c.m.get('k') !== shared);
console.log(c.d instanceof Date, c.d.getTime(), c.r.source, c.r.flags, c.u instanceof Uint8Array, c.u.length, c.u[2]);
class Point { constructor() { this.x = 1; } get len() { return 5; } }
const p = structuredClone(new Point());
console.log(p instanceof Point, Object.getPrototypeOf(p) === Object.prototype, p.x, p.len);
try { structuredClone({ f() {} }); } catch (e) { console.log(e.name, e instanceof DOMException); }
try { structuredClone(Symbol('s')); } catch (e) { console.log(e.name); }
const e = structuredClone(new RangeError('bad'));
console.log(e instanceof RangeError, e.message);
console.log(structuredClone(undefined), structuredClone(null), structuredClone(-0), structuredClone(10n));
