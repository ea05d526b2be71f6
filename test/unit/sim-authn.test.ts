import { createHash, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../../src/pki/index.js';
import type { UserInfo } from '../../src/api/user.js';
import { authenticate, CREDENTIAL_ID_KEY, type AuthnOptions } from '../../test/sim/authn.js';

const tokens = new Map<string, UserInfo>([
  ['tok-alice', { username: 'alice', uid: 'u-1', groups: ['dev'] }],
  ['tok-svc', { username: 'svc', groups: ['system:authenticated', 'ops'] }],
]);

function fakeReq(headers: Record<string, string>): IncomingMessage {
  return { headers, socket: {} } as unknown as IncomingMessage;
}

describe('authenticate: bearer tokens and anonymous', () => {
  const opts: AuthnOptions = { tokens, allowAnonymous: true };

  it('maps a known token to its user and adds system:authenticated once', () => {
    expect(authenticate(fakeReq({ authorization: 'Bearer tok-alice' }), opts)).toEqual({
      username: 'alice',
      uid: 'u-1',
      groups: ['dev', 'system:authenticated'],
    });
    expect(authenticate(fakeReq({ authorization: 'bearer tok-svc' }), opts)?.groups).toEqual(['system:authenticated', 'ops']);
  });

  it('does not let a request change the configured user', () => {
    const u = authenticate(fakeReq({ authorization: 'Bearer tok-alice' }), opts)!;
    u.groups.push('system:masters');
    expect(tokens.get('tok-alice')!.groups).toEqual(['dev']);
  });

  it('answers 401 (null) for an unknown token even when anonymous is allowed, as FailOnError does', () => {
    expect(authenticate(fakeReq({ authorization: 'Bearer nope' }), opts)).toBeNull();
  });

  it('treats no credential, another scheme or an empty token as anonymous', () => {
    const anon = { username: 'system:anonymous', groups: ['system:unauthenticated'] };
    expect(authenticate(fakeReq({}), opts)).toEqual(anon);
    expect(authenticate(fakeReq({ authorization: 'Basic YTpi' }), opts)).toEqual(anon);
    expect(authenticate(fakeReq({ authorization: 'Bearer  tok-alice' }), opts)).toEqual(anon);
    expect(authenticate(fakeReq({}), { tokens, allowAnonymous: false })).toBeNull();
  });

  it('reads the WebSocket protocol bearer token on WebSocket upgrades only', () => {
    const proto = 'base64url.bearer.authorization.k8s.io.' + Buffer.from('tok-alice').toString('base64url');
    const ws = { upgrade: 'websocket', 'sec-websocket-protocol': `v5.channel.k8s.io, ${proto}` };
    expect(authenticate(fakeReq(ws), opts)?.username).toBe('alice');
    expect(authenticate(fakeReq({ 'sec-websocket-protocol': proto }), opts)?.username).toBe('system:anonymous');
    const bad = 'base64url.bearer.authorization.k8s.io.' + Buffer.from('nope').toString('base64url');
    expect(authenticate(fakeReq({ upgrade: 'websocket', 'sec-websocket-protocol': bad }), opts)).toBeNull();
  });
});

describe('authenticate: client certificates over TLS', () => {
  let ca: CertKeyPem;
  let otherCa: CertKeyPem;
  let serving: CertKeyPem;
  let alice: CertKeyPem;
  let stranger: CertKeyPem;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    ca = await createCA('sim-client-ca');
    otherCa = await createCA('someone-else');
    serving = await issueServingCert(ca, ['127.0.0.1']);
    alice = await issueClientCert(ca, 'alice', ['dev', 'qa']);
    stranger = await issueClientCert(otherCa, 'mallory', ['system:masters']);
    server = createServer(
      { cert: serving.certPem, key: serving.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false },
      (req, res) => {
        const user = authenticate(req, { tokens, allowAnonymous: true });
        res.writeHead(user ? 200 : 401, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(user));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function call(client?: CertKeyPem, headers: Record<string, string> = {}): Promise<{ code: number; user: UserInfo | null }> {
    return new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/', ca: ca.certPem, cert: client?.certPem, key: client?.keyPem, headers, agent: false },
        (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ code: res.statusCode!, user: JSON.parse(body) }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('takes CN as the user, each O as a group, and the credential id from the DER hash', async () => {
    const { code, user } = await call(alice);
    expect(code).toBe(200);
    const der = new X509Certificate(alice.certPem).raw;
    expect(user).toEqual({
      username: 'alice',
      groups: ['dev', 'qa', 'system:authenticated'],
      extra: { [CREDENTIAL_ID_KEY]: ['X509SHA256=' + createHash('sha256').update(der).digest('hex')] },
    });
  });

  it('rejects a certificate the client CA did not sign, even with anonymous allowed', async () => {
    expect(await call(stranger)).toEqual({ code: 401, user: null });
  });

  it('still authenticates by a good token next to a bad certificate (the union goes on)', async () => {
    const { code, user } = await call(stranger, { authorization: 'Bearer tok-alice' });
    expect(code).toBe(200);
    expect(user?.username).toBe('alice');
  });

  it('rejects a certificate without the client-auth usage', async () => {
    expect((await call(serving)).code).toBe(401);
  });

  it('is anonymous without a certificate or token', async () => {
    expect((await call()).user).toEqual({ username: 'system:anonymous', groups: ['system:unauthenticated'] });
  });
});
