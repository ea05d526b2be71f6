// The shipped least-privilege RBAC (config/rbac/*.yaml) on REAL kube-apiservers: the gateway's identities are
// bound by nothing but those files (placeholders substituted as the docs say), never cluster-admin, and the
// gateway must still do everything a too-narrow role would break: forward as a client-certificate user (the
// credential-id extra), serve cached pods of a member found through Karmada with a ServiceAccount token, write to
// a member pod as the caller, check callers' Impersonate-*, guard /metrics, perCluster authorization, and the
// split facade/cache topology.

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueClientCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { FEDERATED_EXPOSED, startTestGateway, type TestGateway } from '../support/gateway.js';
import { call, type ClusterEndpoint } from '../support/http.js';
import { kubectl } from '../support/kubectl.js';
import { GATEWAY_USER, startRealFleet, type RealCluster, type RealFleet } from './cluster.js';
import { requireGo } from './require-go.js';
import { seedControlPlane, seedMember } from './seed.js';

const RBAC_DIR = fileURLToPath(new URL('../../config/rbac/', import.meta.url));
const NS = 'shop';
/** New identities: nothing but the shipped files binds them (GATEWAY_USER, bound to cluster-admin, is not used). */
const IDENTITY = 'fleetgate-rbac-e2e';
const FACADE = 'fleetgate-rbac-e2e-facade';
const SCRAPER = 'prometheus';
const MEMBER_SA = 'system:serviceaccount:fleetgate-system:fleetgate';
/** The placeholders each file documents, and what this test puts in their place. */
const PLACEHOLDERS: Record<string, string> = { FLEETGATE_USER: IDENTITY, FLEETGATE_FACADE_USER: FACADE, FLEETGATE_METRICS_USER: SCRAPER };

/** A shipped file as an operator applies it: `sed 's/PLACEHOLDER/name/'`. */
function rbacFile(name: string): string {
  let text = readFileSync(join(RBAC_DIR, name), 'utf8');
  for (const [p, v] of Object.entries(PLACEHOLDERS)) text = text.replaceAll(p, v);
  return text;
}

async function until(pred: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// Callers' rights, which the gateway's roles deliberately do not give: alice edits namespace shop (on the control
// plane for cached reads and forwarding; on the member for writes and perCluster), ops may impersonate alice only.
const USERS_CP = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: shop-edit, namespace: ${NS}}
rules:
- apiGroups: [""]
  resources: [pods, events, configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: ${NS}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: shop-edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-alice}
rules:
- apiGroups: [""]
  resources: [users]
  resourceNames: [alice]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ops-impersonates-alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-alice}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ops}
`;
const USERS_MEMBER = USERS_CP.split('\n---\n').slice(0, 2).join('\n---\n');

describe.skipIf(!requireGo())('the shipped RBAC (config/rbac) is enough for the gateway, on real clusters', () => {
  let real: RealFleet;
  let cp: RealCluster;
  let a: RealCluster;
  let gw: TestGateway;
  const gateways: TestGateway[] = [];
  let cpKubeconfig: string;

  const apply = async (c: RealCluster, yaml: string) => {
    const r = await kubectl('1.33', c.kubeconfigPath, ['apply', '-f', '-'], { stdin: yaml });
    if (r.code !== 0) throw new Error(`kubectl apply on ${c.name}: ${r.stderr}`);
  };
  const anon = (g: TestGateway): ClusterEndpoint => ({ url: g.url, caPem: g.servingCA.certPem });
  const synced = (g: TestGateway) => until(async () => /member-a: synced/.test((await call(anon(g), 'GET', '/readyz?verbose')).text), 60_000, 'member-a synced');
  const start = async (extraYaml = '') => {
    const g = await startTestGateway({ controlPlaneKubeconfig: cpKubeconfig, exposed: FEDERATED_EXPOSED, requestTimeoutSeconds: 30, extraYaml });
    gateways.push(g);
    return g;
  };
  const memberPods = async () => (await call(a.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods`)).json().items.map((p: any) => p.metadata.name as string).sort();

  beforeAll(async () => {
    real = await startRealFleet({ members: ['member-a'] });
    cp = real.controlPlane;
    a = real.members[0]!;
    // The member identity is the ServiceAccount member.yaml creates; its token goes into the Karmada Cluster's Secrets.
    await apply(a, rbacFile('member.yaml'));
    const tr = await call(a.endpoint, 'POST', '/api/v1/namespaces/fleetgate-system/serviceaccounts/fleetgate/token', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    });
    expect(tr.status).toBe(201);
    const saToken = tr.json().status.token as string;
    await seedControlPlane({ name: cp.name, url: cp.url, caPem: cp.caPem, endpoint: cp.endpoint }, [{ name: a.name, url: a.url, caPem: a.caPem, endpoint: a.endpoint, gatewayToken: saToken }]);
    await seedMember({ name: a.name, url: a.url, caPem: a.caPem, endpoint: a.endpoint }, { namespace: NS });
    await apply(cp, `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${NS}}\n`);
    for (const f of ['control-plane.yaml', 'facade.yaml', 'metrics-reader.yaml']) await apply(cp, rbacFile(f));
    await apply(cp, USERS_CP);
    await apply(a, USERS_MEMBER);

    // The control-plane identity: a client certificate (CN = IDENTITY, no groups), as an operator would make one.
    const cert = await issueClientCert(cp.clientCa, IDENTITY, []);
    cpKubeconfig = join(real.dir, 'rbac-identity.kubeconfig');
    writeFileSync(cpKubeconfig, buildKubeconfig({ name: 'control-plane', server: cp.url, caPem: cp.caPem, user: IDENTITY, clientCertPem: cert.certPem, clientKeyPem: cert.keyPem }), { mode: 0o600 });
    gw = await start();
    await synced(gw);
  });

  afterAll(async () => {
    for (const g of gateways.reverse()) await g.close().catch(() => {});
    await real?.stop();
  });

  it('the files name only the documented placeholders, and none is left after substitution', () => {
    const files = readdirSync(RBAC_DIR).filter((f) => f.endsWith('.yaml')).sort();
    expect(files).toEqual(['control-plane.yaml', 'facade.yaml', 'member-percluster.yaml', 'member.yaml', 'metrics-reader.yaml']);
    const found = new Set(files.flatMap((f) => readFileSync(join(RBAC_DIR, f), 'utf8').match(/FLEETGATE_[A-Z_]+/g) ?? []));
    expect([...found].sort()).toEqual(Object.keys(PLACEHOLDERS).sort());
    for (const f of files) expect(rbacFile(f)).not.toMatch(/FLEETGATE_[A-Z_]+/);
  });

  it('the identities hold what the gateway needs and no more (kubectl auth can-i, SubjectAccessReviews)', async () => {
    const canI = async (c: RealCluster, as: string, args: string[]) => (await kubectl('1.33', c.kubeconfigPath, ['auth', 'can-i', ...args, `--as=${as}`])).stdout.trim();
    const cases: Array<[RealCluster, string, string[], 'yes' | 'no']> = [
      [cp, IDENTITY, ['impersonate', 'users'], 'yes'],
      [cp, IDENTITY, ['impersonate', 'groups'], 'yes'],
      [cp, IDENTITY, ['impersonate', 'serviceaccounts'], 'yes'],
      [cp, IDENTITY, ['create', 'subjectaccessreviews.authorization.k8s.io'], 'yes'],
      [cp, IDENTITY, ['watch', 'clusters.cluster.karmada.io'], 'yes'],
      [cp, IDENTITY, ['get', 'secrets', '-n', 'karmada-cluster'], 'yes'],
      [cp, IDENTITY, ['list', 'secrets', '-n', 'karmada-cluster'], 'no'],
      [cp, IDENTITY, ['get', 'secrets', '-n', NS], 'no'],
      [cp, IDENTITY, ['list', 'pods', '-A'], 'no'],
      [cp, IDENTITY, ['list', 'configmaps', '-n', NS], 'no'],
      [cp, IDENTITY, ['delete', 'clusters.cluster.karmada.io'], 'no'],
      [cp, FACADE, ['impersonate', 'users'], 'yes'],
      [cp, FACADE, ['create', 'subjectaccessreviews.authorization.k8s.io'], 'no'],
      [cp, SCRAPER, ['get', '/metrics'], 'yes'],
      [cp, 'alice', ['get', '/metrics'], 'no'],
      [a, MEMBER_SA, ['watch', 'pods', '-A'], 'yes'],
      [a, MEMBER_SA, ['list', 'events', '-A'], 'yes'],
      [a, MEMBER_SA, ['impersonate', 'users'], 'yes'],
      [a, MEMBER_SA, ['delete', 'pods', '-n', NS], 'no'],
      [a, MEMBER_SA, ['get', 'secrets', '-n', NS], 'no'],
      [a, MEMBER_SA, ['create', 'subjectaccessreviews.authorization.k8s.io'], 'no'],
    ];
    const got = [];
    for (const [c, as, args] of cases) got.push(`${c.name} ${as} ${args.join(' ')}: ${await canI(c, as, args)}`);
    expect(got).toEqual(cases.map(([c, as, args, want]) => `${c.name} ${as} ${args.join(' ')}: ${want}`));
    // kubectl auth can-i cannot name uids or userextras/<key> (no such resources in discovery; the key has slashes):
    // ask as the impersonation filter does, with a SubjectAccessReview.
    const review = async (c: RealCluster, user: string, resource: string, subresource = '') =>
      (await call(c.endpoint, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user, resourceAttributes: { verb: 'impersonate', group: 'authentication.k8s.io', resource, subresource, name: 'x' } } },
      })).json().status.allowed === true;
    const extras: Array<[RealCluster, string, string, string, boolean]> = [
      [cp, IDENTITY, 'uids', '', true],
      [cp, IDENTITY, 'userextras', 'authentication.kubernetes.io/credential-id', true],
      [cp, IDENTITY, 'userextras', 'scopes', false],
      [cp, FACADE, 'userextras', 'authentication.kubernetes.io/credential-id', true],
      [a, MEMBER_SA, 'uids', '', true],
      [a, MEMBER_SA, 'userextras', 'authentication.kubernetes.io/credential-id', true],
    ];
    const gotExtras = [];
    for (const [c, user, res, sub] of extras) gotExtras.push(`${c.name} ${user} ${res}/${sub}: ${await review(c, user, res, sub)}`);
    expect(gotExtras).toEqual(extras.map(([c, user, res, sub, want]) => `${c.name} ${user} ${res}/${sub}: ${want}`));
    // GATEWAY_USER (cluster-admin on every cluster of the harness) is not what the gateway runs as here.
    expect(readFileSync(cpKubeconfig, 'utf8')).not.toContain(GATEWAY_USER);
  });

  it('cached pods of the Karmada member (ServiceAccount token), with CLUSTER; namespaces alice may not read are 403', async () => {
    const alice = await gw.kubeconfigFor('alice', []);
    const r = await kubectl('1.33', alice, ['get', 'pods', '-n', NS]);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE']);
    const at = lines[0]!.indexOf('CLUSTER');
    expect(lines.slice(1).map((l) => `${l.slice(at).split(/\s+/)[0]}/${l.split(/\s+/)[0]}`).sort()).toEqual((await memberPods()).map((n: string) => `member-a/${n}`));
    const denied = await call(await gw.endpointFor('alice', []), 'GET', '/api/v1/namespaces/default/pods');
    expect(denied.status).toBe(403);
    expect(denied.json().message).toContain('User "alice" cannot list resource "pods"');
  });

  it('forwards as a client-certificate user (Impersonate-Extra credential-id): create and get a ConfigMap as alice', async () => {
    const alice = await gw.kubeconfigFor('alice', []);
    const created = await kubectl('1.33', alice, ['create', 'configmap', 'made-by-alice', '-n', NS, '--from-literal=k=v']);
    expect({ out: created.stdout.trim(), err: created.stderr }).toEqual({ out: 'configmap/made-by-alice created', err: '' });
    const got = await kubectl('1.33', alice, ['get', 'configmap', 'made-by-alice', '-n', NS, '-o', 'jsonpath={.data.k}']);
    expect({ out: got.stdout, err: got.stderr }).toEqual({ out: 'v', err: '' });
    expect((await call(cp.endpoint, 'GET', `/api/v1/namespaces/${NS}/configmaps/made-by-alice`)).status).toBe(200);
    // As alice, not as the gateway: alice's RBAC still refuses what the gateway's identity is refused too.
    const elsewhere = await kubectl('1.33', alice, ['create', 'configmap', 'nope', '-n', 'default', '--from-literal=k=v']);
    expect(elsewhere.stderr).toMatch(/User "alice" cannot create resource "configmaps"/);
  });

  it('writes to the member pod as the caller (member impersonation)', async () => {
    const pod = (await memberPods())[0]!;
    const alice = await gw.kubeconfigFor('alice', []);
    const r = await kubectl('1.33', alice, ['label', 'pod', pod, '-n', NS, 'checked-by=alice']);
    expect({ out: r.stdout.trim(), err: r.stderr }).toEqual({ out: `pod/${pod} labeled`, err: '' });
    expect((await call(a.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/${pod}`)).json().metadata.labels['checked-by']).toBe('alice');
    // The member's RBAC judged alice, not the ServiceAccount: outside shop she may not write.
    const bob = await call(await gw.endpointFor('bob', []), 'PATCH', `/api/v1/namespaces/${NS}/pods/${pod}`, {
      body: { metadata: { labels: { 'checked-by': 'bob' } } },
      contentType: 'application/merge-patch+json',
    });
    expect(bob.status).toBe(403);
  });

  it('a caller\'s Impersonate-User is honoured when the control plane allows it and refused when not', async () => {
    const ops = await gw.endpointFor('ops', []);
    const asAlice = await call(ops, 'GET', `/api/v1/namespaces/${NS}/configmaps/made-by-alice`, { headers: { 'Impersonate-User': 'alice' } });
    expect(asAlice.status).toBe(200);
    const who = await call(ops, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      headers: { 'Impersonate-User': 'alice' },
    });
    expect(who.json().status.userInfo.username).toBe('alice');
    const asBob = await call(ops, 'GET', `/api/v1/namespaces/${NS}/configmaps`, { headers: { 'Impersonate-User': 'bob' } });
    expect(asBob.status).toBe(403);
    expect(asBob.json().message).toContain('User "ops" cannot impersonate resource "users"');
    const bobAsAlice = await call(await gw.endpointFor('bob', []), 'GET', `/api/v1/namespaces/${NS}/pods`, { headers: { 'Impersonate-User': 'alice' } });
    expect(bobAsAlice.status).toBe(403);
  });

  it('/metrics: 200 for a user metrics-reader.yaml binds, 403 for others', async () => {
    const m = await call(await gw.endpointFor(SCRAPER, []), 'GET', '/metrics');
    expect(m.status).toBe(200);
    expect(m.text).toMatch(/fleetgate_member_cache_synced\{cluster="member-a"\} 1/);
    expect((await call(await gw.endpointFor('alice', []), 'GET', '/metrics')).status).toBe(403);
  });

  it('perCluster: reads fail until member-percluster.yaml is applied on the member, then the member\'s RBAC decides', async () => {
    const pc = await start('authorization:\n  cachedReads:\n    mode: perCluster\n');
    await synced(pc);
    const alice = await pc.endpointFor('alice', []);
    const before = await call(alice, 'GET', `/api/v1/namespaces/${NS}/pods`);
    expect(before.status).toBe(500);
    expect(before.json().message).toContain('member cluster member-a');
    await apply(a, rbacFile('member-percluster.yaml'));
    await until(async () => (await call(alice, 'GET', `/api/v1/namespaces/${NS}/pods`)).status === 200, 30_000, 'perCluster read allowed');
    const list = (await call(alice, 'GET', `/api/v1/namespaces/${NS}/pods`)).json();
    expect(list.items.map((p: any) => p.metadata.name).sort()).toEqual(await memberPods());
    expect((await call(alice, 'GET', '/api/v1/namespaces/default/pods')).status).toBe(403);
  });

  it('split: a facade (facade.yaml) in front of a cache service, both on the shipped roles', async () => {
    const cache = await start('cache:\n  mode: cache\n');
    await synced(cache);
    const facadeKc = await cache.kubeconfigFor(FACADE, [], join(real.dir, 'facade.kubeconfig'));
    const facade = await start(`cache:\n  mode: facade\n  facade:\n    kubeconfig: ${facadeKc}\n`);
    const alice = await facade.kubeconfigFor('alice', []);
    const r = await kubectl('1.33', alice, ['get', 'pods', '-n', NS, '-o', 'name']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n').sort()).toEqual((await memberPods()).map((n: string) => `pod/${n}`));
    const pod = (await memberPods())[0]!;
    const w = await kubectl('1.33', alice, ['label', 'pod', pod, '-n', NS, 'via=facade']);
    expect({ out: w.stdout.trim(), err: w.stderr }).toEqual({ out: `pod/${pod} labeled`, err: '' });
    const denied = await call(await facade.endpointFor('alice', []), 'GET', '/api/v1/namespaces/default/pods');
    expect(denied.status).toBe(403);
  });
});
