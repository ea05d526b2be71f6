// Parsing only the parts of an object's JSON that a reader uses. A Table row of a pod reads its status, a few spec
// fields and the number of containers; JSON.parse of the whole object (5 KB, spec.containers alone ~45% of it) was
// most of a row's time. The text is scanned as UTF-8 bytes (every structural character is ASCII), skipping what is
// not asked for, and only the values that are asked for go through JSON.parse: the same values a full parse gives.

/**
 * The parts of a JSON object a reader uses: a key's whole value (true), only the length of an array value
 * ('length': an array of that many empty slots), or some keys of an object value (a nested Projection). A value of
 * another JSON type than the projection expects is parsed whole, as JSON.parse would give it.
 */
export type Projection = { readonly [key: string]: true | 'length' | Projection };

interface Compiled {
  /** By key length, then the key's UTF-8 bytes and what to do with its value. */
  byLength: Map<number, { key: string; bytes: Buffer; then: true | 'length' | Compiled }[]>;
  keys: number;
}

const compiledCache = new WeakMap<Projection, Compiled>();

function compile(p: Projection): Compiled {
  let c = compiledCache.get(p);
  if (c) return c;
  c = { byLength: new Map(), keys: Object.keys(p).length };
  for (const key of Object.keys(p)) {
    const v = p[key]!;
    const bytes = Buffer.from(key, 'utf8');
    let list = c.byLength.get(bytes.length);
    if (!list) c.byLength.set(bytes.length, (list = []));
    list.push({ key, bytes, then: v === true || v === 'length' ? v : compile(v) });
  }
  compiledCache.set(p, c);
  return c;
}

/** The bytes of json: a Buffer view of them (no copy), or the UTF-8 encoding of a string. */
export function jsonBytes(json: string | Uint8Array): Buffer {
  if (typeof json === 'string') return Buffer.from(json, 'utf8');
  return Buffer.isBuffer(json) ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
}

/**
 * JSON.parse(json), keeping only what p names. The result has exactly the named keys the text has (a duplicate
 * key's last value wins, as in JSON.parse); the text must be valid JSON, as stored objects are. With texts, the text
 * of each top-level value named true is recorded there too, under its key (for values embedded again as they are).
 */
export function parseProjected(json: string | Uint8Array, p: Projection, texts?: Record<string, string>): any {
  const b = jsonBytes(json);
  const start = skipSpace(b, 0);
  if (b[start] !== 0x7b /* { */) return JSON.parse(b.toString('utf8'));
  let close = b.length - 1;
  while (close > start && b[close] !== 0x7d /* } */) close--;
  return projectObject(b, start, compile(p), texts, close).value;
}

/**
 * The object that opens at i, projected. `close`, known for the top-level object only, is the index of its closing
 * brace: the last value asked for, when it is asked for whole and comes last in the object, is then parsed without
 * being scanned first (a pod's status, ~30% of it, comes last).
 */
function projectObject(b: Buffer, i: number, c: Compiled, texts: Record<string, string> | undefined, close = -1): { value: any; end: number } {
  const out: Record<string, unknown> = {};
  const n = b.length;
  let found = 0;
  i = skipSpace(b, i + 1);
  if (b[i] === 0x7d /* } */) return { value: out, end: i + 1 };
  while (i < n) {
    // i is at a key's opening quote.
    const keyEnd = stringEnd(b, i);
    const entry = lookup(b, i, keyEnd, c);
    i = skipSpace(b, keyEnd);
    i = skipSpace(b, i + 1); // the colon
    const first = b[i];
    let end: number;
    if (entry) found++;
    if (!entry) {
      end = valueEnd(b, i);
    } else if (entry.then === 'length' && first === 0x5b /* [ */) {
      const a = arrayLength(b, i);
      out[entry.key] = new Array(a.length);
      end = a.end;
    } else if (entry.then !== true && entry.then !== 'length' && first === 0x7b /* { */) {
      const o = projectObject(b, i, entry.then, undefined);
      out[entry.key] = o.value;
      end = o.end;
    } else {
      // The rest up to the closing brace is this value alone only if it comes last: then that text parses, and
      // otherwise (a comma and more keys follow) it does not. Tried for the last key asked for only.
      const last = found === c.keys && close > i ? lastValue(b, i, close) : undefined;
      let text: string;
      if (last) {
        ({ text } = last);
        out[entry.key] = last.value;
        end = close;
      } else {
        end = valueEnd(b, i);
        text = b.toString('utf8', i, end);
        out[entry.key] = JSON.parse(text);
      }
      if (texts && entry.then === true) texts[entry.key] = text;
    }
    i = skipSpace(b, end);
    if (b[i] === 0x2c /* , */) i = skipSpace(b, i + 1);
    else return { value: out, end: i + 1 }; // the closing brace
  }
  return { value: out, end: n };
}

/** b[i, close) (less trailing space) and its value, when it is one JSON value. */
function lastValue(b: Buffer, i: number, close: number): { text: string; value: unknown } | undefined {
  let end = close;
  while (end > i && isSpace(b[end - 1]!)) end--;
  const text = b.toString('utf8', i, end);
  try {
    return { text, value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/** The projection entry for the key whose quoted text is b[start, end), if any. */
function lookup(b: Buffer, start: number, end: number, c: Compiled): { key: string; then: true | 'length' | Compiled } | undefined {
  for (let k = start + 1; k < end - 1; k++) {
    // An escaped key (never written by JSON.stringify for the keys we name) is compared decoded.
    if (b[k] === 0x5c) {
      const key = JSON.parse(b.toString('utf8', start, end)) as string;
      for (const list of c.byLength.values()) for (const e of list) if (e.key === key) return e;
      return undefined;
    }
  }
  const list = c.byLength.get(end - start - 2);
  if (!list) return undefined;
  for (const e of list) {
    const kb = e.bytes;
    let k = 0;
    while (k < kb.length && b[start + 1 + k] === kb[k]) k++;
    if (k === kb.length) return e;
  }
  return undefined;
}

/** The number of elements of the array that opens at i, and the index after it. */
function arrayLength(b: Buffer, i: number): { length: number; end: number } {
  i = skipSpace(b, i + 1);
  if (b[i] === 0x5d /* ] */) return { length: 0, end: i + 1 };
  let length = 0;
  const n = b.length;
  while (i < n) {
    i = skipSpace(b, valueEnd(b, i));
    length++;
    if (b[i] !== 0x2c /* , */) return { length, end: i + 1 };
    i = skipSpace(b, i + 1);
  }
  return { length, end: n };
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Buffer, i: number): number {
  const n = b.length;
  while (i < n && isSpace(b[i]!)) i++;
  return i;
}

/** The index after the closing quote of the string that opens at i. */
function stringEnd(b: Buffer, i: number): number {
  const n = b.length;
  for (i++; i < n; i++) {
    const c = b[i];
    if (c === 0x5c /* \ */) i++;
    else if (c === 0x22 /* " */) return i + 1;
  }
  return n;
}

/** The index after the value that starts at i. */
function valueEnd(b: Buffer, i: number): number {
  const n = b.length;
  const first = b[i];
  if (first === 0x22) return stringEnd(b, i);
  if (first !== 0x7b && first !== 0x5b) {
    // A number, true, false or null: up to the next delimiter.
    while (i < n) {
      const c = b[i]!;
      if (c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  for (; i < n; i++) {
    const c = b[i];
    if (c === 0x22) {
      // Inline string skip: the hot loop of a scan.
      for (i++; i < n; i++) {
        const d = b[i];
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if ((c === 0x7d || c === 0x5d) && --depth === 0) return i + 1;
  }
  return n;
}
