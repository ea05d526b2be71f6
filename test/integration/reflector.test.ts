// The reflector against simulated members: a recording sink ends with exactly the member's pods, and its event
// log agrees with the member's own history (no duplicate ADDED, no lost DELETE, nothing out of order) through
// churn, cut watches, watch timeouts, 410s from a small window and a member that is down for a while.

import type { Server } from 'node:https';
import type { Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { startReflector, type Reflector, type ReflectorSink } from '../../src/cache/reflector.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import type { StoreEvent } from '../../src/cache/store.js';
import { upstreamFromKubeconfig, type Upstream } from '../../src/upstream/client.js';
import { issueServingCert } from '../../src/pki/index.js';
import { startChurn } from '../sim/churn.js';
import type { SimCluster } from '../sim/cluster.js';
import { startSimFleet, type SimFleet } from '../sim/fleet.js';
import { startSimServer, type SimServer } from '../sim/server.js';

const log = pino({ level: 'silent' });

interface Recorded {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  key: string;
  rv: string;
  via: 'replace' | 'apply';
}

/** Keeps what a downstream cache would keep, and every event it would emit; notes anything inconsistent. */
class RecordingSink implements ReflectorSink {
  readonly objects = new Map<string, KubeObject>();
  readonly log: Recorded[] = [];
  readonly violations: string[] = [];
  readonly listRVs: string[] = [];
  lastRV = '';

  replace(objects: KubeObject[], listRV: string): void {
    this.listRVs.push(listRV);
    const seen = new Set<string>();
    for (const o of objects) {
      const key = keyOf(o);
      if (seen.has(key)) this.violations.push(`list at ${listRV} holds ${key} twice`);
      seen.add(key);
      const had = this.objects.get(key);
      this.objects.set(key, o);
      if (!had) this.log.push({ type: 'ADDED', key, rv: rvOf(o), via: 'replace' });
      else if (rvOf(had) !== rvOf(o)) this.log.push({ type: 'MODIFIED', key, rv: rvOf(o), via: 'replace' });
    }
    for (const key of [...this.objects.keys()]) {
      if (seen.has(key)) continue;
      this.log.push({ type: 'DELETED', key, rv: listRV, via: 'replace' });
      this.objects.delete(key);
    }
    this.lastRV = listRV;
  }

  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void {
    const key = keyOf(obj);
    const had = this.objects.get(key);
    const rv = rvOf(obj);
    if (type === 'ADDED' && had) this.violations.push(`duplicate ADDED ${key} at ${rv}`);
    if (type !== 'ADDED' && !had) this.violations.push(`${type} of unknown ${key} at ${rv}`);
    if (had && Number(rv) <= Number(rvOf(had))) this.violations.push(`${type} ${key} at ${rv} is not newer than ${rvOf(had)}`);
    if (Number(rv) <= Number(this.lastRV)) this.violations.push(`${type} ${key} at ${rv} after ${this.lastRV} was seen`);
    if (type === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, obj);
    this.log.push({ type, key, rv, via: 'apply' });
    this.lastRV = rv;
  }

  progress(rv: string): void {
    if (Number(rv) < Number(this.lastRV)) this.violations.push(`bookmark ${rv} goes back from ${this.lastRV}`);
    this.lastRV = rv;
  }

  state(): Array<[string, string]> {
    return [...this.objects].map(([k, o]) => [k, rvOf(o)] as [string, string]).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  }
}

const keyOf = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;
const rvOf = (o: KubeObject) => o.metadata.resourceVersion ?? '';

/** The member's own history of pods, from its store. */
function recordTruth(cluster: SimCluster) {
  const events: Array<{ type: string; key: string; rv: string }> = [];
  const store = cluster.store(cluster.resourceFor('', 'pods')!);
  const stop = store.subscribe((ev: StoreEvent) => events.push({ type: ev.type, key: ev.object.key, rv: String(ev.rv) }));
  const state = () =>
    cluster
      .list('', 'pods')
      .map((p) => [keyOf(p), rvOf(p)] as [string, string])
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return { events, stop, state };
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every change the member made after the sink's first list, in order: what a sink that never relisted must have. */
function changesAfter(truth: ReturnType<typeof recordTruth>, rv: string) {
  return truth.events.filter((e) => Number(e.rv) > Number(rv)).map((e) => ({ type: e.type, key: e.key, rv: e.rv }));
}

/**
 * A sink that relisted saw a compressed history: each event it got must be one the member made (same key, type
 * and version), or a relist's difference consistent with the member's state at that list.
 */
function checkAgainstTruth(sink: RecordingSink, truth: ReturnType<typeof recordTruth>): string[] {
  const real = new Set(truth.events.map((e) => `${e.type} ${e.key} ${e.rv}`));
  const states = new Set(truth.events.filter((e) => e.type !== 'DELETED').map((e) => `${e.key} ${e.rv}`));
  const problems: string[] = [];
  for (const r of sink.log) {
    if (r.via === 'apply' && !real.has(`${r.type} ${r.key} ${r.rv}`)) problems.push(`event ${r.type} ${r.key} ${r.rv} never happened`);
    if (r.via === 'replace' && r.type !== 'DELETED' && !states.has(`${r.key} ${r.rv}`) && Number(r.rv) > Number(truth.events[0]?.rv ?? 0)) {
      problems.push(`relist state ${r.key} ${r.rv} never existed`);
    }
  }
  return problems;
}

describe('reflector against the sim', () => {
  let fleet: SimFleet;
  const reflectors: Reflector[] = [];
  const extraServers: SimServer[] = [];
  const upstreams: Upstream[] = [];

  beforeAll(async () => {
    fleet = await startSimFleet({ clusters: ['member-a', 'member-b', 'member-c', 'member-d'], podsPerCluster: 300 });
  });
  afterEach(async () => {
    await Promise.all(reflectors.splice(0).map((r) => r.stop()));
    await Promise.all(upstreams.splice(0).map((u) => u.close()));
  });
  afterAll(async () => {
    await Promise.all(extraServers.map((s) => s.close()));
    await fleet?.close();
  });

  const start = (member: string, sink: ReflectorSink, extra: Partial<Parameters<typeof startReflector>[0]> = {}) => {
    const upstream = upstreamFromKubeconfig(fleet.member(member).kubeconfigPath, undefined, member);
    upstreams.push(upstream);
    const r = startReflector({ upstream, path: '/api/v1/pods', sink, limiter: tokenBucket(50, 100), log, pageSize: 64, ...extra });
    reflectors.push(r);
    return r;
  };

  /** Restarts a member's server on the same port, as an apiserver restart looks to its clients. */
  const restart = async (member: string, downMs: number) => {
    const m = fleet.member(member);
    const port = m.server.port;
    await m.server.close();
    await new Promise((r) => setTimeout(r, downMs));
    const serving = await issueServingCert(fleet.servingCA, ['127.0.0.1', 'localhost']);
    const server = await startSimServer({ cluster: m.cluster, tls: { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: fleet.clientCA.certPem }, port });
    extraServers.push(server);
    m.server = server;
    return server;
  };

  it('follows churn with paged lists and watch timeouts: the exact event history, nothing more', async () => {
    const cluster = fleet.member('member-a').cluster;
    const truth = recordTruth(cluster);
    const sink = new RecordingSink();
    // Watches of 1-2 s make the server end them over and over while the churn runs.
    const r = start('member-a', sink, { minWatchTimeoutSeconds: 1 });
    await until(() => r.synced, 10_000, 'sync');
    expect(sink.listRVs).toHaveLength(1);
    expect(sink.objects.size).toBe(300);
    const churn = startChurn([cluster], { ratePerSecond: 400, maxOps: 2000, seed: 5, namespace: 'churn-a' });
    await churn.done;
    await until(() => JSON.stringify(sink.state()) === JSON.stringify(truth.state()), 15_000, 'the sink to match the member');
    truth.stop();
    expect(sink.violations).toEqual([]);
    expect(r.stats.relists).toBe(0);
    expect(r.stats.watchRestarts).toBeGreaterThan(0);
    expect(r.stats.events).toBe(changesAfter(truth, sink.listRVs[0]).length);
    const applied = sink.log.filter((e) => e.via === 'apply').map(({ type, key, rv }) => ({ type, key, rv }));
    expect(applied).toEqual(changesAfter(truth, sink.listRVs[0]));
    expect(r.stale).toBe(false);
  }, 40_000);

  it('resumes cut connections and a restarted member from the last version seen, without relisting', async () => {
    const cluster = fleet.member('member-b').cluster;
    const truth = recordTruth(cluster);
    const sink = new RecordingSink();
    const sockets = new Set<Socket>();
    const track = (srv: Server) => srv.on('secureConnection', (s: Socket) => sockets.add(s));
    track(fleet.member('member-b').server.server);
    const r = start('member-b', sink);
    await until(() => r.synced, 10_000, 'sync');
    const churn = startChurn([cluster], { ratePerSecond: 300, maxOps: 1800, seed: 9, namespace: 'churn-b' });
    // Connections die mid-stream now and then, as through a flaky load balancer; then the apiserver restarts.
    let cuts = 0;
    const cutter = setInterval(() => {
      for (const s of sockets) s.destroy();
      sockets.clear();
      cuts++;
    }, 700);
    await until(() => churn.ops > 900, 20_000, 'half the churn');
    clearInterval(cutter);
    track((await restart('member-b', 0)).server);
    await churn.done;
    await until(() => JSON.stringify(sink.state()) === JSON.stringify(truth.state()), 20_000, 'the sink to match the member');
    truth.stop();
    expect(cuts).toBeGreaterThan(2);
    expect(sink.violations).toEqual([]);
    expect(r.stats.relists).toBe(0);
    expect(r.stats.watchRestarts).toBeGreaterThan(2);
    const applied = sink.log.filter((e) => e.via === 'apply').map(({ type, key, rv }) => ({ type, key, rv }));
    expect(applied).toEqual(changesAfter(truth, sink.listRVs[0]));
  }, 60_000);

  it('relists on 410 and reconciles through replace when the window is too small to resume', async () => {
    // Its own fleet: a member whose watch window holds only 40 events.
    const small = await startSimFleet({ clusters: ['member-w'], podsPerCluster: 200, cluster: { windowSize: 40 } });
    try {
      const m = small.member('member-w');
      const cluster = m.cluster;
      const truth = recordTruth(cluster);
      const sink = new RecordingSink();
      const upstream = upstreamFromKubeconfig(m.kubeconfigPath, undefined, 'member-w');
      upstreams.push(upstream);
      const r = startReflector({ upstream, path: '/api/v1/pods', sink, limiter: tokenBucket(100, 100), log, pageSize: 50, backoff: backoff({ initialMs: 100, maxMs: 400 }) });
      reflectors.push(r);
      await until(() => r.synced, 10_000, 'sync');
      // Cut the watch, make more changes than the window holds, let the watch resume: 410, relist.
      for (let round = 0; round < 3; round++) {
        const port = m.server.port;
        await m.server.close();
        const churn = startChurn([cluster], { ratePerSecond: 100_000, maxOps: 150, seed: 20 + round, namespace: 'churn-w', appPrefix: `w${round}` });
        await churn.done;
        // Pods the sink holds go away while it cannot see it.
        const pods = cluster.resourceFor('', 'pods')!;
        for (const p of cluster.list('', 'pods', 'load').slice(0, 5)) cluster.delete(pods, 'load', p.metadata.name!, { gracePeriodSeconds: 0 });
        const serving = await issueServingCert(small.servingCA, ['127.0.0.1', 'localhost']);
        m.server = await startSimServer({ cluster, tls: { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: small.clientCA.certPem }, port });
        await until(() => r.stats.relists > round, 20_000, `relist ${round + 1}`);
        await until(() => JSON.stringify(sink.state()) === JSON.stringify(truth.state()), 20_000, 'the sink to match the member');
      }
      truth.stop();
      expect(sink.violations).toEqual([]);
      expect(checkAgainstTruth(sink, truth)).toEqual([]);
      expect(r.stats.relists).toBe(3);
      // Deletions that happened while the watch was away arrive as the relist's DELETED.
      expect(sink.log.some((e) => e.via === 'replace' && e.type === 'DELETED')).toBe(true);
      await r.stop();
    } finally {
      await small.close();
    }
  }, 60_000);

  it('keeps the last state of a member that is down, marked stale, backs off, and recovers', async () => {
    const cluster = fleet.member('member-c').cluster;
    const truth = recordTruth(cluster);
    const sink = new RecordingSink();
    let statusChanges = 0;
    const r = start('member-c', sink, { onStatus: () => statusChanges++, backoff: backoff({ initialMs: 200, maxMs: 1000 }) });
    await until(() => r.synced, 10_000, 'sync');
    expect(r.stale).toBe(false);
    const m = fleet.member('member-c');
    const port = m.server.port;
    await m.server.close();
    const downAt = Date.now();
    const churn = startChurn([cluster], { ratePerSecond: 200, maxOps: 600, seed: 31, namespace: 'churn-c' });
    await until(() => r.stale, 5_000, 'stale');
    expect(r.staleSince).toBeGreaterThanOrEqual(downAt);
    await until(() => /ECONNREFUSED/.test(r.lastError ?? ''), 5_000, 'connection refused');
    const restartsWhenStale = r.stats.watchRestarts;
    // Held objects stay while the member is away.
    expect(sink.objects.size).toBeGreaterThanOrEqual(300);
    await new Promise((res) => setTimeout(res, 3000));
    // Backoff 200ms doubling to 1s (with jitter up to 2x): a handful of attempts in 3 s, not hundreds.
    const attempts = r.stats.watchRestarts - restartsWhenStale;
    expect(attempts).toBeGreaterThan(0);
    expect(attempts).toBeLessThan(10);
    expect(r.stale).toBe(true);
    const serving = await issueServingCert(fleet.servingCA, ['127.0.0.1', 'localhost']);
    m.server = await startSimServer({ cluster, tls: { certPem: serving.certPem, keyPem: serving.keyPem, clientCaPem: fleet.clientCA.certPem }, port });
    extraServers.push(m.server);
    await churn.done;
    await until(() => !r.stale, 10_000, 'recovery');
    await until(() => JSON.stringify(sink.state()) === JSON.stringify(truth.state()), 15_000, 'the sink to match the member');
    truth.stop();
    expect(sink.violations).toEqual([]);
    // The window (10,000 events) still reached back: the watch resumed, nothing was relisted.
    expect(r.stats.relists).toBe(0);
    const applied = sink.log.filter((e) => e.via === 'apply').map(({ type, key, rv }) => ({ type, key, rv }));
    expect(applied).toEqual(changesAfter(truth, sink.listRVs[0]));
    expect(statusChanges).toBeGreaterThanOrEqual(3);
  }, 40_000);

  it('syncs with a streaming list (sendInitialEvents) and follows churn', async () => {
    const cluster = fleet.member('member-d').cluster;
    const truth = recordTruth(cluster);
    const sink = new RecordingSink();
    const r = start('member-d', sink, { useWatchList: true, minWatchTimeoutSeconds: 1 });
    await until(() => r.synced, 10_000, 'sync');
    expect(r.watchList).toBe(true);
    expect(sink.objects.size).toBe(300);
    const churn = startChurn([cluster], { ratePerSecond: 400, maxOps: 1000, seed: 41, namespace: 'churn-d' });
    await churn.done;
    await until(() => JSON.stringify(sink.state()) === JSON.stringify(truth.state()), 15_000, 'the sink to match the member');
    truth.stop();
    expect(sink.violations).toEqual([]);
    expect(r.stats.relists).toBe(0);
    const applied = sink.log.filter((e) => e.via === 'apply').map(({ type, key, rv }) => ({ type, key, rv }));
    expect(applied).toEqual(changesAfter(truth, sink.listRVs[0]));
  }, 40_000);
});
