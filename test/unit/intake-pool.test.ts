// List pages parsed and serialized by intake workers (src/cache/intakepool.ts): the reflector fetches the next
// page while one is encoded but hands pages to the sink strictly in order; a worker that dies fails its list,
// which is listed again, and is replaced; what is stored is byte for byte what the main thread stores.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/meta.js';
import { encodeList, type EncodedPage } from '../../src/cache/intake.js';
import { startIntakePool, type IntakePool } from '../../src/cache/intakepool.js';
import { MergedCache } from '../../src/cache/merged.js';
import { backoff, tokenBucket } from '../../src/cache/ratelimit.js';
import { startReflector, type Reflector } from '../../src/cache/reflector.js';
import { upstreamFromEndpoint } from '../../src/upstream/client.js';

const log = pino({ level: 'silent' });

function pod(i: number): KubeObject {
  return {
    metadata: { name: `pod-${i}`, namespace: `ns-${i % 3}`, resourceVersion: String(100 + i), labels: { app: `äpp-${i % 4}` }, managedFields: [{ manager: 'm' }] },
    spec: { nodeName: `node-${i % 5}`, containers: [{ name: 'c', image: 'x'.repeat(i % 50) }] },
    status: { phase: 'Running' },
  } as KubeObject;
}

/** A member serving pods in pages of pageSize; metadataLast puts the list metadata after the items. */
async function member(pods: KubeObject[], opts: { metadataLast?: boolean } = {}) {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    const q = new URL(req.url!, 'http://x').searchParams;
    if (q.get('watch')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      return;
    }
    // The list requests, by continue token.
    requests.push(q.get('continue') ?? '');
    const limit = Number(q.get('limit'));
    const from = Number(q.get('continue') ?? 0);
    const items = pods.slice(from, from + limit);
    const metadata = { resourceVersion: '999', continue: from + limit < pods.length ? String(from + limit) : undefined };
    const body = opts.metadataLast ? { kind: 'PodList', apiVersion: 'v1', items, metadata } : { kind: 'PodList', apiVersion: 'v1', metadata, items };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    upstream: upstreamFromEndpoint({ name: 'm1', url, role: 'member cluster' }),
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The cache a reflector fills from the member, with encode (workers) or without (the main thread). */
async function sync(m: Awaited<ReturnType<typeof member>>, encode: ((t: MergedCache) => (page: Buffer) => Promise<EncodedPage>) | undefined, pageSize = 7) {
  const cache = new MergedCache({ instanceID: 'i', windowSize: 10_000, dropManagedFields: true, rvBase: 1000 });
  const order: string[] = [];
  cache.pods.subscribe((ev) => order.push(ev.object.name));
  const sink = cache.sink('m1', 'pods');
  const aborted = { n: 0 };
  const r: Reflector = startReflector({
    upstream: m.upstream,
    path: '/api/v1/pods',
    sink: {
      ...sink,
      startList: () => {
        const intake = sink.startList();
        return { ...intake, abort: () => (aborted.n++, intake.abort()) };
      },
    },
    encode: encode?.(cache),
    limiter: tokenBucket(1000, 1000),
    log,
    pageSize,
    backoff: backoff({ initialMs: 10, maxMs: 50 }),
  });
  cleanups.push(() => r.stop());
  await until(() => r.synced, 'the first list');
  return { cache, order, reflector: r, aborted };
}

describe('intake workers', () => {
  const pods = Array.from({ length: 40 }, (_, i) => pod(i));

  for (const workers of [1, 2]) {
    it(`store the same bytes as the main thread, in list order (${workers} worker${workers > 1 ? 's' : ''})`, async () => {
      const m = await member(pods);
      cleanups.push(m.close);
      const pool = startIntakePool({ workers, log });
      cleanups.push(() => pool.close());
      const plain = await sync(m, undefined);
      const viaPool = await sync(m, () => (page) => pool.encode(page, { cluster: 'm1', resource: 'pods', dropManagedFields: true }));
      expect(viaPool.order).toEqual(pods.map((p) => p.metadata.name));
      expect(viaPool.order).toEqual(plain.order);
      // Labels in key order: a page read from bytes parses the cluster label first, the object path adds it last.
      const sorted = (r: Record<string, string>) => Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));
      const bytes = (c: MergedCache) => [...c.pods.values()].map((s) => `${s.key} ${s.rv} ${s.json.toString('utf8')} ${JSON.stringify(s.fields)} ${JSON.stringify(sorted(s.labels))}`);
      expect(bytes(viaPool.cache)).toEqual(bytes(plain.cache));
      expect(viaPool.cache.pods.get('ns-1/pod-1\u0000m1')!.json.toString()).toContain('"fleetgate.io/cluster":"m1"');
      // Pods with the same labels share one frozen object, as on the main thread's byte path (this test's plain
      // side parses whole lists: the object path, which does not share them).
      const labelsOf = (key: string) => viaPool.cache.pods.get(key)!.labels;
      expect(labelsOf('ns-2/pod-5\u0000m1')).toBe(labelsOf('ns-1/pod-1\u0000m1'));
      expect(labelsOf('ns-2/pod-2\u0000m1')).not.toBe(labelsOf('ns-1/pod-1\u0000m1'));
      expect(Object.isFrozen(labelsOf('ns-1/pod-1\u0000m1'))).toBe(true);
      expect(pool.crashes).toBe(0);
    });
  }

  it('fetch the next page while one is encoded, one page ahead at most, and hand pages to the sink in order', async () => {
    const m = await member(pods.slice(0, 21));
    cleanups.push(m.close);
    const held: Array<{ bytes: Buffer; release: () => void; promise: Promise<EncodedPage> }> = [];
    const encode = (bytes: Buffer): Promise<EncodedPage> => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const text = bytes.toString('utf8');
      const promise = gate.then(() => encodeList(text, { cluster: 'm1', resource: 'pods', dropManagedFields: true }));
      held.push({ bytes, release, promise });
      return promise;
    };
    const synced = sync(m, () => encode);
    await until(() => held.length === 2, 'page 2 handed over while page 1 is held');
    // Page 1 is still being encoded: page 2 was fetched, page 3 is not.
    await new Promise((r) => setTimeout(r, 50));
    expect(m.requests).toEqual(['', '7']);
    // Page 2 done first: nothing reaches the sink before page 1.
    held[1]!.release();
    await held[1]!.promise;
    await new Promise((r) => setTimeout(r, 20));
    expect(m.requests).toEqual(['', '7']);
    held[0]!.release();
    await until(() => held.length === 3, 'page 3 fetched');
    held[2]!.release();
    const { order } = await synced;
    expect(order).toEqual(pods.slice(0, 21).map((p) => p.metadata.name));
  });

  it('wait for the page when the list metadata comes after the items', async () => {
    const m = await member(pods, { metadataLast: true });
    cleanups.push(m.close);
    const pool = startIntakePool({ workers: 2, log });
    cleanups.push(() => pool.close());
    const { order } = await sync(m, () => (page) => pool.encode(page, { cluster: 'm1', resource: 'pods', dropManagedFields: true }));
    expect(order).toEqual(pods.map((p) => p.metadata.name));
  });

  it('a worker that dies fails its list, which is listed again, and is replaced', async () => {
    const m = await member(pods);
    cleanups.push(m.close);
    let crashed = 0;
    const pool: IntakePool = startIntakePool({ workers: 1, log, faultAt: (n) => (n === 3 ? 'exit' : undefined), onCrash: () => crashed++ });
    cleanups.push(() => pool.close());
    const { cache, aborted, reflector } = await sync(m, () => (page) => pool.encode(page, { cluster: 'm1', resource: 'pods', dropManagedFields: true }));
    expect(pool.crashes).toBe(1);
    expect(crashed).toBe(1);
    // The list it was in was abandoned (and maybe the next try too, while the replacement was starting).
    expect(aborted.n).toBeGreaterThanOrEqual(1);
    expect(reflector.stats.lists).toBe(1);
    expect(cache.pods.size).toBe(pods.length);
    // The replacement works: the list was done again through it (6 pages, 2 of them before the crash and 1 lost).
    expect(m.requests.filter((c) => c === '').length).toBe(aborted.n + 1);
  });
});
