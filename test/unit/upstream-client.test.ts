// Reading the gateway's upstream from a kubeconfig, and how upstream failures become Statuses that name the
// upstream but never its credentials.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { upstreamFromEndpoint, upstreamFromKubeconfig, type Upstream } from '../../src/upstream/client.js';
import { UpstreamDeadline, upstreamFailure } from '../../src/upstream/errors.js';
import { upstreamPath } from '../../src/upstream/forward.js';

let dir: string;
const opened: Upstream[] = [];
const CA = '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nCLIENT\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-upstream-'));
});
afterAll(async () => {
  await Promise.all(opened.map((u) => u.close()));
  await rm(dir, { recursive: true, force: true });
});

async function kubeconfig(file: string, doc: object): Promise<string> {
  const p = join(dir, file);
  await writeFile(p, stringify(doc));
  return p;
}

function config(users: object[], clusters: object[], contexts: object[], current: string) {
  return { apiVersion: 'v1', kind: 'Config', clusters, users, contexts, 'current-context': current };
}

function open(u: Upstream): Upstream {
  opened.push(u);
  return u;
}

describe('upstreamFromKubeconfig', () => {
  it('takes server, CA data, client certificate data and token from the current context', async () => {
    const p = await kubeconfig('a.kubeconfig', config(
      [{ name: 'gw', user: { 'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY), token: 'tok\n' } }],
      [{ name: 'cp', cluster: { server: 'https://10.0.0.1:6443', 'certificate-authority-data': b64(CA), 'tls-server-name': 'kubernetes' } }],
      [{ name: 'main', context: { cluster: 'cp', user: 'gw' } }],
      'main',
    ));
    const up = open(upstreamFromKubeconfig(p));
    expect(up.name).toBe('main');
    expect(up.role).toBe('control plane');
    expect(up.url.href).toBe('https://10.0.0.1:6443/');
    expect(up.authHeader).toBe('Bearer tok');
    expect(up.connect).toMatchObject({ tls: true, host: '10.0.0.1', port: 6443 });
    expect(up.connect.options).toMatchObject({ ca: CA, cert: CERT, key: KEY, rejectUnauthorized: true, servername: 'kubernetes' });
  });

  it('reads files relative to the kubeconfig, honours a named context and insecure-skip-tls-verify', async () => {
    await writeFile(join(dir, 'ca.crt'), CA);
    await writeFile(join(dir, 'gw.crt'), CERT);
    await writeFile(join(dir, 'gw.key'), KEY);
    const p = await kubeconfig('b.kubeconfig', config(
      [{ name: 'gw', user: { 'client-certificate': 'gw.crt', 'client-key': 'gw.key' } }],
      [
        { name: 'cp', cluster: { server: 'https://cp.example.com/prefix/', 'certificate-authority': 'ca.crt' } },
        { name: 'other', cluster: { server: 'https://other:6443', 'insecure-skip-tls-verify': true } },
      ],
      [{ name: 'main', context: { cluster: 'cp', user: 'gw' } }, { name: 'lab', context: { cluster: 'other', user: 'gw' } }],
      'lab',
    ));
    const main = open(upstreamFromKubeconfig(p, 'main', 'control-plane'));
    expect(main.name).toBe('control-plane');
    expect(main.authHeader).toBeUndefined();
    expect(main.connect).toMatchObject({ host: 'cp.example.com', port: 443 });
    expect(main.connect.options).toMatchObject({ ca: CA, cert: CERT, key: KEY, rejectUnauthorized: true });
    expect(upstreamPath(main, '/api/v1/pods?limit=1')).toBe('/prefix/api/v1/pods?limit=1');
    const lab = open(upstreamFromKubeconfig(p));
    expect(lab.connect.options.rejectUnauthorized).toBe(false);
    expect(upstreamPath(lab, '/api')).toBe('/api');
  });

  it('refuses credentials the gateway cannot use on its own, and says why', async () => {
    const p = await kubeconfig('c.kubeconfig', config(
      [
        { name: 'plugin', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'aws' } } },
        { name: 'nothing', user: {} },
      ],
      [{ name: 'cp', cluster: { server: 'https://cp:6443' } }],
      [{ name: 'plugin', context: { cluster: 'cp', user: 'plugin' } }, { name: 'nothing', context: { cluster: 'cp', user: 'nothing' } }],
      'plugin',
    ));
    expect(() => upstreamFromKubeconfig(p)).toThrow(/user "plugin" uses a credential plugin/);
    expect(() => upstreamFromKubeconfig(p, 'nothing')).toThrow(/has neither a client certificate nor a token/);
    expect(() => upstreamFromKubeconfig(p, 'missing')).toThrow(/no context "missing"/);
    expect(() => upstreamFromKubeconfig(join(dir, 'absent.kubeconfig'))).toThrow(/absent\.kubeconfig/);
  });
});

describe('upstreamFailure', () => {
  const up = open(upstreamFromEndpoint({ name: 'control-plane', url: 'https://user:pass@127.0.0.1:6443', token: 'very-secret' }));

  it('answers 503 for an upstream that cannot be reached, naming it by origin only', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    const s = upstreamFailure(up, err, 'connect').status;
    expect(s).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    expect(s.message).toBe('the control plane "control-plane" (https://127.0.0.1:6443) is unavailable: connect ECONNREFUSED 127.0.0.1:6443');
    expect(JSON.stringify(s)).not.toMatch(/very-secret|pass/);
  });

  it('spells out happy-eyeballs failures, which come as an AggregateError without a message', () => {
    const parts = [new Error('connect ECONNREFUSED ::1:6443'), new Error('connect ECONNREFUSED 127.0.0.1:6443')];
    const s = upstreamFailure(up, Object.assign(new AggregateError(parts, ''), { code: 'ECONNREFUSED' }), 'connect').status;
    expect(s.message).toBe('the control plane "control-plane" (https://127.0.0.1:6443) is unavailable: connect ECONNREFUSED ::1:6443; connect ECONNREFUSED 127.0.0.1:6443');
  });

  it('answers 504 for deadlines and timeouts, 502 for a broken exchange', () => {
    expect(upstreamFailure(up, new UpstreamDeadline(1500), 'response').status).toMatchObject({
      code: 504,
      reason: 'Timeout',
      message: 'Timeout: the control plane "control-plane" (https://127.0.0.1:6443) did not respond within 1.5s',
      details: {},
    });
    expect(upstreamFailure(up, Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 'response').status.code).toBe(504);
    expect(upstreamFailure(up, Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' }), 'connect').status.code).toBe(504);
    const bad = upstreamFailure(up, Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }), 'response').status;
    expect(bad).toMatchObject({ code: 502, message: 'the control plane "control-plane" (https://127.0.0.1:6443) failed to answer: other side closed' });
    expect(bad.reason).toBe('');
  });
});
