// Karmada discovery against the demo federation: the Cluster objects on the simulated control plane become
// members with working endpoints, and Clusters created, deleted or changed at run time (or their secrets) show up
// as added, removed and changed without a restart.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import { startReflector, type ReflectorSink } from '../../src/cache/reflector.js';
import { karmadaMembers } from '../../src/members/karmada.js';
import type { MemberEvent, MemberRegistry } from '../../src/members/registry.js';
import { combineRegistries, staticRegistry } from '../../src/members/registry.js';
import { staticMembers } from '../../src/members/static.js';
import { upstreamFromEndpoint, upstreamFromKubeconfig, type Upstream } from '../../src/upstream/client.js';
import type { SimCluster } from '../sim/cluster.js';
import { DEMO_MEMBERS, startDemoFleet, type DemoFleet } from '../sim/demofleet.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { until } from '../support/until.js';

const log = pino({ level: 'silent' });

/** Lists and watches pods over a member's endpoint until the sink holds what the member holds. */
async function podsThrough(up: Upstream, member: SimCluster): Promise<void> {
  const held = new Map<string, string>();
  const sink: ReflectorSink = {
    replace(objects) {
      held.clear();
      for (const o of objects) held.set(`${o.metadata.namespace}/${o.metadata.name}`, o.metadata.resourceVersion!);
    },
    apply(type, o) {
      const k = `${o.metadata.namespace}/${o.metadata.name}`;
      if (type === 'DELETED') held.delete(k);
      else held.set(k, o.metadata.resourceVersion!);
    },
  };
  const r = startReflector({ upstream: up, path: '/api/v1/pods', sink, limiter: tokenBucket(50, 50), log });
  try {
    const want = () => member.list('', 'pods').map((p) => `${p.metadata.namespace}/${p.metadata.name}@${p.metadata.resourceVersion}`).sort();
    const got = () => [...held].map(([k, v]) => `${k}@${v}`).sort();
    await until(() => r.synced && JSON.stringify(got()) === JSON.stringify(want()), 15_000, `pods of ${up.name}`);
    expect(want().length).toBeGreaterThan(0);
  } finally {
    await r.stop();
  }
}

describe('Karmada member discovery', () => {
  let dir: string;
  let demo: DemoFleet;
  let extra: SimFleet;
  let cp: Upstream;
  let registry: MemberRegistry;
  const events: MemberEvent[] = [];
  const upstreams: Upstream[] = [];

  const cpCluster = () => demo.fleet.member('control-plane').cluster;
  const res = (group: string, resource: string) => cpCluster().resourceFor(group, resource)!;
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const eventsFor = (name: string) => events.filter((e) => e.spec.name === name).map((e) => e.type);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetgate-karmada-'));
    demo = await startDemoFleet(dir);
    // A cluster from another fleet, with its own CA and token, joins at run time.
    extra = await startSimFleet({ clusters: ['member-d'], podsPerCluster: 20 });
    cp = upstreamFromKubeconfig(demo.fleet.member('control-plane').kubeconfigPath, undefined, 'control-plane');
    registry = karmadaMembers(cp, { log, resyncMs: 300, backoff: () => backoff({ initialMs: 100, maxMs: 400 }) });
    registry.subscribe((e) => events.push(e));
    await until(() => registry.synced, 15_000, 'discovery');
  });
  afterAll(async () => {
    await registry?.close();
    await Promise.all(upstreams.map((u) => u.close()));
    await cp?.close();
    await extra?.close();
    await demo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reports the demo members with working endpoints and impersonator identities', async () => {
    const specs = registry.list().sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(specs.map((s) => s.name)).toEqual(DEMO_MEMBERS);
    expect(registry.problems()).toEqual([]);
    for (const s of specs) {
      expect(s.source).toBe('karmada');
      expect(s.endpoint.url).toBe(demo.fleet.member(s.name).url);
      expect(s.endpoint.token).toBe(demo.fleet.adminToken);
      expect(s.endpoint.caPem).toBe(demo.fleet.servingCA.certPem.trim());
      expect(s.endpoint.role).toBe('member cluster');
      expect(s.impersonator?.token).toBe(demo.fleet.adminToken);
      expect(s.fingerprint).toMatch(/^[0-9a-f]{32}$/);
      const up = upstreamFromEndpoint(s.endpoint);
      upstreams.push(up);
      await podsThrough(up, demo.fleet.member(s.name).cluster);
    }
  }, 60_000);

  it('adds a Cluster created at run time, and reports one whose secret is missing until it appears', async () => {
    const cpc = cpCluster();
    const m = extra.member('member-d');
    cpc.create(res('', 'secrets'), 'karmada-cluster', {
      metadata: { name: 'member-d', namespace: 'karmada-cluster' },
      data: { token: b64(extra.adminToken), caBundle: b64(extra.servingCA.certPem) },
    });
    cpc.create(res('cluster.karmada.io', 'clusters'), '', { metadata: { name: 'member-d' }, spec: { syncMode: 'Push', apiEndpoint: m.url, secretRef: { namespace: 'karmada-cluster', name: 'member-d' } } });
    await until(() => registry.get('member-d') !== undefined, 10_000, 'member-d');
    expect(eventsFor('member-d')).toEqual(['added']);
    const d = registry.get('member-d')!;
    expect(d.impersonator).toBeUndefined();
    const up = upstreamFromEndpoint(d.endpoint);
    upstreams.push(up);
    await podsThrough(up, m.cluster);

    // A Cluster whose secret does not exist (yet): reported, not added, retried.
    cpc.create(res('cluster.karmada.io', 'clusters'), '', { metadata: { name: 'member-e' }, spec: { apiEndpoint: m.url, secretRef: { namespace: 'karmada-cluster', name: 'member-e' } } });
    await until(() => registry.problems().some((p) => p.name === 'member-e'), 10_000, 'the problem report');
    const p = registry.problems().find((x) => x.name === 'member-e')!;
    expect(p.error).toBe('cluster member-e: secret karmada-cluster/member-e (spec.secretRef) not found');
    expect(p.source).toBe('karmada');
    expect(registry.get('member-e')).toBeUndefined();
    expect(registry.synced).toBe(true);
    cpc.create(res('', 'secrets'), 'karmada-cluster', { metadata: { name: 'member-e', namespace: 'karmada-cluster' }, data: { token: b64(extra.adminToken), caBundle: b64(extra.servingCA.certPem) } });
    await until(() => registry.get('member-e') !== undefined, 10_000, 'member-e after its secret appeared');
    expect(registry.problems().filter((x) => x.name === 'member-e')).toEqual([]);
    expect(eventsFor('member-e')).toEqual(['added']);
  }, 60_000);

  it('reports a changed secret or apiEndpoint as changed, and a deleted Cluster as removed', async () => {
    const cpc = cpCluster();
    events.splice(0);
    // Token rotation in member-b's secret (which is also its impersonator secret), found by the resync.
    const before = registry.get('member-b')!.fingerprint;
    const secret = structuredClone(cpc.get('', 'secrets', 'karmada-cluster', 'member-b')!) as KubeObject & { data: Record<string, string> };
    secret.data.token = b64('rotated-token');
    cpc.update(res('', 'secrets'), 'karmada-cluster', 'member-b', secret);
    await until(() => registry.get('member-b')!.fingerprint !== before, 10_000, 'member-b to change');
    expect(registry.get('member-b')!.endpoint.token).toBe('rotated-token');
    expect(registry.get('member-b')!.impersonator?.token).toBe('rotated-token');
    expect(eventsFor('member-b')).toEqual(['changed']);
    expect(events.filter((e) => e.spec.name === 'member-b').at(-1)!.spec.endpoint.token).toBe('rotated-token');

    // A new apiEndpoint for member-c (the same server by another name), found through the watch.
    const c = structuredClone(cpc.get('cluster.karmada.io', 'clusters', '', 'member-c')!) as KubeObject & { spec: { apiEndpoint: string } };
    const url = c.spec.apiEndpoint.replace('127.0.0.1', 'localhost');
    c.spec.apiEndpoint = url;
    cpc.update(res('cluster.karmada.io', 'clusters'), '', 'member-c', c);
    await until(() => registry.get('member-c')?.endpoint.url === url, 10_000, 'member-c to change');
    expect(eventsFor('member-c')).toEqual(['changed']);

    // Status updates alone change nothing.
    const cs = structuredClone(cpc.get('cluster.karmada.io', 'clusters', '', 'member-c')!) as KubeObject & { status?: unknown };
    cs.status = { kubernetesVersion: 'v1.34.5' };
    cpc.update(res('cluster.karmada.io', 'clusters'), '', 'member-c', cs, { subresource: 'status' });

    cpc.delete(res('cluster.karmada.io', 'clusters'), '', 'member-a');
    await until(() => registry.get('member-a') === undefined, 10_000, 'member-a to go');
    expect(eventsFor('member-a')).toEqual(['removed']);
    expect(events.filter((e) => e.spec.name === 'member-a')[0].spec.endpoint.url).toBe(demo.fleet.member('member-a').url);
    await new Promise((r) => setTimeout(r, 700));
    expect(eventsFor('member-c')).toEqual(['changed']);
    expect(registry.list().map((s) => s.name).sort()).toEqual(['member-b', 'member-c', 'member-d', 'member-e']);
  }, 60_000);

  it('lets a static member win over a Karmada Cluster of the same name', async () => {
    const statics = staticRegistry(staticMembers([{ name: 'member-b', kubeconfig: demo.fleet.member('member-b').kubeconfigPath }]));
    const dyn = karmadaMembers(cp, { log, resyncMs: 300 });
    const warnings: string[] = [];
    const capture = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg) });
    const all = combineRegistries([statics, dyn], capture);
    const seen: MemberEvent[] = [];
    all.subscribe((e) => seen.push(e));
    try {
      const want = () => [...new Set(['member-b', ...registry.list().map((x) => x.name)])].sort();
      await until(() => all.synced && JSON.stringify(all.list().map((x) => x.name).sort()) === JSON.stringify(want()), 15_000, 'combined discovery').catch((e) => {
        console.log(all.synced, dyn.synced, all.list().map((x) => x.name), dyn.problems(), want());
        throw e;
      });
      expect(all.get('member-b')!.source).toBe('static');
      expect(all.get('member-c')!.source).toBe('karmada');
      expect(warnings).toContain('member member-b is defined by static and by karmada; the static one is used');
      expect(seen.every((e) => e.spec.name !== 'member-b')).toBe(true);
    } finally {
      await all.close();
    }
  }, 30_000);

  it('reads a secret named by both secretRef and impersonatorSecretRef once, so a rotation never pairs an old token with a new', async () => {
    const cpc = cpCluster();
    const secretPath = '/api/v1/namespaces/karmada-cluster/secrets/member-b';
    // The secret rotates right after each of its first three reads: a second read for the same resolve would see
    // the next token.
    let rotations = 0;
    const rotate = () => {
      const secret = structuredClone(cpc.get('', 'secrets', 'karmada-cluster', 'member-b')!) as KubeObject & { data: Record<string, string> };
      secret.data.token = b64(`token-${++rotations}`);
      cpc.update(res('', 'secrets'), 'karmada-cluster', 'member-b', secret);
    };
    const real = cp.dispatcher;
    const counting = new Proxy(real, {
      get(target, key) {
        if (key === 'request') {
          return async (opts: Parameters<typeof real.request>[0]) => {
            const r = await real.request(opts);
            if (opts.method === 'GET' && String(opts.path).endsWith(secretPath) && rotations < 3) rotate();
            return r;
          };
        }
        const v = Reflect.get(target, key);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const dyn = karmadaMembers({ ...cp, dispatcher: counting } as Upstream, { log, resyncMs: 100 });
    const seen: MemberEvent[] = [];
    dyn.subscribe((e) => seen.push(e));
    try {
      await until(() => dyn.get('member-b')?.endpoint.token === 'token-3', 15_000, 'member-b at the third rotation');
      const b = seen.filter((e) => e.spec.name === 'member-b').map((e) => `${e.spec.endpoint.token}/${e.spec.impersonator?.token}`);
      expect(b.length).toBeGreaterThan(1);
      for (const pair of b) expect(pair.split('/')[0]).toBe(pair.split('/')[1]);
    } finally {
      await dyn.close();
    }
  }, 30_000);
});
