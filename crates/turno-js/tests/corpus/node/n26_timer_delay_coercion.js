// Node coerces a delay outside 1..2^31-1 ms to 1 ms (with a warning on
// stderr) and keeps fractions.
const at = (name) => () => console.log(name);
setTimeout(at('2^32+30'), 2 ** 32 + 30);
setTimeout(at('2^31'), 2 ** 31);
setTimeout(at('20'), 20);
setTimeout(at('-5'), -5);
setTimeout(at('10.9'), 10.9);
setTimeout(at('"15"'), '15');
setTimeout(at('NaN'), NaN);
setTimeout(at('Infinity'), Infinity);
setTimeout(at('-2^32+5'), -(2 ** 32) + 5);
