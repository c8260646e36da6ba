// Arrays: short ones on one line, long ones grouped in columns, holes, extras.
console.log([]);
console.log([1, 2, 3]);
console.log([1, 2, 3, 4, 5, 6, 7]);
console.log(Array.from({ length: 30 }, (_, i) => i * i));
console.log(['apple', 'banana', 'cherry', 'date', 'elderberry', 'fig', 'grape', 'honeydew']);
console.log([1, , 3, , , 6]);
const withProp = [1, 2];
withProp.extra = 'yes';
console.log(withProp);
console.log(Array.from({ length: 120 }, (_, i) => i % 10));
console.log([['nested', ['deep', ['deeper', ['deepest']]]]]);
console.log([1.5, -2, 3e21, 0.1 + 0.2]);
console.log(['a', 1, { b: 2 }, [3], null, undefined, true, 'x', 'y']);
