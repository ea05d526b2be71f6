// OIDC bearer tokens against a real HTTPS issuer on 127.0.0.1 (serving certificate from src/pki, trusted through
// caFile): discovery document, JWKS, and tokens signed with jose keys.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type JWK, type JWTPayload } from 'jose';
import type { Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StatusError } from '../../src/api/status.js';
import type { UserInfo } from '../../src/api/user.js';
import { newAuthenticator, type Authenticator, type OidcIssuerConfig } from '../../src/authn/index.js';
import { newOidcAuthenticator, untrustedIssuer } from '../../src/authn/oidc.js';
import { createCA, issueServingCert } from '../../src/pki/index.js';

type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

interface LogLine {
  level: string;
  obj: unknown;
  msg: string;
}

/** A pino-shaped logger that keeps what it is given, to check reasons and that tokens never appear. */
function captureLogger(lines: LogLine[]): Logger {
  const at = (level: string) => (obj: unknown, msg?: string) => lines.push({ level, obj, msg: msg ?? '' });
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
}

function fakeReq(token: string): IncomingMessage {
  return { headers: { authorization: `Bearer ${token}` }, socket: {} } as unknown as IncomingMessage;
}

async function until(cond: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

const now = () => Math.floor(Date.now() / 1000);

describe('OIDC authentication', async () => {
  const ca = await createCA('issuer-ca');
  const serving = await issueServingCert(ca, ['127.0.0.1']);
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const ec = await generateKeyPair('ES256', { extractable: true });
  const impostor = await generateKeyPair('RS256', { extractable: true });
  const jwks: JWK[] = [
    { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
  ];

  let server: Server;
  let base = '';
  let dir = '';
  let caFile = '';
  // Per path prefix: what the discovery endpoint answers (tests break and mend issuers through this).
  const discovery = new Map<string, { status: number; issuer?: string }>();
  const hits: string[] = [];
  const logs: LogLine[] = [];
  let authn: Authenticator;
  const issuer = () => `${base}/main`;

  function sign(claims: JWTPayload, opts: { key?: Key; kid?: string; alg?: string } = {}): Promise<string> {
    const alg = opts.alg ?? 'RS256';
    return new SignJWT(claims)
      .setProtectedHeader({ alg, kid: opts.kid ?? (alg === 'ES256' ? 'ec-1' : 'rsa-1'), typ: 'JWT' })
      .sign(opts.key ?? (alg === 'ES256' ? ec.privateKey : rsa.privateKey));
  }

  function claims(extra: JWTPayload = {}): JWTPayload {
    return { iss: issuer(), aud: 'fleetgate', sub: 'u-123', iat: now(), exp: now() + 600, ...extra };
  }

  async function who(a: Authenticator, token: string): Promise<UserInfo | number> {
    try {
      return (await a.authenticate(fakeReq(token)))!;
    } catch (e) {
      if (e instanceof StatusError) return e.status.code;
      throw e;
    }
  }

  const lastReason = () => (logs.filter((l) => l.level === 'debug').at(-1)?.obj as { reason?: string } | undefined)?.reason;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'authn-oidc-'));
    caFile = join(dir, 'issuer-ca.pem');
    await writeFile(caFile, ca.certPem);
    server = createServer({ key: serving.keyPem, cert: serving.certPem }, (req: IncomingMessage, res: ServerResponse) => {
      const path = req.url ?? '';
      hits.push(path);
      const m = /^(\/[^/]+)(\/.*)$/.exec(path);
      const prefix = m?.[1] ?? '';
      const rest = m?.[2] ?? '';
      if (rest === '/.well-known/openid-configuration') {
        const d = discovery.get(prefix) ?? { status: 200 };
        res.writeHead(d.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ issuer: d.issuer ?? base + prefix, jwks_uri: `${base}${prefix}/keys`, id_token_signing_alg_values_supported: ['RS256', 'ES256'] }));
        return;
      }
      if (rest === '/keys') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ keys: jwks }));
        return;
      }
      res.writeHead(404);
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    authn = await newAuthenticator(
      {
        anonymous: false,
        x509: false,
        oidc: [
          { issuer: issuer(), audiences: ['fleetgate', 'kubectl'], caFile, usernameClaim: 'sub', groupsClaim: 'groups' },
          { issuer: `${base}/email`, audiences: ['fleetgate'], caFile, usernameClaim: 'email' },
          {
            issuer: `${base}/prefixed`,
            audiences: ['fleetgate'],
            caFile,
            usernameClaim: 'preferred_username',
            usernamePrefix: 'oidc:',
            groupsClaim: 'roles',
            groupsPrefix: 'oidc:',
            requiredClaims: { tenant: 'blue' },
          },
          { issuer: `${base}/bare`, audiences: ['fleetgate'], caFile, usernameClaim: 'sub', usernamePrefix: '-' },
        ],
      },
      { log: captureLogger(logs) },
    );
  });

  afterAll(async () => {
    authn?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts a valid RS256 token: "<issuer>#sub", groups claim, system:authenticated', async () => {
    expect(await who(authn, await sign(claims({ groups: ['dev', 'ops'] })))).toEqual({
      username: `${issuer()}#u-123`,
      groups: ['dev', 'ops', 'system:authenticated'],
    });
    // Discovery, then the JWKS named by it, fetched over TLS trusted through caFile.
    expect(hits).toContain('/main/.well-known/openid-configuration');
    expect(hits).toContain('/main/keys');
  });

  it('accepts ES256, any configured audience, and a string groups claim', async () => {
    expect(await who(authn, await sign(claims({ aud: ['other', 'kubectl'], groups: 'admins' }), { alg: 'ES256' }))).toEqual({
      username: `${issuer()}#u-123`,
      groups: ['admins', 'system:authenticated'],
    });
  });

  it('refuses an expired token, and one without exp', async () => {
    expect(await who(authn, await sign(claims({ iat: now() - 700, exp: now() - 5 })))).toBe(401);
    expect(lastReason()).toMatch(/^oidc: verify token: oidc: token is expired/);
    const noExp = claims();
    delete noExp.exp;
    expect(await who(authn, await sign(noExp))).toBe(401);
  });

  it('refuses a token that is not yet valid, but allows go-oidc\'s one minute of nbf leeway', async () => {
    expect(await who(authn, await sign(claims({ nbf: now() + 3600 })))).toBe(401);
    expect(lastReason()).toContain('before the nbf (not before) time');
    expect(((await who(authn, await sign(claims({ nbf: now() + 30 })))) as UserInfo).username).toBe(`${issuer()}#u-123`);
  });

  it('refuses a wrong audience', async () => {
    expect(await who(authn, await sign(claims({ aud: 'someone-else' })))).toBe(401);
    expect(lastReason()).toBe('oidc: verify token: oidc: expected audience in ["fleetgate","kubectl"] got "someone-else"');
  });

  it('leaves a token of an unknown issuer to the others: nobody claims it, so "invalid bearer token"', async () => {
    expect(await who(authn, await sign(claims({ iss: 'https://evil.example' })))).toBe(401);
    expect(lastReason()).toBe('invalid bearer token');
    expect(hits.some((h) => h.includes('evil'))).toBe(false);
  });

  it('refuses a bad signature, a tampered payload, HMAC and unsigned tokens', async () => {
    expect(await who(authn, await sign(claims(), { key: impostor.privateKey }))).toBe(401);
    expect(lastReason()).toContain('failed to verify signature');
    const good = await sign(claims());
    const [h, , s] = good.split('.');
    const forged = Buffer.from(JSON.stringify(claims({ sub: 'admin' }))).toString('base64url');
    expect(await who(authn, `${h}.${forged}.${s}`)).toBe(401);
    const hmac = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'rsa-1' }).sign(new TextEncoder().encode('x'.repeat(32)));
    expect(await who(authn, hmac)).toBe(401);
    expect(await who(authn, new UnsecuredJWT(claims()).encode())).toBe(401);
  });

  it('applies the email claim rules: no default prefix, email_verified must be true when present', async () => {
    const iss = `${base}/email`;
    expect(((await who(authn, await sign(claims({ iss, email: 'jane@example.com' })))) as UserInfo).username).toBe('jane@example.com');
    expect(((await who(authn, await sign(claims({ iss, email: 'jane@example.com', email_verified: true })))) as UserInfo).username).toBe(
      'jane@example.com',
    );
    expect(await who(authn, await sign(claims({ iss, email: 'jane@example.com', email_verified: false })))).toBe(401);
    expect(lastReason()).toBe('oidc: email not verified');
    expect(await who(authn, await sign(claims({ iss, email: 'jane@example.com', email_verified: 'true' })))).toBe(401);
    expect(await who(authn, await sign(claims({ iss })))).toBe(401);
    expect(lastReason()).toBe('oidc: parse username claims "email": claim not present');
  });

  it('applies custom username and groups prefixes and required claims', async () => {
    const iss = `${base}/prefixed`;
    expect(await who(authn, await sign(claims({ iss, preferred_username: 'jane', roles: ['a', 'b'], tenant: 'blue' })))).toEqual({
      username: 'oidc:jane',
      groups: ['oidc:a', 'oidc:b', 'system:authenticated'],
    });
    expect(await who(authn, await sign(claims({ iss, preferred_username: 'jane', tenant: 'red' })))).toBe(401);
    expect(lastReason()).toBe('oidc: required claim tenant value does not match. Got = red, want = blue');
    expect(await who(authn, await sign(claims({ iss, preferred_username: 'jane' })))).toBe(401);
    expect(lastReason()).toBe('oidc: required claim tenant not present in ID token');
    expect(await who(authn, await sign(claims({ iss, preferred_username: 'jane', tenant: 'blue', roles: [1] })))).toBe(401);
  });

  it('uses no prefix with "-"', async () => {
    expect(await who(authn, await sign(claims({ iss: `${base}/bare` })))).toEqual({ username: 'u-123', groups: ['system:authenticated'] });
  });

  it('never logs the token', async () => {
    const token = await sign(claims({ aud: 'nobody' }));
    await who(authn, token);
    const all = JSON.stringify(logs);
    expect(all).not.toContain(token.split('.')[2]);
    expect(all).not.toContain(token.split('.')[1]);
  });

  it('stops accepting a token at its expiry even though successes are cached', async () => {
    const exp = now() + 2;
    const token = await sign(claims({ exp }));
    expect(typeof (await who(authn, token))).toBe('object');
    await until(() => Date.now() > exp * 1000 + 5, 5_000);
    expect(await who(authn, token)).toBe(401);
  });

  it('verifies against a local JWKS file without any network', async () => {
    const jwksFile = join(dir, 'jwks.json');
    await writeFile(jwksFile, JSON.stringify({ keys: jwks }));
    const offline = await newAuthenticator({
      anonymous: false,
      x509: false,
      oidc: [{ issuer: 'https://issuer.invalid', audiences: ['fleetgate'], jwksFile, usernameClaim: 'sub' }],
    });
    try {
      expect(await who(offline, await sign(claims({ iss: 'https://issuer.invalid' }), { alg: 'ES256' }))).toEqual({
        username: 'https://issuer.invalid#u-123',
        groups: ['system:authenticated'],
      });
      expect(await who(offline, await sign(claims({ iss: 'https://issuer.invalid' }), { key: impostor.privateKey }))).toBe(401);
    } finally {
      offline.close();
    }
  });

  it('cannot reach an issuer whose certificate it does not trust (no caFile): 401 until initialized', async () => {
    const lines: LogLine[] = [];
    const a = await newAuthenticator(
      { anonymous: false, x509: false, oidc: [{ issuer: issuer(), audiences: ['fleetgate'], usernameClaim: 'sub' }] },
      { log: captureLogger(lines) },
    );
    try {
      expect(await who(a, await sign(claims()))).toBe(401);
      expect(lines.some((l) => l.level === 'error' && l.msg.includes('initializing plugin failed'))).toBe(true);
      expect((lines.find((l) => l.level === 'debug')?.obj as { reason: string }).reason).toBe('oidc: authenticator not initialized');
    } finally {
      a.close();
    }
  });

  it('refuses a discovery document that names another issuer, and retries discovery until it works', async () => {
    discovery.set('/flaky', { status: 200, issuer: 'https://someone-else.example' });
    const errors: string[] = [];
    const cfg: OidcIssuerConfig = { issuer: `${base}/flaky`, audiences: ['fleetgate'], caFile, usernameClaim: 'sub', usernamePrefix: '-' };
    const a = await newOidcAuthenticator(cfg, { retryIntervalMs: 50, onInitError: (_i, e) => errors.push(e.message) });
    try {
      const token = await sign(claims({ iss: `${base}/flaky` }));
      expect(await a.authenticateToken(token)).toEqual({ kind: 'error', reason: 'oidc: authenticator not initialized' });
      expect(errors[0]).toBe(
        `oidc: issuer did not match the issuer returned by provider, expected "${base}/flaky" got "https://someone-else.example"`,
      );
      discovery.set('/flaky', { status: 500 });
      await until(() => errors.some((e) => e.startsWith('500 ')));
      discovery.delete('/flaky');
      await until(async () => (await a.authenticateToken(token)).kind === 'user');
      expect(await a.authenticateToken(token)).toEqual({ kind: 'user', user: { username: 'u-123', groups: ['system:authenticated'] } });
    } finally {
      a.close();
    }
  });

  it('refuses bad issuer configurations at startup', async () => {
    await expect(newOidcAuthenticator({ issuer: 'http://plain.example', audiences: ['a'], usernameClaim: 'sub' })).rejects.toThrow(
      'URL scheme must be https',
    );
    await expect(newOidcAuthenticator({ issuer: 'https://x.example', audiences: [], usernameClaim: 'sub' })).rejects.toThrow(
      'at least one audience',
    );
    await expect(
      newAuthenticator({
        anonymous: false,
        x509: false,
        oidc: [
          { issuer: 'https://x.example', audiences: ['a'], usernameClaim: 'sub', jwksFile: join(dir, 'jwks.json') },
          { issuer: 'https://x.example', audiences: ['b'], usernameClaim: 'sub', jwksFile: join(dir, 'jwks.json') },
        ],
      }),
    ).rejects.toThrow('configured more than once');
  });
});

describe('untrustedIssuer', () => {
  it('reads iss from a compact JWT only', () => {
    const jwt = (payload: unknown) => `e30.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig`;
    expect(untrustedIssuer(jwt({ iss: 'https://a.example' }))).toBe('https://a.example');
    expect(untrustedIssuer(jwt({ iss: 'accounts.google.com' }))).toBe('https://accounts.google.com');
    expect(untrustedIssuer(jwt({ iss: 7 }))).toBeUndefined();
    expect(untrustedIssuer('{"iss":"x"}')).toBeUndefined();
    expect(untrustedIssuer('a.b')).toBeUndefined();
    expect(untrustedIssuer('a.b.c.d')).toBeUndefined();
    expect(untrustedIssuer('opaque-static-token')).toBeUndefined();
  });
});
