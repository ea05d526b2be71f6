// A watch's life against kube-apiserver's cacher: it goes live with no gap after its backlog, timeoutSeconds=0 asks
// for no timeout, a bookmark comes 2 s before the timeout, and a stalled watcher with a narrow selection does not
// keep the shared frame chunks alive for a few KB each.

import { describe, expect, it } from 'vitest';
import { MergedCache } from '../../src/cache/merged.js';
import { serveCached } from '../../src/cache/serve.js';
import { MAX_HELD_CHUNKS } from '../../src/cache/watch.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { FakeResponse } from '../support/fakeresponse.js';

let memberRV = 1;
function pod(name: string, labels: Record<string, string> = {}, pad = ''): any {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'ns', name, resourceVersion: String(memberRV++), labels, annotations: pad ? { pad } : undefined }, spec: { nodeName: 'n1' } };
}

function newCache(pods = 0) {
  const cache = new MergedCache({ instanceID: 't', windowSize: 100_000, dropManagedFields: true, rvBase: 100 });
  const sink = cache.sink('member-a', 'pods');
  sink.replace(Array.from({ length: pods }, (_, i) => pod(`p${i}`)), '1');
  return { cache, sink };
}

/** Records the chunks themselves, as the connection would hold them; like a stalled one, it never calls back. */
class HoldingResponse extends FakeResponse {
  raw: Buffer[] = [];
  override write(chunk: Buffer | string): boolean {
    if (Buffer.isBuffer(chunk)) this.raw.push(chunk);
    return super.write(chunk);
  }
}

async function startWatch(cache: MergedCache, query: string, res = new FakeResponse(), maxTimeoutSeconds = 60) {
  const url = new URL(`https://gw.invalid/api/v1/namespaces/ns/pods?watch=1&${query}`);
  const ctx = { req: { headers: {} }, res, url, auditID: 'a', info: newRequestInfo('GET', url.pathname, url.searchParams), user: { username: 'u', groups: [] } } as unknown as RequestContext;
  await serveCached(ctx, cache, { stale: () => [], watchSettings: { bookmarkIntervalMs: 60_000, maxBufferedBytes: 64 << 20, maxTimeoutSeconds, maxPendingEvents: 100_000 } });
  return res;
}

const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
};

describe('watch lifecycle', () => {
  it('a change applied right as the watch goes live reaches it (a resumed watch with nothing to replay, and one from the current state)', async () => {
    for (const from of ['resume', 'state'] as const) {
      const { cache, sink } = newCache(3);
      // A member's change already queued as a microtask, as the reflector applies events in a for-await loop.
      const queued = Promise.resolve().then(() => sink.apply('DELETED', pod('p1')));
      const res = await startWatch(cache, from === 'resume' ? `resourceVersion=${cache.pods.clock.current()}` : 'resourceVersion=0');
      await queued;
      await settle();
      const seen = res.lines().map((e) => `${e.type} ${e.object.metadata.name}`);
      expect(seen).toContain('DELETED p1');
    }
  });

  it('a watch whose client went away before it was served ends at once instead of living to its timeout', async () => {
    const { cache } = newCache(3);
    const res = new FakeResponse();
    // Its 'close' came while the request was still in the chain (authorization, flow control), before the watch listened.
    res.destroyed = true;
    res.emit('close');
    await startWatch(cache, 'resourceVersion=0');
    await startWatch(cache, 'resourceVersion=0', res);
    await settle();
    expect(res.writableEnded).toBe(true);
    expect(res.lines()).toEqual([]);
    // Only the first watch, whose client is there, is subscribed.
    expect(cache.pods.watcherCount).toBe(1);
  });

  it('timeoutSeconds=0 asks for no timeout, not for an end at once', async () => {
    const { cache, sink } = newCache(2);
    const res = await startWatch(cache, 'resourceVersion=0&timeoutSeconds=0');
    await new Promise((r) => setTimeout(r, 50));
    expect(res.writableEnded).toBe(false);
    sink.apply('ADDED', pod('later'));
    await settle();
    expect(res.lines().map((e) => e.object.metadata.name)).toEqual(['p0', 'p1', 'later']);
    res.emit('close');
  });

  it('a watch that takes bookmarks gets one 2 s before its timeout, at the current resourceVersion', async () => {
    const { cache, sink } = newCache(1);
    const res = await startWatch(cache, `resourceVersion=${cache.pods.clock.current()}&allowWatchBookmarks=true&timeoutSeconds=3`, new FakeResponse(), 60);
    // Changes the watch does not see (another namespace) move the resourceVersion on.
    sink.apply('ADDED', { ...pod('elsewhere'), metadata: { ...pod('elsewhere').metadata, namespace: 'other' } });
    const rv = cache.pods.clock.current();
    const t0 = Date.now();
    while (res.lines().length === 0 && Date.now() - t0 < 2500) await new Promise((r) => setTimeout(r, 20));
    expect(res.writableEnded).toBe(false);
    expect(res.lines()).toEqual([{ type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } } }]);
    res.emit('close');
  });

  it('a stalled watcher with a narrow selection holds views of at most a few shared chunks; the rest go as copies', async () => {
    const { cache, sink } = newCache(0);
    const from = `resourceVersion=${cache.pods.clock.current()}`;
    // Every change is encoded for the reader of everything, into shared 1 MiB chunks; one in 250 is the rare one.
    const all = await startWatch(cache, from);
    const stalled = await startWatch(cache, `${from}&labelSelector=app%3Drare`, new HoldingResponse());
    const pad = 'x'.repeat(4000);
    for (let i = 0; i < 250 * 40; i++) {
      sink.apply('ADDED', pod(`q${i}`, { app: i % 250 === 0 ? 'rare' : 'common' }, pad));
      if (i % 50 === 0) await settle();
    }
    await settle();
    const got = (stalled as HoldingResponse).raw;
    expect(stalled.lines()).toHaveLength(40);
    const sharedChunks = new Set(got.map((b) => b.buffer).filter((b) => b instanceof SharedArrayBuffer));
    expect(sharedChunks.size).toBeLessThanOrEqual(MAX_HELD_CHUNKS + 1);
    expect(sharedChunks.size).toBeGreaterThan(1);
    all.emit('close');
    stalled.emit('close');
  });
});
