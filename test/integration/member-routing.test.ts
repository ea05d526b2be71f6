// Writes and pod subresources routed to member clusters, with kubectl 1.33 against a small HTTPS gateway: x509
// callers, the merged cache fed by reflectors from a simulated fleet of two members, cached reads by serveCached,
// everything on pods and events that is not a cached read by routeToMember, the rest (discovery) forwarded to
// member-a standing in for the control plane. Each member's own RBAC decides about the impersonated caller.

import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { toStatus } from '../../src/api/status.js';
import { authenticateClientCert } from '../../src/authn/x509.js';
import { MergedCache, CLUSTER_LABEL } from '../../src/cache/merged.js';
import { tokenBucket } from '../../src/cache/ratelimit.js';
import { startReflector, type Reflector } from '../../src/cache/reflector.js';
import { isCachedRead, serveCached } from '../../src/cache/serve.js';
import type { ActiveWatch } from '../../src/cache/watch.js';
import { memberConnections, type MemberConnections } from '../../src/members/connections.js';
import type { MemberSpec } from '../../src/members/member.js';
import { routesToMember, routeToMember } from '../../src/members/route.js';
import { issueClientCert, issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { requestInfoStep, targetPath } from '../../src/request/filter.js';
import type { RequestContext, Response } from '../../src/server/context.js';
import { writeStatus } from '../../src/server/respond.js';
import { endpointFromKubeconfig } from '../../src/upstream/client.js';
import { forward } from '../../src/upstream/forward.js';
import { writeStatus as writeUpgradeStatus } from '../../src/upstream/upgrade.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { call, type ClusterEndpoint } from '../support/http.js';
import { kubectl, kubectlPath } from '../support/kubectl.js';

const log = pino({ level: process.env.FLEETGATE_TEST_LOG ?? 'silent' });
const MEMBERS = ['member-a', 'member-b'];

let fleet: SimFleet;
let dir: string;
let cache: MergedCache;
let conns: MemberConnections;
let reflectors: Reflector[] = [];
const watches = new Set<ActiveWatch>();
let gw: Server;
let gwURL: string;
let ops: string; // kubeconfig: system:masters everywhere
let alice: string; // kubeconfig: may edit namespace demo in member-a only
let opsA: string; // kubeconfig: ops through /clusters/member-a
let opsEndpoint: ClusterEndpoint;

function podsOf(cluster: string) {
  const c = fleet.member(cluster).cluster;
  return c.store(c.resourceFor('', 'pods')!);
}

function runningPod(name: string, node: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'demo', labels: { app: name } },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'busybox' }], terminationGracePeriodSeconds: 30 },
    status: { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, restartCount: 0, image: 'busybox', imageID: '', state: { running: { startedAt: '2026-11-22T10:00:00Z' } } }] },
  } as unknown as KubeObject;
}

async function until<T>(what: string, f: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function kubeconfigFor(user: string, groups: string[], server: string, file: string): Promise<string> {
  const cert = await issueClientCert(fleet.clientCA, user, groups);
  const p = join(dir, file);
  await writeFile(p, buildKubeconfig({ name: 'fleetgate', server, caPem: fleet.servingCA.certPem, user, clientCertPem: cert.certPem, clientKeyPem: cert.keyPem }), { mode: 0o600 });
  return p;
}

/** The chain in brief: request info, x509 authentication, then member routing, cached reads or the stand-in control plane. */
async function handle(ctx: RequestContext): Promise<void> {
  await requestInfoStep({ deadlineMs: 10_000 })(ctx, async () => {
    const outcome = authenticateClientCert(ctx.req);
    if (outcome.kind !== 'user') throw new Error('the test gateway needs a client certificate');
    ctx.user = { ...outcome.user, groups: [...outcome.user.groups, 'system:authenticated'] };
    if (routesToMember(ctx)) return routeToMember(ctx, { cache, members: conns, maxBodyBytes: 3 << 20 });
    if (isCachedRead(ctx.info)) return serveCached(ctx, cache, { stale: () => [], onWatch: (w) => watches.add(w) });
    if (ctx.upgrade) throw new Error('unexpected upgrade');
    await forward(conns.get('member-a')!.impersonator, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, path: targetPath(ctx) });
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-routing-'));
  fleet = await startSimFleet({ clusters: MEMBERS, nodesPerCluster: 1, cluster: { kubeletDeleteAfterMs: 300 } });
  for (const name of MEMBERS) {
    const c = fleet.member(name).cluster;
    c.load(c.resourceFor('', 'namespaces')!, { metadata: { name: 'demo' } } as KubeObject);
  }
  const load = (cluster: string, o: KubeObject) => fleet.member(cluster).cluster.load(fleet.member(cluster).cluster.resourceFor('', 'pods')!, o);
  load('member-a', runningPod('web', 'member-a-node-1'));
  load('member-a', runningPod('both', 'member-a-node-1'));
  load('member-b', runningPod('api', 'member-b-node-1'));
  load('member-b', runningPod('both', 'member-b-node-1'));
  load('member-b', runningPod('victim', 'member-b-node-1'));
  // alice may edit namespace demo in member-a; member-b knows nothing of her.
  const a = fleet.member('member-a').cluster;
  a.load(a.resourceFor('rbac.authorization.k8s.io', 'rolebindings')!, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'alice-edit', namespace: 'demo' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  } as unknown as KubeObject);

  const specs: MemberSpec[] = MEMBERS.map((name) => {
    const endpoint = endpointFromKubeconfig(fleet.member(name).kubeconfigPath, undefined, name);
    return { name, source: 'static', endpoint, fingerprint: name };
  });
  conns = memberConnections({ list: () => specs, subscribe: () => () => {} }, { log });
  cache = new MergedCache({ instanceID: 'routing-test', windowSize: 1000, dropManagedFields: true });
  for (const name of MEMBERS) {
    for (const resource of ['pods', 'events'] as const) {
      reflectors.push(startReflector({ upstream: conns.get(name)!.upstream, path: `/api/v1/${resource}`, sink: cache.sink(name, resource), limiter: tokenBucket(100, 100), log }));
    }
  }
  await until('the reflectors to sync', () => reflectors.every((r) => r.synced));

  const serving = await issueServingCert(fleet.servingCA, ['127.0.0.1']);
  gw = createServer({ cert: serving.certPem, key: serving.keyPem, ca: fleet.clientCA.certPem, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const ctx = { req, res, url: new URL(req.url ?? '/', 'https://gw.invalid'), auditID: 'routing-test', log } as RequestContext;
    handle(ctx).catch((e) => writeStatus(res as Response, ctx.auditID, toStatus(e)));
  });
  gw.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const ctx = { req, res: undefined as unknown as Response, url: new URL(req.url ?? '/', 'https://gw.invalid'), auditID: 'routing-test', log, upgrade: { socket, head } } as RequestContext;
    handle(ctx).catch((e) => writeUpgradeStatus(socket, ctx.auditID, toStatus(e)));
  });
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  gwURL = `https://127.0.0.1:${(gw.address() as AddressInfo).port}`;
  ops = await kubeconfigFor('ops', ['system:masters'], gwURL, 'ops.kubeconfig');
  alice = await kubeconfigFor('alice', ['dev'], gwURL, 'alice.kubeconfig');
  opsA = await kubeconfigFor('ops', ['system:masters'], `${gwURL}/clusters/member-a`, 'ops-member-a.kubeconfig');
  const cert = await issueClientCert(fleet.clientCA, 'ops', ['system:masters']);
  opsEndpoint = { url: gwURL, caPem: fleet.servingCA.certPem, certPem: cert.certPem, keyPem: cert.keyPem };
});

afterAll(async () => {
  for (const w of watches) w.stop();
  await Promise.all(reflectors.map((r) => r.stop()));
  if (gw) {
    gw.closeAllConnections();
    await new Promise<void>((r) => gw.close(() => r()));
  }
  await conns?.close();
  await fleet?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const k = (kc: string, args: string[], stdin?: string) => kubectl('1.33', kc, args, { stdin, timeoutMs: 30_000 });

describe('kubectl 1.33 through the merged view', () => {
  it('lists both members\' pods with their clusters (the setup works)', async () => {
    const r = await k(ops, ['get', 'pods', '-n', 'demo', '-L', CLUSTER_LABEL, '--no-headers']);
    expect(r.stderr).toBe('');
    const rows = r.stdout.trim().split('\n').map((l) => l.split(/\s+/));
    expect(rows.map((c) => `${c[0]}@${c[c.length - 1]}`).sort()).toEqual(['api@member-b', 'both@member-a', 'both@member-b', 'victim@member-b', 'web@member-a']);
  });

  it('delete pod removes it from its member, and kubectl sees it go', async () => {
    expect(podsOf('member-b').get('demo/victim')).toBeDefined();
    const r = await k(ops, ['delete', 'pod', 'victim', '-n', 'demo']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('pod "victim" deleted\n');
    expect(podsOf('member-b').get('demo/victim')).toBeUndefined();
    expect(cache.owners('pods', 'demo', 'victim')).toEqual([]);
  });

  it('logs -f streams from a pod in member-b', async () => {
    const home = await mkdtemp(join(tmpdir(), 'kubectl-home-'));
    const child = spawn(kubectlPath('1.33'), ['--kubeconfig', ops, '--cache-dir', join(home, 'cache'), 'logs', '-f', 'api', '-n', 'demo', '--tail=2'], { env: { ...process.env, HOME: home } });
    let out = '';
    let err = '';
    let exited: number | null | undefined;
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => (exited = code));
    try {
      // Two lines of history, then lines that only a followed stream delivers, while kubectl keeps following.
      await until(`followed log lines (stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)})`, () => out.split('\n').filter(Boolean).length >= 4, 15_000);
      expect(exited).toBeUndefined();
    } finally {
      child.kill();
      await rm(home, { recursive: true, force: true });
    }
    expect(err).toBe('');
    const lines = out.split('\n').filter(Boolean);
    expect(new Set(lines).size).toBe(lines.length);
  });

  it('exec reaches a pod in member-b: a command, and an interactive session reading stdin', async () => {
    const once = await k(ops, ['exec', 'api', '-n', 'demo', '--', 'hostname']);
    expect(once.stderr).toBe('');
    expect(once.stdout).toBe('api\n');
    const echo = await k(ops, ['exec', 'api', '-n', 'demo', '--', 'echo', 'hi']);
    expect(echo.stdout).toBe('hi\n');
    const interactive = await k(ops, ['exec', '-i', 'api', '-n', 'demo', '--', 'cat'], 'hello from stdin\n');
    expect(interactive.stderr).toBe('');
    expect(interactive.stdout).toBe('hello from stdin\n');
  });

  it('label and patch go to the owner, with the fleetgate label taken off', async () => {
    const l = await k(ops, ['label', 'pod', 'api', '-n', 'demo', 'tier=backend']);
    expect(l.stderr).toBe('');
    expect(l.stdout).toBe('pod/api labeled\n');
    const p = await k(ops, ['patch', 'pod', 'api', '-n', 'demo', '--type=merge', '-p', JSON.stringify({ metadata: { labels: { [CLUSTER_LABEL]: 'member-b', patched: 'yes' } } })]);
    expect(p.stderr).toBe('');
    expect(p.stdout).toBe('pod/api patched\n');
    const inMember = podsOf('member-b').get('demo/api')!.labels;
    expect(inMember).toEqual({ app: 'api', tier: 'backend', patched: 'yes' });
    // Read-your-writes: the answer waited for the cache, so a read right after sees the change.
    const got = await k(ops, ['get', 'pod', 'api', '-n', 'demo', '-o', 'jsonpath={.metadata.labels}']);
    expect(JSON.parse(got.stdout)).toEqual({ app: 'api', tier: 'backend', patched: 'yes', [CLUSTER_LABEL]: 'member-b' });
  });

  it('an update with a stale resourceVersion is 409 Conflict', async () => {
    const old = await k(ops, ['get', 'pod', 'web', '-n', 'demo', '-o', 'json']);
    const file = join(dir, 'web-old.json');
    await writeFile(file, old.stdout);
    expect((await k(ops, ['label', 'pod', 'web', '-n', 'demo', 'rev=2'])).stderr).toBe('');
    const r = await k(ops, ['replace', '-f', file]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Error from server (Conflict): error when replacing "' + file + '": Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again');
    // With the current version it goes through, label and all, and the member never sees the label.
    const fresh = await k(ops, ['get', 'pod', 'web', '-n', 'demo', '-o', 'json']);
    const obj = JSON.parse(fresh.stdout);
    obj.metadata.labels.replaced = 'true';
    await writeFile(file, JSON.stringify(obj));
    const ok = await k(ops, ['replace', '-f', file]);
    expect(ok.stderr).toBe('');
    expect(podsOf('member-a').get('demo/web')!.labels).toEqual({ app: 'web', rev: '2', replaced: 'true' });
  });

  it('create needs a cluster: 400 without one, the labelled member with one', async () => {
    const none = await k(ops, ['run', 'lonely', '--image=busybox', '-n', 'demo']);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toBe(
      `Error from server (BadRequest): the member cluster to create the pod in is not known: set the label ${CLUSTER_LABEL} on the object to one of member-a, member-b, or send the request to /clusters/<cluster>/api/v1/namespaces/demo/pods\n`,
    );
    const made = await k(ops, ['run', 'newpod', '--image=busybox', '-n', 'demo', '-l', `${CLUSTER_LABEL}=member-b,app=newpod`]);
    expect(made.stderr).toBe('');
    expect(made.stdout).toBe('pod/newpod created\n');
    expect(podsOf('member-b').get('demo/newpod')!.labels).toEqual({ app: 'newpod' });
    expect(podsOf('member-a').get('demo/newpod')).toBeUndefined();
    // The cache held it before kubectl was answered.
    const got = await k(ops, ['get', 'pod', 'newpod', '-n', 'demo', '-L', CLUSTER_LABEL, '--no-headers']);
    expect(got.stdout).toMatch(/^newpod\s.*\smember-b\n$/);
  });

  it('a name in both members is 409 naming them, for kubectl and for a raw write', async () => {
    const r = await k(ops, ['delete', 'pod', 'both', '-n', 'demo']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Error from server (Conflict)');
    expect(r.stderr).toContain('member-a, member-b');
    const raw = await call(opsEndpoint, 'DELETE', '/api/v1/namespaces/demo/pods/both');
    expect(raw.status).toBe(409);
    expect(raw.json()).toMatchObject({ reason: 'Conflict', details: { name: 'both', kind: 'pods' } });
    expect(podsOf('member-a').get('demo/both')).toBeDefined();
    expect(podsOf('member-b').get('demo/both')).toBeDefined();
  });

  it('the member decides about the caller: alice may write in member-a, member-b refuses her', async () => {
    const ok = await k(alice, ['label', 'pod', 'web', '-n', 'demo', 'by=alice']);
    expect(ok.stderr).toBe('');
    expect(podsOf('member-a').get('demo/web')!.labels.by).toBe('alice');
    const denied = await k(alice, ['delete', 'pod', 'api', '-n', 'demo']);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toBe('Error from server (Forbidden): pods "api" is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "demo"\n');
    expect(podsOf('member-b').get('demo/api')).toBeDefined();
    const exec = await k(alice, ['exec', 'api', '-n', 'demo', '--', 'echo', 'hi']);
    expect(exec.code).not.toBe(0);
    expect(exec.stderr).toContain('User "alice" cannot');
  });
});

describe('kubectl 1.33 with --server https://GATEWAY/clusters/member-a', () => {
  it('sees member-a\'s own API: namespaces, its pods without the label, exec', async () => {
    const ns = await k(opsA, ['get', 'namespaces', '-o', 'name']);
    expect(ns.stderr).toBe('');
    expect(ns.stdout.split('\n').filter(Boolean)).toEqual(['namespace/default', 'namespace/demo', 'namespace/kube-node-lease', 'namespace/kube-public', 'namespace/kube-system']);
    const pods = await k(opsA, ['get', 'pods', '-n', 'demo', '-o', 'jsonpath={range .items[*]}{.metadata.name}:{.metadata.labels}{"\\n"}{end}']);
    expect(pods.stderr).toBe('');
    for (const line of pods.stdout.trim().split('\n')) expect(line).not.toContain(CLUSTER_LABEL);
    expect(pods.stdout).toContain('web:');
    expect(pods.stdout).not.toContain('api:');
    const exec = await k(opsA, ['exec', 'web', '-n', 'demo', '--', 'hostname']);
    expect(exec.stdout).toBe('web\n');
    const missing = await call(opsEndpoint, 'GET', '/clusters/member-z/api/v1/namespaces');
    expect(missing.status).toBe(404);
  });

  it('a malformed escape in the cluster name is 400, a path kube cannot make sense of is its 500', async () => {
    const bad = await call(opsEndpoint, 'GET', '/clusters/%E0%A4/api/v1/pods');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({ kind: 'Status', reason: 'BadRequest', message: 'invalid URL escape in the cluster name of the path /clusters/%E0%A4/' });
    const watch = await call(opsEndpoint, 'GET', '/clusters/member-a/api/v1/watch');
    expect(watch.status).toBe(500);
    expect(JSON.parse(watch.text).message).toBe('Internal error occurred: failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch');
  });

  it('a request that is not exec, attach, port-forward, proxy, log or watch is refused with Upgrade, and nothing reaches the member', async () => {
    expect(podsOf('member-b').get('demo/api')).toBeDefined();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: Number(new URL(gwURL).port), ca: opsEndpoint.caPem, cert: opsEndpoint.certPem, key: opsEndpoint.keyPem }, () => {
        socket.write('DELETE /clusters/member-b/api/v1/namespaces/demo/pods/api HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      });
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toContain('the Upgrade header is only honoured for exec, attach, port-forward, proxy, log and watch requests');
    expect(podsOf('member-b').get('demo/api')).toBeDefined();
  });
});
