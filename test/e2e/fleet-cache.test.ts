// The member cache and the protections against REAL clusters: a control plane with Karmada Cluster objects and two
// member kube-apiservers (v1.34.4), seeded with the same pods (so one name lives in both), behind the gateway.

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { buildInformer, startInformer } from '../clients/informer.js';
import { FEDERATED_EXPOSED, startTestGateway, type TestGateway } from '../support/gateway.js';
import { call } from '../support/http.js';
import { kubectl, kubectlPath, type KubectlVersion } from '../support/kubectl.js';
import { GATEWAY_USER, startRealFleet, type RealCluster, type RealFleet } from './cluster.js';
import { requireGo } from './require-go.js';
import { seedControlPlane, seedMember } from './seed.js';

const NS = 'shop';
/** Distinct names per member: a client-go informer keys by namespace/name, so names held twice cannot both live in it. */
const UNIQUE = 'orders';
const EXPOSED = FEDERATED_EXPOSED;

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(!requireGo())('the gateway over real member clusters', () => {
  let real: RealFleet;
  let cp: RealCluster;
  let a: RealCluster;
  let b: RealCluster;
  let gw: TestGateway;
  let admin: string;

  /** "cluster/namespace/name" of every pod in NS on the members, from the members themselves. */
  const truth = async (ns = NS): Promise<string[]> => {
    const out: string[] = [];
    for (const m of [a, b]) {
      const r = await call(m.endpoint, 'GET', `/api/v1/namespaces/${ns}/pods`);
      for (const p of r.json().items) out.push(`${m.name}/${ns}/${p.metadata.name}`);
    }
    return out.sort();
  };

  beforeAll(async () => {
    real = await startRealFleet({ members: ['member-a', 'member-b'] });
    // After the apiserver build, which warms the Go build cache it shares: the informer's build is not left to the
    // test that first starts it.
    await buildInformer();
    cp = real.controlPlane;
    [a, b] = real.members as [RealCluster, RealCluster];
    const now = new Date();
    await seedControlPlane(
      { name: cp.name, url: cp.url, caPem: cp.caPem, endpoint: cp.endpoint },
      [a, b].map((m) => ({ name: m.name, url: m.url, caPem: m.caPem, endpoint: m.endpoint, gatewayToken: m.gatewayToken })),
    );
    await Promise.all([a, b].map((m) => seedMember({ name: m.name, url: m.url, caPem: m.caPem, endpoint: m.endpoint }, { namespace: NS, now })));
    await Promise.all([a, b].map((m) => seedMember({ name: m.name, url: m.url, caPem: m.caPem, endpoint: m.endpoint }, { namespace: UNIQUE, now, prefix: `${m.name.slice(-1)}-` })));
    const gwKubeconfig = join(real.dir, 'gateway-identity.kubeconfig');
    writeFileSync(gwKubeconfig, buildKubeconfig({ name: 'control-plane', server: cp.url, caPem: cp.caPem, user: GATEWAY_USER, token: cp.gatewayToken }), { mode: 0o600 });
    gw = await startTestGateway({ controlPlaneKubeconfig: gwKubeconfig, exposed: EXPOSED });
    admin = await gw.kubeconfigFor('admin', ['system:masters'], join(real.dir, 'admin.kubeconfig'));
    await until(async () => /member-a: synced/.test((await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/readyz?verbose')).text) && /member-b: synced/.test((await call({ url: gw.url, caPem: gw.servingCA.certPem }, 'GET', '/readyz?verbose')).text), 60_000, 'members synced');
  });

  afterAll(async () => {
    await gw?.close();
    await real?.stop();
  });

  describe.each<KubectlVersion>(['1.27', '1.30', '1.33'])('kubectl %s', (v) => {
    it('get pods -A: both members with CLUSTER; a name in both members is two rows', async () => {
      const r = await kubectl(v, admin, ['get', 'pods', '-n', NS]);
      expect(r.stderr).toBe('');
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]!.split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'CLUSTER', 'AGE']);
      // Cells are cut at the header's column starts: RESTARTS may read "5 (3m ago)".
      const at = lines[0]!.indexOf('CLUSTER');
      const rows = lines.slice(1).map((l) => [l.split(/\s+/)[0], l.slice(at).split(/\s+/)[0]]);
      expect(rows.map((c) => `${c[1]}/${NS}/${c[0]}`).sort()).toEqual(await truth());
      const wide = await kubectl(v, admin, ['get', 'pods', '-A', '-o', 'wide']);
      expect(wide.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+CLUSTER\s+AGE\s+IP\s+NODE/);
    });

    it('selects by cluster label and by node', async () => {
      const onlyB = await kubectl(v, admin, ['get', 'pods', '-n', NS, '-l', 'fleetgate.io/cluster=member-b', '-o', 'json']);
      const items = JSON.parse(onlyB.stdout).items;
      expect(items.length).toBeGreaterThan(3);
      expect(items.every((p: any) => p.metadata.labels['fleetgate.io/cluster'] === 'member-b')).toBe(true);
      const node = await kubectl(v, admin, ['get', 'pods', '-n', NS, '--field-selector', 'spec.nodeName=member-a-node-1', '-o', 'json']);
      const onNode = JSON.parse(node.stdout).items;
      expect(onNode.length).toBeGreaterThan(0);
      expect(onNode.every((p: any) => p.spec.nodeName === 'member-a-node-1' && p.metadata.labels['fleetgate.io/cluster'] === 'member-a')).toBe(true);
    });

    it('get of a name both members hold answers 409 naming them', async () => {
      const name = (await truth())[0]!.split('/')[2]!;
      const r = await kubectl(v, admin, ['get', 'pod', name, '-n', NS]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/member-a/);
      expect(r.stderr).toMatch(/member-b/);
    });
  });

  it('get pods -w shows a pod created in member-a within a second', async () => {
    const child = spawn(kubectlPath('1.33'), ['--kubeconfig', admin, 'get', 'pods', '-n', NS, '-w', '--output-watch-events'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    try {
      await until(() => out.split('\n').length > 3, 15_000, 'initial list');
      const t0 = Date.now();
      const created = await call(a.endpoint, 'POST', `/api/v1/namespaces/${NS}/pods`, { body: { metadata: { name: 'fresh' }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } });
      expect(created.status).toBe(201);
      await until(() => /ADDED\s+fresh\s+.*member-a/.test(out), 5000, 'fresh pod shown');
      expect(Date.now() - t0).toBeLessThan(1000);
    } finally {
      child.kill();
    }
  });

  it('delete pod removes it from its member', async () => {
    const r = await kubectl('1.33', admin, ['delete', 'pod', 'fresh', '-n', NS, '--grace-period=0', '--force']);
    expect(r.code).toBe(0);
    expect((await call(a.endpoint, 'GET', `/api/v1/namespaces/${NS}/pods/fresh`)).status).toBe(404);
  });

  it('a client-go informer through the gateway stays in sync while a member restarts and across a gateway restart', async () => {
    let informer = startInformer(admin, { namespace: UNIQUE });
    await informer.waitFor((s) => s.synced, 60_000);
    await a.stopApiserver();
    const made = await call(b.endpoint, 'POST', `/api/v1/namespaces/${UNIQUE}/pods`, { body: { metadata: { name: 'during-outage' }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } });
    expect(made.status).toBe(201);
    await a.restart();
    const afterRestart = await call(a.endpoint, 'POST', `/api/v1/namespaces/${UNIQUE}/pods`, { body: { metadata: { name: 'after-restart' }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } });
    expect(afterRestart.status).toBe(201);
    const podsOf = (s: { events: Array<{ type: string; namespace: string; name: string }> }) => {
      const live = new Map<string, number>();
      for (const e of s.events) live.set(`${e.namespace}/${e.name}`, (live.get(`${e.namespace}/${e.name}`) ?? 0) + (e.type === 'ADDED' ? 1 : e.type === 'DELETED' ? -1 : 0));
      return live;
    };
    await informer.waitFor((s) => (podsOf(s).get(`${UNIQUE}/after-restart`) ?? 0) > 0 && (podsOf(s).get(`${UNIQUE}/during-outage`) ?? 0) > 0, 60_000);
    let result = await informer.stop();
    expect(result.pods.map((p) => `${p.labels['fleetgate.io/cluster']}/${p.namespace}/${p.name}`).sort()).toEqual(await truth(UNIQUE));

    informer = startInformer(admin, { namespace: UNIQUE });
    await informer.waitFor((s) => s.synced, 60_000);
    const old = gw;
    await old.close();
    gw = await startTestGateway({ controlPlaneKubeconfig: old.config.controlPlane.kubeconfig, exposed: EXPOSED, port: old.running.port, pki: old });
    const late = await call(b.endpoint, 'POST', `/api/v1/namespaces/${UNIQUE}/pods`, { body: { metadata: { name: 'after-gateway-restart' }, spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } });
    expect(late.status).toBe(201);
    await informer.waitFor((s) => s.events.some((e) => e.name === 'after-gateway-restart'), 90_000);
    result = await informer.stop();
    expect(result.pods.map((p) => `${p.labels['fleetgate.io/cluster']}/${p.namespace}/${p.name}`).sort()).toEqual(await truth(UNIQUE));
  }, 300_000);

  it('a Karmada Cluster deleted at run time takes its pods away; created again brings them back', async () => {
    const fromB = async () => (await kubectl('1.33', admin, ['get', 'pods', '-n', NS, '-l', 'fleetgate.io/cluster=member-b', '-o', 'name'])).stdout.trim();
    const before = await fromB();
    expect(before).not.toBe('');
    const cluster = (await call(cp.endpoint, 'GET', '/apis/cluster.karmada.io/v1alpha1/clusters/member-b')).json();
    expect((await call(cp.endpoint, 'DELETE', '/apis/cluster.karmada.io/v1alpha1/clusters/member-b')).status).toBe(200);
    await until(async () => (await fromB()) === '', 30_000, 'member-b pods gone');
    delete cluster.metadata.resourceVersion;
    delete cluster.metadata.uid;
    delete cluster.metadata.creationTimestamp;
    delete cluster.status;
    expect((await call(cp.endpoint, 'POST', '/apis/cluster.karmada.io/v1alpha1/clusters', { body: cluster })).status).toBe(201);
    await until(async () => (await fromB()) === before, 60_000, 'member-b pods back');
  }, 120_000);

  describe('protections on the real control plane', () => {
    it('deletion and scale-down protection refuse, and the control plane keeps the object', async () => {
      const list = await kubectl('1.33', admin, ['get', 'deploy', '-n', 'demo', '-o', 'json']);
      const d = JSON.parse(list.stdout).items[0];
      const name = d.metadata.name;
      expect((await kubectl('1.33', admin, ['label', 'deploy', name, '-n', 'demo', 'fleetgate.io/deletion-protection=Always'])).code).toBe(0);
      const del = await kubectl('1.33', admin, ['delete', 'deploy', name, '-n', 'demo']);
      expect(del.code).not.toBe(0);
      expect(del.stderr).toContain('deletion protection');
      expect((await call(cp.endpoint, 'GET', `/apis/apps/v1/namespaces/demo/deployments/${name}`)).status).toBe(200);
      expect((await kubectl('1.33', admin, ['scale', 'deploy', name, '-n', 'demo', '--replicas=10'])).code).toBe(0);
      const shrink = await kubectl('1.33', admin, ['scale', 'deploy', name, '-n', 'demo', '--replicas=1']);
      expect(shrink.code).not.toBe(0);
      expect(shrink.stderr).toContain('scale-down protection');
      expect((await call(cp.endpoint, 'GET', `/apis/apps/v1/namespaces/demo/deployments/${name}`)).json().spec.replicas).toBe(10);
      expect((await kubectl('1.33', admin, ['scale', 'deploy', name, '-n', 'demo', '--replicas=6'])).code).toBe(0);
    });
  });
});
