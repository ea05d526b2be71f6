// A watch's backlog (the current state for a watch from "" or "0" or with sendInitialEvents, or the replay after
// an older resourceVersion) can be a whole fleet, far beyond a slow watcher's allowance. It is written with
// backpressure instead, complete and in order, and the live events that came meanwhile follow it.

import { describe, expect, it } from 'vitest';
import { MergedCache } from '../../src/cache/merged.js';
import { serveCached } from '../../src/cache/serve.js';
import { defaultWatchSettings } from '../../src/cache/watch.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { FakeResponse } from '../support/fakeresponse.js';

let memberRV = 1;
function pod(name: string, labels: Record<string, string> = {}): any {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'ns', name, resourceVersion: String(memberRV++), labels }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'x'.repeat(200) }] } };
}
const nextIteration = () => new Promise((r) => setImmediate(r));

async function startWatch(cache: MergedCache, query: string, settings: Partial<typeof defaultWatchSettings>) {
  // A connection that holds 4 KiB until the client reads.
  const res = new FakeResponse(4096);
  const url = new URL(`https://gw.invalid/api/v1/namespaces/ns/pods?watch=1&${query}`);
  const ctx = { req: { headers: {} }, res, url, auditID: 'a', info: newRequestInfo('GET', url.pathname, url.searchParams), user: { username: 'u', groups: [] } } as unknown as RequestContext;
  await serveCached(ctx, cache, { stale: () => [], watchSettings: { ...defaultWatchSettings, ...settings } });
  return res;
}

/** The client reads until nothing more comes. */
async function readAll(res: FakeResponse): Promise<void> {
  for (let quiet = 0; quiet < 5; ) {
    const before = res.writes.length;
    res.read();
    await nextIteration();
    quiet = res.writes.length === before ? quiet + 1 : 0;
  }
}

function fleet(pods: number): MergedCache {
  const cache = new MergedCache({ instanceID: 't', windowSize: 10_000, dropManagedFields: true, rvBase: 100 });
  const sink = cache.sink('member-a', 'pods');
  sink.replace([], '1');
  for (let i = 0; i < pods; i++) sink.apply('ADDED', pod(`p${String(i).padStart(4, '0')}`));
  return cache;
}

describe('a watch backlog larger than the watcher allowance', () => {
  it('sends the whole current state, then the live events of meanwhile, in order, and stays open', async () => {
    const cache = fleet(500); // ~150 KB of events against a 8 KiB allowance
    const res = await startWatch(cache, 'resourceVersion=0', { maxBufferedBytes: 8192 });
    const sink = cache.sink('member-a', 'pods');
    sink.apply('ADDED', pod('late-1'));
    sink.apply('DELETED', { ...pod('p0001') });
    await readAll(res);
    const seen = res.lines().map((e) => `${e.type} ${e.object.metadata.name}`);
    expect(seen).toHaveLength(502);
    expect(seen.slice(0, 500)).toEqual(Array.from({ length: 500 }, (_, i) => `ADDED p${String(i).padStart(4, '0')}`));
    expect(seen.slice(500)).toEqual(['ADDED late-1', 'DELETED p0001']);
    expect(res.writableEnded).toBe(false);
    // Live now: one more event arrives as usual.
    sink.apply('ADDED', pod('later'));
    await readAll(res);
    expect(res.lines().at(-1)!.object.metadata.name).toBe('later');
  });

  it('closes sendInitialEvents with its bookmark before any live event', async () => {
    const cache = fleet(300);
    const rv = cache.pods.clock.current();
    const res = await startWatch(cache, 'sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan', { maxBufferedBytes: 8192 });
    cache.sink('member-a', 'pods').apply('ADDED', pod('late'));
    await readAll(res);
    const lines = res.lines();
    expect(lines).toHaveLength(302);
    expect(lines[300]).toMatchObject({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(rv), annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    expect(lines[301]!.object.metadata.name).toBe('late');
  });

  it('replays a long window after an old resourceVersion completely', async () => {
    const cache = fleet(0);
    const from = cache.pods.clock.current();
    const sink = cache.sink('member-a', 'pods');
    for (let i = 0; i < 400; i++) sink.apply('ADDED', pod(`r${i}`));
    const res = await startWatch(cache, `resourceVersion=${from}`, { maxBufferedBytes: 8192 });
    await readAll(res);
    expect(res.lines()).toHaveLength(400);
    expect(res.writableEnded).toBe(false);
  });

  it('ends the watch when live events outrun a client that is still not reading its backlog', async () => {
    const cache = fleet(200);
    const res = await startWatch(cache, 'resourceVersion=0', { maxBufferedBytes: 8192, maxPendingEvents: 5 });
    const sink = cache.sink('member-a', 'pods');
    for (let i = 0; i < 6; i++) sink.apply('ADDED', pod(`flood${i}`));
    expect(res.writableEnded).toBe(true);
    expect(cache.pods.watcherCount).toBe(0);
  });
});
