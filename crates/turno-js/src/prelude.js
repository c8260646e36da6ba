// The host prelude of turno-js: the JavaScript half of the host.
//
// It is evaluated once per event loop, before the loop's script, as a
// function expression and called with `h`, an object of native (Rust)
// functions, `model` ("node" or "html"), `scope` ("main" for the program's
// own loop, "worker" for a dedicated worker's), the loop's id, its parent
// loop's id and (workers) the name given to `new Worker`, and the html
// model's browser profile ("chromium" or "spec"), and whether to keep the
// engine's built-ins that the modelled runtime lacks. Everything it defines is reached through the globals it
// installs (console, timers, process, MessageChannel, ...); `h` itself is never
// made global. Scheduling decisions (which queue, which time) are all made on
// the Rust side; this file only adapts the web/Node API shapes to them and
// implements Node's `util.inspect` formatting for console.log.
(function (h, model, scope, loopId, parentLoop, workerName, browser, allBuiltins) {
  'use strict';

  // ---------------------------------------------------------------------
  // util.inspect, after Node's lib/internal/util/inspect.js (defaults:
  // depth 2, compact 3, breakLength 80, maxArrayLength 100, no colours).
  // ---------------------------------------------------------------------
  const kObjectType = 0;
  const kArrayType = 1;
  const kArrayExtrasType = 2;
  const keyStrRegExp = /^[a-zA-Z_][a-zA-Z_0-9]*$/;
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

  function strEscape(str) {
    let quote = "'";
    if (str.includes("'")) {
      if (!str.includes('"')) quote = '"';
      else if (!str.includes('`') && !str.includes('${')) quote = '`';
    }
    let out = '';
    for (const ch of str) {
      const c = ch.codePointAt(0);
      if (ch === quote || ch === '\\') out += '\\' + ch;
      else if (ch === '\n') out += '\\n';
      else if (ch === '\t') out += '\\t';
      else if (ch === '\r') out += '\\r';
      else if (ch === '\b') out += '\\b';
      else if (ch === '\f') out += '\\f';
      else if (c < 0x20 || c === 0x7f) out += '\\x' + c.toString(16).toUpperCase().padStart(2, '0');
      else out += ch;
    }
    return quote + out + quote;
  }

  function formatNumber(n) {
    return Object.is(n, -0) ? '-0' : String(n);
  }

  function formatPrimitive(value) {
    switch (typeof value) {
      case 'string': return strEscape(value);
      case 'number': return formatNumber(value);
      case 'bigint': return `${value}n`;
      case 'boolean': return String(value);
      case 'undefined': return 'undefined';
      case 'symbol': return value.toString();
      default: return String(value);
    }
  }

  function getCtorName(obj) {
    let o = obj;
    while (o !== null && o !== undefined) {
      const d = Object.getOwnPropertyDescriptor(o, 'constructor');
      if (d !== undefined && typeof d.value === 'function' && d.value.name !== '') {
        return d.value.name;
      }
      o = Object.getPrototypeOf(o);
    }
    return null;
  }

  function getPrefix(constructor, tag, fallback, size = '') {
    if (constructor === null) {
      if (tag !== '' && fallback !== tag) return `[${fallback}${size}: null prototype] [${tag}] `;
      return `[${fallback}${size}: null prototype] `;
    }
    if (tag !== '' && constructor !== tag) return `${constructor}${size} [${tag}] `;
    return `${constructor}${size} `;
  }

  function isIndex(key) {
    if (typeof key !== 'string' || key === '') return false;
    const n = Number(key);
    return Number.isInteger(n) && n >= 0 && n < 4294967295 && String(n) === key;
  }

  function getKeys(value, nonIndex, showHidden) {
    const keys = [];
    const names = showHidden ? Object.getOwnPropertyNames(value) : Object.keys(value);
    for (const k of names) {
      if (nonIndex && isIndex(k)) continue;
      keys.push(k);
    }
    for (const s of Object.getOwnPropertySymbols(value)) {
      const d = Object.getOwnPropertyDescriptor(value, s);
      if (d && (d.enumerable || showHidden)) keys.push(s);
    }
    return keys;
  }

  function getFunctionBase(value, constructor, tag) {
    // boa does not keep source text, so a class is recognised by its
    // non-writable `prototype` (ordinary functions have a writable one),
    // excluding the built-in constructors, which share that trait.
    const pd = Object.getOwnPropertyDescriptor(value, 'prototype');
    const isBuiltin = typeof value.name === 'string' && globalThis[value.name] === value;
    if (pd && pd.writable === false && !isBuiltin) {
      let base = `[class ${value.name || '(anonymous)'}`;
      const sup = Object.getPrototypeOf(value);
      if (sup && sup !== Function.prototype && sup.name) base += ` extends ${sup.name}`;
      return base + ']';
    }
    let type = 'Function';
    const protoCtor = getCtorName(Object.getPrototypeOf(value) || {});
    if (protoCtor === 'AsyncFunction') type = 'AsyncFunction';
    else if (protoCtor === 'GeneratorFunction') type = 'GeneratorFunction';
    else if (protoCtor === 'AsyncGeneratorFunction') type = 'AsyncGeneratorFunction';
    let base = `[${type}`;
    if (constructor === null) base += ' (null prototype)';
    if (value.name === '' || typeof value.name !== 'string') base += ' (anonymous)';
    else base += `: ${value.name}`;
    base += ']';
    if (constructor !== type && constructor !== null && constructor !== 'Function') base += ` ${constructor}`;
    if (tag !== '' && constructor !== tag) base += ` [${tag}]`;
    return base;
  }

  function errorToString(err) {
    let name = err.name;
    name = name === undefined ? 'Error' : String(name);
    let msg = err.message;
    msg = msg === undefined ? '' : String(msg);
    if (name === '') return msg;
    if (msg === '') return name;
    return `${name}: ${msg}`;
  }

  // boa's TypeError for a call of something that is no function says
  // `not a callable function` at the call's `(`; Node and Chromium name
  // the callee (`o.foo is not a function`) and point at its name. The
  // message is rewritten when the error is first shown (inspected,
  // reported uncaught, turned into a string), from the source text at the
  // error's first frame in the program; `calleeColumn` keeps the frame's
  // corrected position.
  const namedCallees = new WeakSet();
  const calleeColumn = new WeakMap();
  function nameCallee(err) {
    if (err === null || typeof err !== 'object' || namedCallees.has(err)) return;
    if (err instanceof ReferenceError) { placeReference(err); return; }
    const own = Object.getOwnPropertyDescriptor(err, 'message');
    if (!own || !('value' in own) || !(err instanceof TypeError)) return;
    const isNew = own.value === 'not a constructor';
    if (own.value !== 'not a callable function' && !isNew) return;
    namedCallees.add(err);
    let frames;
    try { frames = err.stack; } catch (_) { frames = undefined; }
    const file = h.fileName();
    let line = 0, col = 0, frame = null;
    for (const l of typeof frames === 'string' ? frames.split('\n') : []) {
      const m = /\((.*):(\d+):(\d+)\)\s*$/.exec(l) || /at (.*):(\d+):(\d+)\s*$/.exec(l);
      if (m && m[1] === file) { line = Number(m[2]); col = Number(m[3]); frame = l; break; }
    }
    const r = h.callError(line, col, isNew);
    err.message = r[0];
    if (frame !== null && r[1] !== col) {
      calleeColumn.set(err, [frame, frame.replace(`:${line}:${col}`, `:${line}:${r[1]}`)]);
    }
  }
  // boa's frame for `ReferenceError: x is not defined` holds a stale
  // position (the function's start or the previous call), or there is no
  // frame at all; the host finds the name in the source from there on.
  function placeReference(err) {
    namedCallees.add(err);
    const own = Object.getOwnPropertyDescriptor(err, 'message');
    const m = own && 'value' in own ? /^(\S+) is not defined$/.exec(String(own.value)) : null;
    if (!m) return;
    let frames;
    try { frames = err.stack; } catch (_) { frames = undefined; }
    const file = h.fileName();
    let line = 0, col = 0, frame = null;
    for (const l of typeof frames === 'string' ? frames.split('\n') : []) {
      const f = /\((.*):(\d+|\?):(\d+|\?)\)\s*$/.exec(l) || /at (.*):(\d+|\?):(\d+|\?)\s*$/.exec(l);
      if (f && f[1] === file) { line = Number(f[2]) || 0; col = Number(f[3]) || 0; frame = [l, `:${f[2]}:${f[3]}`]; break; }
    }
    const r = h.nameAt(line, col, m[1]);
    if (r === null) return;
    if (frame !== null) {
      calleeColumn.set(err, [frame[0], frame[0].replace(frame[1], `:${r[0]}:${r[1]}`)]);
    } else if (typeof frames !== 'string' || frames.trim() === '') {
      calleeColumn.set(err, ['', `    at <main> (${file}:${r[0]}:${r[1]})`]);
    }
  }
  {
    const errorToStringImpl = Error.prototype.toString;
    Object.defineProperty(Error.prototype, 'toString', {
      configurable: true, writable: true, enumerable: false,
      value: { toString() { nameCallee(this); return errorToStringImpl.call(this); } }.toString,
    });
  }
  // Code that reads `e.message` in a `catch`, or in a rejection handler,
  // reads it before anything shows the error: the host inserts a call of
  // `__turnoCatch` at the start of each `catch` block of the program's
  // script (`host/catches.rs`), and a rejection handler gets the error
  // through the same naming. The rewritten script's positions are mapped
  // back to the program's text in every stack string.
  def('__turnoCatch', function __turnoCatch(e) { nameCallee(e); return e; });
  {
    const origThen = Promise.prototype.then;
    Object.defineProperty(Promise.prototype, 'then', {
      configurable: true, writable: true, enumerable: false,
      value: {
        then(onFulfilled, onRejected) {
          if (typeof onRejected === 'function') {
            const handler = onRejected;
            onRejected = function (reason) { nameCallee(reason); return handler(reason); };
            Object.defineProperty(onRejected, 'name', { value: handler.name });
          }
          return origThen.call(this, onFulfilled, onRejected);
        },
      }.then,
    });
    const stack = Object.getOwnPropertyDescriptor(Error.prototype, 'stack');
    if (stack && typeof stack.get === 'function') {
      const get = stack.get;
      Object.defineProperty(Error.prototype, 'stack', {
        configurable: stack.configurable, enumerable: stack.enumerable, set: stack.set,
        get: { get stack() { const s = get.call(this); return typeof s === 'string' ? h.originalPositions(s) : s; } }.__lookupGetter__('stack'),
      });
    }
  }

  // Node's err.stack is "Name: message\n    at frame...". boa's `stack`
  // accessor yields only the frames, so the header is added here.
  function getStackString(err) {
    nameCallee(err);
    const own = Object.getOwnPropertyDescriptor(err, 'stack');
    if (own && 'value' in own) {
      return own.value ? String(own.value) : errorToString(err);
    }
    let frames;
    try { frames = err.stack; } catch (_) { frames = undefined; }
    const header = errorToString(err);
    const made = calleeColumn.get(err);
    if (made && made[0] === '') frames = made[1];
    if (typeof frames === 'string' && frames.trim() !== '') {
      const fix = calleeColumn.get(err);
      if (fix) frames = frames.replace(fix[0], fix[1]);
      return `${header}\n${frames.replace(/\s+$/, '')}`;
    }
    return header;
  }

  function formatError(err, ctx, keys) {
    let stack = getStackString(err);
    // V8 keeps `stack` non-enumerable even when assigned; boa's setter
    // creates an enumerable property. Node never lists it.
    const si = keys.indexOf('stack');
    if (si !== -1) keys.splice(si, 1);
    // Node hides name/message keys that the stack already shows.
    for (const name of ['name', 'message']) {
      const idx = keys.indexOf(name);
      if (idx !== -1 && stack.includes(String(err[name]))) keys.splice(idx, 1);
    }
    if (stack.indexOf('\n    at') === -1) stack = `[${stack}]`;
    if (ctx.indentationLvl !== 0) {
      const indentation = ' '.repeat(ctx.indentationLvl);
      stack = stack.split('\n').join(`\n${indentation}`);
    }
    return stack;
  }

  function formatValue(ctx, value, recurseTimes) {
    if (typeof value !== 'object' && typeof value !== 'function') {
      return formatPrimitive(value);
    }
    if (value === null) return 'null';
    if (ctx.seen.includes(value)) {
      let index = 1;
      if (ctx.circular === undefined) {
        ctx.circular = new Map();
        ctx.circular.set(value, index);
      } else {
        index = ctx.circular.get(value);
        if (index === undefined) {
          index = ctx.circular.size + 1;
          ctx.circular.set(value, index);
        }
      }
      return `[Circular *${index}]`;
    }
    try {
      Reflect.getPrototypeOf(value);
    } catch (e) {
      // boa: "Proxy object has empty handler and target" for a revoked proxy.
      if (e instanceof TypeError && /handler|revoked/i.test(String(e.message))) return '<Revoked Proxy>';
      throw e;
    }
    return formatRaw(ctx, value, recurseTimes);
  }

  function formatRaw(ctx, value, recurseTimes) {
    const constructor = getCtorName(value);
    let tag = '';
    try {
      const t = value[Symbol.toStringTag];
      if (typeof t === 'string' && t !== '' && t !== constructor) tag = t;
    } catch (_) { /* ignore */ }
    let keys;
    let base = '';
    let formatter = () => [];
    let braces;
    let extrasType = kObjectType;

    if (Array.isArray(value)) {
      keys = getKeys(value, true, ctx.showHidden);
      const prefix = (constructor !== 'Array' || tag !== '')
        ? getPrefix(constructor, tag, 'Array', `(${value.length})`) : '';
      braces = [`${prefix}[`, ']'];
      if (value.length === 0 && keys.length === 0) return `${braces[0]}]`;
      extrasType = kArrayExtrasType;
      formatter = formatArray;
    } else if (value instanceof Set) {
      keys = getKeys(value, false, ctx.showHidden);
      const prefix = getPrefix(constructor, tag, 'Set', `(${value.size})`);
      formatter = formatSet;
      if (value.size === 0 && keys.length === 0) return `${prefix}{}`;
      braces = [`${prefix}{`, '}'];
    } else if (value instanceof Map) {
      keys = getKeys(value, false, ctx.showHidden);
      const prefix = getPrefix(constructor, tag, 'Map', `(${value.size})`);
      formatter = formatMap;
      if (value.size === 0 && keys.length === 0) return `${prefix}{}`;
      braces = [`${prefix}{`, '}'];
    } else if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
      keys = getKeys(value, true, ctx.showHidden);
      const fallback = constructor || 'TypedArray';
      braces = [`${getPrefix(constructor, tag, fallback, `(${value.length})`)}[`, ']'];
      if (value.length === 0 && keys.length === 0) return `${braces[0]}]`;
      extrasType = kArrayExtrasType;
      formatter = formatTypedArray;
    } else if (value instanceof ArrayBuffer) {
      keys = getKeys(value, false, ctx.showHidden);
      braces = [`${getPrefix(constructor, tag, 'ArrayBuffer')}{`, '}'];
      formatter = formatArrayBuffer;
    } else {
      keys = getKeys(value, false, ctx.showHidden);
      braces = ['{', '}'];
      const boxed = boxedPrimitive(value);
      if (boxed !== undefined) {
        if (typeof boxed[1] === 'string') {
          keys = keys.filter((k) => !isIndex(k) && k !== 'length');
        }
        base = `[${boxed[0]}`;
        if (constructor !== boxed[0]) {
          base += constructor === null ? ' (null prototype)' : ` (${constructor})`;
        }
        base += `: ${formatPrimitive(boxed[1])}]`;
        if (tag !== '' && tag !== constructor) base += ` [${tag}]`;
        if (keys.length === 0) return base;
      } else if (typeof value === 'function') {
        base = getFunctionBase(value, constructor, tag);
        if (keys.length === 0) return base;
      } else if (value instanceof Error) {
        base = formatError(value, ctx, keys);
        if (keys.length === 0) return base;
      } else if (value instanceof RegExp) {
        base = RegExp.prototype.toString.call(value);
        const prefix = getPrefix(constructor, tag, 'RegExp');
        if (prefix !== 'RegExp ') base = `${prefix}${base}`;
        if (keys.length === 0) return base;
      } else if (value instanceof Date) {
        base = Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
        if (keys.length === 0) return base;
      } else if (value instanceof Promise) {
        braces[0] = `${getPrefix(constructor, tag, 'Promise')}{`;
        formatter = formatPromise;
      } else if (value instanceof WeakMap || value instanceof WeakSet) {
        return `${getPrefix(constructor, tag, value instanceof WeakMap ? 'WeakMap' : 'WeakSet')}{ <items unknown> }`;
      } else {
        if (constructor === 'Object') {
          if (tag !== '') braces[0] = `${getPrefix(constructor, tag, 'Object')}{`;
        } else {
          braces[0] = `${getPrefix(constructor, tag, 'Object')}{`;
        }
        if (keys.length === 0) return `${braces[0]}}`;
      }
    }

    if (recurseTimes > ctx.depth) {
      return `[${constructor || tag || 'Object'}]`;
    }
    recurseTimes += 1;
    ctx.seen.push(value);
    ctx.currentDepth = recurseTimes;
    const output = formatter(ctx, value, recurseTimes);
    for (let i = 0; i < keys.length; i++) {
      output.push(formatProperty(ctx, value, recurseTimes, keys[i], extrasType));
    }
    ctx.seen.pop();
    if (ctx.circular !== undefined) {
      const index = ctx.circular.get(value);
      if (index !== undefined) {
        const reference = `<ref *${index}>`;
        base = base === '' ? reference : `${reference} ${base}`;
      }
    }
    return reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value);
  }

  function formatArray(ctx, value, recurseTimes) {
    const len = value.length;
    const outputLength = Math.min(100, len);
    const remaining = len - outputLength;
    const output = [];
    for (let i = 0; i < outputLength; i++) {
      if (!hasOwn(value, i)) {
        let j = i;
        while (j < len && !hasOwn(value, j)) j++;
        const holes = j - i;
        output.push(`<${holes} empty item${holes > 1 ? 's' : ''}>`);
        i = j - 1;
        continue;
      }
      output.push(formatProperty(ctx, value, recurseTimes, i, kArrayType));
    }
    if (remaining > 0) output.push(`... ${remaining} more item${remaining > 1 ? 's' : ''}`);
    return output;
  }

  function boxedPrimitive(value) {
    const kinds = [
      ['Number', Number.prototype.valueOf],
      ['String', String.prototype.valueOf],
      ['Boolean', Boolean.prototype.valueOf],
      ['BigInt', BigInt.prototype.valueOf],
      ['Symbol', Symbol.prototype.valueOf],
    ];
    for (const [name, valueOf] of kinds) {
      try {
        return [name, valueOf.call(value)];
      } catch (_) { /* not this kind */ }
    }
    return undefined;
  }

  function formatTypedArray(ctx, value, recurseTimes) {
    const len = value.length;
    const outputLength = Math.min(ctx.maxArrayLength, len);
    const output = [];
    for (let i = 0; i < outputLength; i++) {
      output.push(typeof value[i] === 'bigint' ? `${value[i]}n` : formatNumber(value[i]));
    }
    if (len > outputLength) {
      const r = len - outputLength;
      output.push(`... ${r} more item${r > 1 ? 's' : ''}`);
    }
    return output;
  }

  function formatArrayBuffer(ctx, value) {
    const bytes = new Uint8Array(value);
    const shown = Array.from(bytes.slice(0, ctx.maxArrayLength), (b) => b.toString(16).padStart(2, '0'));
    let str = shown.join(' ');
    const remaining = bytes.length - ctx.maxArrayLength;
    if (remaining > 0) str += ` ... ${remaining} more byte${remaining > 1 ? 's' : ''}`;
    return [`[Uint8Contents]: <${str}>`, `byteLength: ${formatNumber(value.byteLength)}`];
  }

  function formatSet(ctx, value, recurseTimes) {
    const output = [];
    ctx.indentationLvl += 2;
    for (const v of value) output.push(formatValue(ctx, v, recurseTimes));
    ctx.indentationLvl -= 2;
    return output;
  }

  function formatMap(ctx, value, recurseTimes) {
    const output = [];
    ctx.indentationLvl += 2;
    for (const [k, v] of value) {
      output.push(`${formatValue(ctx, k, recurseTimes)} => ${formatValue(ctx, v, recurseTimes)}`);
    }
    ctx.indentationLvl -= 2;
    return output;
  }

  function formatPromise(ctx, value, recurseTimes) {
    const st = h.promiseState(value);
    if (st[0] === 'pending') return ['<pending>'];
    ctx.indentationLvl += 2;
    const str = formatValue(ctx, st[1], recurseTimes);
    ctx.indentationLvl -= 2;
    return [st[0] === 'rejected' ? `<rejected> ${str}` : str];
  }

  function formatProperty(ctx, value, recurseTimes, key, type) {
    let str;
    const desc = Object.getOwnPropertyDescriptor(value, key) || { value: value[key], enumerable: true };
    if (desc.value !== undefined) {
      ctx.indentationLvl += 2;
      str = formatValue(ctx, desc.value, recurseTimes);
      ctx.indentationLvl -= 2;
    } else if (desc.get !== undefined) {
      str = desc.set !== undefined ? '[Getter/Setter]' : '[Getter]';
    } else if (desc.set !== undefined) {
      str = '[Setter]';
    } else {
      str = 'undefined';
    }
    if (type === kArrayType) return str;
    let name;
    if (typeof key === 'symbol') name = `[${key.toString()}]`;
    else if (key === '__proto__') name = "['__proto__']";
    else if (desc.enumerable === false) name = `[${key}]`;
    else if (keyStrRegExp.test(key)) name = key;
    else name = strEscape(key);
    return `${name}: ${str}`;
  }

  function groupArrayElements(ctx, output, value) {
    let totalLength = 0;
    let maxLength = 0;
    let i = 0;
    let outputLength = output.length;
    if (ctx.maxArrayLength < output.length) outputLength--;
    const separatorSpace = 2;
    const dataLen = new Array(outputLength);
    for (; i < outputLength; i++) {
      const len = output[i].length;
      dataLen[i] = len;
      totalLength += len + separatorSpace;
      if (maxLength < len) maxLength = len;
    }
    const actualMax = maxLength + separatorSpace;
    if (actualMax * 3 + ctx.indentationLvl < ctx.breakLength &&
        (totalLength / actualMax > 5 || maxLength <= 6)) {
      const approxCharHeights = 2.5;
      const averageBias = Math.sqrt(actualMax - totalLength / output.length);
      const biasedMax = Math.max(actualMax - 3 - averageBias, 1);
      const columns = Math.min(
        Math.round(Math.sqrt(approxCharHeights * biasedMax * outputLength) / biasedMax),
        Math.floor((ctx.breakLength - ctx.indentationLvl) / actualMax),
        ctx.compact * 4,
        15,
      );
      if (columns <= 1) return output;
      const tmp = [];
      const maxLineLength = [];
      for (let c = 0; c < columns; c++) {
        let lineLength = 0;
        for (let j = c; j < output.length; j += columns) {
          if (dataLen[j] > lineLength) lineLength = dataLen[j];
        }
        maxLineLength.push(lineLength + separatorSpace);
      }
      let padStart = true;
      if (value !== undefined) {
        for (let k = 0; k < output.length; k++) {
          if (typeof value[k] !== 'number' && typeof value[k] !== 'bigint') {
            padStart = false;
            break;
          }
        }
      }
      for (let k = 0; k < outputLength; k += columns) {
        const max = Math.min(k + columns, outputLength);
        let str = '';
        let j = k;
        for (; j < max - 1; j++) {
          const padding = maxLineLength[j - k];
          str += padStart ? `${output[j]}, `.padStart(padding, ' ') : `${output[j]}, `.padEnd(padding, ' ');
        }
        if (padStart) {
          const padding = maxLineLength[j - k] - separatorSpace;
          str += output[j].padStart(padding, ' ');
        } else {
          str += output[j];
        }
        tmp.push(str);
      }
      if (ctx.maxArrayLength < output.length) tmp.push(output[outputLength]);
      output = tmp;
    }
    return output;
  }

  function isBelowBreakLength(ctx, output, start, base) {
    let totalLength = output.length + start;
    if (totalLength + output.length > ctx.breakLength) return false;
    for (let i = 0; i < output.length; i++) {
      totalLength += output[i].length;
      if (totalLength > ctx.breakLength) return false;
    }
    return base === '' || !base.includes('\n');
  }

  function reduceToSingleString(ctx, output, base, braces, extrasType, recurseTimes, value) {
    const entries = output.length;
    if (extrasType === kArrayExtrasType && entries > 6) {
      output = groupArrayElements(ctx, output, value);
    }
    if (ctx.currentDepth - recurseTimes < ctx.compact && entries === output.length) {
      const start = output.length + ctx.indentationLvl + braces[0].length + base.length + 10;
      if (isBelowBreakLength(ctx, output, start, base)) {
        const joined = output.join(', ');
        if (!joined.includes('\n')) {
          return `${base ? `${base} ` : ''}${braces[0]} ${joined} ${braces[1]}`;
        }
      }
    }
    const indentation = `\n${' '.repeat(ctx.indentationLvl)}`;
    return `${base ? `${base} ` : ''}${braces[0]}${indentation}  ${output.join(`,${indentation}  `)}${indentation}${braces[1]}`;
  }

  function inspect(value, opts) {
    const ctx = {
      seen: [],
      circular: undefined,
      indentationLvl: 0,
      currentDepth: 0,
      depth: 2,
      compact: 3,
      breakLength: 80,
      maxArrayLength: 100,
      showHidden: false,
    };
    if (opts && opts.showHidden) ctx.showHidden = true;
    if (opts && typeof opts.depth === 'number') ctx.depth = opts.depth;
    if (opts && opts.depth === null) ctx.depth = Infinity;
    return formatValue(ctx, value, 0);
  }

  function tryStringify(v) {
    try { return JSON.stringify(v); } catch (e) { return '[Circular]'; }
  }

  function format(...args) {
    const first = args[0];
    let a = 0;
    let str = '';
    let join = '';
    if (typeof first === 'string') {
      if (args.length === 1) return first;
      let tempStr;
      let lastPos = 0;
      for (let i = 0; i < first.length - 1; i++) {
        if (first.charCodeAt(i) === 37) {
          const nextChar = first.charCodeAt(++i);
          if (a + 1 !== args.length) {
            switch (nextChar) {
              case 115: {
                const arg = args[++a];
                if (typeof arg === 'number') tempStr = formatNumber(arg);
                else if (typeof arg === 'bigint') tempStr = `${arg}n`;
                else if (typeof arg !== 'object' || arg === null) tempStr = String(arg);
                else tempStr = inspect(arg, { depth: 0 });
                break;
              }
              case 106: tempStr = tryStringify(args[++a]); break;
              case 100: {
                const n = args[++a];
                if (typeof n === 'bigint') tempStr = `${n}n`;
                else if (typeof n === 'symbol') tempStr = 'NaN';
                else tempStr = formatNumber(Number(n));
                break;
              }
              case 79: tempStr = inspect(args[++a]); break;
              case 111: tempStr = inspect(args[++a], { depth: 4, showHidden: true }); break;
              case 105: {
                const n = args[++a];
                if (typeof n === 'bigint') tempStr = `${n}n`;
                else if (typeof n === 'symbol') tempStr = 'NaN';
                else tempStr = formatNumber(Number.parseInt(n));
                break;
              }
              case 102: {
                const n = args[++a];
                tempStr = typeof n === 'symbol' ? 'NaN' : formatNumber(Number.parseFloat(n));
                break;
              }
              case 99: a += 1; tempStr = ''; break;
              case 37: str += first.slice(lastPos, i); lastPos = i + 1; continue;
              default: continue;
            }
            if (lastPos !== i - 1) str += first.slice(lastPos, i - 1);
            str += tempStr;
            lastPos = i + 1;
          } else if (nextChar === 37) {
            str += first.slice(lastPos, i);
            lastPos = i + 1;
          }
        }
      }
      if (lastPos !== 0) {
        a++;
        join = ' ';
        if (lastPos < first.length) str += first.slice(lastPos);
      }
    }
    while (a < args.length) {
      const value = args[a];
      str += join;
      str += typeof value !== 'string' ? inspect(value) : value;
      join = ' ';
      a++;
    }
    return str;
  }

  // ---------------------------------------------------------------------
  // console
  // ---------------------------------------------------------------------
  const out = (...args) => { h.write(1, format(...args) + '\n'); };
  const err = (...args) => { h.write(2, format(...args) + '\n'); };
  const consoleObj = {
    log: out, info: out, debug: out, error: err, warn: err, trace: err,
    dir: (v) => { h.write(1, inspect(v) + '\n'); },
  };
  Object.defineProperty(globalThis, 'console', { value: consoleObj, writable: true, configurable: true, enumerable: false });

  function def(name, value) {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }
  function checkCallback(cb) {
    if (typeof cb !== 'function') {
      const e = new TypeError(`The "callback" argument must be of type function. Received ${inspect(cb)}`);
      e.code = 'ERR_INVALID_ARG_TYPE';
      throw e;
    }
  }

  // The cost model moves the clock while code runs; boa's Date reads the
  // clock as the host last synced it, so Date.now() and new Date() sync first.
  {
    const OrigDate = Date;
    const origNow = OrigDate.now;
    const DateSynced = new Proxy(OrigDate, {
      construct(t, args, nt) { h.now(); return Reflect.construct(t, args, nt); },
      apply(t, self, args) { h.now(); return Reflect.apply(t, self, args); },
    });
    Object.defineProperty(OrigDate, 'now', { value: function now() { h.now(); return origNow(); }, writable: true, configurable: true });
    def('Date', DateSynced);
  }

  let deliverInput = null;
  let deliverMessage = null;
  let finishParsing = null;
  let processEvent = null;
  def('queueMicrotask', function queueMicrotask(cb) { checkCallback(cb); h.queueMicrotask(cb); });

  // ---------------------------------------------------------------------
  // DOM events (the DOM Standard's EventTarget, Event, CustomEvent,
  // AbortController / AbortSignal), in both models (Node 20 has them as
  // globals). Listeners run synchronously inside dispatch, in registration
  // order. A listener is called through the host (`h.invokeListener`): the
  // host records its frame, reports what it throws ("report the exception"
  // in html; Node rethrows it on the next tick, which ends the process), and,
  // when the host itself started the dispatch (a message, an input event, a
  // signal's timeout) in the html model, performs a microtask checkpoint
  // after it, because the JavaScript stack is then empty. A dispatch from
  // script (`dispatchEvent`) gets no checkpoint between listeners.
  // ---------------------------------------------------------------------
  const listenersOf = new WeakMap();
  const parentOf = new WeakMap();
  const eventState = new WeakMap();
  const NONE = 0, CAPTURING_PHASE = 1, AT_TARGET = 2, BUBBLING_PHASE = 3;

  class DOMExceptionImpl extends Error {
    constructor(message = '', name = 'Error') {
      super(message);
      const codes = { IndexSizeError: 1, HierarchyRequestError: 3, InvalidStateError: 11, SyntaxError: 12, NotSupportedError: 9, AbortError: 20, TimeoutError: 23, DataCloneError: 25 };
      Object.defineProperty(this, 'name', { value: String(name), configurable: true, writable: true, enumerable: false });
      Object.defineProperty(this, 'code', { value: codes[name] || 0, configurable: true, writable: true, enumerable: false });
    }
  }
  Object.defineProperty(DOMExceptionImpl, 'name', { value: 'DOMException' });
  const DOMExceptionCtor = typeof globalThis.DOMException === 'function' ? globalThis.DOMException : DOMExceptionImpl;

  function evState(ev) {
    const s = eventState.get(ev);
    if (s === undefined) throw new TypeError('Illegal invocation');
    return s;
  }

  class Event {
    constructor(type, init) {
      if (arguments.length === 0) {
        throw new TypeError(model === 'node' ? 'The "type" argument must be specified' : "Failed to construct 'Event': 1 argument required, but only 0 present.");
      }
      const i = init || {};
      eventState.set(this, {
        type: String(type), bubbles: !!i.bubbles, cancelable: !!i.cancelable, composed: !!i.composed,
        target: null, currentTarget: null, phase: NONE, canceled: false, stop: false, stopImmediate: false,
        dispatching: false, passive: false, trusted: false, timeStamp: h.now(),
      });
    }
    get type() { return evState(this).type; }
    get target() { return evState(this).target; }
    get srcElement() { return evState(this).target; }
    get currentTarget() { return evState(this).currentTarget; }
    get eventPhase() { return evState(this).phase; }
    get bubbles() { return evState(this).bubbles; }
    get cancelable() { return evState(this).cancelable; }
    get composed() { return evState(this).composed; }
    get isTrusted() { return evState(this).trusted; }
    get timeStamp() { return evState(this).timeStamp; }
    get defaultPrevented() { return evState(this).canceled; }
    get returnValue() { return !evState(this).canceled; }
    set returnValue(v) { if (!v) this.preventDefault(); }
    get cancelBubble() { return evState(this).stop; }
    set cancelBubble(v) { if (v) evState(this).stop = true; }
    composedPath() { const s = evState(this); return s.dispatching && s.path ? s.path.slice() : []; }
    stopPropagation() { evState(this).stop = true; }
    stopImmediatePropagation() { const s = evState(this); s.stop = true; s.stopImmediate = true; }
    preventDefault() { const s = evState(this); if (s.cancelable && !s.passive) s.canceled = true; }
  }
  for (const [k, v] of [['NONE', NONE], ['CAPTURING_PHASE', CAPTURING_PHASE], ['AT_TARGET', AT_TARGET], ['BUBBLING_PHASE', BUBBLING_PHASE]]) {
    Object.defineProperty(Event, k, { value: v, enumerable: true });
    Object.defineProperty(Event.prototype, k, { value: v, enumerable: true });
  }

  const detailOf = new WeakMap();
  class CustomEvent extends Event {
    constructor(type, init) {
      super(type, init);
      detailOf.set(this, init && init.detail !== undefined ? init.detail : null);
    }
    get detail() { return detailOf.get(this); }
  }

  function flattenOptions(options) {
    if (typeof options === 'boolean') return { capture: options };
    if (options === null || options === undefined) return { capture: false };
    return { capture: !!options.capture, once: !!options.once, passive: options.passive, signal: options.signal };
  }

  function listenerList(target) {
    let l = listenersOf.get(target);
    if (l === undefined) { l = []; listenersOf.set(target, l); }
    return l;
  }

  function addListener(target, type, callback, options) {
    const o = flattenOptions(options);
    if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
      throw new TypeError(model === 'node' ? 'The "options.signal" property must be an instance of AbortSignal.' : "Failed to execute 'addEventListener' on 'EventTarget': member signal is not of type AbortSignal.");
    }
    if (o.signal && o.signal.aborted) return;
    if (callback === null || callback === undefined) return;
    const list = listenerList(target);
    type = String(type);
    for (const l of list) {
      if (l.type === type && l.callback === callback && l.capture === o.capture) return;
    }
    const listener = { type, callback, capture: o.capture, passive: !!o.passive, once: !!o.once, removed: false };
    list.push(listener);
    if (o.signal) signalState(o.signal).algorithms.push(() => removeListener(target, listener));
  }

  function removeListener(target, listener) {
    listener.removed = true;
    const list = listenersOf.get(target);
    if (list === undefined) return;
    const i = list.indexOf(listener);
    if (i !== -1) list.splice(i, 1);
  }

  class EventTarget {
    constructor() { listenersOf.set(this, []); }
    addEventListener(type, callback, options) {
      if (arguments.length < 2) throw new TypeError("Failed to execute 'addEventListener' on 'EventTarget': 2 arguments required, but only " + arguments.length + ' present.');
      addListener(this === undefined ? globalThis : this, type, callback, options);
    }
    removeEventListener(type, callback, options) {
      const target = this === undefined ? globalThis : this;
      const capture = flattenOptions(options).capture;
      const list = listenersOf.get(target);
      if (list === undefined) return;
      for (const l of list) {
        if (l.type === String(type) && l.callback === callback && l.capture === capture) { removeListener(target, l); return; }
      }
    }
    dispatchEvent(event) {
      if (!(event instanceof Event)) throw new TypeError("Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'.");
      const s = evState(event);
      if (s.dispatching) throw new DOMExceptionCtor("Failed to execute 'dispatchEvent' on 'EventTarget': The event is already being dispatched.", 'InvalidStateError');
      s.trusted = false;
      return dispatch(this === undefined ? globalThis : this, event, false);
    }
  }

  // The DOM Standard's "dispatch" without shadow trees: the path is the
  // target and its parents; capture listeners run from the outermost in,
  // then bubble listeners from the target out (if the event bubbles).
  function dispatch(target, event, fromHost) {
    const s = evState(event);
    s.dispatching = true;
    s.target = target;
    const path = [target];
    for (let p = parentOf.get(target); p !== undefined && p !== null; p = parentOf.get(p)) path.push(p);
    s.path = path;
    for (let i = path.length - 1; i >= 0; i--) {
      if (s.stop) break;
      s.phase = i === 0 ? AT_TARGET : CAPTURING_PHASE;
      invoke(path[i], event, 'capturing', fromHost);
    }
    for (let i = 0; i < path.length; i++) {
      if (s.stop) break;
      if (i === 0) s.phase = AT_TARGET;
      else if (s.bubbles) s.phase = BUBBLING_PHASE;
      else continue;
      invoke(path[i], event, 'bubbling', fromHost);
    }
    s.phase = NONE;
    s.currentTarget = null;
    s.path = undefined;
    s.dispatching = false;
    s.stop = false;
    s.stopImmediate = false;
    return !s.canceled;
  }

  function invoke(currentTarget, event, phase, fromHost) {
    const s = evState(event);
    s.currentTarget = currentTarget;
    const list = listenersOf.get(currentTarget);
    if (list === undefined) return;
    // Listeners added during the dispatch do not run; removed ones do not either.
    for (const l of list.slice()) {
      if (l.removed || l.type !== s.type) continue;
      if (phase === 'capturing' && !l.capture) continue;
      if (phase === 'bubbling' && l.capture) continue;
      if (l.once) removeListener(currentTarget, l);
      let fn = l.callback;
      let self = currentTarget;
      if (typeof fn !== 'function') {
        const he = fn.handleEvent;
        if (typeof he !== 'function') continue;
        self = fn;
        fn = he;
      }
      // Node 20 ignores `passive` (preventDefault still cancels); browsers honour it.
      if (l.passive && model !== 'node') s.passive = true;
      const thrown = h.invokeListener(fn, self, event, fromHost);
      s.passive = false;
      // Node re-throws a listener's exception on the next tick, which ends the process.
      if (thrown !== undefined) process.nextTick(() => { throw thrown[0]; });
      if (s.stopImmediate) return;
    }
  }

  // Event handler IDL attributes (`onabort`, `onmessage`, `onclick`): the
  // handler takes its place among the listeners when first set; a handler
  // returning false cancels the event.
  function defineEventHandler(proto, name) {
    const slot = new WeakMap();
    Object.defineProperty(proto, 'on' + name, {
      configurable: true, enumerable: true,
      get() { const s = slot.get(this); return s ? s.fn : null; },
      set(fn) {
        let s = slot.get(this);
        const f = typeof fn === 'function' ? fn : null;
        if (s === undefined) {
          if (f === null) return;
          const target = this;
          s = { fn: f, listener: null };
          slot.set(this, s);
          s.listener = function (ev) { const r = s.fn.call(target, ev); if (r === false) ev.preventDefault(); return r; };
          Object.defineProperty(s.listener, 'name', { value: f.name || 'on' + name });
          addListener(this, name, s.listener, false);
        } else if (f === null) {
          this.removeEventListener(name, s.listener, false);
          slot.delete(this);
        } else {
          s.fn = f;
          Object.defineProperty(s.listener, 'name', { value: f.name || 'on' + name });
        }
      },
    });
  }

  // AbortController / AbortSignal.
  const signalStates = new WeakMap();
  function signalState(sig) {
    const s = signalStates.get(sig);
    if (s === undefined) throw new TypeError('Illegal invocation');
    return s;
  }
  const abortMessage = model === 'node' ? 'This operation was aborted' : 'signal is aborted without reason';
  const timeoutMessage = model === 'node' ? 'The operation was aborted due to timeout' : 'signal timed out';
  function newSignal() {
    const sig = Object.create(AbortSignal.prototype);
    listenersOf.set(sig, []);
    signalStates.set(sig, { aborted: false, reason: undefined, algorithms: [], dependents: [] });
    return sig;
  }
  // Node 20 (lib/internal/abort_controller.js) fires a signal's abort
  // event and only then aborts its dependents, one after the other; the
  // DOM Standard (which Chromium follows) marks every dependent aborted
  // first, then runs the abort steps of the signal and of each dependent.
  function signalAbort(sig, reason, fromHost) {
    const s = signalState(sig);
    if (s.aborted) return;
    s.aborted = true;
    s.reason = reason === undefined ? new DOMExceptionCtor(abortMessage, 'AbortError') : reason;
    if (model === 'node') {
      runAbortSteps(sig, fromHost);
      for (const d of s.dependents) signalAbort(d, s.reason, fromHost);
      return;
    }
    const toAbort = [];
    for (const d of s.dependents) {
      const ds = signalState(d);
      if (ds.aborted) continue;
      ds.aborted = true;
      ds.reason = s.reason;
      toAbort.push(d);
    }
    runAbortSteps(sig, fromHost);
    for (const d of toAbort) runAbortSteps(d, fromHost);
  }
  function runAbortSteps(sig, fromHost) {
    const s = signalState(sig);
    const algorithms = s.algorithms;
    s.algorithms = [];
    for (const a of algorithms) a();
    dispatch(sig, new Event('abort'), fromHost);
  }
  class AbortSignal extends EventTarget {
    constructor() { super(); throw new TypeError('Illegal constructor'); }
    get aborted() { return signalState(this).aborted; }
    get reason() { return signalState(this).reason; }
    throwIfAborted() { const s = signalState(this); if (s.aborted) throw s.reason; }
    static abort(reason) { const sig = newSignal(); signalAbort(sig, reason, false); return sig; }
    static timeout(ms) {
      const sig = newSignal();
      const fire = function abortSignalTimeout() { signalAbort(sig, new DOMExceptionCtor(timeoutMessage, 'TimeoutError'), true); };
      const id = h.setTimer(fire, [], ms, false);
      // Node's timeout timer does not keep the process alive.
      if (model === 'node') h.refTimer(id, false);
      return sig;
    }
    static any(signals) {
      const sig = newSignal();
      for (const other of signals) {
        if (other.aborted) { signalAbort(sig, other.reason, false); return sig; }
      }
      const mine = signalState(sig);
      // The DOM Standard's "create a dependent abort signal": a dependent
      // signal among the inputs contributes its own sources instead.
      const sources = [];
      for (const other of signals) {
        const os = signalState(other);
        const from = model !== 'node' && os.sources ? os.sources : [other];
        for (const src of from) if (!sources.includes(src)) sources.push(src);
      }
      mine.sources = sources;
      for (const src of sources) signalState(src).dependents.push(sig);
      return sig;
    }
  }
  defineEventHandler(AbortSignal.prototype, 'abort');
  const controllerSignal = new WeakMap();
  class AbortController {
    constructor() { controllerSignal.set(this, newSignal()); }
    get signal() { return controllerSignal.get(this); }
    abort(reason) { signalAbort(controllerSignal.get(this), reason, false); }
  }


  // The HTML Standard's StructuredSerialize / StructuredDeserialize for the
  // types a program can make here: primitives, wrappers, Date, RegExp,
  // ArrayBuffer and views, Map, Set, Array, Error and plain objects (own
  // enumerable string keys; prototypes are not kept), with shared and
  // circular references preserved; anything else is a DataCloneError,
  // thrown where the value is serialized (`prefix` names the operation, as
  // Chromium's message does). The serialized form is a JSON string, so it
  // can cross to another loop's realm (workers), where
  // `structuredDeserialize` rebuilds it from that realm's own intrinsics.
  // A value is a tag and a payload: ['u'] undefined, ['z'] null, ['b', x],
  // ['s', x], ['n', x] (NaN, ±Infinity and -0 as strings), ['i', digits]
  // BigInt, ['r', k] the k-th object record.
  function structuredSerialize(value, prefix) {
    const memory = new Map();
    const records = [];
    const fail = (v) => {
      let shown;
      try { shown = typeof v === 'symbol' ? v.toString() : typeof v === 'function' ? (v.name ? `function ${v.name}` : 'function') : '#<Object>'; } catch (_) { shown = 'value'; }
      throw new DOMExceptionCtor(`${prefix}${shown} could not be cloned.`, 'DataCloneError');
    };
    const num = (n) => (Object.is(n, -0) ? '-0' : Number.isFinite(n) ? n : String(n));
    const ser = (v) => {
      switch (typeof v) {
        case 'undefined': return ['u'];
        case 'boolean': return ['b', v];
        case 'string': return ['s', v];
        case 'number': return ['n', num(v)];
        case 'bigint': return ['i', String(v)];
        case 'symbol': case 'function': return fail(v);
        default: break;
      }
      if (v === null) return ['z'];
      if (memory.has(v)) return ['r', memory.get(v)];
      const k = records.length;
      memory.set(v, k);
      records.push(null);
      const entries = () => Object.keys(v).map((key) => [key, ser(v[key])]);
      const tag = Object.prototype.toString.call(v);
      let rec;
      if (v instanceof Boolean) rec = ['B', v.valueOf()];
      else if (v instanceof Number) rec = ['N', num(v.valueOf())];
      else if (v instanceof String) rec = ['S', v.valueOf()];
      else if (tag === '[object Date]') rec = ['D', num(v.getTime())];
      else if (v instanceof RegExp) rec = ['R', v.source, v.flags];
      else if (v instanceof ArrayBuffer) {
        if (h.detach(v, false)) throw new DOMExceptionCtor(`${prefix}An ArrayBuffer is detached and could not be cloned.`, 'DataCloneError');
        rec = ['A', Array.from(new Uint8Array(v))];
      }
      else if (ArrayBuffer.isView(v)) {
        const kind = v instanceof DataView ? 'DataView' : v.constructor.name;
        rec = ['V', kind, ser(v.buffer), v.byteOffset, v instanceof DataView ? v.byteLength : v.length];
      } else if (v instanceof Map) {
        rec = ['M', []];
        records[k] = rec;
        for (const [x, y] of v) rec[1].push([ser(x), ser(y)]);
        return ['r', k];
      } else if (v instanceof Set) {
        rec = ['T', []];
        records[k] = rec;
        for (const x of v) rec[1].push(ser(x));
        return ['r', k];
      } else if (v instanceof Error) {
        const names = ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError'];
        rec = ['E', names.includes(v.name) ? v.name : 'Error', String(v.message)];
      } else if (Array.isArray(v)) {
        rec = ['a', v.length, null];
        records[k] = rec;
        rec[2] = entries();
        return ['r', k];
      } else if (v instanceof Promise || v instanceof WeakMap || v instanceof WeakSet || v instanceof EventTarget || v instanceof Event) {
        fail(v);
      } else {
        rec = ['o', null];
        records[k] = rec;
        rec[1] = entries();
        return ['r', k];
      }
      records[k] = rec;
      return ['r', k];
    };
    const root = ser(value);
    return JSON.stringify([root, records]);
  }
  function structuredDeserialize(text) {
    const [root, records] = JSON.parse(text);
    const made = new Map();
    const num = (n) => (typeof n === 'number' ? n : Number(n));
    const de = (x) => {
      switch (x[0]) {
        case 'u': return undefined;
        case 'z': return null;
        case 'b': case 's': return x[1];
        case 'n': return num(x[1]);
        case 'i': return BigInt(x[1]);
        default: break;
      }
      const k = x[1];
      if (made.has(k)) return made.get(k);
      const rec = records[k];
      let out;
      switch (rec[0]) {
        case 'B': out = new Boolean(rec[1]); break;
        case 'N': out = new Number(num(rec[1])); break;
        case 'S': out = new String(rec[1]); break;
        case 'D': out = new Date(num(rec[1])); break;
        case 'R': out = new RegExp(rec[1], rec[2]); break;
        case 'A': out = new Uint8Array(rec[1]).buffer; break;
        case 'V': {
          const buf = de(rec[2]);
          out = rec[1] === 'DataView' ? new DataView(buf, rec[3], rec[4]) : new globalThis[rec[1]](buf, rec[3], rec[4]);
          break;
        }
        case 'E': out = new globalThis[rec[1]](rec[2]); break;
        case 'M': out = new Map(); made.set(k, out); for (const [a, b] of rec[1]) out.set(de(a), de(b)); return out;
        case 'T': out = new Set(); made.set(k, out); for (const a of rec[1]) out.add(de(a)); return out;
        case 'a': out = new Array(rec[1]); made.set(k, out); for (const [key, v] of rec[2]) out[key] = de(v); return out;
        default: out = {}; made.set(k, out); for (const [key, v] of rec[1]) out[key] = de(v); return out;
      }
      made.set(k, out);
      return out;
    };
    return de(root);
  }
  // Transfer lists (ArrayBuffers only): checked before the value is
  // serialized, with each runtime's errors; the buffers are detached at the
  // sender once it is (their bytes travel in the serialized form).
  function transferList(transfer, prefix) {
    if (transfer === undefined || transfer === null) return [];
    const seen = [];
    Array.from(transfer).forEach((x, i) => {
      if (!(x instanceof ArrayBuffer)) {
        if (model === 'node') throw new TypeError('Found invalid object in transferList');
        throw new DOMExceptionCtor(`${prefix}Value at index ${i} does not have a transferable type.`, 'DataCloneError');
      }
      if (seen.includes(x)) {
        throw new DOMExceptionCtor(model === 'node' ? 'Transfer list contains duplicate ArrayBuffer' : `${prefix}ArrayBuffer at index ${i} is a duplicate of an earlier ArrayBuffer.`, 'DataCloneError');
      }
      if (model !== 'node' && h.detach(x, false)) {
        throw new DOMExceptionCtor(`${prefix}ArrayBuffer at index ${i} is already detached.`, 'DataCloneError');
      }
      seen.push(x);
    });
    return seen;
  }
  function serializeTransferring(value, prefix, transfer) {
    const list = transferList(transfer, prefix);
    const text = structuredSerialize(value, prefix);
    for (const b of list) h.detach(b, true);
    return text;
  }
  // postMessage's second argument: a transfer list or `{ transfer }`.
  const transferOf = (arg) => (arg === undefined || arg === null ? undefined : Array.isArray(arg) ? arg : arg.transfer);
  def('structuredClone', function structuredClone(value, options) {
    if (arguments.length === 0) throw new TypeError(model === 'node' ? 'The "value" argument must be specified' : "Failed to execute 'structuredClone' on 'Window': 1 argument required, but only 0 present.");
    const transfer = options === undefined || options === null ? undefined : options.transfer;
    const prefix = model === 'node' ? '' : `Failed to execute 'structuredClone' on '${scope === 'worker' ? 'DedicatedWorkerGlobalScope' : 'Window'}': `;
    return structuredDeserialize(serializeTransferring(value, prefix, transfer));
  });

  def('Event', Event);
  def('CustomEvent', CustomEvent);
  def('EventTarget', EventTarget);
  def('AbortController', AbortController);
  def('AbortSignal', AbortSignal);
  def('DOMException', DOMExceptionCtor);

  if (model === 'node') {
    class Timeout {
      constructor(id, repeat) { this._id = id; this._repeat = repeat; }
      ref() { h.refTimer(this._id, true); return this; }
      unref() { h.refTimer(this._id, false); return this; }
      hasRef() { return h.hasRef(this._id); }
      close() { h.clearTimer(this._id); return this; }
      [Symbol.toPrimitive]() { return this._id; }
    }
    class Immediate {
      constructor(id) { this._id = id; }
      ref() { return this; }
      unref() { return this; }
      hasRef() { return true; }
    }
    const timerId = (t) => (t instanceof Timeout ? t._id : (typeof t === 'number' || typeof t === 'string') ? Number(t) : undefined);
    const setTimeout = function setTimeout(cb, ms, ...args) { checkCallback(cb); return new Timeout(h.setTimer(cb, args, ms, false), false); };
    const setInterval = function setInterval(cb, ms, ...args) { checkCallback(cb); return new Timeout(h.setTimer(cb, args, ms, true), true); };
    const clearTimeout = function clearTimeout(t) { const id = timerId(t); if (id !== undefined) h.clearTimer(id); };
    const setImmediate = function setImmediate(cb, ...args) { checkCallback(cb); return new Immediate(h.setImmediate(cb, args)); };
    const clearImmediate = function clearImmediate(i) { if (i instanceof Immediate) h.clearImmediate(i._id); };
    def('setTimeout', setTimeout);
    def('setInterval', setInterval);
    def('clearTimeout', clearTimeout);
    def('clearInterval', clearTimeout);
    def('setImmediate', setImmediate);
    def('clearImmediate', clearImmediate);
    const timers = { setTimeout, setInterval, clearTimeout, clearInterval: clearTimeout, setImmediate, clearImmediate };
    const process = {
      nextTick(cb, ...args) { checkCallback(cb); h.nextTick(cb, args); },
      // Node's process.exit: the code becomes process.exitCode, 'exit'
      // listeners run (once), then the process ends with process.exitCode.
      exit(code) {
        if (code !== undefined) process.exitCode = Number(code);
        emitExit(process.exitCode || 0);
        h.exit(process.exitCode || 0);
      },
      exitCode: undefined,
      argv: ['node', h.fileName()],
      env: {},
      platform: 'linux',
      version: 'v20.0.0-turno',
      versions: {},
      hrtime: Object.assign(function hrtime() { const ns = h.nowNs(); return [Math.floor(ns / 1e9), ns % 1e9]; },
        { bigint: () => BigInt(h.nowNs()) }),
      uptime() { return h.now() / 1000; },
      stdout: { write(s) { h.write(1, String(s)); return true; } },
      stderr: { write(s) { h.write(2, String(s)); return true; } },
    };
    // process is an EventEmitter for the events the host emits:
    // beforeExit, exit, uncaughtException, unhandledRejection,
    // rejectionHandled (others may be listened for and emitted by hand).
    const processListeners = new Map();
    const addProcessListener = (name, fn, once) => {
      if (typeof fn !== 'function') {
        throw Object.assign(new TypeError(`The "listener" argument must be of type function. Received ${fn === null ? 'null' : typeof fn === 'object' ? 'an instance of ' + ((fn.constructor && fn.constructor.name) || 'Object') : 'type ' + typeof fn + ' (' + inspect(fn) + ')'}`), { code: 'ERR_INVALID_ARG_TYPE' });
      }
      let list = processListeners.get(name);
      if (!list) processListeners.set(name, list = []);
      list.push({ fn, once });
      return process;
    };
    const removeProcessListener = (name, fn) => {
      const list = processListeners.get(name) || [];
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].fn === fn) { list.splice(i, 1); break; }
      }
      return process;
    };
    Object.assign(process, {
      on(name, fn) { return addProcessListener(name, fn, false); },
      addListener(name, fn) { return addProcessListener(name, fn, false); },
      once(name, fn) { return addProcessListener(name, fn, true); },
      off(name, fn) { return removeProcessListener(name, fn); },
      removeListener(name, fn) { return removeProcessListener(name, fn); },
      removeAllListeners(name) { if (name === undefined) processListeners.clear(); else processListeners.delete(name); return process; },
      listenerCount(name) { return (processListeners.get(name) || []).length; },
      listeners(name) { return (processListeners.get(name) || []).map((l) => l.fn); },
      emit(name, ...args) {
        const list = processListeners.get(name);
        if (!list || list.length === 0) return false;
        for (const l of list.slice()) {
          if (l.once) removeProcessListener(name, l.fn);
          l.fn.apply(process, args);
        }
        return true;
      },
    });
    let exiting = false;
    function emitExit(code) {
      if (exiting) return;
      exiting = true;
      process.emit('exit', code);
    }
    // What the host asks of process (host/node.rs, host/uncaught.rs):
    // whether a listener took an uncaught error or an unhandled rejection
    // (Node 20 hands a rejection nobody listens for to uncaughtException
    // listeners, origin 'unhandledRejection'), and the exit events. A
    // fatal error makes process.exitCode 1 before 'exit' listeners run.
    processEvent = function processEvent(kind, a, b) {
      switch (kind) {
        case 'beforeExit': process.emit('beforeExit', process.exitCode || 0); return true;
        case 'exit': emitExit(process.exitCode || 0); return true;
        case 'fatal': process.exitCode = 1; emitExit(1); return true;
        case 'uncaughtException':
          if (process.listenerCount('uncaughtException') === 0) return false;
          process.emit('uncaughtException', a, 'uncaughtException');
          return true;
        case 'unhandledRejection':
          if (process.listenerCount('unhandledRejection') > 0) { process.emit('unhandledRejection', a, b); return true; }
          if (process.listenerCount('uncaughtException') > 0) { process.emit('uncaughtException', a, 'unhandledRejection'); return true; }
          return false;
        case 'rejectionHandled': process.emit('rejectionHandled', a); return true;
        default: return false;
      }
    };
    def('process', process);
    def('global', globalThis);
    const util = { inspect, format };
    // node:timers/promises, after lib/timers/promises.js: the timer's
    // callback is the promise's `resolve`, so the reactions run in the
    // microtasks after that callback; setInterval is an async generator
    // that yields once per run of its interval.
    const abortError = (signal) => {
      const e = new Error('The operation was aborted');
      e.name = 'AbortError';
      e.code = 'ABORT_ERR';
      e.cause = signal.reason;
      return e;
    };
    const promiseOptions = (options) => {
      if (options === null || typeof options !== 'object') {
        throw Object.assign(new TypeError(`The "options" argument must be of type object.`), { code: 'ERR_INVALID_ARG_TYPE' });
      }
      return { signal: options.signal, ref: options.ref !== false };
    };
    const timersPromises = {
      setTimeout(after, value, options = {}) {
        let o;
        try { o = promiseOptions(options); } catch (e) { return Promise.reject(e); }
        const { signal, ref } = o;
        if (signal && signal.aborted) return Promise.reject(abortError(signal));
        return new Promise((resolve, reject) => {
          const id = h.setTimer(function resolveTimeout(v) { if (signal) signal.removeEventListener('abort', onAbort); resolve(v); }, [value], after, false);
          if (!ref) h.refTimer(id, false);
          function onAbort() { h.clearTimer(id); reject(abortError(signal)); }
          if (signal) signal.addEventListener('abort', onAbort, { once: true });
        });
      },
      setImmediate(value, options = {}) {
        let o;
        try { o = promiseOptions(options); } catch (e) { return Promise.reject(e); }
        const { signal } = o;
        if (signal && signal.aborted) return Promise.reject(abortError(signal));
        return new Promise((resolve, reject) => {
          const id = h.setImmediate(function resolveImmediate(v) { if (signal) signal.removeEventListener('abort', onAbort); resolve(v); }, [value]);
          function onAbort() { h.clearImmediate(id); reject(abortError(signal)); }
          if (signal) signal.addEventListener('abort', onAbort, { once: true });
        });
      },
      setInterval: async function* setInterval(after, value, options = {}) {
        const { signal, ref } = promiseOptions(options);
        if (signal && signal.aborted) throw abortError(signal);
        let notYielded = 0;
        let callback;
        const id = h.setTimer(function intervalTick() {
          notYielded++;
          if (callback) { callback(); callback = undefined; }
        }, [], after, true);
        if (!ref) h.refTimer(id, false);
        const onAbort = () => { if (callback) { callback(); callback = undefined; } };
        if (signal) signal.addEventListener('abort', onAbort, { once: true });
        try {
          while (!(signal && signal.aborted)) {
            if (notYielded === 0) await new Promise((resolve) => { callback = resolve; });
            for (; notYielded > 0; notYielded--) yield value;
          }
          throw abortError(signal);
        } finally {
          h.clearTimer(id);
          if (signal) signal.removeEventListener('abort', onAbort);
        }
      },
      scheduler: {
        wait(delay, options) { return timersPromises.setTimeout(delay, undefined, options); },
        yield() { return timersPromises.setImmediate(); },
      },
    };
    timers.promises = timersPromises;
    // fs.readFile on the run's virtual file system (the program's own file
    // and RunOptions::files). Each step of Node's readFile is a thread-pool
    // request whose callback runs in a later poll phase: open, fstat, read
    // and close for fs.readFile (the callback after the fourth), one more
    // read for fs.promises.readFile; a missing file fails at open. How many
    // loop iterations that takes in real Node depends on the machine; the
    // order inside the callback (nextTick, then setImmediate before
    // setTimeout 0) does not. Text only: a Buffer is not modelled.
    const fsEncoding = (options, name) => {
      const e = typeof options === 'string' ? options : options && options.encoding;
      if (e === 'utf8' || e === 'utf-8') return e;
      throw new TypeError(`turno-js models ${name} with the 'utf8' encoding only (a Buffer is not modelled); got ${inspect(e)}`);
    };
    const enoent = (path) => {
      const e = new Error(`ENOENT: no such file or directory, open '${path}'`);
      e.errno = -2;
      e.code = 'ENOENT';
      e.syscall = 'open';
      e.path = path;
      return e;
    };
    const afterRoundTrips = (n, done) => {
      if (n === 0) { done(); return; }
      h.io(function fsRequestDone() { afterRoundTrips(n - 1, done); });
    };
    const fs = {
      readFile(path, options, callback) {
        if (typeof options === 'function') { callback = options; options = undefined; }
        checkCallback(callback);
        fsEncoding(options, 'fs.readFile');
        const p = String(path);
        const text = h.readFile(p);
        if (text === null) { afterRoundTrips(1, function readFileDone() { callback(enoent(p)); }); return; }
        afterRoundTrips(4, function readFileDone() { callback(null, text); });
      },
      promises: {
        readFile(path, options) {
          return new Promise((resolve, reject) => {
            fsEncoding(options, 'fs.promises.readFile');
            const p = String(path);
            const text = h.readFile(p);
            if (text === null) afterRoundTrips(1, () => reject(enoent(p)));
            else afterRoundTrips(5, () => resolve(text));
          });
        },
      },
    };
    const modules = { util, timers, process, 'timers/promises': timersPromises, fs, 'fs/promises': fs.promises };
    const module = { exports: {} };
    def('module', module);
    def('exports', module.exports);
    def('__filename', h.fileName());
    def('__dirname', '.');
    def('require', function require(name) {
      const key = String(name).replace(/^node:/, '');
      if (hasOwn(modules, key)) return modules[key];
      const e = new Error(`Cannot find module '${name}'`);
      e.code = 'MODULE_NOT_FOUND';
      throw e;
    });
    def('performance', { now: () => h.now() });
  } else {
    const isWorker = scope === 'worker';
    if (!isWorker) def('window', globalThis);
    def('self', globalThis);
    // A string handler is compiled as script text when the timer fires.
    const handler = (cb) => {
      if (typeof cb === 'function') return cb;
      const code = String(cb);
      return function timerScript() { (0, eval)(code); };
    };
    def('setTimeout', function setTimeout(cb, ms, ...args) { return h.setTimer(handler(cb), args, ms, false); });
    def('setInterval', function setInterval(cb, ms, ...args) { return h.setTimer(handler(cb), args, ms, true); });
    def('clearTimeout', function clearTimeout(id) { h.clearTimer(Number(id)); });
    def('clearInterval', function clearInterval(id) { h.clearTimer(Number(id)); });
    // Workers have no rendering steps here (Chromium gives dedicated
    // workers requestAnimationFrame for OffscreenCanvas; this does not).
    if (!isWorker) {
      def('requestAnimationFrame', function requestAnimationFrame(cb) { checkCallback(cb); return h.raf(cb); });
      def('cancelAnimationFrame', function cancelAnimationFrame(id) { h.cancelRaf(Number(id)); });
    }
    def('performance', { now: () => h.now(), timeOrigin: 0 });

    // The Prioritized Task Scheduling API as Chromium has it: `scheduler`
    // (`postTask`, `yield`), `TaskController`, `TaskSignal`,
    // `TaskPriorityChangeEvent`. A task's priority ranks it against every
    // other task in `html.rs` (`user-blocking` first, `background` last, a
    // `yield` continuation just above its priority's tasks); a
    // `TaskSignal` is a group whose queued tasks follow its priority. The
    // argument errors are Chromium's (a rejected promise, as WebIDL turns
    // a promise-returning operation's exceptions into).
    const PRIORITY_LEVEL = { 'user-blocking': 2, 'user-visible': 0, 'background': -2 };
    const taskSignalStates = new WeakMap();
    let nextSignalGroup = 0;
    function taskPriority(value, prefix) {
      const s = String(value);
      if (!hasOwn(PRIORITY_LEVEL, s)) throw new TypeError(`${prefix}The provided value '${s}' is not a valid enum value of type TaskPriority.`);
      return s;
    }
    function dictionary(value, type, prefix) {
      if (value === undefined || value === null) return {};
      if (typeof value !== 'object' && typeof value !== 'function') throw new TypeError(`${prefix}The provided value is not of type '${type}'.`);
      return value;
    }
    function makeTaskSignal(sig, priority) {
      Object.setPrototypeOf(sig, TaskSignal.prototype);
      taskSignalStates.set(sig, { priority, changing: false, group: ++nextSignalGroup, dependents: [] });
      return sig;
    }
    function taskSignalState(sig) {
      const s = taskSignalStates.get(sig);
      if (s === undefined) throw new TypeError('Illegal invocation');
      return s;
    }
    // The Prioritized Task Scheduling spec's "signal priority change".
    function signalPriorityChange(sig, priority, prefix) {
      const s = taskSignalState(sig);
      if (s.changing) throw new DOMExceptionCtor(`${prefix}Cannot change priority when a prioritychange event is in progress.`, 'NotAllowedError');
      if (s.priority === priority) return;
      s.changing = true;
      const previousPriority = s.priority;
      s.priority = priority;
      h.schedulerPriority(s.group, PRIORITY_LEVEL[priority]);
      try {
        dispatch(sig, new TaskPriorityChangeEvent('prioritychange', { previousPriority }), false);
        for (const d of s.dependents) signalPriorityChange(d, priority, prefix);
      } finally {
        s.changing = false;
      }
    }
    class TaskSignal extends AbortSignal {
      constructor() { throw new TypeError("Failed to construct 'TaskSignal': Illegal constructor"); }
      get priority() { return taskSignalState(this).priority; }
      static any(signals, init = undefined) {
        const prefix = "Failed to execute 'any' on 'TaskSignal': ";
        const o = dictionary(init, 'TaskSignalAnyInit', prefix);
        const p = o.priority === undefined ? 'user-visible' : o.priority;
        const source = taskSignalStates.has(p) ? p : null;
        const priority = source ? taskSignalStates.get(source).priority
          : taskPriority(p, `${prefix}Failed to read the 'priority' property from 'TaskSignalAnyInit': `);
        const sig = makeTaskSignal(AbortSignal.any(signals), priority);
        if (source) taskSignalStates.get(source).dependents.push(sig);
        return sig;
      }
    }
    defineEventHandler(TaskSignal.prototype, 'prioritychange');
    const previousPriorities = new WeakMap();
    class TaskPriorityChangeEvent extends Event {
      constructor(type, init) {
        const prefix = "Failed to construct 'TaskPriorityChangeEvent': ";
        if (arguments.length < 2) throw new TypeError(`${prefix}2 arguments required, but only ${arguments.length} present.`);
        const o = dictionary(init, 'TaskPriorityChangeEventInit', prefix);
        if (o.previousPriority === undefined) throw new TypeError(`${prefix}Failed to read the 'previousPriority' property from 'TaskPriorityChangeEventInit': Required member is undefined.`);
        const previous = taskPriority(o.previousPriority, `${prefix}Failed to read the 'previousPriority' property from 'TaskPriorityChangeEventInit': `);
        super(type, init);
        previousPriorities.set(this, previous);
      }
      get previousPriority() { return previousPriorities.get(this); }
    }
    class TaskController extends AbortController {
      constructor(init = undefined) {
        const prefix = "Failed to construct 'TaskController': ";
        const o = dictionary(init, 'TaskControllerInit', prefix);
        const priority = o.priority === undefined ? 'user-visible'
          : taskPriority(o.priority, `${prefix}Failed to read the 'priority' property from 'TaskControllerInit': `);
        super();
        makeTaskSignal(this.signal, priority);
      }
      setPriority(priority) {
        const prefix = "Failed to execute 'setPriority' on 'TaskController': ";
        if (arguments.length === 0) throw new TypeError(`${prefix}1 argument required, but only 0 present.`);
        signalPriorityChange(this.signal, taskPriority(priority, prefix), prefix);
      }
    }
    // The scheduling state (priority source and abort signal) of each
    // prioritized task that has run, by its number: `yield` inherits the
    // state of the task current for the host (the task running, or the one
    // that registered the promise reaction running).
    const schedStates = new Map();
    const defaultState = { prioritySignal: null, priority: 'user-visible', signal: null };
    // The task's promise settles once the callback and its microtasks have
    // run (Chromium resolves it when the callback's invocation, which runs
    // them, returns): an abort until then rejects it, and later does
    // nothing.
    function queuePrioritized(cb, label, state, delay, continuation) {
      let resolve, reject;
      const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
      const { signal } = state;
      if (signal !== null && signalState(signal).aborted) {
        reject(signalState(signal).reason);
        return promise;
      }
      let sched = 0;
      let ok = true, outcome;
      const run = function runPrioritizedTask() {
        schedStates.set(sched, state);
        try { outcome = cb(); } catch (e) { ok = false; outcome = e; }
      };
      const finish = function settlePrioritizedTask() { if (ok) resolve(outcome); else reject(outcome); };
      const source = state.prioritySignal;
      const priority = source ? taskSignalState(source).priority : state.priority;
      const group = source ? taskSignalState(source).group : 0;
      sched = h.schedulerPost(run, finish, `${label} (${priority})`, PRIORITY_LEVEL[priority], continuation, group, delay);
      if (signal !== null) {
        signalState(signal).algorithms.push(() => {
          h.schedulerCancel(sched);
          reject(signalState(signal).reason);
        });
      }
      return promise;
    }
    class Scheduler {
      constructor() { throw new TypeError("Failed to construct 'Scheduler': Illegal constructor"); }
      postTask(callback, options = undefined) {
        const prefix = "Failed to execute 'postTask' on 'Scheduler': ";
        try {
          if (arguments.length === 0) throw new TypeError(`${prefix}1 argument required, but only 0 present.`);
          if (typeof callback !== 'function') throw new TypeError(`${prefix}parameter 1 is not of type 'Function'.`);
          const o = dictionary(options, 'SchedulerPostTaskOptions', prefix);
          const member = (name) => `${prefix}Failed to read the '${name}' property from 'SchedulerPostTaskOptions': `;
          let delay = 0;
          if (o.delay !== undefined) {
            const n = Number(o.delay);
            if (!Number.isFinite(n)) throw new TypeError(`${member('delay')}Value is ${Number.isNaN(n) ? '' : 'infinite and '}not of type 'unsigned long long'.`);
            delay = Math.trunc(n);
            if (delay < 0 || delay > Number.MAX_SAFE_INTEGER) throw new TypeError(`${member('delay')}Value is outside the 'unsigned long long' value range.`);
          }
          const priority = o.priority === undefined ? undefined : taskPriority(o.priority, member('priority'));
          const signal = o.signal === undefined ? null : o.signal;
          if (o.signal !== undefined && !signalStates.has(signal)) throw new TypeError(`${member('signal')}Failed to convert value to 'AbortSignal'.`);
          const prioritySignal = priority === undefined && signal !== null && taskSignalStates.has(signal) ? signal : null;
          const state = { prioritySignal, priority: priority || 'user-visible', signal };
          return queuePrioritized(callback, callback.name || '(anonymous)', state, delay, false);
        } catch (e) {
          return Promise.reject(e);
        }
      }
      yield() {
        const state = schedStates.get(h.currentTask()) || defaultState;
        return queuePrioritized(() => undefined, 'scheduler.yield continuation', state, 0, true);
      }
    }
    for (const [c, tag] of [[Scheduler, 'Scheduler'], [TaskController, 'TaskController'], [TaskSignal, 'TaskSignal'], [TaskPriorityChangeEvent, 'TaskPriorityChangeEvent']]) {
      Object.defineProperty(c.prototype, Symbol.toStringTag, { value: tag, configurable: true });
    }
    def('Scheduler', Scheduler);
    def('scheduler', Object.create(Scheduler.prototype));
    def('TaskController', TaskController);
    def('TaskSignal', TaskSignal);
    def('TaskPriorityChangeEvent', TaskPriorityChangeEvent);

    // A minimal window and document (no DOM tree, no layout): what pages
    // that listen for input and animate need. `window` is the global object
    // and an EventTarget; the parent chain for events is element -> ... ->
    // <html> -> document -> window.
    for (const name of ['addEventListener', 'removeEventListener', 'dispatchEvent']) {
      def(name, EventTarget.prototype[name]);
    }
    listenerList(globalThis);
    for (const name of ['message', 'error', 'keydown', 'keyup', 'click', 'mousedown', 'mouseup']) {
      defineEventHandler(globalThis, name);
    }

    class UIEvent extends Event {
      constructor(type, init) { super(type, init); uiInit.set(this, Object.assign({ view: null, detail: 0 }, init || {})); }
      get view() { return uiInit.get(this).view; }
      get detail() { return uiInit.get(this).detail; }
    }
    const uiInit = new WeakMap();
    const modifier = (name) => function () { return !!uiInit.get(this)[name]; };
    class KeyboardEvent extends UIEvent {
      get key() { const k = uiInit.get(this).key; return k === undefined ? '' : String(k); }
      get code() { const c = uiInit.get(this).code; return c === undefined ? '' : String(c); }
      get repeat() { return !!uiInit.get(this).repeat; }
    }
    class MouseEvent extends UIEvent {
      get clientX() { return Number(uiInit.get(this).clientX || 0); }
      get clientY() { return Number(uiInit.get(this).clientY || 0); }
      get button() { return Number(uiInit.get(this).button || 0); }
      get buttons() { return Number(uiInit.get(this).buttons || 0); }
    }
    for (const m of ['ctrlKey', 'shiftKey', 'altKey', 'metaKey']) {
      Object.defineProperty(KeyboardEvent.prototype, m, { get: modifier(m), configurable: true });
      Object.defineProperty(MouseEvent.prototype, m, { get: modifier(m), configurable: true });
    }
    class MessageEvent extends Event {
      constructor(type, init) { super(type, init); uiInit.set(this, Object.assign({ data: null, origin: '', lastEventId: '', source: null, ports: [] }, init || {})); }
      get data() { return uiInit.get(this).data; }
      get origin() { return uiInit.get(this).origin; }
      get lastEventId() { return uiInit.get(this).lastEventId; }
      get source() { return uiInit.get(this).source; }
      get ports() { return uiInit.get(this).ports; }
    }

    class Node extends EventTarget {
      get parentNode() { const p = parentOf.get(this); return p instanceof Node && p !== globalThis ? p : null; }
      get childNodes() { return childrenOf(this).slice(); }
      appendChild(child) {
        const old = parentOf.get(child);
        if (old instanceof Node) old.removeChild(child);
        const c = childrenOf(this);
        const previous = c.length > 0 ? c[c.length - 1] : null;
        parentOf.set(child, this);
        c.push(child);
        queueChildList(this, [child], [], previous, null);
        return child;
      }
      removeChild(child) {
        const c = childrenOf(this);
        const i = c.indexOf(child);
        if (i === -1) throw new DOMExceptionCtor("Failed to execute 'removeChild' on 'Node': The node to be removed is not a child of this node.", 'NotFoundError');
        const previous = i > 0 ? c[i - 1] : null;
        const next = i + 1 < c.length ? c[i + 1] : null;
        c.splice(i, 1);
        parentOf.delete(child);
        queueChildList(this, [], [child], previous, next);
        return child;
      }
    }

    // MutationObserver, for the mutations this tree has (`childList`, with
    // `subtree`): each mutation queues a record for every observer that
    // watches the target or (subtree) an ancestor; the first record queues
    // one microtask that hands each observer its batch, in the order the
    // observers were created (the DOM Standard's "notify mutation
    // observers"). Nothing here changes attributes or character data, so
    // observing them is accepted and never reports.
    const observers = [];
    const observerState = new WeakMap();
    let notifyQueued = false;
    class MutationRecord {
      constructor(init) { Object.assign(this, init); }
    }
    function queueChildList(target, addedNodes, removedNodes, previousSibling, nextSibling) {
      let queued = false;
      for (const mo of observers) {
        const st = observerState.get(mo);
        const hit = st.targets.some(([node, o]) => {
          if (!o.childList) return false;
          if (node === target) return true;
          if (!o.subtree) return false;
          for (let p = parentOf.get(target); p instanceof Node; p = parentOf.get(p)) if (p === node) return true;
          return false;
        });
        if (!hit) continue;
        st.records.push(new MutationRecord({
          type: 'childList', target, addedNodes, removedNodes, previousSibling, nextSibling,
          attributeName: null, attributeNamespace: null, oldValue: null,
        }));
        queued = true;
      }
      if (queued && !notifyQueued) {
        notifyQueued = true;
        h.queueMicrotask(function notifyMutationObservers() {
          notifyQueued = false;
          for (const mo of observers.slice()) {
            const st = observerState.get(mo);
            if (st.records.length === 0) continue;
            const records = st.records;
            st.records = [];
            // Called as a listener is: what it throws is reported and the
            // next observer still runs.
            const callback = st.callback;
            h.invokeListener(function mutationObserverCallback() { return callback.call(mo, records, mo); }, mo, undefined, false);
          }
        });
      }
    }
    class MutationObserver {
      constructor(callback) {
        if (typeof callback !== 'function') throw new TypeError("Failed to construct 'MutationObserver': parameter 1 is not of type 'Function'.");
        observerState.set(this, { callback, targets: [], records: [] });
        observers.push(this);
      }
      observe(target, options) {
        if (!(target instanceof Node)) throw new TypeError("Failed to execute 'observe' on 'MutationObserver': parameter 1 is not of type 'Node'.");
        const o = Object.assign({}, options || {});
        if (o.attributeOldValue !== undefined || o.attributeFilter !== undefined) { if (o.attributes === undefined) o.attributes = true; }
        if (o.characterDataOldValue !== undefined && o.characterData === undefined) o.characterData = true;
        if (!o.childList && !o.attributes && !o.characterData) {
          throw new TypeError("Failed to execute 'observe' on 'MutationObserver': The options object must set at least one of 'attributes', 'characterData', or 'childList' to true.");
        }
        const st = observerState.get(this);
        const known = st.targets.find(([n]) => n === target);
        if (known) known[1] = o; else st.targets.push([target, o]);
      }
      disconnect() { const st = observerState.get(this); st.targets = []; st.records = []; }
      takeRecords() { const st = observerState.get(this); const r = st.records; st.records = []; return r; }
    }
    const children = new WeakMap();
    function childrenOf(n) { let c = children.get(n); if (!c) { c = []; children.set(n, c); } return c; }
    for (const name of ['keydown', 'keyup', 'click', 'mousedown', 'mouseup', 'input']) {
      defineEventHandler(Node.prototype, name);
    }
    let nextAnimationId = 0;
    const clicking = new WeakSet();
    class Element extends Node {
      constructor(tag) { super(); this.tagName = String(tag).toUpperCase(); this.id = ''; this.style = {}; this.textContent = ''; }
      remove() { const p = this.parentNode; if (p) p.removeChild(this); }
      // HTMLElement.click(): a synthetic click (not trusted, detail 0) that
      // bubbles, dispatched from script, so the listeners' microtasks wait
      // for the script's stack to empty; a click already in progress on
      // the element is ignored.
      click() {
        if (clicking.has(this)) return;
        clicking.add(this);
        try {
          dispatch(this, new MouseEvent('click', { bubbles: true, cancelable: true, composed: true, view: globalThis, detail: 0 }), false);
        } finally {
          clicking.delete(this);
        }
      }
      // Web Animations, as far as the compositor lane needs: an animation
      // of only `transform` and `opacity` runs on the compositor, which
      // produces its frames even while the main thread is blocked; any
      // other property needs the main thread's rendering steps.
      animate(keyframes, options) {
        const o = typeof options === 'number' ? { duration: options } : (options || {});
        const frames = Array.isArray(keyframes) ? keyframes : [keyframes || {}];
        const props = new Set();
        for (const k of frames) for (const p of Object.keys(k)) if (p !== 'offset' && p !== 'easing' && p !== 'composite') props.add(p);
        const compositor = props.size > 0 && [...props].every((p) => p === 'transform' || p === 'opacity');
        const duration = Number(o.duration) || 0;
        const iterations = o.iterations === undefined ? 1 : Number(o.iterations);
        const id = ++nextAnimationId;
        const label = (this.id ? '#' + this.id : this.tagName.toLowerCase()) + ' ' + [...props].join(',');
        const start = h.now();
        h.animation(id, label, compositor, duration * iterations);
        const total = duration * iterations;
        return {
          id: String(id),
          cancel() { h.cancelAnimation(id); this._cancelled = true; },
          get playState() { return this._cancelled ? 'idle' : (h.now() - start >= total ? 'finished' : 'running'); },
          get currentTime() { return this._cancelled ? null : Math.min(h.now() - start, total); },
        };
      }
    }
    class Document extends Node {
      constructor() {
        super();
        this.documentElement = new Element('html');
        this.head = new Element('head');
        this.body = new Element('body');
        this.documentElement.appendChild(this.head);
        this.documentElement.appendChild(this.body);
        parentOf.set(this.documentElement, this);
        childrenOf(this).push(this.documentElement);
        parentOf.set(this, globalThis);
      }
      get hidden() { return false; }
      get visibilityState() { return 'visible'; }
      get readyState() { return readyState; }
      createElement(tag) { return new Element(tag); }
      getElementById(id) {
        const walk = (n) => { for (const c of childrenOf(n)) { if (c.id === String(id)) return c; const r = walk(c); if (r) return r; } return null; };
        return walk(this);
      }
    }
    const document = new Document();
    if (isWorker) {
      def('MessageEvent', MessageEvent);
    } else {
      def('document', document);
      for (const [n, v] of [['UIEvent', UIEvent], ['KeyboardEvent', KeyboardEvent], ['MouseEvent', MouseEvent], ['MessageEvent', MessageEvent], ['Node', Node], ['Element', Element], ['HTMLElement', Element], ['Document', Document], ['MutationObserver', MutationObserver], ['MutationRecord', MutationRecord]]) def(n, v);
    }

    // Scripted input: the host calls this as a task of the user-interaction
    // task source; the event is trusted and dispatched from the host.
    const codeOf = (key) => (/^[a-z]$/i.test(key) ? 'Key' + key.toUpperCase() : /^[0-9]$/.test(key) ? 'Digit' + key : key === ' ' ? 'Space' : key);
    deliverInput = function deliverInput(type, a, b) {
      // Keys go to the focused element (the body of a page without inputs);
      // a click on an empty page hits <html> (the body has no height).
      const key = type === 'keydown' || type === 'keyup';
      const target = key ? document.body : document.documentElement;
      const base = { bubbles: true, cancelable: true, composed: true, view: globalThis };
      const fire = (ev) => { evState(ev).trusted = true; dispatch(target, ev, true); };
      if (key) {
        fire(new KeyboardEvent(type, Object.assign(base, { key: a, code: b || codeOf(a) })));
      } else {
        const init = Object.assign(base, { clientX: a, clientY: b, button: 0, buttons: type === 'mousedown' ? 1 : 0 });
        if (type === 'click') {
          fire(new MouseEvent('mouseup', init));
          fire(new MouseEvent('click', Object.assign({}, init, { detail: 1 })));
        } else {
          fire(new MouseEvent(type, init));
        }
      }
    };

    // MessageChannel: each postMessage queues a task on the posted-message
    // task source that dispatches a MessageEvent at the other port, from the
    // host (so a microtask checkpoint follows each listener).
    class MessagePort extends EventTarget {
      constructor() {
        super();
        portState.set(this, { other: null, started: false, closed: false, queue: [], inbox: [], delivering: false, pending: 0 });
      }
      start() {
        const s = portState.get(this);
        if (s.started) return;
        s.started = true;
        const q = s.queue;
        s.queue = [];
        for (const data of q) postTo(this, data);
      }
      close() { portState.get(this).closed = true; }
      postMessage(data, transfer) {
        const s = portState.get(this);
        const text = serializeTransferring(data, "Failed to execute 'postMessage' on 'MessagePort': ", transferOf(transfer));
        const other = s.other;
        if (!other || s.closed) return;
        const clone = structuredDeserialize(text);
        if (portState.get(other).started) postTo(other, clone); else portState.get(other).queue.push(clone);
      }
    }
    const portState = new WeakMap();
    // The spec profile: a task per message, queued when it is posted.
    // Chromium (a Mojo pipe per port, checked against it by h19, h22 and
    // h23): a message that reaches an idle port queues a task that
    // dispatches it; when that dispatch (listeners and their microtasks)
    // is over, one task is queued for each message then waiting, and only
    // when the last of those has run does the port look for more. So tasks
    // queued meanwhile (a zero-delay timer, the first message to the other
    // port) run before the port's later messages, while messages that were
    // already waiting run before anything a handler posts to the other port
    // afterwards.
    function postTo(port, data) {
      const s = portState.get(port);
      if (browser !== 'chromium') {
        h.postTask(function deliverMessage() { if (!s.closed) fireMessage(port, data); }, [], 'posted-message');
        return;
      }
      s.inbox.push(data);
      if (!s.delivering) {
        s.delivering = true;
        h.postTask(function deliverMessage() { deliverFirst(port); }, [], 'posted-message');
      }
    }
    function deliverFirst(port) {
      const s = portState.get(port);
      const data = s.inbox.shift();
      if (!s.closed) fireMessage(port, data);
      s.pending = s.closed ? 0 : s.inbox.length;
      if (s.pending === 0) { watch(port); return; }
      for (let i = 0; i < s.pending; i++) {
        h.postTask(function deliverMessage() { deliverPending(port); }, [], 'posted-message');
      }
    }
    function deliverPending(port) {
      const s = portState.get(port);
      if (s.inbox.length > 0) {
        const data = s.inbox.shift();
        if (!s.closed) fireMessage(port, data);
      }
      if (--s.pending <= 0) watch(port);
    }
    // The port looks at its pipe again: a message waiting there gets a
    // task at once, otherwise the next message to arrive does.
    function watch(port) {
      const s = portState.get(port);
      s.pending = 0;
      if (s.closed) s.inbox = [];
      if (s.inbox.length > 0) {
        h.postTask(function deliverMessage() { deliverFirst(port); }, [], 'posted-message');
      } else {
        s.delivering = false;
      }
    }
    function fireMessage(port, data) {
      const ev = new MessageEvent('message', { data });
      evState(ev).trusted = true;
      dispatch(port, ev, true);
    }
    defineEventHandler(MessagePort.prototype, 'message');
    // Setting onmessage starts the port (the HTML Standard's implicit start()).
    {
      const d = Object.getOwnPropertyDescriptor(MessagePort.prototype, 'onmessage');
      Object.defineProperty(MessagePort.prototype, 'onmessage', {
        configurable: true, enumerable: true, get: d.get,
        set(fn) { d.set.call(this, fn); this.start(); },
      });
    }
    class MessageChannel {
      constructor() {
        const port1 = new MessagePort();
        const port2 = new MessagePort();
        portState.get(port1).other = port2;
        portState.get(port2).other = port1;
        Object.defineProperty(this, 'port1', { value: port1, enumerable: true });
        Object.defineProperty(this, 'port2', { value: port2, enumerable: true });
      }
    }
    def('MessageChannel', MessageChannel);
    def('MessagePort', MessagePort);

    // The document's readiness: `loading` while the script runs; when the
    // parser finishes (right after the script's microtask checkpoint, the
    // script being the page's last), `interactive` with `readystatechange`
    // and `DOMContentLoaded` at the document, then (nothing else to load)
    // `complete` with `readystatechange` and `load` at the window, all
    // before any task the script queued, as Chromium does. The host calls
    // this once; each listener gets a microtask checkpoint.
    let readyState = 'loading';
    finishParsing = isWorker ? null : function finishParsing() {
      const fire = (target, type, bubbles) => {
        const ev = new Event(type, { bubbles, cancelable: false });
        evState(ev).trusted = true;
        dispatch(target, ev, true);
      };
      readyState = 'interactive';
      fire(document, 'readystatechange', false);
      fire(document, 'DOMContentLoaded', true);
      readyState = 'complete';
      fire(document, 'readystatechange', false);
      // `load` is fired at the window (its target is the document, which
      // is not in the window's path: listeners on the document miss it).
      fire(globalThis, 'load', false);
    };
    // DOMContentLoaded has no event handler attribute (`onDOMContentLoaded`
    // is a plain property in Chromium), and only the document has
    // `onreadystatechange`.
    defineEventHandler(globalThis, 'load');
    defineEventHandler(Document.prototype, 'readystatechange');

    // window.postMessage to the page itself: a task on the posted-message
    // source that dispatches a MessageEvent at the window (origin "null",
    // as a file page's; `source` the window), the data a structured clone
    // made when it is posted.
    if (!isWorker) {
      def('postMessage', function postMessage(message, options, transfer) {
        if (arguments.length === 0) throw new TypeError("Failed to execute 'postMessage' on 'Window': 1 argument required, but only 0 present.");
        // (message, targetOrigin, transfer) or (message, { targetOrigin, transfer }).
        const list = typeof options === 'string' ? transfer : transferOf(options);
        const text = serializeTransferring(message, "Failed to execute 'postMessage' on 'Window': ", list);
        h.postTask(function windowMessage() {
          const ev = new MessageEvent('message', { data: structuredDeserialize(text), origin: 'null', source: globalThis });
          evState(ev).trusted = true;
          dispatch(globalThis, ev, true);
        }, [], 'posted-message');
      });
    }

    // Dedicated workers (host/workers.rs): each runs its own event loop on
    // its own virtual clock; `postMessage` serializes the data here (a
    // DataCloneError is thrown to the caller) and the receiving loop
    // deserializes it into its own realm and dispatches a MessageEvent from
    // a task of the posted-message task source, one task per message.
    const messageFrom = (text) => {
      const ev = new MessageEvent('message', { data: structuredDeserialize(text) });
      evState(ev).trusted = true;
      return ev;
    };
    if (!isWorker) {
      const workers = new Map();
      const workerState = new WeakMap();
      class Worker extends EventTarget {
        constructor(url, options) {
          super();
          if (arguments.length === 0) throw new TypeError("Failed to construct 'Worker': 1 argument required, but only 0 present.");
          const name = options && options.name !== undefined ? String(options.name) : '';
          const r = h.workerCreate(String(url), name);
          const ok = typeof r === 'number';
          workerState.set(this, { id: ok ? r : 0, terminated: !ok });
          if (ok) {
            workers.set(r, this);
          } else {
            // The script could not be fetched: `error` (a plain Event) at
            // the worker, from a task, as a browser fires it.
            const target = this;
            h.postTask(function workerScriptError() {
              const ev = new Event('error');
              evState(ev).trusted = true;
              dispatch(target, ev, true);
            }, [], 'networking');
          }
        }
        postMessage(data, transfer) {
          const s = workerState.get(this);
          const text = serializeTransferring(data, "Failed to execute 'postMessage' on 'Worker': ", transferOf(transfer));
          if (!s.terminated) h.workerPost(s.id, s.id, text);
        }
        terminate() {
          const s = workerState.get(this);
          if (s.terminated) return;
          s.terminated = true;
          workers.delete(s.id);
          h.workerEnd(s.id, 'terminate');
        }
      }
      defineEventHandler(Worker.prototype, 'message');
      defineEventHandler(Worker.prototype, 'error');
      def('Worker', Worker);
      deliverMessage = function deliverMessage(id, text) {
        const w = workers.get(id);
        // Terminated: Chromium's worker object drops what was on its way.
        if (w !== undefined) dispatch(w, messageFrom(text), true);
      };
    } else {
      def('name', workerName);
      def('postMessage', function postMessage(data, transfer) {
        const text = serializeTransferring(data, "Failed to execute 'postMessage' on 'DedicatedWorkerGlobalScope': ", transferOf(transfer));
        h.workerPost(parentLoop, loopId, text);
      });
      let closing = false;
      def('close', function close() {
        if (closing) return;
        closing = true;
        h.workerEnd(loopId, 'close');
      });
      deliverMessage = function deliverMessage(id, text) {
        dispatch(globalThis, messageFrom(text), true);
      };
    }
  }

  // The runtime profile: boa has built-ins that the modelled runtime does
  // not (Node 20 is V8 11.3; a file page in Chromium is not cross-origin
  // isolated), and code that feature-detects must take the branch it takes
  // there. `docs/js-runtime.md` has the table; `allBuiltins` keeps them.
  if (!allBuiltins) {
    const iteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
    // boa makes %TypedArray% a global; neither runtime has one.
    const hidden = model === 'node' ? [
      [globalThis, ['Iterator', 'TypedArray']],
      [iteratorPrototype, ['drop', 'every', 'filter', 'find', 'flatMap', 'forEach', 'map', 'reduce', 'some', 'take', 'toArray', 'constructor', Symbol.toStringTag]],
      [Object, ['groupBy']],
      [Map, ['groupBy']],
      [Promise, ['withResolvers', 'try']],
      [Set.prototype, ['union', 'intersection', 'difference', 'symmetricDifference', 'isSubsetOf', 'isSupersetOf', 'isDisjointFrom']],
      [Map.prototype, ['getOrInsert', 'getOrInsertComputed']],
      [WeakMap.prototype, ['getOrInsert', 'getOrInsertComputed']],
      [JSON, ['rawJSON', 'isRawJSON']],
      [RegExp, ['escape']],
    ] : [
      [globalThis, ['SharedArrayBuffer', 'TypedArray']],
    ];
    for (const [o, keys] of hidden) for (const k of keys) delete o[k];
  }
  return { inspect, format, deliverInput, deliverMessage, finishParsing, processEvent };
})
