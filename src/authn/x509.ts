// Client-certificate authentication, as k8s.io/apiserver/pkg/authentication/request/x509 with
// CommonNameUserConversion: CN is the user name, each O a group, the optional UID attribute the uid, and the
// certificate's SHA-256 the credential id (1.32+).
//
// The gateway's TLS server asks for a certificate (requestCert) but does not reject unverified ones
// (rejectUnauthorized: false): Go's server does the same and lets the authenticator fail the request with 401,
// which is what clients expect, instead of a TLS alert. Node has already verified the chain against the
// gateway's client CA by then; `socket.authorized` is that verdict.

import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { PeerCertificate, TLSSocket } from 'node:tls';
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
// per connection instead of hashing the certificate on every request.
const byConnection = new WeakMap<object, X509Outcome>();

export function authenticateClientCert(req: IncomingMessage | Http2ServerRequest): X509Outcome {
  const socket = tlsSocketOf(req);
  if (socket === undefined) return NONE;
  const cached = byConnection.get(socket);
  if (cached !== undefined) return cached;
  const outcome = decide(socket);
  byConnection.set(socket, outcome);
  return outcome;
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
