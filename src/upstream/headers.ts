// Which headers cross the gateway, in each direction. The caller's credentials and any identity claims it makes
// never reach the upstream: the gateway authenticates as itself and states who the caller is with Impersonate-*.

import type { IncomingHttpHeaders } from 'node:http';
import { newInternalError } from '../api/status.js';
import { isDeepFrozen, SERVICE_ACCOUNT_USER_PREFIX, SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED, type UserInfo } from '../api/user.js';
import type { Request } from '../server/context.js';
import type { Upstream } from './client.js';

/** RFC 9110 §7.6.1 connection-specific fields, plus the pre-standard ones proxies still meet. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Request headers the gateway replaces or must not pass: credentials (Authorization; the WebSocket bearer
 * subprotocol is handled separately), identity claims (Impersonate-*, and the front-proxy X-Remote-* in case the
 * gateway's client certificate is ever trusted as a request-header authenticator), and the ones it sets itself.
 */
function droppedRequestHeader(name: string): boolean {
  if (HOP_BY_HOP.has(name)) return true;
  switch (name) {
    case 'authorization':
    case 'host':
    case 'content-length': // set by the caller of requestHeaders when the body is streamed unchanged
    case 'expect': // undici refuses it; kube clients never send 100-continue
    case 'audit-id':
    case 'x-forwarded-for':
    case 'x-remote-user':
    case 'x-remote-group':
    case 'x-remote-uid':
      return true;
  }
  return name.startsWith('impersonate-') || name.startsWith('x-remote-extra-') || name.charCodeAt(0) === 58 /* ':' */;
}

/** The names a Connection header lists are hop-by-hop too (RFC 9110 §7.6.1). */
function connectionTokens(value: string | string[] | undefined): Set<string> | null {
  if (value === undefined) return null;
  const out = new Set<string>();
  for (const v of Array.isArray(value) ? value : [value]) {
    // Most requests list one token ("keep-alive"): split only when there are more (V8 splits in its runtime).
    if (!v.includes(',')) {
      const n = v.trim().toLowerCase();
      if (n) out.add(n);
      continue;
    }
    for (const t of v.split(',')) {
      const n = t.trim().toLowerCase();
      if (n) out.add(n);
    }
  }
  return out;
}

export interface RequestHeaderOptions {
  auditID: string;
  impersonate?: UserInfo;
  /** Keep the client's Content-Length: the body goes upstream byte for byte. */
  keepContentLength: boolean;
  /** Replace Accept (discovery narrows it to what it can filter). */
  accept?: string;
  /** Leave out these lower-case names as well. */
  omit?: ReadonlySet<string>;
  /** An upgrade tunnel: keep Upgrade and send `Connection: Upgrade`. */
  upgrade?: boolean;
}

/**
 * The headers for the upstream request, as a flat [name, value, ...] list (undici's cheapest form, and the only
 * one that keeps repeated fields apart). Values keep Node's latin1 decoding, so bytes go out exactly as they came.
 */
export function requestHeaders(up: Upstream, req: Request, o: RequestHeaderOptions): string[] {
  const raw = req.rawHeaders;
  const listed = connectionTokens(req.headers.connection);
  const out: string[] = [];
  let xff = '';
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (name === 'x-forwarded-for') {
      xff = xff ? `${xff}, ${value}` : value;
      continue;
    }
    if (name === 'content-length' && o.keepContentLength) {
      out.push(name, value);
      continue;
    }
    if (name === 'upgrade' && o.upgrade) {
      out.push(name, value);
      continue;
    }
    if (droppedRequestHeader(name) || (listed !== null && listed.has(name))) continue;
    if (o.omit?.has(name)) continue;
    if (name === 'accept' && o.accept !== undefined) continue;
    if (name === 'sec-websocket-protocol') {
      const kept = withoutBearerSubprotocol(value);
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    out.push(name, value);
  }
  if (o.upgrade) out.push('connection', 'Upgrade');
  if (o.accept !== undefined) out.push('accept', o.accept);
  // kube-apiserver records X-Forwarded-For as the audit event's sourceIPs, the real client first.
  const peer = clientAddress(req);
  if (peer) xff = xff ? `${xff}, ${peer}` : peer;
  if (xff) out.push('x-forwarded-for', xff);
  out.push('audit-id', o.auditID);
  if (up.authHeader) out.push('authorization', up.authHeader);
  if (o.impersonate) appendImpersonation(out, o.impersonate);
  return out;
}

function clientAddress(req: Request): string {
  const a = req.socket?.remoteAddress ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

/** Response headers the client gets: everything but the connection-specific fields (fatal on HTTP/2). */
export function responseHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const listed = connectionTokens(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined || HOP_BY_HOP.has(name) || (listed !== null && listed.has(name))) continue;
    // The gateway's own flow control classified this request; the upstream's classification is its business.
    if (name.startsWith('x-kubernetes-pf-')) continue;
    out[name] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Impersonation.

/**
 * Impersonate-User, -Uid, one -Group per group and one -Extra-<key> per extra value, for the caller.
 *
 * system:authenticated and system:unauthenticated are left out where that changes nothing, as Karmada's cluster
 * proxy does (SkipGroup): kube-apiserver's impersonation filter adds system:authenticated to every impersonated
 * user but system:anonymous (who gets system:unauthenticated) unless one of them was sent, so the result is
 * identical and the upstream runs one "impersonate groups" authorization check fewer per request.
 */
export function impersonationHeaders(user: UserInfo): Record<string, string | string[]> {
  const flat: string[] = [];
  appendImpersonation(flat, user);
  const out: Record<string, string | string[]> = {};
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i]!;
    const prev = out[name];
    if (prev === undefined) out[name] = flat[i + 1]!;
    else if (Array.isArray(prev)) prev.push(flat[i + 1]!);
    else out[name] = [prev, flat[i + 1]!];
  }
  return out;
}

// A frozen UserInfo is one connection's or token's for good (isDeepFrozen): its headers are worked out once, not
// for every forwarded request (a client certificate's credential-id extra alone is ~80 bytes to escape and check).
const impersonationOf = new WeakMap<UserInfo, readonly string[]>();

export function appendImpersonation(out: string[], user: UserInfo): void {
  let flat = impersonationOf.get(user);
  if (flat === undefined) {
    const made: string[] = [];
    impersonationFields(made, user);
    if (isDeepFrozen(user)) impersonationOf.set(user, made);
    flat = made;
  }
  for (let i = 0; i < flat.length; i++) out.push(flat[i]!);
}

function impersonationFields(out: string[], user: UserInfo): void {
  // Without Impersonate-User the upstream would run the request as the gateway itself.
  if (!user.username) throw newInternalError('cannot forward a request for a user with an empty name');
  out.push('impersonate-user', headerValue(user.username, 'user name'));
  if (user.uid) out.push('impersonate-uid', headerValue(user.uid, 'uid'));
  // Left out where the upstream's filter adds them back (see impersonationHeaders), and only there: a user in
  // system:unauthenticated would be given system:authenticated, and a name shaped like a service account's sent
  // with no group at all gets the service-account groups (system:serviceaccounts and its namespace's), which a
  // client certificate or a token naming such a user never had.
  const anonymous = user.username === SYSTEM_ANONYMOUS;
  let keepAuthenticated = anonymous || user.groups.includes(SYSTEM_UNAUTHENTICATED);
  if (!keepAuthenticated && user.username.startsWith(SERVICE_ACCOUNT_USER_PREFIX)) {
    keepAuthenticated = !user.groups.some((g) => g !== SYSTEM_AUTHENTICATED && g !== SYSTEM_UNAUTHENTICATED);
  }
  for (const g of user.groups) {
    if (g === SYSTEM_AUTHENTICATED && !keepAuthenticated) continue;
    if (g === SYSTEM_UNAUTHENTICATED && anonymous) continue;
    out.push('impersonate-group', headerValue(g, 'group'));
  }
  if (user.extra) {
    for (const key in user.extra) {
      const name = 'impersonate-extra-' + extraKeyEscape(key);
      for (const v of user.extra[key]!) out.push(name, headerValue(v, `extra ${JSON.stringify(key)} value`));
    }
  }
}

/**
 * Go servers read header bytes as UTF-8 while Node writes header strings as latin1, so non-ASCII text goes out
 * as its UTF-8 bytes, one latin1 character each. Control characters cannot be sent at all; changing the value
 * instead would impersonate someone else.
 */
function headerValue(s: string, what: string): string {
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) {
      throw newInternalError(`cannot impersonate a ${what} containing control characters`);
    }
    if (c > 0x7e) ascii = false;
  }
  return ascii ? s : Buffer.from(s, 'utf8').toString('latin1');
}

/**
 * The extra key as a header-name suffix. client-go's headerKeyEscape %-encodes every byte that is not an HTTP
 * token character, and '%'. We also encode upper-case letters: the impersonation filter lower-cases the suffix
 * before unescaping it, so this is the only way a key such as "example.com/Team" arrives unchanged.
 */
export function extraKeyEscape(key: string): string {
  let plain = true;
  for (let i = 0; i < key.length; i++) {
    if (!plainKeyByte(key.charCodeAt(i))) {
      plain = false;
      break;
    }
  }
  if (plain) return key;
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    out += plainKeyByte(b) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** RFC 9110 token characters, minus '%' (escape marker) and A-Z (lost to lower-casing). */
function plainKeyByte(b: number): boolean {
  if (b >= 0x61 && b <= 0x7a) return true; // a-z
  if (b >= 0x30 && b <= 0x39) return true; // 0-9
  switch (b) {
    case 0x21: // !
    case 0x23: // #
    case 0x24: // $
    case 0x26: // &
    case 0x27: // '
    case 0x2a: // *
    case 0x2b: // +
    case 0x2d: // -
    case 0x2e: // .
    case 0x5e: // ^
    case 0x5f: // _
    case 0x60: // `
    case 0x7c: // |
    case 0x7e: // ~
      return true;
  }
  return false;
}

/**
 * Sec-WebSocket-Protocol without the caller's `base64url.bearer.authorization.k8s.io.<token>` entry (how
 * browsers send a token on a WebSocket); undefined when nothing else is left.
 */
export function withoutBearerSubprotocol(value: string): string | undefined {
  if (!value.includes(BEARER_PROTOCOL_PREFIX)) return value;
  const kept = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '' && !p.startsWith(BEARER_PROTOCOL_PREFIX));
  return kept.length > 0 ? kept.join(',') : undefined;
}

export const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';
