// The gateway in front of a simulated control plane: kubectl cannot tell it from a kube-apiserver, callers are
// who their certificates say (impersonated upstream), and bad input never reaches the control plane.

import { connect as h2connect } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueClientCert } from '../../src/pki/index.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { startTestGateway, type TestGateway } from '../support/gateway.js';
import { call, openWatch, type ClusterEndpoint } from '../support/http.js';
import { kubectl, type KubectlVersion } from '../support/kubectl.js';

let sim: SimFleet;
let gw: TestGateway;
let admin: string;
let alice: string;
let adminEp: ClusterEndpoint;
let aliceEp: ClusterEndpoint;

beforeAll(async () => {
  sim = await startSimFleet({ clusters: ['control-plane'], nodesPerCluster: 0 });
  const cp = sim.member('control-plane').cluster;
  const ns = cp.resourceFor('', 'namespaces')!;
  cp.create(ns, '', { metadata: { name: 'demo' } });
  cp.create(cp.resourceFor('rbac.authorization.k8s.io', 'rolebindings')!, 'demo', {
    metadata: { name: 'dev-edit', namespace: 'demo' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'dev' }],
  });
  gw = await startTestGateway({ controlPlaneKubeconfig: sim.member('control-plane').kubeconfigPath });
  admin = await gw.kubeconfigFor('admin', ['system:masters']);
  alice = await gw.kubeconfigFor('alice', ['dev']);
  adminEp = await gw.endpointFor('admin', ['system:masters']);
  aliceEp = await gw.endpointFor('alice', ['dev']);
});

afterAll(async () => {
  await gw?.close();
  await sim?.close();
});

describe.each<KubectlVersion>(['1.27', '1.30', '1.33'])('kubectl %s through the gateway', (v) => {
  it('shows who the caller is', async () => {
    const who = await kubectl(v, alice, ['auth', 'whoami', '-o', 'json']);
    expect(who.stderr).toBe('');
    const info = JSON.parse(who.stdout).status.userInfo;
    expect(info.username).toBe('alice');
    expect(info.groups).toEqual(['dev', 'system:authenticated']);
  });

  it('answers can-i as the control plane does for the caller', async () => {
    for (const [args, want] of [
      [['create', 'configmaps', '-n', 'demo'], 'yes'],
      [['list', 'pods', '-n', 'kube-system'], 'no'],
      [['delete', 'namespaces'], 'no'],
    ] as const) {
      const r = await kubectl(v, alice, ['auth', 'can-i', ...args]);
      expect(r.stdout.trim()).toBe(want);
    }
  });

  it('creates, reads, patches and deletes a ConfigMap as the caller', async () => {
    const name = `gw-${v.replace('.', '-')}`;
    const created = await kubectl(v, alice, ['create', 'configmap', name, '-n', 'demo', '--from-literal=a=1']);
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe(`configmap/${name} created`);
    const patched = await kubectl(v, alice, ['patch', 'configmap', name, '-n', 'demo', '-p', '{"data":{"b":"2"}}']);
    expect(patched.stdout.trim()).toBe(`configmap/${name} patched`);
    const got = JSON.parse((await kubectl(v, alice, ['get', 'configmap', name, '-n', 'demo', '-o', 'json'])).stdout);
    expect(got.data).toEqual({ a: '1', b: '2' });
    const table = await kubectl(v, alice, ['get', 'configmaps', '-n', 'demo']);
    expect(table.stdout).toMatch(new RegExp(`${name}\\s+2\\s+\\d+s`));
    const del = await kubectl(v, alice, ['delete', 'configmap', name, '-n', 'demo']);
    expect(del.stdout.trim()).toBe(`configmap "${name}" deleted`);
  });

  it('refuses what the control plane refuses the caller, with its message', async () => {
    const r = await kubectl(v, alice, ['get', 'configmaps', '-n', 'kube-system']);
    expect(r.stderr.trim()).toBe('Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system"');
  });

  it('lists only exposed resources in discovery', async () => {
    const r = await kubectl(v, admin, ['api-resources', '--no-headers', '-o', 'name']);
    const names = r.stdout.trim().split('\n').sort();
    // The self reviews stay: whoami and can-i must work whatever is exposed.
    expect(names).toEqual(
      [
        'configmaps',
        'deployments.apps',
        'events',
        'events.events.k8s.io',
        'namespaces',
        'pods',
        'selfsubjectaccessreviews.authorization.k8s.io',
        'selfsubjectreviews.authentication.k8s.io',
        'selfsubjectrulesreviews.authorization.k8s.io',
      ].sort(),
    );
  });
});

describe('bad input', () => {
  it('401 without a client certificate', async () => {
    const r = await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/api/v1/namespaces');
    expect(r.status).toBe(401);
    expect(r.json()).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
  });

  it('401 for a certificate from an unknown CA', async () => {
    const rogue = await createCA('rogue');
    const cert = await issueClientCert(rogue, 'admin', ['system:masters']);
    const r = await call({ url: gw.url, caPem: gw.servingCA.certPem, certPem: cert.certPem, keyPem: cert.keyPem }, 'GET', '/api/v1/namespaces');
    expect(r.status).toBe(401);
  });

  it('health endpoints answer without credentials', async () => {
    const r = await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/readyz?verbose');
    expect(r.status).toBe(200);
    expect(r.text).toContain('[+]control-plane ok');
  });

  it('403 for Impersonate-User without the right, and nothing reaches the control plane', async () => {
    const r = await call(aliceEp, 'POST', '/api/v1/namespaces/demo/configmaps', {
      body: { metadata: { name: 'as-admin' } },
      headers: { 'Impersonate-User': 'admin' },
    });
    expect(r.status).toBe(403);
    expect(r.json().message).toBe('users "admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope');
    expect(sim.member('control-plane').cluster.get('', 'configmaps', 'demo', 'as-admin')).toBeUndefined();
  });

  it('honours Impersonate-User for a caller allowed to impersonate', async () => {
    const r = await call(adminEp, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      headers: { 'Impersonate-User': 'bob', 'Impersonate-Group': 'ops' },
    });
    expect(r.status).toBe(201);
    expect(r.json().status.userInfo).toMatchObject({ username: 'bob', groups: ['ops', 'system:authenticated'] });
  });

  it('400 for malformed JSON, and nothing reaches the control plane', async () => {
    const r = await call(adminEp, 'POST', '/api/v1/namespaces/demo/configmaps', { body: '{"metadata": {"name": "broken"', contentType: 'application/json' });
    expect(r.status).toBe(400);
    expect(r.json().reason).toBe('BadRequest');
    expect(sim.member('control-plane').cluster.get('', 'configmaps', 'demo', 'broken')).toBeUndefined();
  });

  it('413 for an oversized body', async () => {
    const big = JSON.stringify({ metadata: { name: 'big' }, data: { x: 'y'.repeat(4 * 1024 * 1024) } });
    const r = await call(adminEp, 'POST', '/api/v1/namespaces/demo/configmaps', { body: big });
    expect(r.status).toBe(413);
    expect(r.json()).toMatchObject({ kind: 'Status', code: 413 });
    expect(sim.member('control-plane').cluster.get('', 'configmaps', 'demo', 'big')).toBeUndefined();
  });

  it('404 Status for resources that are not exposed', async () => {
    const r = await call(adminEp, 'GET', '/api/v1/namespaces/demo/secrets');
    expect(r.status).toBe(404);
    expect(r.json()).toMatchObject({ kind: 'Status', reason: 'NotFound', message: 'the server could not find the requested resource' });
  });

  it('404 for unknown paths', async () => {
    const r = await call(adminEp, 'GET', '/apis/nope.example.com/v1/things');
    expect(r.status).toBe(404);
  });
});

describe('streams and metrics', () => {
  it('watches flush each event', async () => {
    const list = (await call(adminEp, 'GET', '/api/v1/namespaces/demo/configmaps')).json();
    const w = await openWatch(adminEp, `/api/v1/namespaces/demo/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`);
    const t0 = Date.now();
    await call(adminEp, 'POST', '/api/v1/namespaces/demo/configmaps', { body: { metadata: { name: 'watched' } } });
    await w.waitFor((e) => e.some((x) => x.type === 'ADDED' && x.object.metadata.name === 'watched'), 5000);
    expect(Date.now() - t0).toBeLessThan(2000);
    w.close();
  });

  it('counts an open watch in apiserver_longrunning_requests until it ends, and not as a request in flight', async () => {
    const gauge = async (): Promise<number> => {
      const text = (await call(adminEp, 'GET', '/metrics')).text;
      const line = text.split('\n').find((l) => l.startsWith('apiserver_longrunning_requests{') && l.includes('resource="configmaps"') && l.includes('verb="WATCH"'));
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    // The watch of the test before may still be closing.
    const settle = async (want: number): Promise<number> => {
      const until = Date.now() + 5_000;
      let value = await gauge();
      while (value !== want && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20));
        value = await gauge();
      }
      return value;
    };
    expect(await settle(0)).toBe(0);
    const list = (await call(adminEp, 'GET', '/api/v1/namespaces/demo/configmaps')).json();
    const w = await openWatch(adminEp, `/api/v1/namespaces/demo/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`);
    expect(await gauge()).toBe(1);
    // Long-running requests are not in flight as kube-apiserver counts them: the most in a second, set once a
    // second, is one (these GETs, one at a time), where the watch would make it two.
    const inflight = async () => (await call(adminEp, 'GET', '/metrics')).text.split('\n').find((l) => l.startsWith('apiserver_current_inflight_requests{request_kind="readOnly"}'));
    const until = Date.now() + 5_000;
    let line = await inflight();
    while (line?.endsWith(' 0') && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      line = await inflight();
    }
    expect(line).toBe('apiserver_current_inflight_requests{request_kind="readOnly"} 1');
    w.close();
    expect(await settle(0)).toBe(0);
  });

  it('/metrics for users allowed to read it, 403 for others', async () => {
    const ok = await call(adminEp, 'GET', '/metrics');
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('apiserver_request_total{');
    expect(ok.text).toMatch(/apiserver_request_duration_seconds_bucket\{.*verb="LIST"/);
    const no = await call(aliceEp, 'GET', '/metrics');
    expect(no.status).toBe(403);
    expect(no.json().message).toBe('forbidden: User "alice" cannot get path "/metrics"');
  });

  it('counts failed TLS handshakes in apiserver_tls_handshake_errors_total: plain HTTP to the port, a client that does not trust the gateway', async () => {
    const errors = async () => {
      const line = (await call(adminEp, 'GET', '/metrics')).text.split('\n').find((l) => l.startsWith('apiserver_tls_handshake_errors_total '));
      return Number(line?.split(' ')[1] ?? 0);
    };
    const before = await errors();
    const { hostname, port } = new URL(gw.url);
    // Plain HTTP: the gateway reads it as a bad TLS record.
    await new Promise<void>((resolve) => {
      const s = netConnect({ host: hostname, port: Number(port) }, () => s.write('GET /api HTTP/1.1\r\nHost: x\r\n\r\n'));
      s.on('error', () => {});
      s.on('close', () => resolve());
      s.resume();
    });
    // A client whose CA does not know the gateway's certificate ends the handshake with an alert.
    const stranger = await createCA('stranger');
    await new Promise<void>((resolve) => {
      const s = tlsConnect({ host: hostname, port: Number(port), ca: stranger.certPem, servername: 'localhost' });
      s.on('error', () => resolve());
      s.on('secureConnect', () => resolve());
    });
    let after = await errors();
    for (const until = Date.now() + 5_000; after < before + 2 && Date.now() < until; after = await errors()) await new Promise((r) => setTimeout(r, 50));
    expect(after).toBe(before + 2);
  });

  it("counts authentication and authorization as kube-apiserver's filters do, and leaves their refusals out of the request metrics", async () => {
    const scrape = async () => (await call(adminEp, 'GET', '/metrics')).text;
    const value = (text: string, series: string) => Number(text.split('\n').find((l) => l.startsWith(series + ' '))?.slice(series.length + 1) ?? 0);
    const before = await scrape();
    // No credential at all, anonymous access off: failure. A certificate of an unknown CA: error.
    const anon = { url: gw.url, caPem: gw.servingCA.certPem };
    // A day's validity: its time left is observed although it does not verify, as kube-apiserver observes it.
    const rogue = await issueClientCert(await createCA('rogue-metrics'), 'admin', ['system:masters'], { days: 1 });
    for (let i = 0; i < 3; i++) expect((await call(anon, 'GET', `/apis/made-up-${i}.example.com/v1/things`)).status).toBe(401);
    expect((await call({ ...anon, certPem: rogue.certPem, keyPem: rogue.keyPem }, 'GET', '/apis/made-up-rogue.example.com/v1/things')).status).toBe(401);
    // alice is authenticated, then refused /metrics by the gateway's own authorization.
    expect((await call(aliceEp, 'GET', '/metrics')).status).toBe(403);
    const after = await scrape();

    expect(value(after, 'authentication_attempts{result="failure"}') - value(before, 'authentication_attempts{result="failure"}')).toBe(3);
    expect(value(after, 'authentication_attempts{result="error"}') - value(before, 'authentication_attempts{result="error"}')).toBe(1);
    // alice's success and the second scrape's, by kind of name: admin is one of kube's well-known names, alice is other.
    expect(value(after, 'authenticated_user_requests{username="other"}') - value(before, 'authenticated_user_requests{username="other"}')).toBe(1);
    expect(value(after, 'authenticated_user_requests{username="admin"}') - value(before, 'authenticated_user_requests{username="admin"}')).toBe(1);
    expect(value(after, 'authentication_duration_seconds_count{result="failure"}') - value(before, 'authentication_duration_seconds_count{result="failure"}')).toBe(3);
    // The control plane's RBAC found no rule for alice: no opinion, as kube-apiserver labels an RBAC refusal.
    expect(value(after, 'authorization_attempts_total{result="no-opinion"}') - value(before, 'authorization_attempts_total{result="no-opinion"}')).toBe(1);
    expect(value(after, 'authorization_attempts_total{result="denied"}') - value(before, 'authorization_attempts_total{result="denied"}')).toBe(0);
    expect(value(after, 'authorization_attempts_total{result="allowed"}') - value(before, 'authorization_attempts_total{result="allowed"}')).toBe(1);
    // Time left on each client certificate presented: the rogue one (under a day), alice's and admin's (a year).
    const expiry = (text: string, le: string) => value(text, `apiserver_client_certificate_expiration_seconds_bucket{le="${le}"}`);
    expect(expiry(after, '86400') - expiry(before, '86400')).toBe(1);
    expect(expiry(after, '43200') - expiry(before, '43200')).toBe(0);
    expect(value(after, 'apiserver_client_certificate_expiration_seconds_count') - value(before, 'apiserver_client_certificate_expiration_seconds_count')).toBe(3);
    // The refused requests added no request series: a caller who cannot authenticate cannot grow them.
    expect(after).not.toContain('made-up-');
    expect(after).not.toMatch(/apiserver_request_total\{[^}]*code="401"/);
    expect(value(after, 'apiserver_request_total{verb="GET",dry_run="",group="",version="",resource="",subresource="",scope="",component="apiserver",code="403"}')).toBe(
      value(before, 'apiserver_request_total{verb="GET",dry_run="",group="",version="",resource="",subresource="",scope="",component="apiserver",code="403"}'),
    );
  });

  it('echoes Audit-ID', async () => {
    const r = await call(adminEp, 'GET', '/api/v1/namespaces', { headers: { 'Audit-ID': 'my-audit-id-1' } });
    expect(r.headers['audit-id']).toBe('my-audit-id-1');
  });

  it("offers HTTP/2 clients kube-apiserver's 1000 concurrent streams per connection", async () => {
    // Node's own default is unbounded: one connection could open streams (watches) without limit.
    const session = h2connect(adminEp.url, { ca: adminEp.caPem, cert: adminEp.certPem, key: adminEp.keyPem });
    try {
      const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve, reject) => {
        session.once('remoteSettings', resolve);
        session.once('error', reject);
      });
      expect(settings.maxConcurrentStreams).toBe(1000);
    } finally {
      session.close();
    }
  });
});
