// Where a bearer token rides on a request, as kube-apiserver's request authenticators read it:
// `Authorization: Bearer <t>` (request/bearertoken) and, for browsers that cannot set headers on a WebSocket,
// the Sec-WebSocket-Protocol entry `base64url.bearer.authorization.k8s.io.<base64url(t)>` (request/websocket).

import type { IncomingHttpHeaders } from 'node:http';

export const WEBSOCKET_TOKEN_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';

/** The outcome of looking for a token: none presented, one presented, or one presented that cannot be a token. */
export type TokenLookup = { kind: 'none' } | { kind: 'token'; token: string } | { kind: 'invalid'; reason: string };

const NONE: TokenLookup = { kind: 'none' };

/**
 * bearertoken.Authenticator's parsing: the header is trimmed and split on single spaces into at most three
 * parts; another scheme, or an empty token (`Bearer  x`), counts as no credential at all.
 */
export function bearerTokenFromHeader(headers: IncomingHttpHeaders): TokenLookup {
  const raw = headers.authorization;
  if (raw === undefined) return NONE;
  const auth = raw.trim();
  if (auth === '') return NONE;
  const sp1 = auth.indexOf(' ');
  if (sp1 < 0) return NONE;
  if (auth.slice(0, sp1).toLowerCase() !== 'bearer') return NONE;
  const sp2 = auth.indexOf(' ', sp1 + 1);
  const token = sp2 < 0 ? auth.slice(sp1 + 1) : auth.slice(sp1 + 1, sp2);
  if (token === '') return NONE;
  return { kind: 'token', token };
}

/**
 * websocket.ProtocolAuthenticator's parsing: only on WebSocket upgrades; the first protocol entry with the
 * prefix wins; its remainder must be non-empty unpadded base64url of a non-empty token.
 */
export function bearerTokenFromWebSocketProtocol(headers: IncomingHttpHeaders): TokenLookup {
  const upgrade = headers.upgrade;
  if (upgrade === undefined || upgrade.toLowerCase() !== 'websocket') return NONE;
  const header = headers['sec-websocket-protocol'];
  if (header === undefined || !header.includes(WEBSOCKET_TOKEN_PROTOCOL_PREFIX)) return NONE;
  for (const entry of header.split(',')) {
    const p = entry.trim();
    if (!p.startsWith(WEBSOCKET_TOKEN_PROTOCOL_PREFIX)) continue;
    const encoded = p.slice(WEBSOCKET_TOKEN_PROTOCOL_PREFIX.length);
    if (encoded === '' || !/^[A-Za-z0-9_-]+$/.test(encoded)) {
      return { kind: 'invalid', reason: 'invalid base64.bearer.authorization token encoding' };
    }
    const token = Buffer.from(encoded, 'base64url').toString('utf8');
    if (token === '') return { kind: 'invalid', reason: 'invalid base64.bearer.authorization token' };
    return { kind: 'token', token };
  }
  return NONE;
}
