// Code that reads a failed call's message in a catch (directly, through
// String(e) or e.toString(), by destructuring, after a rethrow) or in a
// rejection handler sees V8's wording, which names the callee, before
// anything has shown the error.
const config = { log: {} };
try { config.log.debug('x'); } catch (e) { console.log(e.message); }
try { const k = 'warn'; config.log[k]('x'); } catch (e) { console.log('message:', e.message, e instanceof TypeError); }
try { new config.Client(); } catch (e) { console.log(e.message); console.log(String(e)); }
try { config.missing(); } catch (err) { console.log(err.toString(), err.message.includes('is not a function')); }
try { undefinedFn(); } catch (e) { console.log(e.message); }
try { config.log.debug('x'); } catch ({ message }) { console.log('destructured:', message); }
function callIt(o) { return o.run(); }
try { callIt({}); } catch (e) { console.log(e.message, JSON.stringify({ m: e.message })); }
async function later() { await null; config.log.flush(); }
later().catch((e) => console.log('async catch:', e.message));
(async () => { try { await later(); } catch (e) { console.log('awaited:', e.message); } })();
Promise.resolve().then(() => config.log.trace()).then(null, (e) => console.log('then rejected:', e.message));
new Promise(() => config.setup()).catch((e) => console.log('executor:', e.message));
try { try { config.a(); } catch (e) { throw e; } } catch (e2) { console.log('rethrown:', e2.message); }
try { config.log.debug('x'); } catch (e) { console.log(e.message); } try { config.b(); } catch (e) { console.log(e.message); }
setTimeout(() => { try { config.log.later(); } catch (e) { console.log('in a timer:', e.message); } }, 0);
// A call in the chain prints as (...), as V8's call printer does.
const store = { get() { return {}; }, f() { return undefined; } };
try { store.get().missing(); } catch (e) { console.log(e.message); }
try { store.get('a', (x) => x).missing(); } catch (e) { console.log(e.message); }
try { store.f()(); } catch (e) { console.log(e.message); }
try { store.get()['k'](); } catch (e) { console.log(e.message); }
