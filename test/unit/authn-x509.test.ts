// x509 client-certificate authentication over real TLS (HTTP/1.1 and HTTP/2, as kubectl speaks), with
// certificates from src/pki: the gateway's client CA, an unknown CA, an expired certificate and a certificate
// that is only good for serving.

import { createHash, createPrivateKey, webcrypto, X509Certificate } from 'node:crypto';
import { connect, createSecureServer, type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../src/pki/reflect-metadata.js';
import * as x509 from '@peculiar/x509';
import { StatusError, statusBody, toStatus } from '../../src/api/status.js';
import { newAuthenticator, type Authenticator } from '../../src/authn/index.js';
import { createCA, issueClientCert, issueServingCert, type CertKeyPem } from '../../src/pki/index.js';

const DAY = 86_400_000;

interface Answer {
  status: number;
  body: any;
}

/** The request's outcome as the chain would write it: the user, null (no credential), or the Status. */
function handler(authn: Authenticator) {
  return async (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    try {
      const user = await authn.authenticate(req);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ user }));
    } catch (err) {
      const st = toStatus(err);
      res.writeHead(st.code, { 'content-type': 'application/json' });
      res.end(statusBody(st));
    }
  };
}

/** A client certificate with the UID subject attribute (1.3.6.1.4.1.57683.2), which src/pki does not make. */
async function clientCertWithUid(ca: CertKeyPem, user: string, uids: string[]): Promise<CertKeyPem> {
  const crypto = webcrypto;
  const caCert = new x509.X509Certificate(ca.certPem);
  const der = createPrivateKey(ca.keyPem).export({ type: 'pkcs8', format: 'der' });
  const caKey = await crypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: '01a2b3',
      subject: [{ CN: [user] }, ...uids.map((u) => ({ '1.3.6.1.4.1.57683.2': [u] }))],
      issuer: new x509.Name(caCert.subjectName.toArrayBuffer()),
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + DAY),
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth], false)],
    },
    crypto,
  );
  const keyDer = await crypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { certPem: cert.toString('pem') + '\n', keyPem: x509.PemConverter.encode(keyDer, 'PRIVATE KEY') + '\n' };
}

function credentialId(certPem: string): string {
  return 'X509SHA256=' + createHash('sha256').update(new X509Certificate(certPem).raw).digest('hex');
}

describe('x509 client certificates', async () => {
  const ca = await createCA('fleetgate-client-ca');
  const otherCA = await createCA('someone-else');
  const serving = await issueServingCert(ca, ['127.0.0.1']);
  const alice = await issueClientCert(ca, 'alice', ['dev', 'ops']);
  const stranger = await issueClientCert(otherCA, 'alice', ['system:masters']);
  const expired = await issueClientCert(ca, 'old', [], { notBefore: new Date(Date.now() - 3 * DAY), notAfter: new Date(Date.now() - DAY) });
  const serverOnly = await issueServingCert(ca, ['client.example']);
  const withUid = await clientCertWithUid(ca, 'carol', ['uid-42']);
  const twoUids = await clientCertWithUid(ca, 'dave', ['u1', 'u2']);
  const tokenFile = `${process.env.TMPDIR ?? '/tmp'}/authn-x509-${process.pid}.csv`;

  let authn: Authenticator;
  let noX509: Authenticator;
  let server: Server;
  let server2: Server;
  let h2: Http2SecureServer;
  let url = '';
  let url2 = '';
  let h2url = '';

  beforeAll(async () => {
    const { writeFile } = await import('node:fs/promises');
    await writeFile(tokenFile, 'tok-bob,bob,u-bob,"dev,qa"\n');
    authn = await newAuthenticator({ anonymous: false, x509: true, oidc: [], tokenFile });
    noX509 = await newAuthenticator({ anonymous: false, x509: false, oidc: [] });
    const tls = { key: serving.keyPem, cert: serving.certPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: false };
    server = createServer(tls, handler(authn));
    server2 = createServer(tls, handler(noX509));
    h2 = createSecureServer(tls, handler(authn));
    for (const s of [server, server2, h2]) await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    url2 = `https://127.0.0.1:${(server2.address() as AddressInfo).port}`;
    h2url = `https://127.0.0.1:${(h2.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    authn?.close();
    noX509?.close();
    for (const s of [server, server2, h2]) await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
    const { rm } = await import('node:fs/promises');
    await rm(tokenFile, { force: true });
  });

  function get(base: string, client?: CertKeyPem, headers: Record<string, string> = {}, agent?: Agent): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(base + '/api', {
        ca: ca.certPem,
        cert: client?.certPem,
        key: client?.keyPem,
        headers,
        agent: agent ?? false,
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('authenticates CN as the user, each O as a group, plus system:authenticated and the credential id', async () => {
    expect(await get(url, alice)).toEqual({
      status: 200,
      body: {
        user: {
          username: 'alice',
          groups: ['dev', 'ops', 'system:authenticated'],
          extra: { 'authentication.kubernetes.io/credential-id': [credentialId(alice.certPem)] },
        },
      },
    });
  });

  it('answers 401 Unauthorized for a certificate from an unknown CA', async () => {
    expect(await get(url, stranger)).toEqual({
      status: 401,
      body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 },
    });
  });

  it('answers 401 for an expired certificate and for one not meant for client auth', async () => {
    expect((await get(url, expired)).status).toBe(401);
    expect((await get(url, serverOnly)).status).toBe(401);
  });

  it('returns null (no credential) without a certificate', async () => {
    expect(await get(url)).toEqual({ status: 200, body: { user: null } });
  });

  it('reads the UID attribute, and refuses a subject with two', async () => {
    expect((await get(url, withUid)).body.user).toEqual({
      username: 'carol',
      uid: 'uid-42',
      groups: ['system:authenticated'],
      extra: { 'authentication.kubernetes.io/credential-id': [credentialId(withUid.certPem)] },
    });
    expect((await get(url, twoUids)).status).toBe(401);
  });

  it('lets a good bearer token win over a bad certificate, but not a bad token over nothing', async () => {
    expect((await get(url, stranger, { authorization: 'Bearer tok-bob' })).body.user).toEqual({
      username: 'bob',
      uid: 'u-bob',
      groups: ['dev', 'qa', 'system:authenticated'],
    });
    expect((await get(url, alice, { authorization: 'Bearer wrong' })).body.user.username).toBe('alice');
    expect((await get(url, undefined, { authorization: 'Bearer wrong' })).status).toBe(401);
  });

  it('ignores certificates entirely when x509 is disabled', async () => {
    expect(await get(url2, alice)).toEqual({ status: 200, body: { user: null } });
    expect(await get(url2, stranger)).toEqual({ status: 200, body: { user: null } });
  });

  it('gives every request on a kept-alive connection the same frozen user', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: ca.certPem, cert: alice.certPem, key: alice.keyPem });
    try {
      const a = await get(url, alice, {}, agent);
      const b = await get(url, alice, {}, agent);
      expect(b).toEqual(a);
      expect(a.body.user.username).toBe('alice');
    } finally {
      agent.destroy();
    }
    const direct = await authn.authenticate({ headers: { authorization: 'Bearer tok-bob' }, socket: {} } as unknown as IncomingMessage);
    expect(Object.isFrozen(direct)).toBe(true);
    expect(Object.isFrozen(direct!.groups)).toBe(true);
  });

  it('refuses a certificate that expires while its connection stays open (kube verifies the chain per request)', async () => {
    const brief = await issueClientCert(ca, 'brief', [], { notBefore: new Date(Date.now() - DAY), notAfter: new Date(Date.now() + 1500) });
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: ca.certPem, cert: brief.certPem, key: brief.keyPem });
    try {
      expect((await get(url, brief, {}, agent)).body.user.username).toBe('brief');
      const until = Date.now() + 10_000;
      let late = await get(url, brief, {}, agent);
      while (late.status === 200 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
        late = await get(url, brief, {}, agent);
      }
      expect(late.status).toBe(401);
      expect(late.body.message).toBe('Unauthorized');
    } finally {
      agent.destroy();
    }
  });

  it('works over HTTP/2 (the session socket carries the certificate)', async () => {
    const h2get = (client: CertKeyPem): Promise<Answer> =>
      new Promise((resolve, reject) => {
        const session = connect(h2url, { ca: ca.certPem, cert: client.certPem, key: client.keyPem });
        session.on('error', reject);
        const out: Answer[] = [];
        const one = () =>
          new Promise<void>((done, fail) => {
            const s = session.request({ ':path': '/api' });
            let status = 0;
            let text = '';
            s.on('response', (h) => (status = Number(h[':status'])));
            s.setEncoding('utf8');
            s.on('data', (c) => (text += c));
            s.on('end', () => {
              out.push({ status, body: JSON.parse(text) });
              done();
            });
            s.on('error', fail);
            s.end();
          });
        // Two streams on one session: the second is served from the per-connection decision.
        one()
          .then(one)
          .then(() => {
            session.close();
            expect(out[1]).toEqual(out[0]);
            resolve(out[0]!);
          }, reject);
      });
    expect((await h2get(alice)).body.user).toEqual({
      username: 'alice',
      groups: ['dev', 'ops', 'system:authenticated'],
      extra: { 'authentication.kubernetes.io/credential-id': [credentialId(alice.certPem)] },
    });
    expect((await h2get(stranger)).status).toBe(401);
  });

  it('throws a StatusError, not a plain error, for bad credentials', async () => {
    await expect(
      authn.authenticate({ headers: { authorization: 'Bearer nope' }, socket: {} } as unknown as IncomingMessage),
    ).rejects.toBeInstanceOf(StatusError);
  });
});
