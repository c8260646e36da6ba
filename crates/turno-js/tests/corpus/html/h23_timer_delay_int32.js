// A browser's timeout is a WebIDL long: ToInt32 wraps 2^32+30 to 30 and
// 2^31 to a negative number, which means 0.
const at = (name) => () => console.log(name);
setTimeout(at('2^32+30'), 2 ** 32 + 30);
setTimeout(at('2^31'), 2 ** 31);
setTimeout(at('20'), 20);
setTimeout(at('-5'), -5);
setTimeout(at('2^32+10'), 2 ** 32 + 10);
setTimeout(at('10.9'), 10.9);
setTimeout(at('"15"'), '15');
setTimeout(at('NaN'), NaN);
setTimeout(at('Infinity'), Infinity);
setTimeout(at('2^31+2^32+25'), 2 ** 31 + 2 ** 32 + 25);
setTimeout(at('-2^32+5'), -(2 ** 32) + 5);
