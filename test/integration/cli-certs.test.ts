// The built `fleetgate` command (bin/fleetgate.js over dist/) makes a CA set and issues kubeconfigs that kubectl
// reads and that authenticate over TLS to a server using the serving certificate and trusting the client CA.

import { execFile, spawnSync } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BIN, ensureBuilt, ROOT } from '../support/build.js';
import { kubectl } from '../support/kubectl.js';

const DAY = 86_400_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function fleetgate(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

function pemOf(base64: string): string {
  return Buffer.from(base64, 'base64').toString('utf8');
}

interface Kubeconfig {
  clusters: Array<{ name: string; cluster: { server: string; 'certificate-authority-data': string } }>;
  users: Array<{ name: string; user: { 'client-certificate-data': string; 'client-key-data': string } }>;
  contexts: Array<{ name: string; context: { cluster: string; user: string } }>;
  'current-context': string;
}

let dir: string;
let pki: string;

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'fleetgate-cli-certs-'));
  pki = join(dir, 'pki');
});

describe('fleetgate certs init', () => {
  it('writes a CA, a serving certificate for the hosts and a client CA, keys 0600', async () => {
    const r = await fleetgate('certs', 'init', '--dir', pki, '--hosts', 'localhost,127.0.0.1,::1,gateway.example');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`created in ${pki}:`);
    expect(readdirSync(pki).sort()).toEqual(['ca.crt', 'ca.key', 'client-ca.crt', 'client-ca.key', 'serving.crt', 'serving.key']);
    for (const k of ['ca.key', 'serving.key', 'client-ca.key']) expect(mode(join(pki, k)), k).toBe(0o600);
    for (const c of ['ca.crt', 'serving.crt', 'client-ca.crt']) expect(mode(join(pki, c)), c).toBe(0o644);

    const ca = new X509Certificate(readFileSync(join(pki, 'ca.crt')));
    const clientCA = new X509Certificate(readFileSync(join(pki, 'client-ca.crt')));
    const serving = new X509Certificate(readFileSync(join(pki, 'serving.crt')));
    expect(ca.ca).toBe(true);
    expect(clientCA.ca).toBe(true);
    expect(clientCA.fingerprint256).not.toBe(ca.fingerprint256);
    expect(ca.checkPrivateKey(createPrivateKey(readFileSync(join(pki, 'ca.key'))))).toBe(true);
    expect(clientCA.checkPrivateKey(createPrivateKey(readFileSync(join(pki, 'client-ca.key'))))).toBe(true);

    expect(serving.ca).toBe(false);
    expect(serving.checkIssued(ca)).toBe(true);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.verify(clientCA.publicKey)).toBe(false);
    expect(serving.checkPrivateKey(createPrivateKey(readFileSync(join(pki, 'serving.key'))))).toBe(true);
    expect(serving.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:gateway.example');
    expect(serving.checkHost('gateway.example')).toBe('gateway.example');
    expect(serving.checkIP('::1')).toBe('::1');
  });

  it('defaults the hosts to localhost and 127.0.0.1', async () => {
    const d = join(dir, 'default-hosts');
    expect((await fleetgate('certs', 'init', '--dir', d)).code).toBe(0);
    expect(new X509Certificate(readFileSync(join(d, 'serving.crt'))).subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1');
  });

  it('refuses to overwrite unless --force', async () => {
    const before = readFileSync(join(pki, 'ca.crt'), 'utf8');
    const r = await fleetgate('certs', 'init', '--dir', pki);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `fleetgate certs init: ${pki} already has ca.crt, ca.key, serving.crt, serving.key, client-ca.crt, client-ca.key; pass --force to replace them\n`,
    );
    expect(readFileSync(join(pki, 'ca.crt'), 'utf8')).toBe(before);

    const d = join(dir, 'forced');
    expect((await fleetgate('certs', 'init', '--dir', d)).code).toBe(0);
    const old = readFileSync(join(d, 'ca.crt'), 'utf8');
    const forced = await fleetgate('certs', 'init', '--dir', d, '--force');
    expect(forced.code).toBe(0);
    expect(readFileSync(join(d, 'ca.crt'), 'utf8')).not.toBe(old);
    expect(mode(join(d, 'ca.key'))).toBe(0o600);
    expect(readdirSync(d).sort()).toEqual(['ca.crt', 'ca.key', 'client-ca.crt', 'client-ca.key', 'serving.crt', 'serving.key']);
  });

  it('exits 2 with one line for a bad flag', async () => {
    const r = await fleetgate('certs', 'init', '--dir', join(dir, 'x'), '--hosts', 'bad host');
    expect(r).toEqual({ code: 2, stdout: '', stderr: 'fleetgate certs init: --hosts entry "bad host" is not an IP address or DNS name\n' });
    expect(existsSync(join(dir, 'x'))).toBe(false);
  });
});

describe('fleetgate certs issue', () => {
  let server: Server;
  let url: string;
  const seen: Array<{ authorized: boolean; subject?: string }> = [];

  beforeAll(async () => {
    // A stand-in for the gateway's TLS step: the serving pair, client certificates required and checked against the client CA.
    server = createServer(
      {
        cert: readFileSync(join(pki, 'serving.crt')),
        key: readFileSync(join(pki, 'serving.key')),
        ca: readFileSync(join(pki, 'client-ca.crt')),
        requestCert: true,
        rejectUnauthorized: false,
      },
      (req, res) => {
        const socket = req.socket as TLSSocket;
        const peer = socket.getPeerX509Certificate();
        seen.push({ authorized: socket.authorized, ...(peer ? { subject: peer.subject } : {}) });
        res.writeHead(socket.authorized ? 200 : 401, { 'Content-Type': 'text/plain' }).end(socket.authorized ? 'ok' : 'Unauthorized');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('writes a kubeconfig whose client certificate chains to the client CA with CN=user and O=groups', async () => {
    const out = join(dir, 'alice.kubeconfig');
    const r = await fleetgate('certs', 'issue', '--dir', pki, '--user', 'alice', '--group', 'dev', '--group', 'system:masters', '--server', url, '--out', out, '--days', '30');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^wrote ${out}: user "alice", groups "dev", "system:masters", serial [0-9A-F]+, valid until \\S+, server ${url}\\n$`));
    expect(mode(out)).toBe(0o600);

    const kc = parse(readFileSync(out, 'utf8')) as Kubeconfig;
    expect(kc['current-context']).toBe('fleetgate');
    expect(kc.contexts).toEqual([{ name: 'fleetgate', context: { cluster: 'fleetgate', user: 'alice' } }]);
    expect(kc.clusters[0]!.cluster.server).toBe(url);
    expect(pemOf(kc.clusters[0]!.cluster['certificate-authority-data'])).toBe(readFileSync(join(pki, 'ca.crt'), 'utf8'));

    const cert = new X509Certificate(pemOf(kc.users[0]!.user['client-certificate-data']));
    const clientCA = new X509Certificate(readFileSync(join(pki, 'client-ca.crt')));
    const ca = new X509Certificate(readFileSync(join(pki, 'ca.crt')));
    expect(cert.checkIssued(clientCA)).toBe(true);
    expect(cert.verify(clientCA.publicKey)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(false);
    expect(cert.subject.split('\n')).toEqual(['O=dev', 'O=system:masters', 'CN=alice']);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(cert.checkPrivateKey(createPrivateKey(pemOf(kc.users[0]!.user['client-key-data'])))).toBe(true);
    const days = (Date.parse(cert.validTo) - Date.now()) / DAY;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);
  });

  it('is read by kubectl config view --raw', async () => {
    const out = join(dir, 'alice.kubeconfig');
    const view = await kubectl('1.33', out, ['config', 'view', '--raw', '-o', 'json']);
    expect(view.stderr).toBe('');
    expect(view.code).toBe(0);
    const viewed = JSON.parse(view.stdout) as Kubeconfig;
    const file = parse(readFileSync(out, 'utf8')) as Kubeconfig;
    expect(viewed['current-context']).toBe('fleetgate');
    expect(viewed.clusters).toEqual(file.clusters);
    expect(viewed.users).toEqual(file.users);
    expect(viewed.contexts).toEqual(file.contexts);
  });

  it('authenticates kubectl over TLS: the server certificate verifies and the client certificate is accepted', async () => {
    const before = seen.length;
    const r = await kubectl('1.33', join(dir, 'alice.kubeconfig'), ['get', '--raw', '/healthz']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ok');
    expect(seen.slice(before)).toEqual([{ authorized: true, subject: 'O=dev\nO=system:masters\nCN=alice' }]);
  });

  it('writes to stdout with --out - and refuses to overwrite a file without --force', async () => {
    const r = await fleetgate('certs', 'issue', '--dir', pki, '--user', 'bob', '--server', url, '--out', '-');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^issued a client certificate for user "bob", valid until \S+\n$/);
    const kc = parse(r.stdout) as Kubeconfig;
    expect(new X509Certificate(pemOf(kc.users[0]!.user['client-certificate-data'])).subject).toBe('CN=bob');

    const out = join(dir, 'alice.kubeconfig');
    const before = readFileSync(out, 'utf8');
    const refused = await fleetgate('certs', 'issue', '--dir', pki, '--user', 'alice', '--server', url, '--out', out);
    expect(refused).toEqual({ code: 1, stdout: '', stderr: `fleetgate certs issue: ${out} already exists; pass --force to replace it\n` });
    expect(readFileSync(out, 'utf8')).toBe(before);
    const forced = await fleetgate('certs', 'issue', '--dir', pki, '--user', 'carol', '--server', url, '--out', out, '--force');
    expect(forced.code).toBe(0);
    expect(mode(out)).toBe(0o600);
    const kc2 = parse(readFileSync(out, 'utf8')) as Kubeconfig;
    expect(new X509Certificate(pemOf(kc2.users[0]!.user['client-certificate-data'])).subject).toBe('CN=carol');
  });

  it('names a missing client CA', async () => {
    const empty = mkdtempSync(join(dir, 'empty-'));
    const r = await fleetgate('certs', 'issue', '--dir', empty, '--user', 'alice', '--server', url, '--out', join(empty, 'kc'));
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr: `fleetgate certs issue: cannot read ${join(empty, 'ca.crt')}: no such file or directory (make it with: fleetgate certs init --dir ${empty})\n`,
    });
  });
});
