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
  /** The chain node gives for the connection, leaf first (DER): what the client sent, and issuers from the bundle. */
  chain: Buffer[];
  /** The client CA bundle (its generation) the chain was last vouched for by, and the verdict. */
  checkedAgainst: number;
  trusted: boolean;
  /** When the client's own certificate expires, ms since the epoch; undefined when it sent none. */
  leafNotAfter: number | undefined;
}
const byConnection = new WeakMap<object, Decided>();

/** The client CA bundle the listener verifies handshakes with; each reload is a new generation. */
export interface ClientCAs {
  generation: number;
  anchors: readonly X509Certificate[];
}

/** The bundle a connection's handshake was verified with, stamped on its socket when it is accepted. */
const ACCEPTED_UNDER = Symbol('fleetgate.clientCAs');

/**
 * Records that the connection's handshake was verified with cas (the listener's bundle as it accepted it). Only a
 * later bundle makes its certificate be checked again; a resumed session, whose chain node no longer has in full, is
 * one of the bundle it was made under (each reloaded context has ticket keys of its own).
 */
export function stampConnection(socket: object, cas: ClientCAs | undefined): void {
  if (cas !== undefined) (socket as { [ACCEPTED_UNDER]?: ClientCAs })[ACCEPTED_UNDER] = cas;
}

export function authenticateClientCert(req: IncomingMessage | Http2ServerRequest, cas?: ClientCAs): X509Outcome {
  const socket = tlsSocketOf(req);
  if (socket === undefined) return NONE;
  let d = byConnection.get(socket);
  if (d === undefined) {
    d = decided(socket, cas);
    byConnection.set(socket, d);
  }
  if (d.outcome.kind === 'user') {
    if (cas !== undefined && d.checkedAgainst !== cas.generation) {
      // The bundle changed since the connection was made: is there still a path from the leaf to one of its anchors?
      const path = pathToAnchor(d.chain, cas.anchors, acceptedUnder(socket)?.anchors ?? []);
      d.trusted = path !== undefined;
      if (path) {
        d.notBefore = path.notBefore;
        d.notAfter = path.notAfter;
      }
      d.checkedAgainst = cas.generation;
    }
    if (!d.trusted) return { kind: 'error', reason: `verifying certificate ${d.outcome.cert.id} failed: x509: certificate signed by unknown authority` };
    const now = Date.now();
    if (now < d.notBefore || now > d.notAfter) {
      const bound = now > d.notAfter ? `after ${goTime(d.notAfter)}` : `before ${goTime(d.notBefore)}`;
      return { kind: 'error', reason: `verifying certificate ${d.outcome.cert.id} failed: x509: certificate has expired or is not yet valid: current time ${goTime(now)} is ${bound}` };
    }
  }
  return d.outcome;
}

function acceptedUnder(socket: object): ClientCAs | undefined {
  // For HTTP/2 this is the session's socket proxy, which reads through to the socket that was stamped.
  return (socket as { [ACCEPTED_UNDER]?: ClientCAs })[ACCEPTED_UNDER];
}

function decided(socket: Partial<TLSSocket>, cas: ClientCAs | undefined): Decided {
  // Without a client certificate node returns an empty object (or null once the socket is gone).
  const leaf = socket.getPeerCertificate!(false) as PeerCertificate | null;
  const cert = leaf && leaf.raw && leaf.raw.length > 0 ? leaf : undefined;
  const outcome = decide(socket, cert);
  // Checked already against the bundle the handshake used; a connection with no stamp (none was accepted through
  // the listener's hook) against the one in force.
  const checkedAgainst = acceptedUnder(socket)?.generation ?? cas?.generation ?? 0;
  // The client's own certificate's expiry, verified or not (undefined when node cannot say).
  const expiry = cert ? Date.parse(cert.valid_to) : NaN;
  const leafNotAfter = Number.isNaN(expiry) ? undefined : expiry;
  if (outcome.kind !== 'user') return { outcome, notBefore: -Infinity, notAfter: Infinity, chain: [], checkedAgainst, trusted: true, leafNotAfter };
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
  // A date node could not print or we could not read: the handshake's verdict stands, as before.
  return { outcome, notBefore: Number.isNaN(notBefore) ? -Infinity : notBefore, notAfter: Number.isNaN(notAfter) ? Infinity : notAfter, chain, checkedAgainst, trusted: true, leafNotAfter };
}

/**
 * When the client certificate of req's connection expires (ms since the epoch), once authenticateClientCert has
 * looked at it; undefined without one. kube-apiserver observes the time left on every request that presents one,
 * whether or not it verifies (apiserver_client_certificate_expiration_seconds).
 */
export function clientCertificateNotAfter(req: IncomingMessage | Http2ServerRequest): number | undefined {
  const socket = tlsSocketOf(req);
  return socket === undefined ? undefined : byConnection.get(socket)?.leafNotAfter;
}

/** Chains longer than this are not followed (Go's Verify stops at a depth as well). */
const MAX_PATH = 8;

/**
 * A path from the leaf to a currently valid anchor of the bundle, each step an issuer by name and signature, as
 * Go's Verify builds one: through certificates the client sent (node's chain, less what it added from the bundle the
 * connection was made under: a certificate taken out of the bundle must not vouch for anything) up to a certificate
 * an anchor signed. Its validity window, or undefined when there is none.
 */
function pathToAnchor(chain: readonly Buffer[], anchors: readonly X509Certificate[], earlier: readonly X509Certificate[]): { notBefore: number; notAfter: number } | undefined {
  if (chain.length === 0) return undefined;
  const now = Date.now();
  let certs: X509Certificate[];
  try {
    certs = chain.map((raw) => new X509Certificate(raw));
  } catch {
    return undefined;
  }
  const sent = certs.slice(1).filter((c) => !earlier.some((a) => a.raw.equals(c.raw)));
  let cur = certs[0]!;
  let notBefore = Date.parse(cur.validFrom);
  let notAfter = Date.parse(cur.validTo);
  for (let depth = 0; depth < MAX_PATH; depth++) {
    for (const a of anchors) {
      const from = Date.parse(a.validFrom);
      const to = Date.parse(a.validTo);
      if (now < from || now > to) continue;
      if (cur.checkIssued(a) && cur.verify(a.publicKey)) return { notBefore: Math.max(notBefore, from), notAfter: Math.min(notAfter, to) };
    }
    const next = sent.find((c) => c !== cur && cur.checkIssued(c) && cur.verify(c.publicKey));
    if (next === undefined) return undefined;
    notBefore = Math.max(notBefore, Date.parse(next.validFrom));
    notAfter = Math.min(notAfter, Date.parse(next.validTo));
    cur = next;
  }
  return undefined;
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

/** The connection's outcome; cert: the certificate the client sent, if any. */
function decide(socket: Partial<TLSSocket>, cert: PeerCertificate | undefined): X509Outcome {
  if (cert === undefined) return NONE;
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
