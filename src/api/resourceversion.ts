// Resource versions and continue tokens as k8s.io/apiserver/pkg/storage handles them: decimal uint64 versions
// (APIObjectVersioner), base64url JSON continue tokens (storage/continue.go), and the errors for stale or
// future versions (storage/errors.go, etcd3/errors.go, cacher/watch_cache.go).

import { goJson, goQuote, newBadRequest, newResourceExpired, newTimeoutError, StatusError, type Status } from './status.js';

const DIGITS = /^[0-9]+$/;
const UINT64_MAX = 2n ** 64n - 1n;

/**
 * APIObjectVersioner.ParseResourceVersion: '' and '0' are 0; anything else must be a decimal uint64. Garbage gets
 * what a real kube-apiserver answers today: a 500 with no reason (storage.InvalidError is not an API status, see
 * kubernetes#101350/#139485) and message `resourceVersion: Invalid value: "x": strconv.ParseUint: ...`.
 * Versions above Number.MAX_SAFE_INTEGER but within uint64 return Infinity: newer than anything we will ever
 * have, which callers turn into "Too large resource version".
 */
export function parseResourceVersion(rv: string): number {
  if (rv === '' || rv === '0') return 0;
  if (!DIGITS.test(rv)) throw invalidResourceVersion(rv, 'invalid syntax');
  if (rv.length <= 15) return Number(rv);
  const big = BigInt(rv);
  if (big > UINT64_MAX) throw invalidResourceVersion(rv, 'value out of range');
  return big > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(big);
}

function invalidResourceVersion(rv: string, why: string): StatusError {
  const q = goQuote(rv);
  const message = `resourceVersion: Invalid value: ${q}: strconv.ParseUint: parsing ${q}: ${why}`;
  const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code: 500 };
  return new StatusError(s);
}

// ---------------------------------------------------------------------------------------------------------------
// Continue tokens

export interface ContinueToken {
  /** The list's resource version; -1 means "continue at the latest version" (an inconsistent continuation). */
  rv: number;
  /** Start key relative to the resource's key prefix, e.g. "ns/name\u0000". */
  start: string;
}

/**
 * storage.EncodeContinue: base64url (unpadded) of {"v":"meta.k8s.io/v1","rv":N,"start":"..."}. `start` is the key
 * to resume at, relative to the resource prefix; the apiserver uses the last returned key + "\u0000". Extra fields
 * (e.g. a fleet cursor) are appended after the standard three and survive a round trip.
 */
export function encodeContinue(rv: number, start: string, extra?: Record<string, unknown>): string {
  let json = `{"v":"meta.k8s.io/v1","rv":${rv},"start":${goJson(start)}`;
  if (extra) {
    for (const k of Object.keys(extra)) {
      if (k === 'v' || k === 'rv' || k === 'start' || extra[k] === undefined) continue;
      json += `,${goJson(k)}:${goJson(extra[k])}`;
    }
  }
  return Buffer.from(json + '}', 'utf8').toString('base64url');
}

const GENERIC_INVALID = 'continue key is not valid';
const BASE64URL_CHAR = /[A-Za-z0-9_-]/;

/** Where Go's base64.RawURLEncoding reports a CorruptInputError, or -1 when the text decodes. */
function base64CorruptAt(s: string): number {
  for (let i = 0; i < s.length; i++) if (!BASE64URL_CHAR.test(s[i]!)) return i;
  // A lone trailing character cannot encode a byte.
  if (s.length % 4 === 1) return s.length - 1;
  return -1;
}

function invalidToken(detail: string): StatusError {
  return newBadRequest(`invalid continue token: ${detail}`);
}

/** What encoding/json says about text that is not a JSON object, as closely as we can cheaply tell. */
function jsonErrorText(text: string, e: unknown, raw?: Buffer): string {
  const t = text.trimStart();
  if (t === '') return 'unexpected end of JSON input';
  const c = t[0]!;
  if (!'{["-0123456789tfn'.includes(c)) {
    // Go's scanner reports the offending byte, not a decoded character.
    const b = raw ? raw[firstNonSpace(raw)] : undefined;
    return `invalid character ${b !== undefined ? goQuoteByte(b) : goCharQuote(c)} looking for beginning of value`;
  }
  if (c !== '{') {
    const kind = c === '[' ? 'array' : c === '"' ? 'string' : c === 't' || c === 'f' ? 'bool' : c === 'n' ? '' : 'number';
    if (kind !== '') return `json: cannot unmarshal ${kind} into Go value of type storage.continueToken`;
  }
  return (e as Error)?.message ?? 'invalid JSON';
}

function firstNonSpace(raw: Buffer): number {
  let i = 0;
  while (i < raw.length && (raw[i] === 0x20 || raw[i] === 0x09 || raw[i] === 0x0a || raw[i] === 0x0d)) i++;
  return i;
}

/** encoding/json's quoteChar: the byte as a rune (U+0000-U+00FF) through strconv.Quote's escaping. */
function goQuoteByte(b: number): string {
  if (b === 0x27) return "'\\''";
  if (b === 0x22) return `'"'`;
  if (b === 0x5c) return "'\\\\'";
  const named: Record<number, string> = { 7: 'a', 8: 'b', 12: 'f', 10: 'n', 13: 'r', 9: 't', 11: 'v' };
  if (named[b]) return `'\\${named[b]}'`;
  const hex = (n: number, w: number) => n.toString(16).padStart(w, '0');
  if (b < 0x20 || b === 0x7f) return `'\\x${hex(b, 2)}'`;
  // unicode.IsPrint: the C1 controls, no-break space and soft hyphen are not printable.
  if ((b >= 0x80 && b <= 0xa0) || b === 0xad) return `'\\u${hex(b, 4)}'`;
  return `'${String.fromCharCode(b)}'`;
}

function goCharQuote(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '\\') return "'\\\\'";
  return `'${c}'`;
}

/**
 * storage.DecodeContinue, with the 400 the list path wraps it in: `invalid continue token: continue key is not
 * valid: ...`. Returns the token's fields (plus any extra ones it carried).
 */
export function decodeContinue(token: string): ContinueToken & Record<string, unknown> {
  const at = base64CorruptAt(token);
  if (at >= 0) throw invalidToken(`${GENERIC_INVALID}: illegal base64 data at input byte ${at}`);
  const raw = Buffer.from(token, 'base64url');
  const text = raw.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw invalidToken(`${GENERIC_INVALID}: ${jsonErrorText(text, e, raw)}`);
  }
  if (parsed === null) parsed = {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidToken(`${GENERIC_INVALID}: ${jsonErrorText(text, undefined)}`);
  }
  const obj = parsed as Record<string, unknown>;
  const v = obj.v ?? '';
  const rv = obj.rv ?? 0;
  const start = obj.start ?? '';
  if (typeof v !== 'string') throw invalidToken(`${GENERIC_INVALID}: json: cannot unmarshal ${jsonKind(v)} into Go struct field continueToken.v of type string`);
  if (typeof rv !== 'number' || !Number.isInteger(rv)) {
    // encoding/json names the offending literal for numbers ("number 1.5"), only the kind otherwise.
    const what = typeof rv === 'number' ? `number ${rv}` : jsonKind(rv);
    throw invalidToken(`${GENERIC_INVALID}: json: cannot unmarshal ${what} into Go struct field continueToken.rv of type int64`);
  }
  if (typeof start !== 'string') {
    throw invalidToken(`${GENERIC_INVALID}: json: cannot unmarshal ${jsonKind(start)} into Go struct field continueToken.start of type string`);
  }
  if (v !== 'meta.k8s.io/v1') throw invalidToken(`${GENERIC_INVALID}: server does not recognize this encoded version ${v}`);
  if (rv === 0) throw invalidToken(`${GENERIC_INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)`);
  if (start === '') throw invalidToken(`${GENERIC_INVALID}: encoded start key empty (version meta.k8s.io/v1)`);
  // Path traversal defence: the cleaned key must equal the key, or it could escape the resource prefix.
  const key = start.startsWith('/') ? start : '/' + start;
  if (cleanPath(key) !== key) throw invalidToken(`${GENERIC_INVALID}: ${start}`);
  return { ...obj, rv, start: key.slice(1) } as ContinueToken & Record<string, unknown>;
}

function jsonKind(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** path.Clean for a rooted path. */
function cleanPath(p: string): string {
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return '/' + out.join('/');
}

/** A continue page must not also ask for a resourceVersion (other than "0"): 400 as the storage layer says. */
export function checkContinueResourceVersion(resourceVersion: string): void {
  if (resourceVersion !== '' && resourceVersion !== '0') {
    throw newBadRequest('specifying resource version is not allowed when using continue');
  }
}

const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.';
const INCONSISTENT_CONTINUE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without ' +
  'the continue parameter, or use the continue token in this response to retrieve the remainder of the results. ' +
  'Continuing with the provided token results in an inconsistent list - objects that were created, modified, or ' +
  'deleted between the time the first chunk was returned and now may show up in the list.';

/**
 * 410 Expired for a continue token whose snapshot is gone. With `inconsistentStart` (the start key of the stale
 * token) the Status carries metadata.continue, a token at rv -1 that resumes at the latest version, and the
 * "inconsistent list" message; without it, the plain "start a new list" message.
 */
export function expiredContinueError(inconsistentStart?: string): StatusError {
  if (inconsistentStart === undefined) return newResourceExpired(CONTINUE_EXPIRED);
  const err = newResourceExpired(INCONSISTENT_CONTINUE);
  err.status.metadata = { continue: encodeContinue(-1, inconsistentStart) };
  return err;
}

/** 410 Expired for a list at a resourceVersion older than the store keeps (etcd3 `expired`). */
export function expiredListError(): StatusError {
  return newResourceExpired('The resourceVersion for the provided list is too old.');
}

/** 410 Expired `too old resource version: N (M)` (watch cache), sent as a watch ERROR event or a list error. */
export function tooOldResourceVersionError(requested: number, oldest: number): StatusError {
  return newResourceExpired(`too old resource version: ${requested} (${oldest})`);
}

/**
 * storage.NewTooLargeResourceVersionError: 504 Timeout `Too large resource version: N, current: M` with cause
 * ResourceVersionTooLarge; client-go's reflector relists on it. The watch cache uses retryAfterSeconds 1.
 */
export function tooLargeResourceVersionError(requested: number | string, current: number, retryAfterSeconds = 1): StatusError {
  const err = newTimeoutError(`Too large resource version: ${requested}, current: ${current}`, retryAfterSeconds);
  err.status.details = { ...err.status.details, causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] };
  return err;
}
