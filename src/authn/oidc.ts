// OIDC ID tokens as kube-apiserver's JWT authenticator checks them (k8s.io/apiserver/plugin/pkg/authenticator/
// token/oidc with go-oidc v2's verifier), configured like the --oidc-* flags:
//   - a token is this issuer's only if its (unverified) "iss" is exactly the issuer URL; otherwise the issuer
//     stays silent and another authenticator may take it;
//   - signature by a key from the issuer's discovery document (jwks_uri) or a local JWKS file, algorithms
//     RS/ES/PS 256/384/512 (never "none" or HMAC);
//   - "aud" must contain one of the audiences; "exp" is required and checked without leeway; "nbf", when
//     present, may be up to one minute in the future (go-oidc v2's leeway);
//   - username from usernameClaim with the flag's prefix rules, email_verified honoured for "email";
//     groups from a string or an array claim, each prefixed; requiredClaims must be equal strings.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { LRUCache } from 'lru-cache';
import { Agent, fetch as undiciFetch } from 'undici';
import type { UserInfo } from '../api/user.js';
import { withAuthenticatedGroup } from './group.js';

/** One trusted issuer; mirrors the gateway config's authentication.oidc[] entries. */
export interface OidcIssuerConfig {
  /** Issuer URL (https), compared byte for byte with the token's "iss" and the discovery document's "issuer". */
  issuer: string;
  /** The token's "aud" must contain at least one of these. */
  audiences: string[];
  /** A JWKS JSON file to verify with instead of fetching the issuer's discovery document. */
  jwksFile?: string;
  /** PEM bundle trusted for the issuer's TLS (discovery and JWKS); system roots otherwise. Unused with jwksFile. */
  caFile?: string;
  /** Claim holding the user name; "sub" when empty. */
  usernameClaim: string;
  /** --oidc-username-prefix: unset means "<issuer>#" unless the claim is "email"; "-" means none. */
  usernamePrefix?: string;
  groupsClaim?: string;
  groupsPrefix?: string;
  /** --oidc-required-claim: each claim must be present and equal to this string. */
  requiredClaims?: Record<string, string>;
}

export type TokenOutcome =
  | { kind: 'none' }
  | { kind: 'user'; user: Readonly<UserInfo> }
  | { kind: 'error'; reason: string };

export interface OidcAuthenticator {
  readonly issuer: string;
  /** Verifies a token whose unverified "iss" is this issuer (see untrustedIssuer). */
  authenticateToken(token: string): Promise<TokenOutcome>;
  close(): void;
}

export interface OidcOptions {
  /** Where discovery failures go (kube-apiserver logs them as errors and keeps retrying). */
  onInitError?: (issuer: string, err: Error) => void;
  /** Time between discovery attempts after a failure; kube-apiserver polls every 10s. */
  retryIntervalMs?: number;
}

/** oidc.allowedSigningAlgs. */
export const SIGNING_ALGORITHMS: readonly string[] = [
  'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512',
];

const WELL_KNOWN = '/.well-known/openid-configuration';
const GOOGLE_ISSUER = 'https://accounts.google.com';
const GOOGLE_ISSUER_NO_SCHEME = 'accounts.google.com';
// go-oidc v2: a token may be used up to a minute before its nbf (clock skew between issuer and us).
const NBF_LEEWAY_SECONDS = 60;
const FETCH_TIMEOUT_MS = 10_000;
// cached_token_authenticator in front of kube-apiserver's token authenticators keeps successes for 10s.
const CACHE_TTL_MS = 10_000;
const CACHE_MAX = 4096;

const NOT_HANDLED: TokenOutcome = { kind: 'none' };

/**
 * The token's "iss" without verifying anything, or undefined when the token is not a compact JWT whose payload
 * has a string "iss" (oidc.untrustedIssuer). Used only to pick which issuer gets to verify the token.
 */
export function untrustedIssuer(token: string): string | undefined {
  if (token.trimStart().startsWith('{')) return undefined;
  const d1 = token.indexOf('.');
  if (d1 < 0) return undefined;
  const d2 = token.indexOf('.', d1 + 1);
  if (d2 < 0 || token.indexOf('.', d2 + 1) >= 0) return undefined;
  const payloadB64 = token.slice(d1 + 1, d2);
  // base64.RawURLEncoding: URL alphabet, no padding.
  if (!/^[A-Za-z0-9_-]*$/.test(payloadB64) || payloadB64.length % 4 === 1) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payloadB64, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) return undefined;
  const iss = (claims as Record<string, unknown>).iss;
  if (iss === undefined) return '';
  if (typeof iss !== 'string') return undefined;
  return iss === GOOGLE_ISSUER_NO_SCHEME ? GOOGLE_ISSUER : iss;
}

/** The prefix --oidc-username-prefix ends up as (pkg/kubeapiserver/options/authentication.go). */
export function effectiveUsernamePrefix(cfg: Pick<OidcIssuerConfig, 'issuer' | 'usernameClaim' | 'usernamePrefix'>): string {
  const claim = cfg.usernameClaim || 'sub';
  if (cfg.usernamePrefix === '-') return '';
  if (cfg.usernamePrefix === undefined || cfg.usernamePrefix === '') return claim === 'email' ? '' : cfg.issuer + '#';
  return cfg.usernamePrefix;
}

export async function newOidcAuthenticator(cfg: OidcIssuerConfig, opts: OidcOptions = {}): Promise<OidcAuthenticator> {
  validateConfig(cfg);
  const issuer = cfg.issuer;
  const usernameClaim = cfg.usernameClaim || 'sub';
  const usernamePrefix = effectiveUsernamePrefix(cfg);
  const groupsClaim = cfg.groupsClaim ?? '';
  const groupsPrefix = cfg.groupsPrefix ?? '';
  const requiredClaims = Object.entries(cfg.requiredClaims ?? {});
  const audiences = [...new Set(cfg.audiences)];
  const verifyOptions = {
    issuer: issuer === GOOGLE_ISSUER ? [GOOGLE_ISSUER, GOOGLE_ISSUER_NO_SCHEME] : issuer,
    audience: audiences,
    algorithms: [...SIGNING_ALGORITHMS],
    // jose applies one tolerance to exp and nbf; we want nbf's leeway only and check exp ourselves below.
    clockTolerance: NBF_LEEWAY_SECONDS,
    requiredClaims: ['exp'],
  };

  const cache = new LRUCache<string, Readonly<UserInfo>>({ max: CACHE_MAX, ttl: CACHE_TTL_MS });
  let keySet: JWTVerifyGetKey | undefined;
  let pending: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let agent: Agent | undefined;

  if (cfg.jwksFile !== undefined) {
    // Like a KeySet handed to oidc.New: synchronous, no discovery; the file is the whole truth.
    const jwks = JSON.parse(await readFile(cfg.jwksFile, 'utf8')) as JSONWebKeySet;
    if (!jwks || !Array.isArray(jwks.keys)) throw new Error(`oidc: ${cfg.jwksFile}: not a JWKS (no "keys" array)`);
    keySet = createLocalJWKSet(jwks);
  } else {
    if (cfg.caFile !== undefined) agent = new Agent({ connect: { ca: await readFile(cfg.caFile, 'utf8') } });
    const retryMs = opts.retryIntervalMs ?? 10_000;
    const attempt = (): void => {
      pending = discover(issuer, agent).then(
        (ks) => {
          if (!closed) keySet = ks;
        },
        (err: Error) => {
          if (closed) return;
          opts.onInitError?.(issuer, err);
          retryTimer = setTimeout(attempt, retryMs);
          retryTimer.unref();
        },
      ).finally(() => {
        pending = undefined;
      });
    };
    attempt();
  }

  async function authenticateToken(token: string): Promise<TokenOutcome> {
    const key = createHash('sha256').update(token).digest('base64');
    const hit = cache.get(key);
    if (hit !== undefined) return { kind: 'user', user: hit };

    if (keySet === undefined && pending !== undefined) await pending;
    if (keySet === undefined) return { kind: 'error', reason: 'oidc: authenticator not initialized' };

    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySet, verifyOptions));
    } catch (err) {
      return { kind: 'error', reason: `oidc: verify token: ${verifyFailure(err, audiences)}` };
    }
    const exp = payload.exp!;
    const nowMs = Date.now();
    if (exp * 1000 < nowMs) {
      return { kind: 'error', reason: `oidc: verify token: oidc: token is expired (Token Expiry: ${new Date(exp * 1000).toISOString()})` };
    }

    const claims = payload as Record<string, unknown>;
    const username = claims[usernameClaim];
    if (username === undefined) return { kind: 'error', reason: `oidc: parse username claims "${usernameClaim}": claim not present` };
    if (typeof username !== 'string') {
      return { kind: 'error', reason: `oidc: parse username claims "${usernameClaim}": json: cannot unmarshal ${jsonType(username)} into Go value of type string` };
    }
    if (usernameClaim === 'email' && 'email_verified' in claims) {
      const verified = claims.email_verified;
      if (typeof verified !== 'boolean') {
        return { kind: 'error', reason: `oidc: parse 'email_verified' claim: json: cannot unmarshal ${jsonType(verified)} into Go value of type bool` };
      }
      if (!verified) return { kind: 'error', reason: 'oidc: email not verified' };
    }

    let groups: string[] = [];
    if (groupsClaim !== '' && groupsClaim in claims) {
      const g = claims[groupsClaim];
      if (typeof g === 'string') groups = [g];
      else if (Array.isArray(g) && g.every((x) => typeof x === 'string')) groups = [...(g as string[])];
      else if (g !== null) return { kind: 'error', reason: `oidc: parse groups claim "${groupsClaim}": json: cannot unmarshal ${jsonType(g)} into Go value of type string` };
      if (groupsPrefix !== '') groups = groups.map((x) => groupsPrefix + x);
    }

    for (const [claim, want] of requiredClaims) {
      if (!(claim in claims)) return { kind: 'error', reason: `oidc: required claim ${claim} not present in ID token` };
      const got = claims[claim];
      if (typeof got !== 'string') {
        return { kind: 'error', reason: `oidc: parse claim ${claim}: json: cannot unmarshal ${jsonType(got)} into Go value of type string` };
      }
      if (got !== want) return { kind: 'error', reason: `oidc: required claim ${claim} value does not match. Got = ${got}, want = ${want}` };
    }

    const user = withAuthenticatedGroup({ username: usernamePrefix + username, groups });
    // Never serve a cached identity past the token's own expiry.
    const ttl = Math.min(CACHE_TTL_MS, exp * 1000 - nowMs);
    if (ttl > 0) cache.set(key, user, { ttl });
    return { kind: 'user', user };
  }

  return {
    issuer,
    authenticateToken,
    close() {
      closed = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      cache.clear();
      void agent?.close();
    },
  };
}

/** oidc.NewProvider: fetch the discovery document, insist on the same issuer, then use its jwks_uri. */
async function discover(issuer: string, agent: Agent | undefined): Promise<JWTVerifyGetKey> {
  const fetchImpl = (url: string | URL, init: Record<string, unknown> = {}): Promise<Response> =>
    undiciFetch(url, { ...init, ...(agent ? { dispatcher: agent } : {}) } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;

  const wellKnown = issuer.replace(/\/+$/, '') + WELL_KNOWN;
  const res = await fetchImpl(wellKnown, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${res.status} ${res.statusText}: ${body}`);
  let doc: { issuer?: unknown; jwks_uri?: unknown };
  try {
    doc = JSON.parse(body);
  } catch (err) {
    throw new Error(`oidc: failed to decode provider discovery object: ${(err as Error).message}`);
  }
  if (doc.issuer !== issuer) {
    throw new Error(`oidc: issuer did not match the issuer returned by provider, expected "${issuer}" got "${String(doc.issuer)}"`);
  }
  if (typeof doc.jwks_uri !== 'string' || doc.jwks_uri === '') throw new Error('oidc: provider discovery object has no jwks_uri');
  return createRemoteJWKSet(new URL(doc.jwks_uri), {
    timeoutDuration: FETCH_TIMEOUT_MS,
    [customFetch]: fetchImpl as never,
  });
}

function validateConfig(cfg: OidcIssuerConfig): void {
  let url: URL;
  try {
    url = new URL(cfg.issuer);
  } catch {
    throw new Error(`oidc: issuer ${JSON.stringify(cfg.issuer)} is not a valid URL`);
  }
  if (url.protocol !== 'https:') throw new Error(`oidc: issuer ${JSON.stringify(cfg.issuer)}: URL scheme must be https`);
  if (url.username || url.password) throw new Error(`oidc: issuer ${JSON.stringify(cfg.issuer)}: URL must not contain a username or password`);
  if (url.search || url.hash) throw new Error(`oidc: issuer ${JSON.stringify(cfg.issuer)}: URL must not contain a query or fragment`);
  if (!Array.isArray(cfg.audiences) || cfg.audiences.length === 0) throw new Error(`oidc: issuer ${cfg.issuer}: at least one audience is required`);
  if (cfg.audiences.some((a) => typeof a !== 'string' || a === '')) throw new Error(`oidc: issuer ${cfg.issuer}: audiences must be non-empty strings`);
}

/** jose's verdict in go-oidc's words, for the debug log (clients only ever see "Unauthorized"). */
function verifyFailure(err: unknown, audiences: string[]): string {
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    const payload = err.payload as Record<string, unknown>;
    switch (err.claim) {
      case 'aud':
        return `oidc: expected audience in ${JSON.stringify(audiences)} got ${JSON.stringify(payload.aud ?? [])}`;
      case 'iss':
        return `oidc: id token issued by a different provider, got ${JSON.stringify(payload.iss)}`;
      case 'nbf':
        return `oidc: current time ${new Date().toISOString()} before the nbf (not before) time: ${new Date(Number(payload.nbf) * 1000).toISOString()}`;
      case 'exp':
        // Missing "exp" parses as the zero time in go-oidc, so it is reported as expired.
        return 'oidc: token is expired (Token Expiry: 0001-01-01 00:00:00 +0000 UTC)';
    }
    return `oidc: ${err.message}`;
  }
  if (err instanceof joseErrors.JWTExpired) return `oidc: token is expired (Token Expiry: ${new Date(Number((err.payload as JWTPayload).exp) * 1000).toISOString()})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return `oidc: id token signed with unsupported algorithm, expected ${JSON.stringify(SIGNING_ALGORITHMS)}`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'failed to verify signature: failed to verify id token signature';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'failed to verify signature: no key in the issuer\'s key set matches the token';
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return `oidc: malformed jwt: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** encoding/json's name for a JSON value's type in "cannot unmarshal X into ..." errors. */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'bool';
    default:
      return 'object';
  }
}
