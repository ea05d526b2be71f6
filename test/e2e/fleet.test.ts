// The real-cluster harness itself: a control plane and two members (real kube-apiserver v1.34.4 + etcd), seeded,
// checked through raw HTTPS, kubectl and a client-go informer, then torn down without leftovers.

import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueClientCert } from '../../src/pki/index.js';
import { buildKubeconfig } from '../../src/pki/kubeconfig.js';
import { buildInformer, startInformer } from '../clients/informer.js';
import { call } from '../support/http.js';
import { processesUsing, rssKiB, startRealFleet, type RealCluster, type RealFleet } from './cluster.js';
import { requireGo } from './require-go.js';
import { memberNodes, podFixtures, seedControlPlane, seedMember } from './seed.js';

const KUBECTL = '/usr/bin/kubectl';
// A fresh machine builds etcd and kube-apiserver first (about 10 min on 2 cores), longer than vitest's hook timeout.
const BUILD_AND_START_BUDGET_MS = 40 * 60_000;
const kubectlCache = mkdtempSync(join(tmpdir(), 'fleetgate-kubectl-cache-'));

function kubectl(kubeconfig: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      KUBECTL,
      ['--kubeconfig', kubeconfig, '--cache-dir', kubectlCache, ...args],
      { timeout: 60_000, env: { ...process.env, HOME: kubectlCache } },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** kubectl's table as rows keyed by header, cut at the header's column starts (cells may contain spaces). */
function parseTable(text: string): Array<Record<string, string>> {
  const [header, ...lines] = text.trimEnd().split('\n');
  const cols = [...header!.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], start: m.index! }));
  return lines.map((line) =>
    Object.fromEntries(cols.map((c, i) => [c.name, line.slice(c.start, cols[i + 1]?.start ?? line.length).trim()])),
  );
}

describe.skipIf(!requireGo())('real fleet (kube-apiserver v1.34.4 + etcd)', () => {
  let fleet: RealFleet;
  let memberA: RealCluster;
  let memberB: RealCluster;

  beforeAll(async () => {
    fleet = await startRealFleet();
    // After the apiserver build, which warms the Go build cache it shares; seconds then, minutes on its own.
    await buildInformer();
    [memberA, memberB] = fleet.members as [RealCluster, RealCluster];
    const seedStart = Date.now();
    await Promise.all([
      seedControlPlane(fleet.controlPlane, fleet.members),
      ...fleet.members.map((m) => seedMember(m, { namespace: 'demo' })),
    ]);
    const mem = [fleet.controlPlane, ...fleet.members].map((c) => {
      const p = c.pids();
      return `${c.name}: apiserver ${Math.round(rssKiB(p.apiserver)! / 1024)} MiB, etcd ${Math.round(rssKiB(p.etcd)! / 1024)} MiB`;
    });
    console.log(`real fleet: started in ${fleet.startupMs} ms, seeded in ${Date.now() - seedStart} ms; RSS ${mem.join('; ')}`);
  }, BUILD_AND_START_BUDGET_MS);

  afterAll(async () => {
    await fleet?.stop();
    rmSync(kubectlCache, { recursive: true, force: true });
  });

  it('serves /version v1.34.4 on every cluster', async () => {
    for (const c of [fleet.controlPlane, ...fleet.members]) {
      const r = await call(c.endpoint, 'GET', '/version');
      expect(r.status).toBe(200);
      expect(r.json()).toMatchObject({ major: '1', minor: '34', gitVersion: 'v1.34.4', gitTreeState: 'clean' });
    }
  });

  it('shows the seeded pods with the READY/STATUS/RESTARTS cells kubectl computes', async () => {
    for (const m of [memberA, memberB]) {
      const r = await kubectl(m.kubeconfigPath, ['get', 'pods', '-n', 'demo', '-o', 'wide']);
      expect(r.stderr).toBe('');
      const rows = new Map(parseTable(r.stdout).map((row) => [row.NAME!, row]));
      const fixtures = podFixtures('demo', { nodes: memberNodes(m.name) });
      expect([...rows.keys()].sort()).toEqual(fixtures.map((f) => f.pod.metadata.name).sort());
      for (const f of fixtures) {
        const row = rows.get(f.pod.metadata.name)!;
        expect({ name: row.NAME, ready: row.READY, status: row.STATUS }).toEqual({ name: f.pod.metadata.name, ready: f.expect.ready, status: f.expect.status });
        if (f.role === 'crashloop') expect(row.RESTARTS).toMatch(/^5 \((\d+m)?\d+s ago\)$|^5 \(\d+m ago\)$/);
        else expect(row.RESTARTS).toBe(f.expect.restarts);
        if (f.role === 'unschedulable') {
          expect([row.NODE, row.IP]).toEqual(['<none>', '<none>']);
        } else {
          expect(row.NODE).toBe(f.pod.spec.nodeName);
        }
        if (f.status.podIP) expect(row.IP).toBe(f.status.podIP);
      }
    }
  });

  it('keeps the Terminating pod and records events with counts and series', async () => {
    const pod = (await call(memberA.endpoint, 'GET', '/api/v1/namespaces/demo/pods/web-terminating')).json();
    expect(pod.metadata.deletionTimestamp).toBeTruthy();
    expect(pod.metadata.finalizers).toEqual(['fleetgate.test/hold']);
    const events = (await call(memberA.endpoint, 'GET', '/api/v1/namespaces/demo/events')).json().items as any[];
    const backOff = events.find((e) => e.reason === 'BackOff');
    expect(backOff).toMatchObject({ type: 'Warning', count: 23, involvedObject: { kind: 'Pod', name: 'api-crashloop' } });
    const crashPod = (await call(memberA.endpoint, 'GET', '/api/v1/namespaces/demo/pods/api-crashloop')).json();
    expect(backOff.involvedObject.uid).toBe(crashPod.metadata.uid);
    const series = events.find((e) => e.series);
    expect(series).toMatchObject({ reason: 'Unhealthy', series: { count: 14 }, reportingComponent: 'kubelet' });
    expect(events.some((e) => e.reason === 'FailedScheduling' && e.count > 1)).toBe(true);
  });

  it('has the CRDs Established, CloneSets listable with their columns, and Clusters pointing at the members', async () => {
    const cp = fleet.controlPlane;
    for (const name of ['clusters.cluster.karmada.io', 'clonesets.apps.kruise.io']) {
      const crd = (await call(cp.endpoint, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`)).json();
      expect(crd.status.conditions).toContainEqual(expect.objectContaining({ type: 'Established', status: 'True' }));
    }
    const list = await call(cp.endpoint, 'GET', '/apis/apps.kruise.io/v1alpha1/clonesets');
    expect(list.status).toBe(200);
    expect(list.json().items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`).sort()).toEqual(['apps/worker', 'demo/api', 'demo/web']);
    const scale = (await call(cp.endpoint, 'GET', '/apis/apps.kruise.io/v1alpha1/namespaces/demo/clonesets/web/scale')).json();
    expect(scale).toMatchObject({ kind: 'Scale', spec: { replicas: 3 }, status: { replicas: 3, selector: 'app=web' } });

    const k = await kubectl(cp.kubeconfigPath, ['get', 'clonesets', '-n', 'demo']);
    expect(k.stderr).toBe('');
    const rows = parseTable(k.stdout);
    expect(Object.keys(rows[0]!)).toEqual(['NAME', 'DESIRED', 'UPDATED', 'UPDATED_READY', 'READY', 'TOTAL', 'AGE']);
    expect(rows.find((r) => r.NAME === 'api')).toMatchObject({ DESIRED: '2', UPDATED: '2', UPDATED_READY: '1', READY: '1', TOTAL: '2' });

    const clusters = (await call(cp.endpoint, 'GET', '/apis/cluster.karmada.io/v1alpha1/clusters')).json().items as any[];
    expect(clusters.map((c) => [c.metadata.name, c.spec.apiEndpoint])).toEqual(fleet.members.map((m) => [m.name, m.url]));
    // The secret a gateway would read really opens the member.
    for (const c of clusters) {
      const secret = (await call(cp.endpoint, 'GET', `/api/v1/namespaces/${c.spec.secretRef.namespace}/secrets/${c.spec.secretRef.name}`)).json();
      const token = Buffer.from(secret.data.token, 'base64').toString();
      const caPem = Buffer.from(secret.data.caBundle, 'base64').toString();
      const r = await call({ url: c.spec.apiEndpoint, caPem, token }, 'GET', '/api/v1/namespaces/demo/pods?limit=1');
      expect(r.status).toBe(200);
    }
  });

  it('authenticates user certificates from the client CA and authorizes them with RBAC', async () => {
    const alice = await issueClientCert(memberA.clientCa, 'alice', ['dev']);
    const r = await call({ url: memberA.url, caPem: memberA.caPem, certPem: alice.certPem, keyPem: alice.keyPem }, 'GET', '/api/v1/namespaces/demo/pods');
    expect(r.status).toBe(403);
    expect(r.json()).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      message: 'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "demo"',
    });
    const path = join(fleet.dir, 'alice.kubeconfig');
    writeFileSync(path, buildKubeconfig({ name: memberA.name, server: memberA.url, caPem: memberA.caPem, user: 'alice', clientCertPem: alice.certPem, clientKeyPem: alice.keyPem }));
    const who = await kubectl(path, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}/{.status.userInfo.groups}']);
    expect(who.stdout).toBe('alice/["dev","system:authenticated"]');
  });

  it('lets a client-go informer sync against member-a, and its final store equals a direct list', async () => {
    const inf = startInformer(memberA.kubeconfigPath);
    await inf.waitFor((s) => s.synced, 60_000);
    const created = await call(memberA.endpoint, 'POST', '/api/v1/namespaces/demo/pods', {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'late-pod', labels: { app: 'late' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    expect(created.status).toBe(201);
    await inf.waitFor((s) => s.events.some((e) => e.type === 'ADDED' && e.name === 'late-pod'), 30_000);
    const result = await inf.stop();
    const direct = (await call(memberA.endpoint, 'GET', '/api/v1/pods')).json().items as any[];
    const expected = direct
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name, resourceVersion: p.metadata.resourceVersion, uid: p.metadata.uid, labels: p.metadata.labels ?? {} }))
      .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
    expect(result.synced).toBe(true);
    expect(result.stoppedBy).toBe('signal:terminated');
    expect(result.pods).toEqual(expected);
    expect(result.events.filter((e) => e.inInitialList).length).toBe(expected.length - 1);
    expect(result.watchErrors).toEqual([]);
    // client-go 0.34 lists then watches unless WatchListClient is switched on.
    expect(result.watchListUsed).toBe(false);
    expect(result.requests.some((r) => r.url.startsWith('/api/v1/pods?') && r.url.includes('watch=true'))).toBe(true);
  });

  it('runs the informer with a streaming watch-list when client-go is told to', async () => {
    const inf = startInformer(memberA.kubeconfigPath, { namespace: 'demo', selector: 'app=web', watchList: true });
    await inf.waitFor((s) => s.synced, 60_000);
    const result = await inf.stop();
    expect(result.watchListUsed).toBe(true);
    expect(result.pods.map((p) => p.name)).toEqual(['web-1', 'web-2', 'web-init', 'web-terminating']);
  });

  it('restarts a member apiserver on the same port with its data', async () => {
    const before = memberB.pids().apiserver;
    await memberB.restart();
    expect(memberB.pids().apiserver).not.toBe(before);
    const r = await call(memberB.endpoint, 'GET', '/api/v1/namespaces/demo/pods/web-1');
    expect(r.status).toBe(200);
    expect(r.json().status.phase).toBe('Running');
  });

  it('tears down without leaving processes or directories behind', async () => {
    const pids = [fleet.controlPlane, ...fleet.members].flatMap((c) => Object.values(c.pids()));
    expect(pids.every((p) => typeof p === 'number')).toBe(true);
    await fleet.stop();
    expect(existsSync(fleet.dir)).toBe(false);
    expect(processesUsing(fleet.dir)).toEqual([]);
    for (const pid of pids) expect(existsSync(`/proc/${pid}`)).toBe(false);
  });
});
