// Client-certificate authentication, as k8s.io/apiserver/pkg/authentication/request/x509 with
// CommonNameUserConversion: CN is the user name, each O a group, the optional UID attribute the uid, and the
// certificate's SHA-256 the credential id (1.32+).
//
// The gateway's TLS server asks for a certificate (requestCert) but does not reject unverified ones
// (rejectUnauthorized: false): Go's server does the same and lets the authenticator fail the request with 401,
// which is what clients expect, instead of a TLS alert. Node has already verified the chain against the
// gateway's client CA by then; `socket.authorized` is that verdict. kube-apiserver verifies the chain against its
// client CA bundle as it is at each request, so a connection made before the bundle was reloaded (a CA taken out)
// is checked again against the new bundle (ClientCAs), once per connection and bundle.

import { createHash, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { DetailedPeerCertificate, PeerCertificate, TLSSocket } from 'node:tls';
import type { UserInfo } from '../api/user.js';
import { withAuthenticatedGroup } from './group.js';

/** authentication.kubernetes.io/credential-id: which credential authenticated the user (1.32+). */
export const CREDENTIAL_ID_EXTRA = 'authentication.kubernetes.io/credential-id';
/** Subject attribute carrying the user's UID (AllowParsingUserUIDFromCertAuth, on by default since 1.33). */
export const CERT_UID_OID = '1.3.6.1.4.1.57683.2';

const OID_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const OID_ANY_EKU = '2.5.29.37.0';

/**
 * `user` already carries system:authenticated and is frozen (it is shared by every request on the connection);
 * `cert` is what the revocation list is checked against on every request.
 */
export type X509Outcome =
  | { kind: 'none' }
  | { kind: 'user'; user: Readonly<UserInfo>; cert: VerifiedCertificate }
  | { kind: 'error'; reason: string };

export interface VerifiedCertificate {
  /** Hex, as node prints it. */
  serial: string;
  der: Buffer;
  /** For messages: x509.go's certificateIdentifier. */
  id: string;
}

const NONE: X509Outcome = { kind: 'none' };

// The peer certificate cannot change within a TLS connection, and kubectl keeps connections alive: decide once
// per connection instead of hashing the certificate on every request. Time can pass the chain's validity on a
// connection, though (and a resumed TLS session brings back the handshake's verdict): kube-apiserver verifies the
// chain on every request, so its validity window is checked on every request here.
interface Decided {
  outcome: X509Outcome;
  /** When every certificate of the chain is valid, in ms since the epoch (only for a user outcome). */
  notBefore: number;
  notAfter: number;
  /** The chain the handshake verified, leaf first (DER). */
  chain: Buffer[];
  /** The client CA bundle (its generation) the chain was last checked against, and the verdict. */
  checkedAgainst: number;
  trusted: boolean;
}
const byConnection = new WeakMap<object, Decided>();

/** The client CA bundle the listener verifies handshakes with now; each reload is a new generation. */
export interface ClientCAs {
  generation: number;
  anchors: readonly X509Certificate[];
}

/** A PEM bundle's certificates as a new generation after `previous`. */
export function clientCAsFrom(pem: string | Buffer, previous?: ClientCAs): ClientCAs {
  const anchors: X509Certificate[] = [];
  for (const m of String(pem).matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)) anchors.push(new X509Certificate(m[0]));
  return { generation: (previous?.generation ?? 0) + 1, anchors };
}

export function authenticateClientCert(req: IncomingMessage | Http2ServerRequest, cas?: ClientCAs): X509Outcome {
  const socket = tlsSocketOf(req);
  if (socket === undefined) return NONE;
  let d = byConnection.get(socket);
  if (d === undefined) {
    d = decided(socket);
    byConnection.set(socket, d);
  }
  if (d.outcome.kind === 'user') {
    const now = Date.now();
    if (now < d.notBefore || now > d.notAfter) {
      const bound = now > d.notAfter ? `after ${goTime(d.notAfter)}` : `before ${goTime(d.notBefore)}`;
      return { kind: 'error', reason: `verifying certificate ${d.outcome.cert.id} failed: x509: certificate has expired or is not yet valid: current time ${goTime(now)} is ${bound}` };
    }
    if (cas !== undefined && d.checkedAgainst !== cas.generation) {
      d.trusted = trustedBy(d.chain, cas.anchors);
      d.checkedAgainst = cas.generation;
    }
    if (!d.trusted) return { kind: 'error', reason: `verifying certificate ${d.outcome.cert.id} failed: x509: certificate signed by unknown authority` };
  }
  return d.outcome;
}

function decided(socket: Partial<TLSSocket>): Decided {
  const outcome = decide(socket);
  if (outcome.kind !== 'user') return { outcome, notBefore: -Infinity, notAfter: Infinity, chain: [], checkedAgainst: 0, trusted: true };
  // The leaf and the certificates above it that the handshake verified (node links the chain; a root links to itself).
  let notBefore = -Infinity;
  let notAfter = Infinity;
  const chain: Buffer[] = [];
  const seen = new Set<PeerCertificate>();
  for (let c = socket.getPeerCertificate!(true) as DetailedPeerCertificate | null; c && c.raw && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    chain.push(c.raw);
    notBefore = Math.max(notBefore, Date.parse(c.valid_from));
    notAfter = Math.min(notAfter, Date.parse(c.valid_to));
  }
  // A date node could not print or we could not read: the handshake's verdict stands, as before. The handshake was
  // checked against some bundle: the first request checks the chain against the one in force (checkedAgainst 0).
  return { outcome, notBefore: Number.isNaN(notBefore) ? -Infinity : notBefore, notAfter: Number.isNaN(notAfter) ? Infinity : notAfter, chain, checkedAgainst: 0, trusted: true };
}

/**
 * Whether the bundle still vouches for the chain the handshake verified: one of its certificates is in the bundle, or
 * was issued by a certificate in it (a CA renewed with the same key still verifies what the old one signed, as Go's
 * pool finds it).
 */
function trustedBy(chain: readonly Buffer[], anchors: readonly X509Certificate[]): boolean {
  for (const raw of chain) for (const a of anchors) if (a.raw.equals(raw)) return true;
  for (const raw of chain) {
    let c: X509Certificate;
    try {
      c = new X509Certificate(raw);
    } catch {
      continue;
    }
    for (const a of anchors) if (c.issuer === a.subject && c.checkIssued(a) && c.verify(a.publicKey)) return true;
  }
  return false;
}

/** As Go prints a time.Time in UTC: 2006-01-02T15:04:05Z. */
function goTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The connection's TLS socket; for HTTP/2 the session's (stable per connection), not the per-stream proxy. */
function tlsSocketOf(req: IncomingMessage | Http2ServerRequest): Partial<TLSSocket> | undefined {
  const stream = (req as Http2ServerRequest).stream as Http2ServerRequest['stream'] | undefined;
  const socket = (stream?.session?.socket ?? req.socket) as Partial<TLSSocket> | undefined | null;
  if (!socket || typeof socket.getPeerCertificate !== 'function') return undefined;
  return socket;
}

function decide(socket: Partial<TLSSocket>): X509Outcome {
  // Without a client certificate node returns an empty object (or null once the socket is gone).
  const cert = socket.getPeerCertificate!(false) as PeerCertificate | null;
  if (!cert || !cert.raw || cert.raw.length === 0) return NONE;
  if (!socket.authorized) {
    const why = socket.authorizationError ?? 'certificate not verified';
    return { kind: 'error', reason: `verifying certificate ${certificateIdentifier(cert)} failed: ${errorText(why)}` };
  }
  // Go verifies with KeyUsages [ClientAuth]; a certificate that names other usages only is refused.
  const eku = cert.ext_key_usage;
  if (eku && eku.length > 0 && !eku.includes(OID_CLIENT_AUTH) && !eku.includes(OID_ANY_EKU)) {
    return {
      kind: 'error',
      reason: `verifying certificate ${certificateIdentifier(cert)} failed: x509: certificate specifies an incompatible key usage`,
    };
  }

  const subject = (cert.subject ?? {}) as unknown as Record<string, string | string[] | undefined>;
  // pkix.Name keeps the last CN when a subject has several.
  const cn = lastValue(subject.CN);
  if (!cn) return NONE;

  const uids = allValues(subject[CERT_UID_OID]);
  if (uids.length > 1) return { kind: 'error', reason: `expected 1 UID, but found multiple: [${uids.join(' ')}]` };
  if (uids.length === 1 && uids[0] === '') return { kind: 'error', reason: 'UID cannot be an empty string' };

  const user: UserInfo = {
    username: cn,
    groups: allValues(subject.O),
    extra: { [CREDENTIAL_ID_EXTRA]: ['X509SHA256=' + createHash('sha256').update(cert.raw).digest('hex')] },
  };
  if (uids.length === 1) user.uid = uids[0];
  return { kind: 'user', user: withAuthenticatedGroup(user), cert: { serial: cert.serialNumber, der: cert.raw, id: certificateIdentifier(cert) } };
}

/** x509.go's certificateIdentifier, for log lines: serial in decimal, key ids in hex. */
function certificateIdentifier(cert: PeerCertificate): string {
  let sn = '';
  try {
    sn = BigInt('0x' + cert.serialNumber).toString(10);
  } catch {
    sn = cert.serialNumber ?? '';
  }
  return `SN=${sn}`;
}

function errorText(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    return code ? `${code}: ${e.message}` : e.message;
  }
  return String(e);
}

function lastValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[v.length - 1] : v;
}

function allValues(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? [...v] : [v];
}
