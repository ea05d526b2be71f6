// The sim's authentication, as kube-apiserver's chain decides who a request is:
//   union(x509, bearer token, WebSocket protocol token), then the authenticated-group adder, then anonymous
//   behind FailOnError (pkg/kubeapiserver/authenticator/config.go).
// FailOnError is why a *bad* credential gives 401 even when anonymous access is on: the union's error stops the
// chain before anonymous is asked ("don't consider a bad bearer token or invalid username/password combination
// anonymous"). Only a request that presents no credential at all becomes system:anonymous.

import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED, type UserInfo } from '../../src/api/user.js';

export interface AuthnOptions {
  /** Bearer token -> user, like a --token-auth-file. */
  tokens: Map<string, UserInfo>;
  allowAnonymous: boolean;
}

/** authentication.kubernetes.io/credential-id, set by the x509 authenticator since 1.32. */
export const CREDENTIAL_ID_KEY = 'authentication.kubernetes.io/credential-id';
/** Subject attribute for the user's UID (AllowParsingUserUIDFromCertAuth, beta and on in 1.33). */
export const CERT_UID_OID = '1.3.6.1.4.1.57683.2';

const OID_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const OID_ANY_EKU = '2.5.29.37.0';
const WS_TOKEN_PREFIX = 'base64url.bearer.authorization.k8s.io.';

type Outcome = { user: UserInfo } | 'none' | 'error';

/**
 * Who made the request, or null for 401 Unauthorized: a credential was presented and was bad (unknown token,
 * unverified client certificate), or nothing was presented and anonymous access is off.
 */
export function authenticate(req: IncomingMessage, opts: AuthnOptions): UserInfo | null {
  // The union keeps trying after an error: a bad certificate next to a good token authenticates by the token.
  let failed = false;
  let outcome = fromClientCert(req);
  if (outcome === 'error') failed = true;
  else if (outcome !== 'none') return withAuthenticatedGroup(outcome.user);
  outcome = fromBearerToken(req, opts.tokens);
  if (outcome === 'error') failed = true;
  else if (outcome !== 'none') return withAuthenticatedGroup(outcome.user);
  outcome = fromWebSocketProtocol(req, opts.tokens);
  if (outcome === 'error') failed = true;
  else if (outcome !== 'none') return withAuthenticatedGroup(outcome.user);
  if (failed || !opts.allowAnonymous) return null;
  return { username: SYSTEM_ANONYMOUS, groups: [SYSTEM_UNAUTHENTICATED] };
}

/** group.AuthenticatedGroupAdder: system:authenticated unless the user already says (un)authenticated. */
function withAuthenticatedGroup(u: UserInfo): UserInfo {
  if (u.username === SYSTEM_ANONYMOUS) return u;
  if (u.groups.includes(SYSTEM_AUTHENTICATED) || u.groups.includes(SYSTEM_UNAUTHENTICATED)) return u;
  return { ...u, groups: [...u.groups, SYSTEM_AUTHENTICATED] };
}

/**
 * x509.Authenticator with CommonNameUserConversion. The server runs with requestCert and without
 * rejectUnauthorized, so Node hands us unverified certificates too: those fail the way Go's chain verification
 * fails (an error, hence 401), as does a certificate whose extended key usage excludes client auth.
 */
function fromClientCert(req: IncomingMessage): Outcome {
  const socket = req.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return 'none';
  const cert = socket.getPeerCertificate(false) as PeerCertificate | undefined;
  if (!cert || !cert.raw || cert.raw.length === 0) return 'none';
  if (!socket.authorized) return 'error';
  const eku = cert.ext_key_usage;
  if (eku && eku.length > 0 && !eku.includes(OID_CLIENT_AUTH) && !eku.includes(OID_ANY_EKU)) return 'error';

  // pkix.Name keeps the last CN when there are several.
  const cn = lastValue(cert.subject?.CN);
  if (!cn) return 'none';
  const user: UserInfo = {
    username: cn,
    groups: allValues(cert.subject?.O),
    extra: { [CREDENTIAL_ID_KEY]: ['X509SHA256=' + createHash('sha256').update(cert.raw).digest('hex')] },
  };
  const uid = firstValue((cert.subject as unknown as Record<string, string | string[] | undefined>)?.[CERT_UID_OID]);
  if (uid) user.uid = uid;
  return { user };
}

/**
 * bearertoken.Authenticator: `Authorization: Bearer <token>`. Any other scheme, or an empty token, is "no
 * credential"; an unknown token is an error ("invalid bearer token").
 */
function fromBearerToken(req: IncomingMessage, tokens: Map<string, UserInfo>): Outcome {
  const auth = (req.headers.authorization ?? '').trim();
  if (auth === '') return 'none';
  const parts = splitN(auth, ' ', 3);
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer') return 'none';
  const token = parts[1]!;
  if (token === '') return 'none';
  const user = tokens.get(token);
  return user ? { user: copyUser(user) } : 'error';
}

/**
 * websocket.ProtocolAuthenticator: browsers cannot set headers on WebSocket requests, so the token rides in
 * Sec-WebSocket-Protocol as base64url.bearer.authorization.k8s.io.<base64url(token)>.
 */
function fromWebSocketProtocol(req: IncomingMessage, tokens: Map<string, UserInfo>): Outcome {
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return 'none';
  const header = req.headers['sec-websocket-protocol'];
  if (!header) return 'none';
  const protocols = (Array.isArray(header) ? header.join(',') : header).split(',').map((p) => p.trim());
  const found = protocols.find((p) => p.startsWith(WS_TOKEN_PREFIX));
  if (found === undefined) return 'none';
  const encoded = found.slice(WS_TOKEN_PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return 'error';
  const token = Buffer.from(encoded, 'base64url').toString('utf8');
  if (token === '') return 'error';
  const user = tokens.get(token);
  return user ? { user: copyUser(user) } : 'error';
}

function copyUser(u: UserInfo): UserInfo {
  const c: UserInfo = { username: u.username, groups: [...u.groups] };
  if (u.uid) c.uid = u.uid;
  if (u.extra) c.extra = Object.fromEntries(Object.entries(u.extra).map(([k, v]) => [k, [...v]]));
  return c;
}

/** strings.SplitN. */
function splitN(s: string, sep: string, n: number): string[] {
  const out: string[] = [];
  let rest = s;
  while (out.length < n - 1) {
    const i = rest.indexOf(sep);
    if (i < 0) break;
    out.push(rest.slice(0, i));
    rest = rest.slice(i + sep.length);
  }
  out.push(rest);
  return out;
}

function firstValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function lastValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[v.length - 1] : v;
}

function allValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? [...v] : [v];
}
