// A fatal unhandled rejection: 'exit' listeners get code 1, and the exit
// code they set is the process's.
process.on('exit', (c) => { console.log('exit', c); process.exitCode = 9; });
process.on('beforeExit', (c) => console.log('beforeExit', c));
process.exitCode = 2;
Promise.reject(new Error('x'));