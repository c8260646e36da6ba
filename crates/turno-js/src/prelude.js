// The host prelude of turno-js: the JavaScript half of the host.
//
// It is evaluated once, before the user's program, as a function expression
// and called with `h`, an object of native (Rust) functions, and `model`
// ("node" or "html"). Everything it defines is reached through the globals it
// installs (console, timers, process, MessageChannel, ...); `h` itself is never
// made global. Scheduling decisions (which queue, which time) are all made on
// the Rust side; this file only adapts the web/Node API shapes to them and
// implements Node's `util.inspect` formatting for console.log.
(function (h, model) {
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

  // Node's err.stack is "Name: message\n    at frame...". boa's `stack`
  // accessor yields only the frames, so the header is added here.
  function getStackString(err) {
    const own = Object.getOwnPropertyDescriptor(err, 'stack');
    if (own && 'value' in own) {
      return own.value ? String(own.value) : errorToString(err);
    }
    let frames;
    try { frames = err.stack; } catch (_) { frames = undefined; }
    const header = errorToString(err);
    if (typeof frames === 'string' && frames.trim() !== '') {
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

  def('queueMicrotask', function queueMicrotask(cb) { checkCallback(cb); h.queueMicrotask(cb); });

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
      exit(code) { h.exit(code === undefined ? (process.exitCode || 0) : Number(code)); },
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
      on() { return process; },
      once() { return process; },
    };
    def('process', process);
    def('global', globalThis);
    const util = { inspect, format };
    const modules = { util, timers, process };
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
    def('window', globalThis);
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
    def('requestAnimationFrame', function requestAnimationFrame(cb) { checkCallback(cb); return h.raf(cb); });
    def('cancelAnimationFrame', function cancelAnimationFrame(id) { h.cancelRaf(Number(id)); });
    def('performance', { now: () => h.now(), timeOrigin: 0 });

    // MessageChannel: each postMessage queues a task on the "posted message"
    // task source, which delivers a MessageEvent-like object to the other
    // port's onmessage handler (or to its listeners once started).
    const ONMESSAGE = {};
    class MessagePort {
      constructor() {
        this._other = null;
        this._onmessage = null;
        this._listeners = [];
        this._started = false;
        this._queue = [];
      }
      get onmessage() { return this._onmessage; }
      // The event handler takes its place among the listeners when first set.
      set onmessage(fn) {
        if (!this._listeners.includes(ONMESSAGE)) this._listeners.push(ONMESSAGE);
        this._onmessage = fn;
        this.start();
      }
      addEventListener(type, fn) {
        if (type === 'message' && typeof fn === 'function' && !this._listeners.includes(fn)) this._listeners.push(fn);
      }
      removeEventListener(type, fn) { this._listeners = this._listeners.filter((f) => f !== fn); }
      start() {
        if (this._started) return;
        this._started = true;
        const q = this._queue;
        this._queue = [];
        for (const data of q) this._post(data);
      }
      close() { this._closed = true; }
      _post(data) {
        const port = this;
        h.postTask(function deliverMessage() { return port._deliver(data); }, [], 'posted-message', true);
      }
      // Returns the listener calls to make, as [fn, this, event] triples: the
      // host makes each call from an empty stack, with a microtask checkpoint
      // after each, as event dispatch does.
      _deliver(data) {
        if (this._closed) return [];
        const ev = { type: 'message', data, target: this, currentTarget: this, ports: [] };
        const calls = [];
        for (const l of this._listeners) {
          if (l === ONMESSAGE) {
            if (typeof this._onmessage === 'function') calls.push([this._onmessage, this, ev]);
          } else {
            calls.push([l, this, ev]);
          }
        }
        return calls;
      }
      postMessage(data) {
        const other = this._other;
        if (!other || this._closed) return;
        if (other._started) other._post(data); else other._queue.push(data);
      }
    }
    class MessageChannel {
      constructor() {
        this.port1 = new MessagePort();
        this.port2 = new MessagePort();
        this.port1._other = this.port2;
        this.port2._other = this.port1;
      }
    }
    def('MessageChannel', MessageChannel);
    def('MessagePort', MessagePort);
  }
  return { inspect, format };
})
