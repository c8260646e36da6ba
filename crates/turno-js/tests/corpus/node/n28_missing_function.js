// A call of something that is no function names what was called, in the
// error's string and in the uncaught report (with the line and column of
// the callee's name), as Node does.
const config = { retries: 3, log: {} };
try { config.log.debug('x'); } catch (e) { console.log(`${e}`); }
try { const k = 'warn'; config.log[k]('x'); } catch (e) { console.log(String(e)); }
try { new config.Client(); } catch (e) { console.log(String(e)); }
console.log('before');
config
  .log.info('never');
