// fs.readFile's callback runs in the poll phase: inside it, nextTick
// first, then setImmediate (the check phase comes next) before
// setTimeout 0 (the next iteration's timers); a missing file fails with
// ENOENT. The program's own file is on the virtual file system.
const fs = require('fs');
fs.readFile(__filename, 'utf8', (err, data) => {
  console.log('read', err, data.split('\n')[0]);
  setTimeout(() => {
    console.log('timeout in callback');
    fs.readFile('missing.txt', 'utf8', (err) => {
      console.log(err.code, err.message, err.errno, err.syscall, err.path);
      setTimeout(() => {
        console.log('timeout after ENOENT');
        require('fs').promises.readFile(__filename, { encoding: 'utf8' }).then((t) => {
          console.log('promise read', t === data);
          setTimeout(() => console.log('timeout after the promise'), 0);
          setImmediate(() => console.log('immediate after the promise'));
        });
      }, 0);
      setImmediate(() => console.log('immediate after ENOENT'));
    });
  }, 0);
  setImmediate(() => console.log('immediate in callback'));
  process.nextTick(() => console.log('tick in callback'));
});
