// perCluster authorization of cached reads against a simulated fleet of three members, each with its own RBAC:
// a small HTTPS server runs request info, bearer-token authentication (the token is the user name), the audit
// step (log file), then serveCached with perClusterReadAuthorizer, whose reviewers send SubjectAccessReviews to
// each member as the gateway (subjectAccessReview on the member connection's upstream), counted by a wrapper.
// Discovery is forwarded to member-a as the caller. The merged cache is fed by reflectors from the members.
//
// alice may read pods (cluster-wide) in member-a only; bob nowhere; ops (system:masters) everywhere.

import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { toStatus } from '../../src/api/status.js';
import type { Attributes, UserInfo } from '../../src/api/user.js';
import { auditStep, compilePolicy, newAuditor, parsePolicy, type Auditor } from '../../src/audit/index.js';
import { perClusterReadAuthorizer, type CachedReadAuthorizer, type SubjectAccessReviewer } from '../../src/authz/cachedreads.js';
import { CLUSTER_LABEL, MergedCache } from '../../src/cache/merged.js';
import { tokenBucket } from '../../src/cache/ratelimit.js';
import { startReflector, type Reflector } from '../../src/cache/reflector.js';
import { isCachedRead, serveCached } from '../../src/cache/serve.js';
import type { ActiveWatch } from '../../src/cache/watch.js';
import { memberConnections, type MemberConnections } from '../../src/members/connections.js';
import type { MemberSpec } from '../../src/members/member.js';
import { issueServingCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { requestInfoStep, targetPath } from '../../src/request/filter.js';
import { compose } from '../../src/server/chain.js';
import type { RequestContext, Response } from '../../src/server/context.js';
import { writeStatus } from '../../src/server/respond.js';
import { endpointFromKubeconfig } from '../../src/upstream/client.js';
import { forward, subjectAccessReview } from '../../src/upstream/forward.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { call, openWatch, type ClusterEndpoint } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';

const log = pino({ level: process.env.FLEETGATE_TEST_LOG ?? 'silent' });
const MEMBERS = ['member-a', 'member-b', 'member-c'];
const USERS: Record<string, UserInfo> = {
  alice: { username: 'alice', groups: ['dev', 'system:authenticated'] },
  bob: { username: 'bob', groups: ['system:authenticated'] },
  ops: { username: 'ops', groups: ['system:masters', 'system:authenticated'] },
};

let fleet: SimFleet;
let dir: string;
let cache: MergedCache;
let conns: MemberConnections;
let auditor: Auditor;
let auditLog: string;
const reflectors: Reflector[] = [];
const watches = new Set<ActiveWatch>();
let gw: Server;
let gwURL: string;
const kubeconfigs: Record<string, string> = {};
const endpoints: Record<string, ClusterEndpoint> = {};
/** SubjectAccessReviews sent to each member, with what they asked. */
const sars: Record<string, Attributes[]> = Object.fromEntries(MEMBERS.map((m) => [m, []]));

function pod(name: string, node: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'demo', labels: { app: name } },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'busybox' }] },
    status: { phase: 'Running', containerStatuses: [{ name: 'app', ready: true, restartCount: 0, image: 'busybox', imageID: '', state: { running: { startedAt: '2026-11-22T10:00:00Z' } } }] },
  } as unknown as KubeObject;
}

function load(cluster: string, group: string, resource: string, o: unknown): void {
  const c = fleet.member(cluster).cluster;
  c.load(c.resourceFor(group, resource)!, o as KubeObject);
}

async function until<T>(what: string, f: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The reviewer for one member: a SubjectAccessReview to it as the gateway, counted. */
function reviewFor(cluster: string): SubjectAccessReviewer | undefined {
  const conn = conns.get(cluster);
  if (!conn) return undefined;
  return (attrs) => {
    sars[cluster]!.push(attrs);
    return subjectAccessReview(conn.upstream, attrs);
  };
}

function handler(authorize: CachedReadAuthorizer) {
  return compose([
    requestInfoStep({ deadlineMs: 10_000 }),
    async (ctx, next) => {
      const token = String(ctx.req.headers.authorization ?? '').replace(/^Bearer /, '');
      const user = USERS[token];
      if (!user) throw new Error('the test server needs a known bearer token');
      ctx.user = user;
      await next();
    },
    auditStep(auditor),
    async (ctx) => {
      if (isCachedRead(ctx.info)) {
        const allowedClusters = await authorize(ctx);
        return serveCached(ctx, cache, { stale: () => [], allowedClusters, onWatch: (w) => watches.add(w) });
      }
      await forward(conns.get('member-a')!.impersonator, ctx.req, ctx.res, ctx.auditID, { impersonate: ctx.user, path: targetPath(ctx) });
    },
  ]);
}

async function auditEvent(auditID: string): Promise<any> {
  return until(`the ResponseComplete audit event of ${auditID}`, async () => {
    await auditor.flush();
    const text = await readFile(auditLog, 'utf8').catch(() => '');
    return text.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.auditID === auditID && e.stage === 'ResponseComplete');
  });
}

function warnings(h: string | string[] | undefined): string[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetgate-authz-'));
  fleet = await startSimFleet({ clusters: MEMBERS, nodesPerCluster: 1 });
  for (const m of MEMBERS) load(m, '', 'namespaces', { metadata: { name: 'demo' } });
  load('member-a', '', 'pods', pod('web', 'member-a-node-1'));
  load('member-a', '', 'pods', pod('both', 'member-a-node-1'));
  load('member-b', '', 'pods', pod('api', 'member-b-node-1'));
  load('member-b', '', 'pods', pod('both', 'member-b-node-1'));
  load('member-c', '', 'pods', pod('batch', 'member-c-node-1'));
  // alice may read pods everywhere in member-a; member-b and member-c know nothing of her.
  load('member-a', 'rbac.authorization.k8s.io', 'clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'pod-reader' },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
  });
  load('member-a', 'rbac.authorization.k8s.io', 'clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'alice-pod-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pod-reader' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  });

  const specs: MemberSpec[] = MEMBERS.map((name) => ({ name, source: 'static', endpoint: endpointFromKubeconfig(fleet.member(name).kubeconfigPath, undefined, name), fingerprint: name }));
  conns = memberConnections({ list: () => specs, subscribe: () => () => {} }, { log });
  cache = new MergedCache({ instanceID: 'authz-test', windowSize: 1000, dropManagedFields: true });
  for (const name of MEMBERS) {
    reflectors.push(startReflector({ upstream: conns.get(name)!.upstream, path: '/api/v1/pods', sink: cache.sink(name, 'pods'), limiter: tokenBucket(100, 100), log }));
  }
  await until('the reflectors to sync', () => reflectors.every((r) => r.synced));

  auditLog = join(dir, 'audit.log');
  auditor = newAuditor(
    { policy: compilePolicy(parsePolicy('apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n')), log: { path: auditLog, flushIntervalMs: 20 }, maxRequestBodyBytes: 1 << 20 },
    { log, registry: new Registry() },
  );
  const chain = handler(perClusterReadAuthorizer(reviewFor, () => conns.names()));
  const serving = await issueServingCert(fleet.servingCA, ['127.0.0.1']);
  gw = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const auditID = String(req.headers['audit-id'] ?? randomUUID());
    res.setHeader('Audit-Id', auditID);
    const ctx = { req, res, url: new URL(req.url ?? '/', 'https://gw.invalid'), auditID, log } as RequestContext;
    chain(ctx).catch((e) => writeStatus(res as Response, auditID, toStatus(e)));
  });
  await new Promise<void>((r) => gw.listen(0, '127.0.0.1', r));
  gwURL = `https://127.0.0.1:${(gw.address() as AddressInfo).port}`;
  for (const user of Object.keys(USERS)) {
    kubeconfigs[user] = join(dir, `${user}.kubeconfig`);
    await writeFile(kubeconfigs[user]!, buildKubeconfig({ name: 'fleetgate', server: gwURL, caPem: fleet.servingCA.certPem, user, token: user }), { mode: 0o600 });
    endpoints[user] = { url: gwURL, caPem: fleet.servingCA.certPem, token: user };
  }
});

afterAll(async () => {
  for (const w of watches) w.stop();
  await Promise.all(reflectors.map((r) => r.stop()));
  if (gw) {
    gw.closeAllConnections();
    await new Promise<void>((r) => gw.close(() => r()));
  }
  await auditor?.close();
  await conns?.close();
  await fleet?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const k = (user: string, args: string[]) => kubectl('1.33', kubeconfigs[user]!, args, { timeoutMs: 30_000 });
const rowsOf = (stdout: string) => stdout.trim().split('\n').map((l) => l.split(/\s+/));

describe('perCluster authorization of cached reads', () => {
  it('ops sees every member (the setup works)', async () => {
    const r = await k('ops', ['get', 'pods', '-A', '--no-headers', '-L', CLUSTER_LABEL]);
    expect(r.stderr).toBe('');
    expect(rowsOf(r.stdout).map((c) => `${c[1]}@${c[c.length - 1]}`).sort()).toEqual(['api@member-b', 'batch@member-c', 'both@member-a', 'both@member-b', 'web@member-a']);
  });

  it('kubectl get pods -A: alice sees only member-a, with a Warning naming the members left out', async () => {
    const r = await k('alice', ['get', 'pods', '-A']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('Warning: member clusters member-b, member-c are left out: you may not list pods there\n');
    const rows = rowsOf(r.stdout);
    expect(rows[0]).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE']);
    expect(rows.slice(1).map((c) => `${c[1]}@${c[5]}`).sort()).toEqual(['both@member-a', 'web@member-a']);
    // Each member was asked, with the attributes kube-apiserver would have authorized.
    for (const m of MEMBERS) {
      expect(sars[m]).toContainEqual(expect.objectContaining({ user: USERS.alice, verb: 'list', resource: 'pods', apiGroup: '', namespace: '', name: '' }));
    }
  });

  it('the raw list carries only member-a objects and the Warning header; the audit event has the decision', async () => {
    const auditID = randomUUID();
    const r = await call(endpoints.alice!, 'GET', '/api/v1/namespaces/demo/pods', { headers: { 'audit-id': auditID } });
    expect(r.status).toBe(200);
    expect(warnings(r.headers.warning)).toEqual(['299 - "member clusters member-b, member-c are left out: you may not list pods there"']);
    expect(r.json().items.map((p: any) => `${p.metadata.name}@${p.metadata.labels[CLUSTER_LABEL]}`).sort()).toEqual(['both@member-a', 'web@member-a']);
    const ev = await auditEvent(auditID);
    expect(ev.annotations['authorization.k8s.io/decision']).toBe('allow');
    expect(ev.annotations['authorization.k8s.io/reason']).toBe(
      'member-a: allow (RBAC: allowed by ClusterRoleBinding "alice-pod-reader" of ClusterRole "pod-reader" to User "alice"); member-b: forbid; member-c: forbid',
    );
  });

  it('a GET by name sees only where the caller may read: a name both members hold is member-a\'s, one only member-b holds is 404', async () => {
    const both = await k('alice', ['get', 'pod', 'both', '-n', 'demo', '-o', 'jsonpath={.metadata.labels}']);
    expect(both.stderr).toBe('Warning: member clusters member-b, member-c are left out: you may not get pods there\n');
    expect(JSON.parse(both.stdout)).toEqual({ app: 'both', [CLUSTER_LABEL]: 'member-a' });
    const hidden = await call(endpoints.alice!, 'GET', '/api/v1/namespaces/demo/pods/api');
    expect(hidden.status).toBe(404);
    expect(hidden.json()).toMatchObject({ kind: 'Status', reason: 'NotFound', message: 'pods "api" not found', code: 404 });
    // The same answer as for a name no member holds: nothing tells alice that member-b has it.
    const none = await call(endpoints.alice!, 'GET', '/api/v1/namespaces/demo/pods/nothing-here');
    expect({ ...none.json(), details: undefined, message: undefined }).toEqual({ ...hidden.json(), details: undefined, message: undefined });
    // ops, allowed everywhere, gets the fleet's 409 for the shared name.
    expect((await call(endpoints.ops!, 'GET', '/api/v1/namespaces/demo/pods/both')).status).toBe(409);
  });

  it('a watch shows alice member-a\'s changes and never member-b\'s', async () => {
    const w = await openWatch(endpoints.alice!, '/api/v1/namespaces/demo/pods?watch=1&resourceVersion=0');
    try {
      await w.waitFor((evs) => evs.length === 2);
      load('member-b', '', 'pods', pod('b-new', 'member-b-node-1'));
      await until('member-b\'s new pod in the cache', () => cache.owners('pods', 'demo', 'b-new').length === 1);
      load('member-a', '', 'pods', pod('a-new', 'member-a-node-1'));
      await w.waitFor((evs) => evs.some((e) => e.object.metadata.name === 'a-new'));
      // member-b's pod reached the cache before member-a's, so a leak would have shown before a-new.
      expect(w.events.map((e) => `${e.type} ${e.object.metadata.name}@${e.object.metadata.labels[CLUSTER_LABEL]}`)).toEqual([
        'ADDED both@member-a',
        'ADDED web@member-a',
        'ADDED a-new@member-a',
      ]);
    } finally {
      w.close();
    }
  });

  it("a user allowed nowhere gets kube-apiserver's 403, audited as forbid", async () => {
    const r = await k('bob', ['get', 'pods', '-A']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toBe('Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource "pods" in API group "" at the cluster scope\n');
    const auditID = randomUUID();
    const raw = await call(endpoints.bob!, 'GET', '/api/v1/namespaces/demo/pods/web', { headers: { 'audit-id': auditID } });
    expect(raw.status).toBe(403);
    expect(raw.json()).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods "web" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "demo"',
      reason: 'Forbidden',
      details: { name: 'web', kind: 'pods' },
      code: 403,
    });
    const ev = await auditEvent(auditID);
    expect(ev.annotations).toMatchObject({ 'authorization.k8s.io/decision': 'forbid', 'authorization.k8s.io/reason': '' });
    expect(ev.responseStatus.code).toBe(403);
  });

  it('decisions are cached: repeating reads sends no more reviews', async () => {
    const count = () => MEMBERS.reduce((n, m) => n + sars[m]!.length, 0);
    const path = '/api/v1/namespaces/kube-system/pods';
    for (const user of ['alice', 'bob']) await call(endpoints[user]!, 'GET', path);
    const before = count();
    for (let i = 0; i < 10; i++) {
      expect((await call(endpoints.alice!, 'GET', path)).status).toBe(200);
      expect((await call(endpoints.bob!, 'GET', path)).status).toBe(403);
    }
    expect(count()).toBe(before);
    // Different attributes are different decisions: one review per member.
    await call(endpoints.alice!, 'GET', '/api/v1/namespaces/other/pods');
    expect(count()).toBe(before + MEMBERS.length);
  });

  it('an unreachable member is left out with a Warning; with no member allowing and one unreachable, 500', async () => {
    await fleet.member('member-c').stop();
    try {
      const r = await call(endpoints.alice!, 'GET', '/api/v1/namespaces/unreached/pods');
      expect(r.status).toBe(200);
      expect(warnings(r.headers.warning)).toEqual([
        '299 - "member cluster member-b is left out: you may not list pods there"',
        '299 - "member cluster member-c is left out: the member could not be asked whether you may list pods there"',
      ]);
      expect(r.json().items).toEqual([]);
      const denied = await call(endpoints.bob!, 'GET', '/api/v1/namespaces/unreached/pods');
      expect(denied.status).toBe(500);
      expect(denied.json()).toMatchObject({ reason: 'InternalError', code: 500 });
      expect(denied.json().message).toMatch(/^Internal error occurred: access review failed in member cluster member-c: /);
      // The failure was not cached: once member-c answers again, it decides again.
      await fleet.member('member-c').start();
      const back = await until('member-c to answer reviews again', async () => {
        const again = await call(endpoints.bob!, 'GET', '/api/v1/namespaces/unreached/pods');
        return again.status === 403 && again;
      });
      expect(back.json().message).toBe('pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "unreached"');
    } finally {
      await fleet.member('member-c').start().catch(() => {});
    }
  });
});
