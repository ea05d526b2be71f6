// JSON read as bytes, without building values: the grammar JSON.parse accepts, checked byte by byte, and a cursor
// over an object's members. The cache takes in members' list pages this way (src/cache/intake.ts): finding each
// pod's bounds and the few fields it needs costs a tenth of JSON.parse and JSON.stringify, and the pod's bytes are
// copied rather than rebuilt.
//
// Only the syntax is checked here. UTF-8 validity is the caller's (buffer.isUtf8 over the whole input), as is
// what to do with whitespace between tokens (skipped here; `spaced` says whether any was met).

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/** Set by every whitespace skip that skipped something: compact input never sets it. */
export let spaced = false;
/**
 * Set by a number that may be beyond a double (integer digits plus exponent 300 or more): JSON.parse makes
 * it Infinity, which JSON.stringify writes as null, so its bytes as they are would not say what a parse says.
 */
export let hugeNumbers = false;

/** Clears spaced and hugeNumbers before a scan. */
export function resetSpaced(): void {
  spaced = false;
  hugeNumbers = false;
}

function fail(b: Uint8Array, i: number, what: string): never {
  throw new SyntaxError(i >= b.length ? `JSON: unexpected end of input (${what})` : `JSON: unexpected byte 0x${b[i].toString(16).padStart(2, '0')} at ${i} (${what})`);
}

/** The first index at or after i that is not JSON whitespace. */
export function skipSpace(b: Uint8Array, i: number): number {
  const start = i;
  while (isSpace(b[i])) i++;
  if (i !== start) spaced = true;
  return i;
}

/** Whether c is a JSON whitespace byte. */
export function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Set by skipString: whether the string held an escape. */
let escaped = false;

// The bytes being read when their values were checked beforehand (src/api/jsonscan.ts): a string or container at i
// then ends at (indexEnds[i - indexBase] & 0x7fffffff) + indexBase (a string with an escape has the top bit set),
// read instead of scanned.
let indexed: Uint8Array | undefined;
const NO_ENDS = new Int32Array(0);
let indexEnds: Int32Array = NO_ENDS;
let indexBase = 0;

/**
 * Until dropIndex, strings and containers of b are skipped by a JSONMirror's ends (of these very bytes, whose copy
 * starts at b's byte base) instead of being checked byte by byte: b must be read only within values the mirror has
 * checked, and only at the starts of their values.
 */
export function useIndex(b: Uint8Array, ends: Int32Array, base = 0): void {
  indexed = b;
  indexEnds = ends;
  indexBase = base;
}

export function dropIndex(): void {
  indexed = undefined;
  indexEnds = NO_ENDS;
  indexBase = 0;
}

function isHex(c: number): boolean {
  return (c >= ZERO && c <= NINE) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

// Bytes that end a plain run in a string: the quote, the backslash and control characters.
const STRING_STOP = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_STOP[c] = 1;
STRING_STOP[QUOTE] = 1;
STRING_STOP[BACKSLASH] = 1;

/** b[i] is a quote: the index after the string's closing quote. */
function skipString(b: Uint8Array, i: number): number {
  if (b === indexed) {
    const e = indexEnds[i - indexBase];
    escaped = e < 0;
    return (e & 0x7fffffff) + indexBase;
  }
  const n = b.length;
  escaped = false;
  i++;
  for (;;) {
    // Four bytes a step while none ends the run: most of a pod's bytes are in strings.
    while (i + 4 <= n && (STRING_STOP[b[i]] | STRING_STOP[b[i + 1]] | STRING_STOP[b[i + 2]] | STRING_STOP[b[i + 3]]) === 0) i += 4;
    while (i < n && STRING_STOP[b[i]] === 0) i++;
    if (i >= n) fail(b, i, 'in a string');
    const c = b[i];
    if (c === QUOTE) return i + 1;
    if (c === BACKSLASH) {
      escaped = true;
      const e = b[i + 1];
      if (e === 0x75) {
        if (!(isHex(b[i + 2]) && isHex(b[i + 3]) && isHex(b[i + 4]) && isHex(b[i + 5]))) fail(b, i + 2, 'in a \\u escape');
        i += 6;
      } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i += 2;
      } else {
        fail(b, i + 1, 'in an escape');
      }
    } else {
      fail(b, i, 'a control character in a string');
    }
  }
}

function skipDigits(b: Uint8Array, i: number): number {
  while (b[i] >= ZERO && b[i] <= NINE) i++;
  return i;
}

/** b[i] starts a number (a minus or a digit): the index after it. */
function skipNumber(b: Uint8Array, i: number): number {
  if (b[i] === MINUS) i++;
  const intStart = i;
  if (b[i] === ZERO) i++;
  else if (b[i] >= 0x31 && b[i] <= NINE) i = skipDigits(b, i + 1);
  else fail(b, i, 'in a number');
  // The magnitude's order: integer digits plus a positive exponent (a tiny number parses as 0, as its bytes do).
  let order = i - intStart;
  if (b[i] === 0x2e) {
    if (!(b[i + 1] >= ZERO && b[i + 1] <= NINE)) fail(b, i + 1, 'a fraction needs a digit');
    i = skipDigits(b, i + 1);
  }
  if (b[i] === 0x65 || b[i] === 0x45) {
    i++;
    const negative = b[i] === MINUS;
    if (b[i] === 0x2b || negative) i++;
    if (!(b[i] >= ZERO && b[i] <= NINE)) fail(b, i, 'an exponent needs a digit');
    let exponent = 0;
    for (; b[i] >= ZERO && b[i] <= NINE; i++) if (exponent < 1e6) exponent = exponent * 10 + b[i] - ZERO;
    if (!negative) order += exponent;
  }
  if (order >= 300) hugeNumbers = true;
  return i;
}

function skipLiteral(b: Uint8Array, i: number, word: string): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) fail(b, i + k, `in ${word}`);
  return i + word.length;
}

/** After an object's opening brace (and space): a key, its colon and the space before its value. */
function skipKey(b: Uint8Array, i: number): number {
  if (b[i] !== QUOTE) fail(b, i, 'a key');
  i = skipString(b, i);
  if (b[i] !== COLON) {
    i = skipSpace(b, i);
    if (b[i] !== COLON) fail(b, i, 'a colon after a key');
  }
  i++;
  return isSpace(b[i]) ? skipSpace(b, i) : i;
}

/** Open containers while a value is skipped, innermost last (the opening byte of each): shared, as skipValue runs
 * to its end without calling out, and grown for deep input. */
let openStack = new Uint8Array(64);

/**
 * Checks the JSON value that starts exactly at i and returns the index after it; throws SyntaxError where
 * JSON.parse would. Nesting is kept on a stack of its own, so depth is bounded by memory, not the call stack.
 */
export function skipValue(b: Uint8Array, i: number): number {
  if (b === indexed) {
    const c = b[i];
    if (c === QUOTE || c === OPEN_OBJECT || c === OPEN_ARRAY) return (indexEnds[i - indexBase] & 0x7fffffff) + indexBase;
  }
  let depth = 0;
  for (;;) {
    // A value at i.
    const c = b[i];
    if (c === QUOTE) {
      i = skipString(b, i);
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      i++;
      if (isSpace(b[i])) i = skipSpace(b, i);
      // The closing byte is the opening one + 2, for both.
      if (b[i] === c + 2) {
        i++;
      } else {
        if (depth === openStack.length) {
          const grown = new Uint8Array(depth * 2);
          grown.set(openStack);
          openStack = grown;
        }
        openStack[depth++] = c;
        if (c === OPEN_OBJECT) i = skipKey(b, i);
        continue;
      }
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      i = skipNumber(b, i);
    } else if (c === 0x74) {
      i = skipLiteral(b, i, 'true');
    } else if (c === 0x66) {
      i = skipLiteral(b, i, 'false');
    } else if (c === 0x6e) {
      i = skipLiteral(b, i, 'null');
    } else {
      fail(b, i, 'a value');
    }
    // After a value: the next one in its container, or the containers it closes.
    for (;;) {
      if (depth === 0) return i;
      if (isSpace(b[i])) i = skipSpace(b, i);
      const d = b[i];
      const open = openStack[depth - 1];
      if (d === COMMA) {
        i++;
        if (isSpace(b[i])) i = skipSpace(b, i);
        if (open === OPEN_OBJECT) i = skipKey(b, i);
        break;
      }
      if (d === open + 2) {
        depth--;
        i++;
        continue;
      }
      fail(b, i, open === OPEN_OBJECT ? 'a comma or } in an object' : 'a comma or ] in an array');
    }
  }
}

/** Whether b is one JSON value, with only whitespace around it: what JSON.parse accepts (its UTF-8 aside). */
export function isJSON(b: Uint8Array): boolean {
  try {
    const i = skipValue(b, skipSpace(b, 0));
    return skipSpace(b, i) === b.length;
  } catch (e) {
    if (e instanceof SyntaxError) return false;
    throw e;
  }
}

/**
 * The members of one JSON object, in order. After next() returns true, the key is b[keyStart, keyEnd) (inside its
 * quotes; keyEscaped when it holds an escape, so its bytes are not its value) and the value begins at valueStart.
 * The caller either leaves the value to the next next(), which checks and skips it, or reads it with another
 * cursor (open at valueStart) and then calls skipped(that cursor's end). valueEnd is known once the value is past.
 */
export class MemberCursor {
  b: Uint8Array = new Uint8Array(0);
  /** The index after the closing brace, once next() has returned false. */
  end = 0;
  keyStart = 0;
  keyEnd = 0;
  /**
   * keyEnd - keyStart. Hot readers compare it before calling keyIs: a reader too large for V8 to inline keyIs into
   * (the intake's addPod) otherwise pays a call for every candidate name of every member, mostly to differ in length.
   */
  keyLength = 0;
  keyEscaped = false;
  valueStart = 0;
  valueEnd = 0;
  /** Where the previous member ended (its value's end), or the opening brace + 1: a comma before this key is there. */
  memberBoundary = 0;
  private pos = 0;
  private first = true;
  private pending = false;

  /** Starts at the object whose opening brace is b[i]. */
  open(b: Uint8Array, i: number): this {
    if (b[i] !== OPEN_OBJECT) fail(b, i, 'an object');
    this.b = b;
    this.pos = skipSpace(b, i + 1);
    this.memberBoundary = i + 1;
    this.first = true;
    this.pending = false;
    this.end = 0;
    return this;
  }

  /** The value at valueStart was read elsewhere and ends at end. */
  skipped(end: number): void {
    this.valueEnd = end;
    this.pos = end;
    this.pending = false;
  }

  /** The value at valueStart, checked and skipped; returns its end. */
  skip(): number {
    if (this.pending) this.skipped(skipValue(this.b, this.valueStart));
    return this.valueEnd;
  }

  next(): boolean {
    const b = this.b;
    if (this.pending) this.skip();
    let i = this.pos;
    if (this.first) {
      this.first = false;
      if (b[i] === CLOSE_OBJECT) {
        this.end = i + 1;
        return false;
      }
    } else {
      this.memberBoundary = i;
      if (isSpace(b[i])) i = skipSpace(b, i);
      if (b[i] === CLOSE_OBJECT) {
        this.end = i + 1;
        return false;
      }
      if (b[i] !== COMMA) fail(b, i, 'a comma or } in an object');
      i++;
      if (isSpace(b[i])) i = skipSpace(b, i);
    }
    if (b[i] !== QUOTE) fail(b, i, 'a key');
    this.keyStart = i + 1;
    i = skipString(b, i);
    this.keyEnd = i - 1;
    this.keyLength = i - 1 - this.keyStart;
    this.keyEscaped = escaped;
    if (isSpace(b[i])) i = skipSpace(b, i);
    if (b[i] !== COLON) fail(b, i, 'a colon after a key');
    i++;
    this.valueStart = isSpace(b[i]) ? skipSpace(b, i) : i;
    this.pending = true;
    return true;
  }

  /** Whether the current key is name (ASCII, compared byte by byte; an escaped key never is). */
  keyIs(name: string): boolean {
    const n = name.length;
    if (this.keyLength !== n || this.keyEscaped) return false;
    const b = this.b;
    const k = this.keyStart;
    for (let j = 0; j < n; j++) if (b[k + j] !== name.charCodeAt(j)) return false;
    return true;
  }

  /** The value is a string: checks and skips it, and says whether it held an escape. */
  stringValue(): boolean {
    this.skipped(skipString(this.b, this.valueStart));
    return escaped;
  }
}

/**
 * Where metadata.<key>'s value is in an object's JSON: b[start, end), quotes included for a string; undefined when
 * the object has no such member, or a key on the way is escaped (then only a parse tells). Reads up to that member
 * and skips the values before it, so for metadata, which comes first, it reads a few hundred bytes of an object.
 */
export function metadataMember(b: Uint8Array, key: string): [number, number] | undefined {
  const top = new MemberCursor().open(b, skipSpace(b, 0));
  while (top.next()) {
    if (top.keyEscaped) return undefined;
    if (!top.keyIs('metadata')) continue;
    if (b[top.valueStart] !== OPEN_OBJECT) return undefined;
    const m = new MemberCursor().open(b, top.valueStart);
    while (m.next()) {
      if (m.keyEscaped) return undefined;
      if (m.keyIs(key)) return [m.valueStart, m.skip()];
    }
    return undefined;
  }
  return undefined;
}

/** b[start, end) is a JSON string (quotes included): its value. */
export function stringAt(b: Buffer, start: number, end: number, hasEscape: boolean): string {
  return hasEscape ? (JSON.parse(b.toString('utf8', start, end)) as string) : b.toString('utf8', start + 1, end - 1);
}
