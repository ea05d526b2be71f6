// A watcher's events leave in one write per event-loop iteration: each write to a TLS connection is a record and
// a syscall, so a watcher that got several events while the loop was busy gets them in one. Nothing is held back
// longer than the iteration, and a watch that ends still sends what it had queued.

import { describe, expect, it } from 'vitest';
import { MergedCache } from '../../src/cache/merged.js';
import { serveCached } from '../../src/cache/serve.js';
import type { ActiveWatch } from '../../src/cache/watch.js';
import { newRequestInfo } from '../../src/request/requestinfo.js';
import type { RequestContext } from '../../src/server/context.js';
import { FakeResponse } from '../support/fakeresponse.js';

let memberRV = 1;
function pod(name: string, labels: Record<string, string> = {}): any {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: 'ns', name, resourceVersion: String(memberRV++), labels }, spec: { nodeName: 'n1' } };
}

async function startWatch(cache: MergedCache, query: string, settings?: { maxBufferedBytes: number }) {
  const res = new FakeResponse();
  const url = new URL(`https://gw.invalid/api/v1/namespaces/ns/pods?watch=1&resourceVersion=${cache.pods.clock.current()}${query}`);
  const ctx = { req: { headers: {} }, res, url, auditID: 'a', info: newRequestInfo('GET', url.pathname, url.searchParams), user: { username: 'u', groups: [] } } as unknown as RequestContext;
  await serveCached(ctx, cache, { stale: () => [], watchSettings: settings && { bookmarkIntervalMs: 60_000, maxTimeoutSeconds: 60, maxPendingEvents: 100_000, ...settings } });
  return res;
}

const nextIteration = () => new Promise((r) => setImmediate(r));

describe('watch writes', () => {
  it('events that arrive in one iteration (several callbacks) leave as one write, in order', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: 100 });
    const sink = cache.sink('member-a', 'pods');
    sink.replace([], '1');
    const res = await startWatch(cache, '');
    // Separate callbacks of one phase of the loop, as several members' streams are read in one poll phase. Immediates,
    // not timers: an immediate queued while the check phase runs waits for the next iteration, so these five run in
    // one phase for certain, where timers set a millisecond apart could fall in two (a flake seen in CI).
    await new Promise<void>((resolve) => {
      for (let i = 0; i < 5; i++) setImmediate(() => sink.apply('ADDED', pod(`p${i}`)));
      setImmediate(resolve);
    });
    expect(res.writes).toHaveLength(0);
    await nextIteration();
    expect(res.writes).toHaveLength(1);
    expect(res.lines().map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED p0', 'ADDED p1', 'ADDED p2', 'ADDED p3', 'ADDED p4']);
    sink.apply('MODIFIED', { ...pod('p1'), metadata: { ...pod('p1').metadata, labels: { x: 'y' } } });
    await nextIteration();
    expect(res.writes).toHaveLength(2);
    expect(res.lines().at(-1)!.type).toBe('MODIFIED');
  });

  it('a watcher that cannot keep up is ended, after what was queued for it', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: 100 });
    const sink = cache.sink('member-a', 'pods');
    sink.replace([], '1');
    const res = await startWatch(cache, '', { maxBufferedBytes: 2000 });
    sink.apply('ADDED', pod('a'));
    res.writableLength = 1990; // the client stopped reading
    sink.apply('ADDED', pod('b'));
    expect(res.writableEnded).toBe(true);
    expect(res.lines().map((e) => e.object.metadata.name)).toEqual(['a', 'b']);
    sink.apply('ADDED', pod('c'));
    await nextIteration();
    expect(res.lines().map((e) => e.object.metadata.name)).toEqual(['a', 'b']);
  });

  it('a client that goes away gets no more writes', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: 100 });
    const sink = cache.sink('member-a', 'pods');
    sink.replace([], '1');
    const res = await startWatch(cache, '');
    sink.apply('ADDED', pod('a'));
    res.emit('close');
    await nextIteration();
    expect(res.writes).toHaveLength(0);
    expect(cache.pods.watcherCount).toBe(0);
  });
});

describe('why a watch ended', () => {
  async function watchOf(cache: MergedCache, maxBufferedBytes: number) {
    const res = new FakeResponse();
    const url = new URL(`https://gw.invalid/api/v1/namespaces/ns/pods?watch=1&resourceVersion=${cache.pods.clock.current()}`);
    const ctx = { req: { headers: {} }, res, url, auditID: 'a', info: newRequestInfo('GET', url.pathname, url.searchParams), user: { username: 'u', groups: [] } } as unknown as RequestContext;
    let watch: ActiveWatch | undefined;
    await serveCached(ctx, cache, { stale: () => [], watchSettings: { bookmarkIntervalMs: 60_000, maxTimeoutSeconds: 60, maxPendingEvents: 100_000, maxBufferedBytes }, onWatch: (w) => (watch = w) });
    return { res, watch: watch! };
  }

  it('is told to whoever tracks it: unresponsive when its client does not keep up (apiserver_terminated_watchers_total), else closed or stopped', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: 100 });
    const sink = cache.sink('member-a', 'pods');
    sink.replace([], '1');
    const slow = await watchOf(cache, 2000);
    const gone = await watchOf(cache, 2000);
    const stopped = await watchOf(cache, 2000);
    slow.res.writableLength = 1990;
    sink.apply('ADDED', pod('a'));
    gone.res.destroyed = true;
    gone.res.emit('close');
    stopped.watch.stop();
    expect(await slow.watch.done).toBe('unresponsive');
    expect(await gone.watch.done).toBe('closed');
    expect(await stopped.watch.done).toBe('stopped');
  });

  it('reports each event it sends, initial, live and error alike, with its size, for apiserver_watch_events_total', async () => {
    const cache = new MergedCache({ instanceID: 't', windowSize: 100, dropManagedFields: true, rvBase: 100 });
    const sink = cache.sink('member-a', 'pods');
    sink.replace([pod('initial')], '1');
    const res = new FakeResponse();
    const url = new URL('https://gw.invalid/api/v1/namespaces/ns/pods?watch=1');
    const ctx = { req: { headers: {} }, res, url, auditID: 'a', info: newRequestInfo('GET', url.pathname, url.searchParams), user: { username: 'u', groups: [] } } as unknown as RequestContext;
    const sent: number[] = [];
    const kinds: string[] = [];
    await serveCached(ctx, cache, {
      stale: () => [],
      watchEventSent: (group, version, kind) => {
        kinds.push(`${group}/${version}/${kind}`);
        return (bytes) => sent.push(bytes);
      },
    });
    await nextIteration();
    sink.apply('ADDED', pod('live'));
    await nextIteration();
    expect(kinds).toEqual(['/v1/Pod']);
    expect(res.lines().map((e) => e.object.metadata.name)).toEqual(['initial', 'live']);
    expect(sent).toHaveLength(2);
    expect(sent.reduce((a, b) => a + b, 0)).toBe(Buffer.byteLength(res.writes.join('')));
  });
});
