// console.log's printf-like first argument.
console.log('%s|%s|%s', 'str', 42, { a: 1 });
console.log('%d + %i = %f', 1.5, 2.7, 4.2);
console.log('%j', { json: [1, 2] });
console.log('100%% sure', 'and more');
console.log('%o and %O', [1], { b: { c: {} } });
console.log('%c styled', 'color: red');
console.log('missing %s and %d');
console.log('%s', null, undefined);
console.log(5, '%s', 'not a format');
