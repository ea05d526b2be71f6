// Who is calling the gateway, decided the way kube-apiserver's authentication chain decides it
// (pkg/kubeapiserver/authenticator/config.go):
//   union(x509 client certificate, Authorization bearer token, WebSocket protocol token), where tokens go to
//   union(static token file, OIDC issuers); then system:authenticated is added.
// The union keeps going after a failure, so a bad certificate next to a good token authenticates by the token;
// but when nothing succeeded and something failed, the request is a 401 even if anonymous access is on
// (FailOnError: a bad credential is never treated as no credential). Only a request that presents nothing
// returns null, and the chain then decides between anonymousUser() and 401.

import type { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { newUnauthorized } from '../api/status.js';
import { SYSTEM_ANONYMOUS, SYSTEM_UNAUTHENTICATED, type UserInfo } from '../api/user.js';
import { bearerTokenFromHeader, bearerTokenFromWebSocketProtocol, type TokenLookup } from './bearer.js';
import { withAuthenticatedGroup } from './group.js';
import { newOidcAuthenticator, untrustedIssuer, type OidcAuthenticator, type OidcIssuerConfig, type TokenOutcome } from './oidc.js';
import { newRevocationChecker, type RevocationChecker } from './revocation.js';
import { loadTokenFile } from './tokenfile.js';
import { HistogramVec } from '../metrics/vec.js';
import { authenticateClientCert, clientCertificateNotAfter, stampConnection, type ClientCAs } from './x509.js';

export type { OidcIssuerConfig } from './oidc.js';

/** The authentication section of the gateway config: authentication.{anonymous.enabled, x509.enabled, oidc[], tokenFile}. */
export interface AuthnConfig {
  anonymous: boolean;
  x509: boolean;
  oidc: OidcIssuerConfig[];
  tokenFile?: string;
  /** Client certificates listed in crlFile (CRLs signed by a CA of clientCAFile) are refused; reloaded on change. */
  revocation?: { crlFile: string; clientCAFile: string };
}

export interface Authenticator {
  /**
   * The caller, with system:authenticated; null when the request presents no credential at all (the caller
   * then applies the anonymous setting). Throws a 401 StatusError when a credential was presented and none
   * was good. The returned user is frozen: it may be shared with other requests.
   */
  authenticate(req: IncomingMessage | Http2ServerRequest): Promise<UserInfo | null>;
  /**
   * The client CA bundle the listener verifies handshakes with, at start and at each reload: a client certificate
   * on a connection made under an earlier bundle is checked against this one at its next request, as kube verifies
   * every request.
   */
  setClientCAs(anchors: readonly X509Certificate[], context?: object): void;
  /**
   * A TLS connection the listener accepted, with the secure context its handshake used (the listener picks it when
   * the TCP connection comes, so a handshake under way during a reload was verified with the bundle before).
   */
  connectionAccepted(socket: object, context?: object): void;
  close(): void;
}

export interface AuthenticatorOptions {
  /** Failure reasons go here at debug level (never tokens), issuer discovery failures at error level. */
  log?: Logger;
  /** Where the revocation list's metrics are registered. */
  registry?: Registry;
}

/** The user kube-apiserver gives requests without credentials when --anonymous-auth is on. */
export function anonymousUser(): UserInfo {
  return { username: SYSTEM_ANONYMOUS, groups: [SYSTEM_UNAUTHENTICATED] };
}

/** Bundles remembered for connections whose secure context is not known. */
const RECENT_BUNDLES = 8;

function sameCertificates(a: readonly X509Certificate[], b: readonly X509Certificate[]): boolean {
  return a.length === b.length && a.every((c, i) => c.raw.equals(b[i]!.raw));
}

export async function newAuthenticator(cfg: AuthnConfig, opts: AuthenticatorOptions = {}): Promise<Authenticator> {
  const log = opts.log;

  const staticTokens = new Map<string, Readonly<UserInfo>>();
  if (cfg.tokenFile !== undefined && cfg.tokenFile !== '') {
    const table = await loadTokenFile(cfg.tokenFile);
    for (const w of table.warnings) log?.warn(w.message);
    for (const [token, user] of table.tokens) staticTokens.set(token, withAuthenticatedGroup(user));
  }

  const revocation: RevocationChecker | undefined =
    cfg.x509 && cfg.revocation ? await newRevocationChecker({ ...cfg.revocation, ...(log ? { log } : {}), ...(opts.registry ? { registry: opts.registry } : {}) }) : undefined;

  const issuers = new Map<string, OidcAuthenticator>();
  try {
    for (const c of cfg.oidc) {
      if (issuers.has(c.issuer)) throw new Error(`oidc: issuer ${JSON.stringify(c.issuer)} is configured more than once`);
      issuers.set(c.issuer, await newOidcAuthenticator(c, {
        onInitError: (issuer, err) => log?.error({ issuer, err: err.message }, 'oidc authenticator: initializing plugin failed'),
      }));
    }
  } catch (err) {
    for (const a of issuers.values()) a.close();
    revocation?.close();
    throw err;
  }

  /** union(token file, OIDC): the first that knows the token decides; nobody knowing it is an error too. */
  async function authenticateToken(token: string): Promise<TokenOutcome> {
    const fromFile = staticTokens.get(token);
    if (fromFile !== undefined) return { kind: 'user', user: fromFile };
    if (issuers.size > 0) {
      const iss = untrustedIssuer(token);
      const oidc = iss === undefined ? undefined : issuers.get(iss);
      if (oidc !== undefined) {
        const r = await oidc.authenticateToken(token);
        if (r.kind !== 'none') return r;
      }
    }
    // bearertoken.Authenticator: a token nobody claimed is not "no credential".
    return { kind: 'error', reason: 'invalid bearer token' };
  }

  async function fromLookup(lookup: TokenLookup): Promise<TokenOutcome> {
    if (lookup.kind === 'none') return lookup;
    if (lookup.kind === 'invalid') return { kind: 'error', reason: lookup.reason };
    return authenticateToken(lookup.token);
  }

  // kube-apiserver's: the time left on each client certificate presented, which kube-prometheus alerts on
  // (KubeClientCertificateExpiration) to find clients about to lose access.
  const expiration = opts.registry
    ? new HistogramVec({
        name: 'apiserver_client_certificate_expiration_seconds',
        help: 'Distribution of the remaining lifetime on the certificate used to authenticate a request.',
        buckets: [0, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 345600, 604800, 2592000, 7776000, 15552000, 31104000],
        registers: [opts.registry],
      }).labels()
    : undefined;

  let clientCAs: ClientCAs | undefined;
  // The bundle each of the listener's secure contexts verifies with, and the last few bundles (a connection whose
  // context is not known is checked at its first request, none of their certificates vouching).
  const bundleOfContext = new WeakMap<object, ClientCAs>();
  const recentBundles: ClientCAs[] = [];

  return {
    async authenticate(req) {
      let failures: string[] | undefined;
      if (cfg.x509) {
        const r = authenticateClientCert(req, clientCAs);
        if (expiration !== undefined) {
          // Any certificate presented, verified or not, as kube's x509 authenticator observes it before verifying.
          const notAfter = clientCertificateNotAfter(req);
          if (notAfter !== undefined) expiration.observe((notAfter - Date.now()) / 1000);
        }
        if (r.kind === 'user') {
          if (revocation === undefined || !revocation.isRevoked(r.cert.serial, r.cert.der)) return r.user;
          (failures ??= []).push(`verifying certificate ${r.cert.id} failed: the certificate has been revoked`);
        } else if (r.kind === 'error') {
          (failures ??= []).push(r.reason);
        }
      }
      const headers = req.headers;
      let r = await fromLookup(bearerTokenFromHeader(headers));
      if (r.kind === 'user') return r.user;
      if (r.kind === 'error') (failures ??= []).push(r.reason);
      r = await fromLookup(bearerTokenFromWebSocketProtocol(headers));
      if (r.kind === 'user') return r.user;
      if (r.kind === 'error') (failures ??= []).push(r.reason);

      if (failures === undefined) return null;
      log?.debug({ reason: failures.length === 1 ? failures[0] : `[${failures.join(', ')}]` }, 'Unable to authenticate the request');
      throw newUnauthorized();
    },
    setClientCAs(anchors, context) {
      // The same certificates (a reload of the serving certificate alone) are the same bundle: open connections are
      // not checked again for nothing, which a resumed session's partial chain could fail.
      if (clientCAs === undefined || !sameCertificates(clientCAs.anchors, anchors)) {
        clientCAs = { generation: (clientCAs?.generation ?? 0) + 1, anchors };
        recentBundles.push(clientCAs);
        if (recentBundles.length > RECENT_BUNDLES) recentBundles.shift();
      }
      if (context !== undefined) bundleOfContext.set(context, clientCAs);
    },
    connectionAccepted(socket, context) {
      const known = context === undefined ? undefined : bundleOfContext.get(context);
      stampConnection(socket, known ?? (clientCAs && { generation: 0, anchors: recentBundles.flatMap((b) => b.anchors) }));
    },
    close() {
      for (const a of issuers.values()) a.close();
      revocation?.close();
    },
  };
}
