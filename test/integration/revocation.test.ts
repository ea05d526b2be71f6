// Revoking a client certificate with `fleetgate certs revoke`: the gateway answers it with 401 from the next
// request on, without a restart and also on connections opened before, while other users go on unaffected. The
// list is picked up both when rewritten in place and when swapped in the way a Kubernetes Secret volume does it.

import { mkdtemp, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { parseConfig } from '../../src/config/index.js';
import { createCA, issueClientCert } from '../../src/pki/index.js';
import { signRevocationList } from '../../src/pki/crl.js';
import { startGateway } from '../../src/server/server.js';
import pino from 'pino';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { call, type ClusterEndpoint } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';

let sim: SimFleet;
let dir: string;
let certsDir: string;
let gw: TestGateway;
let crlLink: string;


async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => void (out += s), err: (s) => void (err += s) });
  return { code, out, err };
}

async function until(what: string, pred: () => Promise<boolean>, timeoutMs = 15_000): Promise<number> {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - start;
}

beforeAll(async () => {
  sim = await startSimFleet({ clusters: ['control-plane'], nodesPerCluster: 0 });
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-revoke-'));
  // The gateway reads the list through a Secret-volume layout: client-ca.crl -> ..data/client-ca.crl, ..data -> ..v1.
  certsDir = join(dir, 'certs');
  await mkdir(join(dir, 'volume', '..v1'), { recursive: true });
  await symlink('..v1', join(dir, 'volume', '..data'));
  crlLink = join(dir, 'volume', 'client-ca.crl');
  await symlink(join('..data', 'client-ca.crl'), crlLink);
  gw = await startTestGateway({ controlPlaneKubeconfig: sim.member('control-plane').kubeconfigPath, clientCRLFile: crlLink });
  // `certs revoke` works on a `certs init` directory: the gateway's client CA in that layout.
  await mkdir(certsDir);
  await writeFile(join(certsDir, 'client-ca.crt'), gw.clientCA.certPem);
  await writeFile(join(certsDir, 'client-ca.key'), gw.clientCA.keyPem, { mode: 0o600 });
});

afterAll(async () => {
  await gw?.close();
  await sim?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Publishes certsDir/client-ca.crl the way kubelet updates a Secret volume: a new directory, then one rename. */
async function publish(version: string): Promise<void> {
  const vol = join(dir, 'volume');
  await mkdir(join(vol, version));
  await writeFile(join(vol, version, 'client-ca.crl'), await readFile(join(certsDir, 'client-ca.crl')));
  await symlink(version, join(vol, '..data_tmp'));
  await rename(join(vol, '..data_tmp'), join(vol, '..data'));
}

describe('certs revoke', () => {
  let aliceKc: string;
  let aliceEp: ClusterEndpoint;
  let bobEp: ClusterEndpoint;

  beforeAll(async () => {
    aliceKc = await gw.kubeconfigFor('alice', ['system:masters']);
    aliceEp = await gw.endpointFor('alice', ['system:masters']);
    bobEp = await gw.endpointFor('bob', ['system:masters']);
  });

  it('serves everyone while the list does not exist yet', async () => {
    expect((await call(aliceEp, 'GET', '/api/v1/namespaces')).status).toBe(200);
    expect((await call(bobEp, 'GET', '/api/v1/namespaces')).status).toBe(200);
    const r = await kubectl('1.33', aliceKc, ['get', 'ns', '-o', 'name']);
    expect(r.code).toBe(0);
  });

  it('refuses a revoked certificate with 401 within seconds, on an open connection too, and spares others', async () => {
    // aliceEp's agent keeps its connection from the previous test: revocation must reach it.
    const r = await cli(['certs', 'revoke', '--dir', certsDir, '--kubeconfig', aliceKc, '--reason', 'keyCompromise']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^revoked [0-9A-F]+ \(O=system:masters, CN=alice, from /);
    await publish('..v2');
    const ms = await until('alice to be refused', async () => (await call(aliceEp, 'GET', '/api/v1/namespaces')).status === 401);
    expect(ms).toBeLessThan(10_000);
    const refused = await call(aliceEp, 'GET', '/api/v1/namespaces');
    expect(refused.json()).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Unauthorized', code: 401 });
    expect((await call(bobEp, 'GET', '/api/v1/namespaces')).status).toBe(200);
    for (const v of ['1.27', '1.33'] as const) {
      const k = await kubectl(v, aliceKc, ['get', 'ns']);
      expect(k.code).not.toBe(0);
      expect(k.stderr).toContain('error: You must be logged in to the server');
    }
  });

  it('lists what is revoked', async () => {
    const r = await cli(['certs', 'revoked', '--dir', certsDir]);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toMatch(/^SERIAL\s+REVOKED\s+REASON$/);
    expect(lines[1]).toMatch(/^[0-9A-F]+\s+\d{4}-\d\d-\d\dT\S+\s+keyCompromise$/);
    expect(lines.at(-1)).toMatch(/^list number 1, valid until /);
  });

  it('revokes by serial, and keeps the last good list when the file is replaced by garbage', async () => {
    const carol = await issueClientCert(gw.clientCA, 'carol', ['system:masters']);
    const carolEp = { url: gw.url, caPem: gw.servingCA.certPem, certPem: carol.certPem, keyPem: carol.keyPem };
    expect((await call(carolEp, 'GET', '/api/v1/namespaces')).status).toBe(200);
    const serial = new (await import('node:crypto')).X509Certificate(carol.certPem).serialNumber;
    const colons = serial.match(/../g)!.join(':').toLowerCase();
    expect((await cli(['certs', 'revoke', '--dir', certsDir, '--serial', colons])).code).toBe(0);
    await publish('..v3');
    await until('carol to be refused', async () => (await call(carolEp, 'GET', '/api/v1/namespaces')).status === 401);

    // A list that does not verify (here: not a CRL at all) must not let anyone back in.
    await mkdir(join(dir, 'volume', '..v4'));
    await writeFile(join(dir, 'volume', '..v4', 'client-ca.crl'), '-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n');
    await symlink('..v4', join(dir, 'volume', '..data_tmp'));
    await rename(join(dir, 'volume', '..data_tmp'), join(dir, 'volume', '..data'));
    const admin = await gw.endpointFor('metrics-reader', ['system:masters']);
    await until('the failed reload to be counted', async () => {
      const m = await call(admin, 'GET', '/metrics');
      return /fleetgate_client_certificate_revocation_list_reloads_total\{result="failure"\} [1-9]/.test(m.text);
    });
    expect((await call(aliceEp, 'GET', '/api/v1/namespaces')).status).toBe(401);
    expect((await call(carolEp, 'GET', '/api/v1/namespaces')).status).toBe(401);
    expect((await call(bobEp, 'GET', '/api/v1/namespaces')).status).toBe(200);
    const m = await call(admin, 'GET', '/metrics');
    expect(m.text).toMatch(/^fleetgate_client_certificate_revocations 2$/m);
  });

  it('--renew signs the same list again with a new number', async () => {
    const before = (await cli(['certs', 'revoked', '--dir', certsDir])).out;
    const r = await cli(['certs', 'revoke', '--dir', certsDir, '--renew', '--days', '30']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/: 2 revoked certificates, list number 3, valid until /);
    const after = (await cli(['certs', 'revoked', '--dir', certsDir])).out;
    expect(after.split('\n').slice(0, 3)).toEqual(before.split('\n').slice(0, 3));
    expect((await cli(['certs', 'revoke', '--dir', certsDir, '--renew', '--serial', '1f'])).code).toBe(2);
  });

  it('refuses to list a certificate of another CA, and bad flags', async () => {
    const otherCA = await createCA('other-ca');
    const stranger = await issueClientCert(otherCA, 'mallory', []);
    const f = join(dir, 'stranger.crt');
    await writeFile(f, stranger.certPem);
    const r = await cli(['certs', 'revoke', '--dir', certsDir, '--cert', f]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('was not issued by');
    expect((await cli(['certs', 'revoke', '--dir', certsDir])).code).toBe(2);
    expect((await cli(['certs', 'revoke', '--dir', certsDir, '--serial', 'zz'])).code).toBe(2);
    expect((await cli(['certs', 'revoke', '--dir', certsDir, '--serial', '1f', '--reason', 'because'])).code).toBe(2);
  });
});

describe('a revocation list the gateway cannot use at start', () => {
  it('stops the start with the file and the reason', async () => {
    const d = await mkdtemp(join(tmpdir(), 'fleetgate-badcrl-'));
    try {
      const clientCA = await createCA('client-ca');
      const otherCA = await createCA('client-ca'); // same name, other key: the signature cannot verify
      const serving = await createCA('serving');
      const { issueServingCert } = await import('../../src/pki/index.js');
      const s = await issueServingCert(serving, ['127.0.0.1']);
      await writeFile(join(d, 'serving.crt'), s.certPem);
      await writeFile(join(d, 'serving.key'), s.keyPem);
      await writeFile(join(d, 'client-ca.crt'), clientCA.certPem);
      await writeFile(join(d, 'client-ca.crl'), await signRevocationList(otherCA, [], { number: 1n }));
      const yaml = `server: {address: 127.0.0.1, port: 0, tls: {certFile: serving.crt, keyFile: serving.key, clientCAFile: client-ca.crt, clientCRLFile: client-ca.crl}}
controlPlane: {kubeconfig: ${sim.member('control-plane').kubeconfigPath}}
logging: {level: silent}
`;
      const config = parseConfig(yaml, join(d, 'fleetgate.yaml'));
      await expect(startGateway(config, pino({ level: 'silent' }))).rejects.toThrow(/client-ca\.crl: its signature does not verify/);
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});
