// Rotating the serving certificate and the client CA under a running gateway (cert-manager, a Secret update):
// new connections get the new files, no restart, and a broken set is refused while the running one stays.

import { X509Certificate } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueClientCert, issueServingCert } from '../../src/pki/index.js';
import { intermediateCA } from '../support/pki.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { call, type ClusterEndpoint } from '../support/http.js';

let sim: SimFleet;
let gw: TestGateway;
/** The serving key in force after the rotation test. */
let servingKey = '';
/** The CA the added-CA test trusted, and an endpoint (a connection) made while it was. */
let removed: { ep: ClusterEndpoint; caPem: string } | undefined;

beforeAll(async () => {
  sim = await startSimFleet({ clusters: ['control-plane'], nodesPerCluster: 0 });
  gw = await startTestGateway({ controlPlaneKubeconfig: sim.member('control-plane').kubeconfigPath });
});

afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

function servedSerial(): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: gw.running.port, ca: gw.servingCA.certPem, servername: 'localhost' }, () => {
      const serial = s.getPeerCertificate().serialNumber;
      s.end();
      resolve(serial);
    });
    s.once('error', reject);
  });
}

async function until(what: string, pred: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function replace(name: string, content: string): Promise<void> {
  const tmp = join(gw.dir, `.${name}.tmp`);
  await writeFile(tmp, content);
  await rename(tmp, join(gw.dir, name));
}

async function metric(name: string): Promise<string> {
  const admin = await gw.endpointFor('admin', ['system:masters']);
  const m = await call(admin, 'GET', '/metrics');
  return m.text.split('\n').filter((l) => l.startsWith(name)).join('\n');
}

describe('TLS files reloaded without a restart', () => {
  it('serves a rotated serving certificate to new connections', async () => {
    const before = await servedSerial();
    const next = await issueServingCert(gw.servingCA, ['127.0.0.1', 'localhost'], { days: 30 });
    const want = new X509Certificate(next.certPem).serialNumber;
    expect(want).not.toBe(before);
    servingKey = next.keyPem;
    await replace('serving.key', next.keyPem);
    await replace('serving.crt', next.certPem);
    await until('the new serving certificate', async () => (await servedSerial()) === want);
    const expiry = Number((await metric('fleetgate_serving_certificate_expiration_seconds ')).split(' ')[1]);
    expect(expiry).toBe(Date.parse(new X509Certificate(next.certPem).validTo) / 1000);
  });

  it('keeps the running certificate when the new key does not match it', async () => {
    const serving = await servedSerial();
    const stranger = await issueServingCert(gw.servingCA, ['127.0.0.1']);
    await replace('serving.key', stranger.keyPem);
    await until('the failed reload to be counted', async () => /result="failure"\} [1-9]/.test(await metric('fleetgate_tls_reloads_total')));
    expect(await servedSerial()).toBe(serving);
    await replace('serving.key', servingKey);
  });

  it('accepts certificates of a CA added to the client CA bundle', async () => {
    const newCA = await createCA('next-client-ca');
    const dave = await issueClientCert(newCA, 'dave', ['system:masters']);
    const ep = { url: gw.url, caPem: gw.servingCA.certPem, certPem: dave.certPem, keyPem: dave.keyPem };
    expect((await call(ep, 'GET', '/api')).status).toBe(401);
    await replace('client-ca.crt', gw.clientCA.certPem + newCA.certPem);
    // A fresh endpoint object each time: a new connection, which gets the new CA bundle.
    await until('dave to be accepted', async () => (await call({ ...ep }, 'GET', '/api')).status === 200);
    removed = { ep: { ...ep }, caPem: newCA.certPem };
  });

  it('refuses certificates of a CA taken out of the bundle on connections made before, as kube verifies every request', async () => {
    // One TLS connection for all of dave's requests, made while his CA was trusted; and one for admin.
    const dave = await keptConnection(removed!.ep);
    const admin = await keptConnection(await gw.endpointFor('admin', ['system:masters']));
    try {
      expect(await dave.get('/api')).toBe(200);
      expect(await admin.get('/api')).toBe(200);
      await replace('client-ca.crt', gw.clientCA.certPem);
      await until('dave to be refused', async () => (await dave.get('/api')) === 401);
      // Certificates of the CA that stayed work on their open connections as before.
      expect(await admin.get('/api')).toBe(200);
      // Put back, the CA vouches for the same open connection again.
      await replace('client-ca.crt', gw.clientCA.certPem + removed!.caPem);
      await until('dave to be accepted again', async () => (await dave.get('/api')) === 200);
      expect(dave.connections()).toBe(1);
    } finally {
      dave.close();
      admin.close();
    }
  });

  it('refuses, on an open connection, a client whose intermediate CA was taken out while its root stayed', async () => {
    const root = await createCA('chain-root');
    const inter = await intermediateCA(root, 'chain-intermediate');
    const erin = await issueClientCert(inter, 'erin', ['system:masters']);
    // The client sends its leaf alone, as a kubeconfig's client certificate usually is: the bundle has the rest.
    await replace('client-ca.crt', gw.clientCA.certPem + root.certPem + inter.certPem);
    const ep = { url: gw.url, caPem: gw.servingCA.certPem, certPem: erin.certPem, keyPem: erin.keyPem };
    await until('erin to be accepted', async () => (await call({ ...ep }, 'GET', '/api')).status === 200);
    const conn = await keptConnection(ep);
    try {
      expect(await conn.get('/api')).toBe(200);
      // The root alone no longer vouches for erin: kube refuses her, and so do new connections.
      await replace('client-ca.crt', gw.clientCA.certPem + root.certPem);
      await until('erin to be refused on her open connection', async () => (await conn.get('/api')) === 401);
      expect((await call({ ...ep }, 'GET', '/api')).status).toBe(401);
      expect(conn.connections()).toBe(1);
    } finally {
      conn.close();
      await replace('client-ca.crt', gw.clientCA.certPem);
    }
  });

  it('trusts an intermediate CA in the bundle without its root, as kube-apiserver trusts every certificate of its client CA file', async () => {
    const root = await createCA('partial-root');
    const inter = await intermediateCA(root, 'partial-intermediate');
    const frank = await issueClientCert(inter, 'frank', ['system:masters']);
    const ep = { url: gw.url, caPem: gw.servingCA.certPem, certPem: frank.certPem, keyPem: frank.keyPem };
    expect((await call({ ...ep }, 'GET', '/api')).status).toBe(401);
    await replace('client-ca.crt', gw.clientCA.certPem + inter.certPem);
    try {
      // New connections, verified at their handshake with the bundle; and one kept open across the next reload.
      await until('frank to be accepted', async () => (await call({ ...ep }, 'GET', '/api')).status === 200);
      const conn = await keptConnection(ep);
      try {
        expect(await conn.get('/api')).toBe(200);
        // The root added beside it changes nothing for frank (gina, whom the root issued, shows the reload is in force);
        // the intermediate taken out cuts him off though the root stays (he sends his leaf alone).
        const gina = await issueClientCert(root, 'gina', ['system:masters']);
        const ginaEp = { url: gw.url, caPem: gw.servingCA.certPem, certPem: gina.certPem, keyPem: gina.keyPem };
        expect((await call({ ...ginaEp }, 'GET', '/api')).status).toBe(401);
        await replace('client-ca.crt', gw.clientCA.certPem + root.certPem + inter.certPem);
        await until('gina to be accepted', async () => (await call({ ...ginaEp }, 'GET', '/api')).status === 200);
        expect(await conn.get('/api')).toBe(200);
        await replace('client-ca.crt', gw.clientCA.certPem + root.certPem);
        await until('frank to be refused on his open connection', async () => (await conn.get('/api')) === 401);
        expect((await call({ ...ep }, 'GET', '/api')).status).toBe(401);
        expect(conn.connections()).toBe(1);
      } finally {
        conn.close();
      }
    } finally {
      await replace('client-ca.crt', gw.clientCA.certPem);
    }
  });
});

/** HTTP/1.1 GETs one after another on one TLS connection; each answer's status. */
async function keptConnection(ep: ClusterEndpoint): Promise<{ get(path: string): Promise<number>; connections(): number; close(): void }> {
  const socket = connect({ host: '127.0.0.1', port: gw.running.port, ca: ep.caPem, cert: ep.certPem, key: ep.keyPem, servername: 'localhost', ALPNProtocols: ['http/1.1'] });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  let opened = 1;
  let buffered = Buffer.alloc(0);
  let waiting: ((status: number) => void) | undefined;
  socket.on('close', () => (opened = 0));
  socket.on('data', (d: Buffer) => {
    buffered = Buffer.concat([buffered, d]);
    const end = buffered.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = buffered.subarray(0, end).toString('latin1');
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (buffered.length < end + 4 + length) return;
    buffered = buffered.subarray(end + 4 + length);
    const w = waiting;
    waiting = undefined;
    w?.(Number(head.slice(9, 12)));
  });
  return {
    get(path) {
      return new Promise((resolve) => {
        waiting = resolve;
        socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n`);
      });
    },
    connections: () => opened,
    close: () => socket.destroy(),
  };
}

/** The suite and protocol the gateway picks for a client offering `ciphers` (Node's default order when unset). */
function negotiated(o: { ciphers?: string; maxVersion?: 'TLSv1.2' | 'TLSv1.3' } = {}): Promise<{ suite: string; protocol: string }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: gw.running.port, ca: gw.servingCA.certPem, servername: 'localhost', ...o }, () => {
      const out = { suite: s.getCipher().standardName, protocol: String(s.getProtocol()) };
      s.end();
      resolve(out);
    });
    s.once('error', reject);
  });
}

// After the rotations above: a reloaded context must keep the order too.
describe('cipher suites as kube-apiserver (Go) picks them', () => {
  it('AES-128-GCM for a client listing AES-256-GCM first, as Node clients do', async () => {
    expect(await negotiated()).toEqual({ suite: 'TLS_AES_128_GCM_SHA256', protocol: 'TLSv1.3' });
  });

  it('ChaCha20-Poly1305 for a client that lists it first (one without AES instructions)', async () => {
    expect((await negotiated({ ciphers: 'TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256' })).suite).toBe('TLS_CHACHA20_POLY1305_SHA256');
  });

  it('a client offering only AES-256-GCM still gets it; TLS 1.2 gets ECDHE with AES-128-GCM', async () => {
    expect((await negotiated({ ciphers: 'TLS_AES_256_GCM_SHA384' })).suite).toBe('TLS_AES_256_GCM_SHA384');
    const v12 = await negotiated({ maxVersion: 'TLSv1.2' });
    expect(v12.protocol).toBe('TLSv1.2');
    expect(v12.suite).toMatch(/^TLS_ECDHE_(RSA|ECDSA)_WITH_AES_128_GCM_SHA256$/);
  });
});
